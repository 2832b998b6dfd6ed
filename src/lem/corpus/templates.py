"""The generator's templates: one semantic frame, three realisations (English SVO; Sinhala and Tamil SOV,
postpositions, verb final), so the same slot values give a translation triple in which every word keeps its
gold POS and NER tag."""

from __future__ import annotations

import re

Tok = tuple[str, str, str]  # word, POS, NER

# Templates: one frame, three realisations. `{SLOT:form}` is a slot (its pool is the slot name without a
# trailing digit), `word/TAG` a fixed word, `a|b/TAG` a Tamil word that agrees with a person (a) or a
# non-person (b) subject.
TEMPLATES: dict[str, tuple[str, str, str]] = {
    "went": (
        "{P} went/VBD to/TO {L} {T} ./.",
        "{P} {T} {L:dat} ගියේය/VFM ./FS",
        "{P} {T} {L:dat} சென்றார்/VERB ./PUNCT",
    ),
    "create": (
        "{S} {VC:past} a/DT new/JJ {NF} in/IN {L} ./.",
        "{S} {L:loc} නව/JJ {NF:indef} {VC:past} ./FS",
        "{S} {L:loc} புதிய/ADJ {NF:acc} {VC:past} ./PUNCT",
    ),
    "said_adj": (
        "{P} {VS:past} that/IN the/DT {NF} in/IN {L} is/VBZ {A} ./.",
        "{L:gen} පිහිටි/VP {NF} {A} බව/POST {P} {VS:past} ./FS",
        "{L:loc} உள்ள/ADJ {NF} {A:adv} உள்ளது/AUX என்று/PART {P} {VS:past} ./PUNCT",
    ),
    "met": (
        "{P} met/VBD {P2} in/IN {L} {T} ./.",
        "{P} {T} {L:loc} {P2} හමු/RRPCV විය/VFM ./FS",
        "{P} {T} {L:loc} {P2:acc} சந்தித்தார்/VERB ./PUNCT",
    ),
    "given": (
        "{Q} {NI:pl} were/VBD given/VBN to/TO the/DT people/NNS of/IN {L} ./.",
        "{L:gen} ජනතාවට/NNC {NI:pl} {Q:cnt} ලබා/VNF දෙන/VP ලදී/VFM ./FS",
        "{L:loc} உள்ள/ADJ மக்களுக்கு/NOUN {Q} {NI:pl} வழங்கப்பட்டன/VERB ./PUNCT",
    ),
    "act_facility": (
        "{S} {VA:past} the/DT {NF} in/IN {L} {T} ./.",
        "{S} {T} {L:gen} පිහිටි/VP {NF} {VA:past} ./FS",
        "{S} {T} {L:loc} உள்ள/ADJ {NF:acc} {VA:past} ./PUNCT",
    ),
    "act_plan": (
        "{S} {VP:past} the/DT {NP} {T} ./.",
        "{S} {T} {NP} {VP:past} ./FS",
        "{S} {T} {NP:acc} {VP:past} ./PUNCT",
    ),
    "closed": (
        "the/DT {A} {NF} in/IN {L} was/VBD closed/VBN {T} ./.",
        "{L:gen} පිහිටි/VP {A} {NF} {T} වසා/VNF දමන/VP ලදී/VFM ./FS",
        "{L:loc} உள்ள/ADJ {A} {NF} {T} மூடப்பட்டது/VERB ./PUNCT",
    ),
    "price": (
        "{P} {VS:past} that/IN the/DT price/NN of/IN {NI:pl} increased/VBD {T} ./.",
        "{T} {NI:pl} මිල/NNC වැඩි/JJ වූ/VP බව/POST {P} {VS:past} ./FS",
        "{T} {NI:pl} விலை/NOUN அதிகரித்தது/VERB என்று/PART {P} {VS:past} ./PUNCT",
    ),
    "accident": (
        "{Q} people/NNS were/VBD injured/VBN in/IN an/DT accident/NN in/IN {L} {T} ./.",
        "{T} {L:loc} සිදු/RPCV වූ/VP අනතුරකින්/NNC පුද්ගලයන්/NNC {Q} දෙනෙකු/NUM තුවාල/NNC ලැබූහ/VFM ./FS",
        "{T} {L:loc} இடம்பெற்ற/VERB விபத்தில்/NOUN {Q} பேர்/NOUN காயமடைந்தனர்/VERB ./PUNCT",
    ),
    "rain": (
        "heavy/JJ rain/NN fell/VBD in/IN {L} {T} ./.",
        "{T} {L} ප්‍රදේශයට/NNC අධික/JJ වර්ෂාවක්/NNC ඇද/VNF හැලුණි/VFM ./FS",
        "{T} {L} பகுதியில்/NOUN கடும்/ADJ மழை/NOUN பெய்தது/VERB ./PUNCT",
    ),
    "plans_to": (
        "{S} plans/VBZ to/TO {VC:base} a/DT {NF} in/IN {L} ./.",
        "{S} {L:loc} {NF:indef} {VC:inf} සැලසුම්/NNC කරයි/VFM ./FS",
        "{S} {L:loc} ஒரு/ADJ {NF:acc} {VC:inf} திட்டமிட்டுள்ளார்|திட்டமிட்டுள்ளது/VERB ./PUNCT",
    ),
    "bought": (
        "{P} {VI:past} {Q} {NI:pl} in/IN {L} {T} ./.",
        "{P} {T} {L:loc} {NI:pl} {Q:cnt} {VI:past} ./FS",
        "{P} {T} {L:loc} {Q} {NI:placc} {VI:past} ./PUNCT",
    ),
    "spent": (
        "{S} spent/VBD {Q} million/CD rupees/NNS on/IN the/DT {NF} in/IN {L} ./.",
        "{S} {L:gen} පිහිටි/VP {NF} සඳහා/POST රුපියල්/NNC මිලියන/NUM {Q:cnt} වැය/NCV කළේය/VFM ./FS",
        "{S} {L:loc} உள்ள/ADJ {NF:dat} {Q} மில்லியன்/NUM ரூபாவை/NOUN செலவிட்டார்|செலவிட்டது/VERB ./PUNCT",
    ),
    "donated": (
        "{S} donated/VBD {Q} {NI:pl} to/TO the/DT {NF} in/IN {L} ./.",
        "{S} {L:gen} පිහිටි/VP {NF} වෙත/POST {NI:pl} {Q:cnt} පරිත්‍යාග/NCV කළේය/VFM ./FS",
        "{S} {L:loc} உள்ள/ADJ {NF:dat} {Q} {NI:placc} நன்கொடையாக/ADV வழங்கினார்|வழங்கியது/VERB ./PUNCT",
    ),
    "very_adj": (
        "the/DT {NF} in/IN {L} is/VBZ very/RB {A} ./.",
        "{L:gen} පිහිටි/VP {NF} ඉතා/RP {A} තත්ත්වයක/NNC පවතී/VFM ./FS",
        "{L:loc} உள்ள/ADJ {NF} மிகவும்/ADV {A:adv} உள்ளது/AUX ./PUNCT",
    ),
    "discussed": (
        "{S} discussed/VBD the/DT {NP} with/IN {P2} {T} ./.",
        "{S} {T} {P2} සමඟ/POST {NP} පිළිබඳ/POST සාකච්ඡා/NNC කළේය/VFM ./FS",
        "{S} {T} {NP} குறித்து/ADP {P2} உடன்/ADP கலந்துரையாடினார்|கலந்துரையாடியது/VERB ./PUNCT",
    ),
    "match": (
        "{L} won/VBD the/DT match/NN against/IN {L2} {T} ./.",
        "{T} {L2} සමඟ/POST පැවති/VP තරගය/NNC {L} කණ්ඩායම/NNC ජය/NNC ගත්තේය/VFM ./FS",
        "{T} {L2} அணிக்கு/NOUN எதிரான/ADJ போட்டியில்/NOUN {L} அணி/NOUN வெற்றி/NOUN பெற்றது/VERB ./PUNCT",
    ),
    "arrived": (
        "{P} arrived/VBD in/IN {L} from/IN {L2} {T} ./.",
        "{P} {T} {L2:gen} සිට/POST {L:dat} පැමිණියේය/VFM ./FS",
        "{P} {T} {L2:loc} இருந்து/ADP {L:dat} வந்தார்/VERB ./PUNCT",
    ),
    "head_office": (
        "the/DT head/JJ office/NN of/IN {O} is/VBZ in/IN {L} ./.",
        "{O:gen} ප්‍රධාන/JJ කාර්යාලය/NNC {L:gen} පිහිටා/VNF ඇත/VFM ./FS",
        "{O:gen} தலைமை/NOUN அலுவலகம்/NOUN {L:loc} அமைந்துள்ளது/VERB ./PUNCT",
    ),
    "praised": (
        "{P} praised/VBD the/DT {AP} service/NN of/IN {O} ./.",
        "{O:gen} {AP} සේවය/NNC {P} අගය/NNC කළේය/VFM ./FS",
        "{O:gen} {AP} சேவையை/NOUN {P} பாராட்டினார்/VERB ./PUNCT",
    ),
    "criticised": (
        "{P} criticised/VBD the/DT {AN} {NF} in/IN {L} ./.",
        "{L:gen} පිහිටි/VP {AN} {NF} පිළිබඳව/POST {P} විවේචනය/NNC කළේය/VFM ./FS",
        "{L:loc} உள்ள/ADJ {AN} {NF} குறித்து/ADP {P} விமர்சித்தார்/VERB ./PUNCT",
    ),
    "festival": (
        "{S} organised/VBD the/DT {M} festival/NN in/IN {L} ./.",
        "{S} {L:loc} {M} උත්සවය/NNC සංවිධානය/NNC කළේය/VFM ./FS",
        "{S} {L:loc} {M} விழாவை/NOUN ஏற்பாடு/NOUN செய்தார்|செய்தது/VERB ./PUNCT",
    ),
    "sent_to": (
        "{T} ,/, {S} {VI:past} {Q} {NI:pl} to/TO {L} ./.",
        "{T} {S} {L:dat} {NI:pl} {Q:cnt} {VI:past} ./FS",
        "{T} ,/PUNCT {S} {L:dat} {Q} {NI:placc} {VI:past} ./PUNCT",
    ),
    "students": (
        "{Q} students/NNS from/IN {L} passed/VBD the/DT examination/NN ./.",
        "{L:gen} ප්‍රදේශයේ/NNC සිසුන්/NNC {Q} දෙනෙකු/NUM විභාගය/NNC සමත්/JJ වූහ/VFM ./FS",
        "{L} பகுதியைச்/NOUN சேர்ந்த/VERB {Q} மாணவர்கள்/NOUN பரீட்சையில்/NOUN சித்தியடைந்தனர்/VERB ./PUNCT",
    ),
    "appointed": (
        "{P} was/VBD appointed/VBN as/IN the/DT head/NN of/IN {O} ./.",
        "{P} {O:gen} ප්‍රධානියා/NNC ලෙස/POST පත්/JCV කෙරිණි/VFM ./FS",
        "{P} {O:gen} தலைவராக/NOUN நியமிக்கப்பட்டார்/VERB ./PUNCT",
    ),
    "visited_together": (
        "{P} and/CC {P2} visited/VBD the/DT {NF} in/IN {L} ./.",
        "{P} සහ/CC {P2} {L:gen} පිහිටි/VP {NF} නිරීක්ෂණය/NNC කළහ/VFM ./FS",
        "{P} மற்றும்/CCONJ {P2} ஆகியோர்/NOUN {L:loc} உள்ள/ADJ {NF:acc} பார்வையிட்டனர்/VERB ./PUNCT",
    ),
    "opened_by": (
        "the/DT new/JJ {NF} in/IN {L} was/VBD opened/VBN by/IN {P} {T} ./.",
        "{L:gen} පිහිටි/VP නව/JJ {NF} {T} {P} විසින්/POST විවෘත/JCV කරන/VP ලදී/VFM ./FS",
        "{L:loc} உள்ள/ADJ புதிய/ADJ {NF} {T} {P} அவர்களால்/PRON திறந்து/VERB வைக்கப்பட்டது/AUX ./PUNCT",
    ),
}
FRAMES = tuple(TEMPLATES)
SLOT_RE = re.compile(r"^\{([A-Z]+?)(\d?)(?::([a-z_]+))?\}$")


def slots(template: str) -> list[tuple[str, str, str]]:
    """(slot name, pool, form) of every slot of a template, in order."""
    out = []
    for item in template.split():
        m = SLOT_RE.match(item)
        if m:
            out.append((m.group(1) + m.group(2), m.group(1), m.group(3) or "base"))
    return out
