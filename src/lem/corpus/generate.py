"""Seeded generation of the embedded trilingual world (English, Sinhala, Tamil): corpora, gold tags and
evaluation sets.

One semantic frame filled with slot values (people, places, nouns, verbs ...) is realised in each
language's own word order (English SVO; Sinhala and Tamil SOV, postpositions, verb final), so the same
fill gives a translation triple, and every word keeps its gold POS and NER tag. The files written are
those of the "corpus" section of docs/contracts.md.

The world's three languages are built in (`lx.LANGS`: en, si, ta); the codes the files are written under
are the config's (`GenerateSettings.languages`: configured code -> built-in language, e.g. {xx: si} writes
Sinhala as `xx`: `mono/xx.txt`, `para/xx-en.train.tsv`, news ids `xx_<doc>_<k>`). Everything is drawn
under the built-in codes, so a renamed language's files hold the same text as the built-in one's.
"""

from __future__ import annotations

import csv
import io
import logging
import random
import re
import time
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field, fields
from functools import lru_cache
from pathlib import Path
from typing import Any

from lem.core.entities import LANG_CODE
from lem.core.files import atomic_path, write_text
from lem.core.settings import Settings, SettingsError
from lem.core.text import is_punct, words
from lem.corpus import lexicon as lx
from lem.data.news import language_folder

log = logging.getLogger(__name__)

PAIRS = ("si-en", "si-ta", "ta-en")  # the built-in pairs (written under the configured codes: `pair_code`)
SITE = "GEN"
SENTIMENT_PRIORS = {"Neutral": 0.62, "Negative": 0.27, "Positive": 0.11}  # close to the real CMCS set
NOISE_LABELS = ("misaligned", "untranslated", "wrong_language")

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


def _pools() -> dict[str, list[lx.Entry]]:
    def adj(pol: str) -> list[lx.Entry]:
        return [e for e in lx.entries("ADJ") if e.polarity == pol]

    return {
        "S": lx.entries("PER") + lx.entries("ORG"),
        "P": lx.entries("PER"),
        "L": lx.entries("LOC"),
        "O": lx.entries("ORG"),
        "M": lx.entries("MISC"),
        "NF": lx.entries("NOUN", "F"),
        "NI": lx.entries("NOUN", "I"),
        "NP": lx.entries("NOUN", "P"),
        "A": lx.entries("ADJ"),
        "AP": adj("positive"),
        "AN": adj("negative"),
        "VC": lx.entries("VERB", "C"),
        "VA": lx.entries("VERB", "C") + lx.entries("VERB", "A"),
        "VP": lx.entries("VERB", "P"),
        "VI": lx.entries("VERB", "I"),
        "VS": lx.entries("VERB", "S"),
        "T": lx.entries("TIME"),
    }


POOLS = _pools()
Fill = dict[str, Any]  # slot name -> Entry or int (numbers)


# The generated world's sizes: every count (per language, pair or world) at most MAX_COUNT (config/README.md).
# The generator holds its sentences in memory: 20,000 monolingual sentences per language took 28 s and 161 MB
# at peak on the 2-core development machine (2,000: 8 s, 41 MB), so a million per language is about 25
# minutes and 7 GB; 10**12 noisy pairs was a MemoryError after planning.
MAX_COUNT = 1_000_000
COUNTS = (
    "mono_sentences",
    "para_train",
    "para_valid",
    "news_documents",
    "sentiment_examples",
    "noisy_pairs",
    "composed_people",
    "composed_places",
)


@dataclass
class GenerateSettings(Settings):
    """Sizes and seed of the generated world; the defaults generate everything in a few seconds."""

    SECTION = "corpus settings"

    seed: int = 13
    mono_sentences: int = 4000
    para_train: int = 2000
    para_valid: int = 200
    news_documents: int = 40
    news_aligned_min: int = 3
    news_aligned_max: int = 8
    news_extra_min: int = 1
    news_extra_max: int = 4
    news_gold_share: float = 0.7
    news_entity_reuse: float = 0.5
    composed_people: int = 3000
    composed_places: int = 1500
    composed_share: float = 0.7
    date_share: float = 0.5
    number_max: int = 5000
    sentiment_examples: int = 1500
    sentiment_label_noise: float = 0.05
    sentiment_negation: float = 0.25
    noisy_pairs: int = 600
    noisy_clean_fraction: float = 0.5
    # pair -> noisy pairs appended to that pair's corpus (the NMT pair's training pool), drawn from a stream of
    # their own, after everything else: no other file changes, and none of their sentences is in another one
    noisy_extra_pairs: dict[str, int] = field(default_factory=dict)
    # configured language code -> the built-in language (en, si, ta) it names: {xx: si} writes Sinhala as xx;
    # a built-in language not named keeps its own code
    languages: dict[str, str] = field(default_factory=dict)

    @property
    def codes(self) -> dict[str, str]:
        """Built-in language -> the code its files are written under."""
        named = {builtin: code for code, builtin in self.languages.items()}
        return {lg: named.get(lg, lg) for lg in lx.LANGS}

    def pair_code(self, pair: str) -> str:
        """A built-in pair under the configured codes (`si-en` -> `xx-en` with languages {xx: si})."""
        return "-".join(self.codes[lg] for lg in pair.split("-"))

    @classmethod
    def prepare(cls, data: dict[str, Any]) -> dict[str, Any]:
        """A whole number for a share reads as a float (1 -> 1.0), as the generator computes with it; each
        entry of `languages` and `noisy_extra_pairs` is checked here, so that a message names the entry."""
        for code, builtin in (
            (data.get("languages") or {}).items() if isinstance(data.get("languages"), dict) else ()
        ):
            if not (isinstance(code, str) and LANG_CODE.fullmatch(code)) or builtin not in lx.LANGS:
                raise SettingsError(
                    f"corpus settings: languages.{code}: expected a code of 2-3 lower-case letters naming one of "
                    f"the built-in languages {', '.join(lx.LANGS)} (e.g. {{xx: si}}), got {code!r}: {builtin!r}"
                )
        extra = data.get("noisy_extra_pairs")
        for pair, n in extra.items() if isinstance(extra, dict) else ():
            if isinstance(n, bool) or not isinstance(n, int) or not 0 <= n <= MAX_COUNT:
                raise SettingsError(
                    f"corpus settings: noisy_extra_pairs.{pair}: expected an integer count in 0..{MAX_COUNT:,}, "
                    f"got {n!r}"
                )
        floats = {f.name for f in fields(cls) if f.type in (float, "float")}
        return {k: float(v) if k in floats and type(v) is int else v for k, v in data.items()}

    def validate(self) -> None:
        for k in COUNTS:
            n = getattr(self, k)
            low = 1 if k == "mono_sentences" else 0
            if not low <= n <= MAX_COUNT:
                why = " (pre-training needs text)" if k == "mono_sentences" else ""
                raise SettingsError(
                    f"corpus settings: {k}: expected an integer count in {low}..{MAX_COUNT:,}{why}, got {n}"
                )
        if not 0 <= self.number_max <= MAX_COUNT:
            raise SettingsError(
                f"corpus settings: number_max: expected 0..{MAX_COUNT:,}, got {self.number_max}"
            )
        if not 1 <= self.news_aligned_min <= self.news_aligned_max:
            raise SettingsError("corpus settings: need 1 <= news_aligned_min <= news_aligned_max")
        if self.composed_share > 0 and not (self.composed_people and self.composed_places):
            raise SettingsError(
                "corpus settings: composed_share > 0 needs composed_people and composed_places > 0"
            )
        if 0 < self.number_max < 2:
            raise SettingsError("corpus settings: number_max must be 0 (the lexicon's numbers) or >= 2")
        if not 0 <= self.news_extra_min <= self.news_extra_max:
            raise SettingsError("corpus settings: need 0 <= news_extra_min <= news_extra_max")
        for k in (
            "news_gold_share",
            "news_entity_reuse",
            "composed_share",
            "date_share",
            "sentiment_label_noise",
            "sentiment_negation",
            "noisy_clean_fraction",
        ):
            if not 0.0 <= getattr(self, k) <= 1.0:
                raise SettingsError(f"corpus settings: {k} must be in [0, 1], got {getattr(self, k)}")
        for code, builtin in self.languages.items():
            if not (isinstance(code, str) and LANG_CODE.fullmatch(code)) or builtin not in lx.LANGS:
                raise SettingsError(
                    f"corpus settings: languages: {code}={builtin!r}: expected a language code -> the built-in "
                    f"language it names, one of {', '.join(lx.LANGS)} (e.g. {{xx: si}})"
                )
        if len(set(self.languages.values())) < len(self.languages):
            raise SettingsError(
                f"corpus settings: languages: {self.languages!r}: two codes name the same built-in language"
            )
        codes = self.codes
        if len(set(codes.values())) < len(codes):
            raise SettingsError(
                f"corpus settings: languages: {self.languages!r}: two built-in languages would be written "
                f"under the same code ({', '.join(f'{b} as {c}' for b, c in codes.items())}); name each "
                "language whose code another one takes"
            )
        pairs = tuple(self.pair_code(p) for p in PAIRS)
        for pair, n in self.noisy_extra_pairs.items():
            if pair not in pairs or n < 0:
                raise SettingsError(
                    f"corpus settings: noisy_extra_pairs: {pair}={n!r}: expected a pair of {pairs} and a "
                    "count >= 0"
                )


# --- the variety drawn per sentence ---------------------------------------------------------------------


@dataclass(frozen=True)
class Variety:
    """What makes a sentence hard to guess from its own side: names composed per world (`composed`: PER and
    LOC entries, drawn for a person or place slot with probability `composed_share`), dates written with
    digits for a time slot (probability `date_share`) and numbers 2..`number_max` (0: the lexicon's)."""

    composed: dict[str, tuple[lx.Entry, ...]]
    composed_share: float = 0.0
    date_share: float = 0.0
    number_max: int = 0


@lru_cache(maxsize=8)
def _composed(seed: int, people: int, places: int) -> dict[str, tuple[lx.Entry, ...]]:
    """The world's composed names: `people` persons and `places` places, distinct from each other and from the
    lexicon's, drawn with the seed."""
    rng = random.Random(f"{seed}/names")
    taken = {e.key for e in lx.ENTRIES}
    out: dict[str, list[lx.Entry]] = {"PER": [], "LOC": []}
    for cat, n in (("PER", people), ("LOC", places)):
        tries = 0
        while len(out[cat]) < n:
            tries += 1
            if tries > 100 * n + 1000:
                raise RuntimeError(f"could not compose {n} distinct {cat} names: lower composed sizes")
            e = lx.composed_name(rng, cat)
            if e.key not in taken:
                taken.add(e.key)
                out[cat].append(e)
    return {cat: tuple(v) for cat, v in out.items()}


def variety(s: GenerateSettings) -> Variety:
    """The per-sentence variety of the settings `s`."""
    people = s.composed_people if s.composed_share > 0 else 0
    places = s.composed_places if s.composed_share > 0 else 0
    return Variety(_composed(s.seed, people, places), s.composed_share, s.date_share, s.number_max)


def world_entries(s: GenerateSettings) -> list[lx.Entry]:
    """Every named entry the world can write: the lexicon's and the composed names."""
    v = variety(s)
    return lx.ENTRIES + [e for cat in ("PER", "LOC") for e in v.composed[cat]]


def _date(rng: random.Random) -> lx.Entry:
    """A date written with digits in the three languages ("on 14 May 2023")."""
    day, year = rng.randint(1, 28), rng.randint(1990, 2025)
    en, si, ta = rng.choice(lx.MONTHS)
    forms = {
        "en": {"base": f"on/IN {day}/CD {en}/NNP {year}/CD"},
        "si": {"base": f"{year}/NUM {si}/NNC {day}/NUM දින/NNC"},
        "ta": {"base": f"{year}/NUM {ta}/NOUN {day}/NUM அன்று/ADV"},
    }
    return lx.Entry("TIME", f"{day} {en} {year}", forms)


_COMPOSED_POOL = {"P": "PER", "L": "LOC", "S": "PER"}


# --- filling and realising frames -----------------------------------------------------------------------


def _slots(template: str) -> list[tuple[str, str, str]]:
    """(slot name, pool, form) of every slot of a template, in order."""
    out = []
    for item in template.split():
        m = SLOT_RE.match(item)
        if m:
            out.append((m.group(1) + m.group(2), m.group(1), m.group(3) or "base"))
    return out


def sample_fill(
    rng: random.Random,
    frame: str,
    prefer: dict[str, lx.Entry] | None = None,
    reuse: float = 0.0,
    var: Variety | None = None,
) -> Fill:
    """Slot values for a frame: distinct entries across slots; entities of `prefer` reused with prob `reuse`;
    composed names, dates and wide numbers as `var` says."""
    fill: Fill = {}
    used: set[int] = set()
    for name, pool, _ in _slots(TEMPLATES[frame][0]):
        if name in fill:
            continue
        if pool == "Q":
            fill[name] = rng.randint(2, var.number_max) if var and var.number_max else rng.choice(lx.NUMBERS)
            continue
        if pool == "T" and var and var.date_share and rng.random() < var.date_share:
            fill[name] = _date(rng)
            continue
        cands = [e for e in POOLS[pool] if id(e) not in used]
        choice = None
        if prefer and reuse > 0 and rng.random() < reuse:
            fav = [e for e in prefer.values() if any(e is c for c in cands)]
            if fav:
                choice = fav[0]
        if (
            choice is None
            and var
            and var.composed_share
            and pool in _COMPOSED_POOL
            and rng.random() < var.composed_share
        ):
            composed = var.composed[_COMPOSED_POOL[pool]]
            while choice is None or id(choice) in used:
                choice = rng.choice(composed)
        if choice is None:
            choice = rng.choice(cands)
        fill[name] = choice
        used.add(id(choice))
    return fill


def _subject_is_person(fill: Fill) -> bool:
    for name in ("S", "P", "O"):
        if name in fill:
            return fill[name].cat == "PER"
    return True


def realize(frame: str, fill: Fill, lang: str) -> list[Tok]:
    """The words of a filled frame in one language, with gold POS and IOB2 NER tags."""
    template = TEMPLATES[frame][lx.LANGS.index(lang)]
    person = _subject_is_person(fill)
    toks: list[Tok] = []
    for item in template.split():
        m = SLOT_RE.match(item)
        if not m:
            word, _, tag = item.rpartition("/")
            if "|" in word:
                word = word.split("|")[0 if person else 1]
            toks.append((word, tag, "O"))
            continue
        name, form = m.group(1) + m.group(2), m.group(3) or "base"
        value = fill[name]
        if isinstance(value, int):
            text = f"{value}ක්" if (lang == "si" and form == "cnt") else str(value)
            toks.append((text, lx.NUMBER_TAG[lang], "O"))
            continue
        toks.extend(_entry_tokens(value, lang, form, person))
    return _finish(toks, lang)


def _entry_tokens(e: lx.Entry, lang: str, form: str, person_subject: bool) -> list[Tok]:
    forms = e.forms[lang]
    if e.cat == "VERB" and lang == "ta" and form == "past" and not person_subject:
        form = "past_n"
    if form == "placc" and lang == "ta":  # Tamil accusative plural: -கள் -> -களை
        text = forms["pl"]
        assert text.endswith("கள்"), text
        text = text[:-1] + "ை"
    elif form == "placc":
        text = forms["pl"]
    else:
        text = forms.get(form) or forms.get("base") or forms[next(iter(forms))]
    pairs = lx.parse_form(text, e.cat, lang, form)
    if e.ner:
        return [(w, t, ("B-" if i == 0 else "I-") + e.ner) for i, (w, t) in enumerate(pairs)]
    return [(w, t, "O") for w, t in pairs]


def _finish(toks: list[Tok], lang: str) -> list[Tok]:
    if lang != "en":
        return toks
    out = list(toks)
    for i in range(len(out) - 1):  # a -> an before a vowel
        if out[i][0].lower() == "a" and out[i][1] == "DT" and out[i + 1][0][:1].lower() in "aeiou":
            out[i] = (out[i][0] + "n", out[i][1], out[i][2])
    w, t, n = out[0]
    out[0] = (w[:1].upper() + w[1:], t, n)
    return out


def sentence_text(toks: list[Tok]) -> str:
    """Join words with spaces, gluing punctuation to the word before it ("road.")."""
    parts: list[str] = []
    for w, _, _ in toks:
        if parts and all(is_punct(c) for c in w):
            parts[-1] += w
        else:
            parts.append(w)
    text = " ".join(parts)
    if words(text) != [w for w, _, _ in toks]:
        raise RuntimeError(f"generated sentence does not segment into its own words: {text!r}")
    return text


def _sample(
    rng: random.Random,
    prefer: dict[str, lx.Entry] | None = None,
    reuse: float = 0.0,
    var: Variety | None = None,
) -> tuple[str, Fill]:
    frame = rng.choice(FRAMES)
    return frame, sample_fill(rng, frame, prefer, reuse, var)


def _text(frame: str, fill: Fill, lang: str) -> str:
    return sentence_text(realize(frame, fill, lang))


# --- the corpora --------------------------------------------------------------------------------------


def _draw(rng: random.Random, n: int, ok, what: str, var: Variety | None = None):
    """Draw n samples accepted by `ok(frame, fill)`; fail loudly when the world is too small."""
    out, tries = [], 0
    while len(out) < n:
        tries += 1
        if tries > 100 * n + 1000:
            raise RuntimeError(
                f"could not draw {n} distinct {what} sentences (got {len(out)}): raise variety or lower sizes"
            )
        frame, fill = _sample(rng, var=var)
        if ok(frame, fill):
            out.append((frame, fill))
    return out


def mono_corpus(s: GenerateSettings, lang: str, banned: set[str]) -> list[list[Tok]]:
    rng = random.Random(f"{s.seed}/mono/{lang}")
    samples = _draw(
        rng, s.mono_sentences, lambda f, x: _text(f, x, lang) not in banned, f"mono {lang}", variety(s)
    )
    return [realize(f, x, lang) for f, x in samples]


def para_corpus(
    s: GenerateSettings, pair: str, banned: dict[str, set[str]]
) -> dict[str, list[tuple[str, str]]]:
    src, tgt = pair.split("-")
    rng = random.Random(f"{s.seed}/para/{pair}")
    train_src: set[str] = set()

    def ok_train(f: str, x: Fill) -> bool:
        return _text(f, x, src) not in banned[src] and _text(f, x, tgt) not in banned[tgt]

    train = [
        (_text(f, x, src), _text(f, x, tgt))
        for f, x in _draw(rng, s.para_train, ok_train, f"para {pair}", variety(s))
    ]
    train_src = {a for a, _ in train}
    valid = [
        (_text(f, x, src), _text(f, x, tgt))
        for f, x in _draw(
            rng,
            s.para_valid,
            lambda f, x: ok_train(f, x) and _text(f, x, src) not in train_src,
            f"para {pair} valid",
            variety(s),
        )
    ]
    return {"train": train, "valid": valid}


def news_benchmark(s: GenerateSettings, pair: str) -> dict[str, Any]:
    """Comparable document pairs: translated sentences mixed with unaligned extras, shuffled per side."""
    src, tgt = pair.split("-")
    rng = random.Random(f"{s.seed}/news/{pair}")
    doc_ids = sorted(rng.sample(range(10000, 400000), s.news_documents))
    gold_docs = set(rng.sample(doc_ids, round(s.news_gold_share * len(doc_ids))))
    docs: dict[int, tuple[list[str], list[str]]] = {}
    gold: list[tuple[str, str]] = []
    for doc in doc_ids:
        prefer = {c: rng.choice(lx.entries(c)) for c in ("PER", "LOC", "ORG")}
        seen: dict[str, set[str]] = {src: set(), tgt: set()}

        def fresh(langs: tuple[str, ...], prefer=prefer, seen=seen) -> tuple[str, Fill]:
            for _ in range(1000):
                f, x = _sample(rng, prefer, s.news_entity_reuse, variety(s))
                if all(_text(f, x, lg) not in seen[lg] for lg in langs):
                    for lg in langs:
                        seen[lg].add(_text(f, x, lg))
                    return f, x
            raise RuntimeError("could not draw a fresh news sentence")

        aligned = [fresh((src, tgt)) for _ in range(rng.randint(s.news_aligned_min, s.news_aligned_max))]
        extra_src = [fresh((src,)) for _ in range(rng.randint(s.news_extra_min, s.news_extra_max))]
        extra_tgt = [fresh((tgt,)) for _ in range(rng.randint(s.news_extra_min, s.news_extra_max))]
        side_src = [(_text(f, x, src), j) for j, (f, x) in enumerate(aligned)] + [
            (_text(f, x, src), None) for f, x in extra_src
        ]
        side_tgt = [(_text(f, x, tgt), j) for j, (f, x) in enumerate(aligned)] + [
            (_text(f, x, tgt), None) for f, x in extra_tgt
        ]
        rng.shuffle(side_src)
        rng.shuffle(side_tgt)
        docs[doc] = ([t for t, _ in side_src], [t for t, _ in side_tgt])
        if doc in gold_docs:
            where_tgt = {j: k for k, (_, j) in enumerate(side_tgt) if j is not None}
            gold += [
                (f"{src}_{doc}_{k}", f"{tgt}_{doc}_{where_tgt[j]}")
                for k, (_, j) in enumerate(side_src)
                if j is not None
            ]
    return {"docs": docs, "gold": gold, "gold_docs": sorted(gold_docs)}


def noisy_pairs(s: GenerateSettings, pair: str, n: int | None = None, stream: str = "noisy",
                fresh: Callable[[str, str], bool] | None = None) -> list[tuple[str, str, str]]:  # fmt: skip
    """Clean translations plus misaligned, untranslated and wrong-language pairs, shuffled: `n` of them
    (default `noisy_pairs`) from the random stream `stream`; `fresh(lang, text)`, when given, refuses a
    sentence of language `lang` (a new draw replaces the pair)."""
    src, tgt = pair.split("-")
    third = next(lg for lg in lx.LANGS if lg not in (src, tgt))
    rng = random.Random(f"{s.seed}/{stream}/{pair}")
    n = s.noisy_pairs if n is None else n
    n_clean = round(s.noisy_clean_fraction * n)
    labels = ["clean"] * n_clean + [NOISE_LABELS[i % 3] for i in range(n - n_clean)]
    rng.shuffle(labels)
    ok = fresh or (lambda lang, text: True)
    rows = []
    for label in labels:
        while True:
            f, x = _sample(rng, var=variety(s))
            a = _text(f, x, src)
            if label == "clean":
                b = _text(f, x, tgt)
            elif label == "misaligned":
                b = _text(f, x, tgt)
                while b == _text(f, x, tgt) or not ok(tgt, b):
                    f2, x2 = _sample(rng, var=variety(s))
                    b = _text(f2, x2, tgt)
            elif label == "untranslated":
                b = a
            else:
                b = _text(f, x, third)
            # the side b of a misaligned pair was checked as it was drawn; an untranslated b is a
            other = {"clean": [(tgt, b)], "wrong_language": [(third, b)]}.get(label, [])
            if all(ok(lang, text) for lang, text in [(src, a), *other]):
                break
        rows.append((a, b, label))
    return rows


def noisy_extra(s: GenerateSettings, pair: str, taken: dict[str, set[str]]) -> list[tuple[str, str, str]]:
    """The `noisy_extra_pairs[pair]` pairs appended to the pair's noisy corpus (stream `noisy_extra`): no
    sentence equal, after the leakage guard's normalisation, to one in `taken` (language -> sentences: every
    other text of the world) or to another extra pair's."""
    from lem.data.leakage import normalise

    keys = {lang: {normalise(t) for t in texts} for lang, texts in taken.items()}

    def fresh(lang: str, text: str) -> bool:
        key = normalise(text)
        if key in keys[lang]:
            return False
        keys[lang].add(key)
        return True

    return noisy_pairs(s, pair, s.noisy_extra_pairs.get(s.pair_code(pair), 0), "noisy_extra", fresh)


NMT_HELD_OUT = {"valid": 100, "test": 200}  # pairs per pair of the NMT validation and test sets


def write_nmt_held_out(s: GenerateSettings, eval_dir: Path, banned: dict[str, set[str]]) -> None:
    """The curation task's NMT validation and test sets per pair (`eval_dir/nmt/{pair}.{valid,test}.tsv`,
    `src<TAB>tgt` with a header): clean translations that are in no other evaluation set and no noisy pair;
    their sentences join `banned`, so no training text of the generator holds them (the leakage guard checks
    the same files)."""
    for pair in PAIRS:
        src, tgt = pair.split("-")
        rng = random.Random(f"{s.seed}/nmt/{pair}")
        for split, n in NMT_HELD_OUT.items():
            rows: dict[str, str] = {}

            def fresh(f: str, x: Fill, rows=rows, src=src, tgt=tgt) -> bool:
                a, b = _text(f, x, src), _text(f, x, tgt)
                if a in banned[src] or a in rows or b in banned[tgt]:
                    return False
                rows[a] = b
                return True

            _draw(rng, n, fresh, f"nmt {split} {pair}")
            banned[src].update(rows)
            banned[tgt].update(rows.values())
            name = f"{s.pair_code(pair)}.{split}.tsv"
            write_text(eval_dir / "nmt" / name, _tsv([("src", "tgt"), *rows.items()]))


# --- code-mixed sentiment ---------------------------------------------------------------------------

_FILLERS_START = ["", "", "", "machan ", "ane ", "bro ", "mn hithanne "]
_FILLERS_END = ["", "", "", " ..", " !!", " machan", " bn", " neda"]


def _flip(p: str) -> str:
    return {"positive": "negative", "negative": "positive"}[p]


def sentiment_comment(rng: random.Random, label: str, negation: float) -> str:
    """A romanised-Sinhala/English comment whose polarity words (negation flips them) give `label`."""
    noun_en, noun_rom = rng.choice(lx.SENTIMENT_NOUNS)
    org = rng.choice(lx.entries("ORG")).key
    place = rng.choice(lx.entries("LOC")).key
    if label == "Neutral":
        style = rng.random()
        if style < 0.6:
            en, rom = rng.choice(lx.SENTIMENT_NEUTRAL)
            body = (en if rng.random() < 0.4 else rom).format(n=noun_en, r=noun_rom, l=place)
        else:
            adj = rng.choice([e for e in lx.entries("ADJ") if e.polarity == "neutral"])
            body = rng.choice(
                [
                    f"mage {noun_rom} {adj.rom}",
                    f"{org} eke {noun_rom} {adj.key} ne",
                    f"{place} wala {noun_en} eka {adj.rom}",
                ]
            )
    else:
        target = label.lower()
        negate = rng.random() < negation
        polarity = _flip(target) if negate else target
        if rng.random() < 0.6:
            adj = rng.choice([e for e in lx.entries("ADJ") if e.polarity == polarity])
            body = rng.choice(
                [
                    f"{org} eke {noun_rom} {adj.rom}" + (" na" if negate else "i"),
                    f"me {noun_rom} nam {adj.rom}" + (" na" if negate else ""),
                    f"{noun_rom} is {'not ' if negate else 'very '}{adj.key}",
                    f"{place} wala {noun_en} eka {adj.key}" + (" na" if negate else ""),
                ]
            )
        else:
            en, en_neg, rom, rom_neg, _ = rng.choice([v for v in lx.SENTIMENT_VERBS if v[4] == polarity])
            body = rng.choice(
                [
                    f"{org} eke {noun_rom} {rom_neg if negate else rom}",
                    f"{noun_rom} {en_neg if negate else en}",
                ]
            )
    return (rng.choice(_FILLERS_START) + body + rng.choice(_FILLERS_END)).strip()


def sentiment_set(s: GenerateSettings) -> list[tuple[str, str]]:
    rng = random.Random(f"{s.seed}/sentiment")
    labels = list(SENTIMENT_PRIORS)
    n = s.sentiment_examples
    want = {lb: round(p * n) for lb, p in SENTIMENT_PRIORS.items()}
    want["Neutral"] += n - sum(want.values())
    order = [lb for lb in labels for _ in range(want[lb])]
    rng.shuffle(order)
    rows, seen = [], set()
    for label in order:  # exact class shares before noise; distinct comments
        for _ in range(1000):
            text = sentiment_comment(rng, label, s.sentiment_negation)
            if text not in seen:
                break
        else:
            raise RuntimeError(f"sentiment: too few distinct {label} comments for {n} examples")
        seen.add(text)
        if rng.random() < s.sentiment_label_noise:
            label = rng.choice([lb for lb in labels if lb != label])
        rows.append((text, label))
    return rows


# --- lexicon files --------------------------------------------------------------------------------------


def emittable_tags(lang: str, entries: Sequence[lx.Entry] | None = None) -> set[tuple[str, str]]:
    """Every (word, tag) the generator can write in `lang`: forms of `entries` (default the lexicon's),
    template words, the lexicon's numbers (wider numbers and dates are counted from the text written)."""
    out: set[tuple[str, str]] = set()
    for e in lx.ENTRIES if entries is None else entries:
        for form, text in e.forms[lang].items():
            out.update(lx.parse_form(text, e.cat, lang, form))
        if e.cat == "NOUN" and lang == "ta":
            out.add((e.forms["ta"]["pl"][:-1] + "ை", "NOUN"))
    for tpl in TEMPLATES.values():
        for item in tpl[lx.LANGS.index(lang)].split():
            if not SLOT_RE.match(item):
                word, _, tag = item.rpartition("/")
                out.update((w, tag) for w in word.split("|"))
    for n in lx.NUMBERS:
        out.add((str(n), lx.NUMBER_TAG[lang]))
        if lang == "si":
            out.add((f"{n}ක්", "NUM"))
    if lang == "en":
        out.add(("an", "DT"))
        firsts: set[tuple[str, str]] = set()
        for tpl in TEMPLATES.values():
            first = tpl[0].split()[0]
            m = SLOT_RE.match(first)
            if m:
                for e in POOLS[m.group(1)] if m.group(1) != "Q" else []:
                    firsts.add(lx.parse_form(e.forms["en"].get("base", ""), e.cat, "en", "base")[0])
            else:
                w, _, t = first.rpartition("/")
                firsts.add((w, t))
        out.update((w[:1].upper() + w[1:], t) for w, t in firsts)
    return out


def gazetteer(lang: str, entries: Sequence[lx.Entry] | None = None) -> list[tuple[str, str]]:
    """Every surface form of every entity of `entries` (default the lexicon's; all case forms), with its type."""
    out: dict[str, str] = {}
    for e in lx.ENTRIES if entries is None else entries:
        if e.ner:
            for form, text in e.forms[lang].items():
                out.setdefault(" ".join(w for w, _ in lx.parse_form(text, e.cat, lang, form)), e.ner)
    return list(out.items())


# --- writing --------------------------------------------------------------------------------------------


def _tsv(rows) -> str:
    return "".join("\t".join(str(c) for c in r) + "\n" for r in rows)


def _conll(sents: list[list[Tok]]) -> str:
    return "".join("".join(f"{w}\t{p}\t{n}\n" for w, p, n in toks) + "\n" for toks in sents)


def _csv(rows: list[tuple[str, str]]) -> str:
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(["", "Sentence", "Sentiment"])
    for i, (text, label) in enumerate(rows):
        w.writerow([i, text, label])
    return buf.getvalue()


def _write_news(root: Path, news: dict[str, dict[str, Any]], codes: dict[str, str]) -> None:
    """The news benchmark's layout (lem.data.news) under the configured codes (`codes`: built-in -> code):
    folders named by `language_folder`, ids and the gold file's name by the codes."""
    with atomic_path(root) as tmp:
        for pair, bench in news.items():
            src, tgt = pair.split("-")
            site = tmp / f"{language_folder(codes[src])}-{language_folder(codes[tgt])}" / SITE
            for lang, side in ((src, 0), (tgt, 1)):
                folder = site / language_folder(codes[lang])
                folder.mkdir(parents=True, exist_ok=True)
                for doc, sides in bench["docs"].items():
                    lines = [f"{codes[lang]}_{doc}_{k}\t{t}" for k, t in enumerate(sides[side])]
                    (folder / str(doc)).write_text("\n".join(lines) + "\n", encoding="utf-8")
            gold = [(codes[src] + a[len(src) :], codes[tgt] + b[len(tgt) :]) for a, b in bench["gold"]]
            (site / f"{SITE}.{codes[src]}-{codes[tgt]}").write_text(_tsv(gold), encoding="utf-8")


def generate(settings: GenerateSettings, out_dir: str | Path, eval_dir: str | Path) -> dict[str, Any]:
    """Write the corpus (mono, para, gold, lexicon) under out_dir and the evaluation sets under eval_dir."""
    t0 = time.perf_counter()
    out_dir, eval_dir = Path(out_dir), Path(eval_dir)
    s = settings

    news = {pair: news_benchmark(s, pair) for pair in PAIRS}
    noisy = {pair: noisy_pairs(s, pair) for pair in PAIRS}
    banned: dict[str, set[str]] = {
        lg: set() for lg in lx.LANGS
    }  # evaluation sentences never in training text
    for pair in PAIRS:
        src, tgt = pair.split("-")
        for sides in news[pair]["docs"].values():
            banned[src].update(sides[0])
            banned[tgt].update(sides[1])
        for a, b, label in noisy[pair]:
            banned[src].add(a)
            if label != "untranslated":
                banned[
                    tgt if label != "wrong_language" else next(lg for lg in lx.LANGS if lg not in (src, tgt))
                ].add(b)
    write_nmt_held_out(s, eval_dir, banned)
    sentiment = sentiment_set(s)
    mono = {lg: mono_corpus(s, lg, banned[lg]) for lg in lx.LANGS}
    para = {pair: para_corpus(s, pair, banned) for pair in PAIRS}
    if any(s.noisy_extra_pairs.values()):
        taken = {lg: set(banned[lg]) | {sentence_text(t) for t in mono[lg]} for lg in lx.LANGS}
        for pair, splits in para.items():
            for rows in splits.values():
                for lang, side in zip(pair.split("-"), zip(*rows, strict=True), strict=False):
                    taken[lang].update(side)
        for pair in PAIRS:
            noisy[pair] += noisy_extra(s, pair, taken)

    code = s.codes
    for lg, sents in mono.items():
        write_text(out_dir / "mono" / f"{code[lg]}.txt", "".join(sentence_text(t) + "\n" for t in sents))
        write_text(out_dir / "gold" / f"{code[lg]}.conll", _conll(sents))
        counts = Counter((w, p) for toks in sents for w, p, _ in toks)
        vocab = emittable_tags(lg, world_entries(s)) | set(counts)
        rows = sorted(vocab, key=lambda wt: (-counts[wt], wt))
        lexicon = out_dir / "lexicon"
        write_text(lexicon / f"{code[lg]}.pos.tsv", _tsv((w, t, counts[(w, t)]) for w, t in rows))
        write_text(lexicon / f"{code[lg]}.ner.tsv", _tsv(gazetteer(lg, world_entries(s))))
    for pair, splits in para.items():
        for split, rows in splits.items():
            write_text(out_dir / "para" / f"{s.pair_code(pair)}.{split}.tsv", _tsv(rows))
    _write_news(eval_dir / "news", news, code)
    write_text(eval_dir / "sentiment" / "generated.csv", _csv(sentiment))
    for pair, rows in noisy.items():
        write_text(eval_dir / "noisy" / f"{s.pair_code(pair)}.tsv", _tsv([("src", "tgt", "label"), *rows]))

    result = {
        "mono": {code[lg]: len(v) for lg, v in mono.items()},
        "para": {s.pair_code(pair): {k: len(v) for k, v in sp.items()} for pair, sp in para.items()},
        "news": {
            s.pair_code(pair): {
                "documents": len(b["docs"]),
                "gold_documents": len(b["gold_docs"]),
                "gold_links": len(b["gold"]),
            }
            for pair, b in news.items()
        },
        "sentiment": dict(sorted(Counter(lb for _, lb in sentiment).items())),
        "noisy": {
            s.pair_code(pair): dict(sorted(Counter(r[2] for r in rows).items()))
            for pair, rows in noisy.items()
        },
        "settings": asdict(s),
    }
    log.info(
        "corpus generate: mono %s, para %s train/%s valid per pair, news %s docs per pair, sentiment %d, noisy %d per pair in %.1fs",
        result["mono"],
        s.para_train,
        s.para_valid,
        s.news_documents,
        len(sentiment),
        s.noisy_pairs,
        time.perf_counter() - t0,
    )
    return result
