"""The hand-written trilingual lexicon of the generated corpus: entities, nouns, verbs, adjectives, time words.

Every surface form carries its gold POS tag in each language's own tag set (English Penn, Sinhala UCSC,
Tamil UPOS). A form is written in a small inline notation: words separated by spaces, each word either
`word/TAG` or bare `word` (which then takes the entry's default tag for that language and form). Only the
inflected forms the templates need are listed: Sinhala and Tamil case endings are attached by hand, not by
rule, so every form is a real spelling.
"""

from __future__ import annotations

from dataclasses import dataclass, field

LANGS = ("en", "si", "ta")
ENTITY_TYPES = ("PER", "LOC", "ORG", "MISC")
PUNCT_TAG = {"en": {".": ".", ",": ","}, "si": {".": "FS", ",": "PUNC"}, "ta": {".": "PUNCT", ",": "PUNCT"}}
NUMBER_TAG = {"en": "CD", "si": "NUM", "ta": "NUM"}


@dataclass(frozen=True)
class Entry:
    """One lexical item: `cat` (PER, LOC, ORG, MISC, NOUN, VERB, ADJ, TIME), a semantic class used by the
    templates, surface forms per language and form name, a romanised Sinhala form and a polarity."""

    cat: str
    key: str
    forms: dict[str, dict[str, str]]
    cls: str = ""
    rom: str = ""
    polarity: str = "neutral"
    extra: dict[str, str] = field(default_factory=dict)

    @property
    def ner(self) -> str:
        return self.cat if self.cat in ENTITY_TYPES else ""


def default_tag(cat: str, lang: str, form: str) -> str:
    """Tag of a bare word of a form (inline `/TAG` overrides it)."""
    if cat in ENTITY_TYPES:
        return {"en": "NNP", "si": "NNP", "ta": "PROPN"}[lang]
    if cat == "NOUN":
        return {"en": "NNS" if form == "pl" else "NN", "si": "NNC", "ta": "NOUN"}[lang]
    if cat == "ADJ":
        return {"en": "JJ", "si": "JJ", "ta": "ADV" if form == "adv" else "ADJ"}[lang]
    if cat == "VERB":
        return {"en": "VBD" if form == "past" else "VB", "si": "VFM", "ta": "VERB"}[lang]
    raise ValueError(f"no default tag for a bare word of category {cat} ({lang}, {form})")


_EN_FUNCTION = {"of": "IN", "and": "CC", "the": "DT", "for": "IN"}


def _en_name(text: str) -> str:
    """English proper name: NNP words, except function words inside multi-word names."""
    return " ".join(f"{w}/{_EN_FUNCTION[w]}" if w in _EN_FUNCTION else w for w in text.split())


def _ta_acc_name(name: str) -> str:
    """Tamil accusative of a person name (the case ending goes on the last word)."""
    *head, last = name.split()
    if last.endswith("\u0bcd"):  # virama: ராஜன் -> ராஜனை
        last = last[:-1] + "\u0bc8"
    elif last.endswith(("\u0bbf", "\u0bc0", "\u0bc8")):  # -i, -ī, -ai: + யை
        last = last + "\u0baf\u0bc8"
    else:  # -ā or inherent -a: + வை
        last = last + "\u0bb5\u0bc8"
    return " ".join([*head, last])


# --- people: (English, Sinhala, Tamil) -------------------------------------------------------------
_PEOPLE = [
    ("Kamal Perera", "කමල් පෙරේරා", "கமல் பெரேரா"),
    ("Nimal Silva", "නිමල් සිල්වා", "நிமல் சில்வா"),
    ("Sunil Fernando", "සුනිල් ප්‍රනාන්දු", "சுனில் பெர்னாண்டோ"),
    ("Anura Bandara", "අනුර බණ්ඩාර", "அநுர பண்டார"),
    ("Chamari Jayasinghe", "චාමරි ජයසිංහ", "சாமரி ஜயசிங்க"),
    ("Dilani Wickramasinghe", "දිලානි වික්‍රමසිංහ", "திலானி விக்கிரமசிங்க"),
    ("Ruwan Dissanayake", "රුවන් දිසානායක", "ருவன் திசாநாயக்க"),
    ("Saman Kumara", "සමන් කුමාර", "சமன் குமார"),
    ("Priyanka Ranasinghe", "ප්‍රියංකා රණසිංහ", "பிரியங்கா ரணசிங்க"),
    ("Kumar Sangakkara", "කුමාර් සංගක්කාර", "குமார் சங்கக்கார"),
    ("Arumugam Sivakumar", "ආරුමුගම් සිවකුමාර්", "ஆறுமுகம் சிவகுமார்"),
    ("Selvaraj Murugan", "සෙල්වරාජ් මුරුගන්", "செல்வராஜ் முருகன்"),
    ("Kavitha Rajendran", "කවිතා රාජේන්ද්‍රන්", "கவிதா ராஜேந்திரன்"),
    ("Thilak Ganesan", "තිලක් ගනේෂන්", "திலக் கணேசன்"),
    ("Lakshmi Nadarajah", "ලක්ෂ්මි නඩරාජා", "லட்சுமி நடராஜா"),
    ("Mohamed Rizwan", "මොහොමඩ් රිස්වාන්", "முகமது ரிஸ்வான்"),
    ("Fathima Nazeer", "ෆාතිමා නසීර්", "பாத்திமா நசீர்"),
    ("Ahamed Faizal", "අහමඩ් ෆයිසාල්", "அஹமட் பைசல்"),
    ("John Wilson", "ජෝන් විල්සන්", "ஜோன் வில்சன்"),
    ("Sarah Thompson", "සාරා තොම්සන්", "சாரா தொம்சன்"),
]

# --- places: English; Sinhala base, dative, locative; Tamil base, dative, locative -------------------
_PLACES = [
    ("Colombo", "කොළඹ", "කොළඹට", "කොළඹදී", "கொழும்பு", "கொழும்புக்கு", "கொழும்பில்"),
    ("Kandy", "මහනුවර", "මහනුවරට", "මහනුවරදී", "கண்டி", "கண்டிக்கு", "கண்டியில்"),
    ("Galle", "ගාල්ල", "ගාල්ලට", "ගාල්ලේදී", "காலி", "காலிக்கு", "காலியில்"),
    ("Jaffna", "යාපනය", "යාපනයට", "යාපනයේදී", "யாழ்ப்பாணம்", "யாழ்ப்பாணத்துக்கு", "யாழ்ப்பாணத்தில்"),
    ("Trincomalee", "ත්‍රිකුණාමලය", "ත්‍රිකුණාමලයට", "ත්‍රිකුණාමලයේදී", "திருகோணமலை", "திருகோணமலைக்கு", "திருகோணமலையில்"),
    ("Batticaloa", "මඩකලපුව", "මඩකලපුවට", "මඩකලපුවේදී", "மட்டக்களப்பு", "மட்டக்களப்புக்கு", "மட்டக்களப்பில்"),
    ("Matara", "මාතර", "මාතරට", "මාතරදී", "மாத்தறை", "மாத்தறைக்கு", "மாத்தறையில்"),
    ("Kurunegala", "කුරුණෑගල", "කුරුණෑගලට", "කුරුණෑගලදී", "குருநாகல்", "குருநாகலுக்கு", "குருநாகலில்"),
    ("Anuradhapura", "අනුරාධපුරය", "අනුරාධපුරයට", "අනුරාධපුරයේදී", "அனுராதபுரம்", "அனுராதபுரத்துக்கு", "அனுராதபுரத்தில்"),
    ("Polonnaruwa", "පොළොන්නරුව", "පොළොන්නරුවට", "පොළොන්නරුවේදී", "பொலன்னறுவை", "பொலன்னறுவைக்கு", "பொலன்னறுவையில்"),
    ("Badulla", "බදුල්ල", "බදුල්ලට", "බදුල්ලේදී", "பதுளை", "பதுளைக்கு", "பதுளையில்"),
    ("Ratnapura", "රත්නපුරය", "රත්නපුරයට", "රත්නපුරයේදී", "இரத்தினபுரி", "இரத்தினபுரிக்கு", "இரத்தினபுரியில்"),
    ("Negombo", "මීගමුව", "මීගමුවට", "මීගමුවේදී", "நீர்கொழும்பு", "நீர்கொழும்புக்கு", "நீர்கொழும்பில்"),
    ("Vavuniya", "වවුනියාව", "වවුනියාවට", "වවුනියාවේදී", "வவுனியா", "வவுனியாவுக்கு", "வவுனியாவில்"),
    ("Hambantota", "හම්බන්තොට", "හම්බන්තොටට", "හම්බන්තොටදී", "அம்பாந்தோட்டை", "அம்பாந்தோட்டைக்கு", "அம்பாந்தோட்டையில்"),
    ("Nuwara Eliya", "නුවරඑළිය", "නුවරඑළියට", "නුවරඑළියේදී", "நுவரெலியா", "நுவரெலியாவுக்கு", "நுவரெலியாவில்"),
    ("Ampara", "අම්පාර", "අම්පාරට", "අම්පාරේදී", "அம்பாறை", "அம்பாறைக்கு", "அம்பாறையில்"),
    ("Mannar", "මන්නාරම", "මන්නාරමට", "මන්නාරමේදී", "மன்னார்", "மன்னாருக்கு", "மன்னாரில்"),
    ("Kalutara", "කළුතර", "කළුතරට", "කළුතරදී", "களுத்துறை", "களுத்துறைக்கு", "களுத்துறையில்"),
    ("Sri Lanka", "ශ්‍රී ලංකාව", "ශ්‍රී ලංකාවට", "ශ්‍රී ලංකාවේදී", "இலங்கை", "இலங்கைக்கு", "இலங்கையில்"),
    ("India", "ඉන්දියාව", "ඉන්දියාවට", "ඉන්දියාවේදී", "இந்தியா", "இந்தியாவுக்கு", "இந்தியாவில்"),
]

# --- organisations: English; Sinhala base, genitive; Tamil base, genitive ---------------------------
_ORGS = [
    (
        "Sri Lanka Ports Authority",
        "ශ්‍රී ලංකා වරාය අධිකාරිය",
        "ශ්‍රී ලංකා වරාය අධිකාරියේ",
        "இலங்கை துறைமுக அதிகாரசபை",
        "இலங்கை துறைமுக அதிகாரசபையின்",
    ),
    ("Ministry of Health", "සෞඛ්‍ය අමාත්‍යාංශය", "සෞඛ්‍ය අමාත්‍යාංශයේ", "சுகாதார அமைச்சு", "சுகாதார அமைச்சின்"),
    ("Ministry of Education", "අධ්‍යාපන අමාත්‍යාංශය", "අධ්‍යාපන අමාත්‍යාංශයේ", "கல்வி அமைச்சு", "கல்வி அமைச்சின்"),
    (
        "Central Bank of Sri Lanka",
        "ශ්‍රී ලංකා මහ බැංකුව",
        "ශ්‍රී ලංකා මහ බැංකුවේ",
        "இலங்கை மத்திய வங்கி",
        "இலங்கை மத்திய வங்கியின்",
    ),
    (
        "University of Colombo",
        "කොළඹ විශ්වවිද්‍යාලය",
        "කොළඹ විශ්වවිද්‍යාලයේ",
        "கொழும்பு பல்கலைக்கழகம்",
        "கொழும்பு பல்கலைக்கழகத்தின்",
    ),
    ("University of Jaffna", "යාපනය විශ්වවිද්‍යාලය", "යාපනය විශ්වවිද්‍යාලයේ", "யாழ்ப்பாணப் பல்கலைக்கழகம்", "யாழ்ப்பாணப் பல்கலைக்கழகத்தின்"),
    (
        "Sri Lanka Railways",
        "ශ්‍රී ලංකා දුම්රිය සේවය",
        "ශ්‍රී ලංකා දුම්රිය සේවයේ",
        "இலங்கை புகையிரத சேவை",
        "இலங்கை புகையிரத சேவையின்",
    ),
    (
        "Road Development Authority",
        "මාර්ග සංවර්ධන අධිකාරිය",
        "මාර්ග සංවර්ධන අධිකාරියේ",
        "வீதி அபிவிருத்தி அதிகாரசபை",
        "வீதி அபிவிருத்தி அதிகாரசபையின்",
    ),
    (
        "Ceylon Electricity Board",
        "ලංකා විදුලිබල මණ්ඩලය",
        "ලංකා විදුලිබල මණ්ඩලයේ",
        "இலங்கை மின்சார சபை",
        "இலங்கை மின்சார சபையின்",
    ),
    ("Election Commission", "මැතිවරණ කොමිෂන් සභාව", "මැතිවරණ කොමිෂන් සභාවේ", "தேர்தல் ஆணைக்குழு", "தேர்தல் ஆணைக்குழுவின்"),
    (
        "Department of Meteorology",
        "කාලගුණ විද්‍යා දෙපාර්තමේන්තුව",
        "කාලගුණ විද්‍යා දෙපාර්තමේන්තුවේ",
        "வளிமண்டலவியல் திணைக்களம்",
        "வளிமண்டலவியல் திணைக்களத்தின்",
    ),
    (
        "Disaster Management Centre",
        "ආපදා කළමනාකරණ මධ්‍යස්ථානය",
        "ආපදා කළමනාකරණ මධ්‍යස්ථානයේ",
        "அனர்த்த முகாமைத்துவ நிலையம்",
        "அனர்த்த முகாமைத்துவ நிலையத்தின்",
    ),
    ("Sri Lanka Police", "ශ්‍රී ලංකා පොලිසිය", "ශ්‍රී ලංකා පොලිසියේ", "இலங்கை பொலிஸ்", "இலங்கை பொலிஸின்"),
    (
        "Urban Development Authority",
        "නාගරික සංවර්ධන අධිකාරිය",
        "නාගරික සංවර්ධන අධිකාරියේ",
        "நகர அபிவிருத்தி அதிகாரசபை",
        "நகர அபிவிருத்தி அதிகாரசபையின்",
    ),
    (
        "World Health Organization",
        "ලෝක සෞඛ්‍ය සංවිධානය",
        "ලෝක සෞඛ්‍ය සංවිධානයේ",
        "உலக சுகாதார ஸ்தாபனம்",
        "உலக சுகாதார ஸ்தாபனத்தின்",
    ),
]

# --- festivals (MISC) -------------------------------------------------------------------------------
_MISC = [
    ("Vesak", "වෙසක්", "வெசாக்"),
    ("Poson", "පොසොන්", "பொசொன்"),
    ("Thai Pongal", "තෛපොංගල්", "தைப்பொங்கல்"),
    ("Deepavali", "දීපාවලි", "தீபாவளி"),
    ("Christmas", "නත්තල්", "நத்தார்"),
    ("Ramazan", "රාමසාන්", "ரமழான்"),
]

# --- common nouns: class (F facility, I item, P plan/event); English sg, pl; Sinhala definite,
# indefinite, plural; Tamil base, plural, accusative, dative; romanised Sinhala ------------------------
_NOUNS = [
    ("F", "school", "schools", "පාසල", "පාසලක්", "පාසල්", "பாடசாலை", "பாடசாலைகள்", "பாடசாலையை", "பாடசாலைக்கு", "iskole"),
    (
        "F",
        "hospital",
        "hospitals",
        "රෝහල",
        "රෝහලක්",
        "රෝහල්",
        "வைத்தியசாலை",
        "வைத்தியசாலைகள்",
        "வைத்தியசாலையை",
        "வைத்தியசாலைக்கு",
        "rohala",
    ),
    ("F", "bridge", "bridges", "පාලම", "පාලමක්", "පාලම්", "பாலம்", "பாலங்கள்", "பாலத்தை", "பாலத்துக்கு", "palama"),
    ("F", "road", "roads", "මාර්ගය", "මාර්ගයක්", "මාර්ග", "வீதி", "வீதிகள்", "வீதியை", "வீதிக்கு", "para"),
    (
        "F",
        "library",
        "libraries",
        "පුස්තකාලය",
        "පුස්තකාලයක්",
        "පුස්තකාල",
        "நூலகம்",
        "நூலகங்கள்",
        "நூலகத்தை",
        "நூலகத்துக்கு",
        "pusthakalaya",
    ),
    (
        "F",
        "market",
        "markets",
        "වෙළඳපොළ",
        "වෙළඳපොළක්",
        "වෙළඳපොළවල්",
        "சந்தை",
        "சந்தைகள்",
        "சந்தையை",
        "சந்தைக்கு",
        "pola",
    ),
    (
        "F",
        "factory",
        "factories",
        "කර්මාන්තශාලාව",
        "කර්මාන්තශාලාවක්",
        "කර්මාන්තශාලා",
        "தொழிற்சாலை",
        "தொழிற்சாலைகள்",
        "தொழிற்சாலையை",
        "தொழிற்சாலைக்கு",
        "factory eka",
    ),
    (
        "F",
        "office",
        "offices",
        "කාර්යාලය",
        "කාර්යාලයක්",
        "කාර්යාල",
        "அலுவலகம்",
        "அலுவலகங்கள்",
        "அலுவலகத்தை",
        "அலுவலகத்துக்கு",
        "office eka",
    ),
    (
        "F",
        "railway/NN station",
        "railway/NN stations",
        "දුම්රිය ස්ථානය",
        "දුම්රිය ස්ථානයක්",
        "දුම්රිය ස්ථාන",
        "புகையிரத நிலையம்",
        "புகையிரத நிலையங்கள்",
        "புகையிரத நிலையத்தை",
        "புகையிரத நிலையத்துக்கு",
        "station eka",
    ),
    (
        "F",
        "hotel",
        "hotels",
        "හෝටලය",
        "හෝටලයක්",
        "හෝටල්",
        "ஹோட்டல்",
        "ஹோட்டல்கள்",
        "ஹோட்டலை",
        "ஹோட்டலுக்கு",
        "hotel eka",
    ),
    ("F", "park", "parks", "උද්‍යානය", "උද්‍යානයක්", "උද්‍යාන", "பூங்கா", "பூங்காக்கள்", "பூங்காவை", "பூங்காவுக்கு", "park eka"),
    (
        "F",
        "airport",
        "airports",
        "ගුවන්තොටුපළ",
        "ගුවන්තොටුපළක්",
        "ගුවන්තොටුපළවල්",
        "விமான நிலையம்",
        "விமான நிலையங்கள்",
        "விமான நிலையத்தை",
        "விமான நிலையத்துக்கு",
        "airport eka",
    ),
    (
        "F",
        "harbour",
        "harbours",
        "වරාය",
        "වරායක්",
        "වරායවල්",
        "துறைமுகம்",
        "துறைமுகங்கள்",
        "துறைமுகத்தை",
        "துறைமுகத்துக்கு",
        "waraya",
    ),
    (
        "F",
        "stadium",
        "stadiums",
        "ක්‍රීඩාංගණය",
        "ක්‍රීඩාංගණයක්",
        "ක්‍රීඩාංගණ",
        "விளையாட்டரங்கம்",
        "விளையாட்டரங்கங்கள்",
        "விளையாட்டரங்கத்தை",
        "விளையாட்டரங்கத்துக்கு",
        "stadium eka",
    ),
    ("F", "temple", "temples", "විහාරය", "විහාරයක්", "විහාර", "ஆலயம்", "ஆலயங்கள்", "ஆலயத்தை", "ஆலயத்துக்கு", "pansala"),
    ("F", "bank", "banks", "බැංකුව", "බැංකුවක්", "බැංකු", "வங்கி", "வங்கிகள்", "வங்கியை", "வங்கிக்கு", "bank eka"),
    ("F", "house", "houses", "නිවස", "නිවසක්", "නිවාස", "வீடு", "வீடுகள்", "வீட்டை", "வீட்டுக்கு", "gedara"),
    ("F", "shop", "shops", "සාප්පුව", "සාප්පුවක්", "සාප්පු", "கடை", "கடைகள்", "கடையை", "கடைக்கு", "kade"),
    (
        "F",
        "building",
        "buildings",
        "ගොඩනැගිල්ල",
        "ගොඩනැගිල්ලක්",
        "ගොඩනැගිලි",
        "கட்டடம்",
        "கட்டடங்கள்",
        "கட்டடத்தை",
        "கட்டடத்துக்கு",
        "building eka",
    ),
    ("F", "reservoir", "reservoirs", "වැව", "වැවක්", "වැව්", "குளம்", "குளங்கள்", "குளத்தை", "குளத்துக்கு", "wewa"),
    (
        "F",
        "playground",
        "playgrounds",
        "ක්‍රීඩාපිටිය",
        "ක්‍රීඩාපිටියක්",
        "ක්‍රීඩාපිටි",
        "மைதானம்",
        "மைதானங்கள்",
        "மைதானத்தை",
        "மைதானத்துக்கு",
        "grounds eka",
    ),
    ("I", "book", "books", "පොත", "පොතක්", "පොත්", "புத்தகம்", "புத்தகங்கள்", "புத்தகத்தை", "புத்தகத்துக்கு", "potha"),
    (
        "I",
        "computer",
        "computers",
        "පරිගණකය",
        "පරිගණකයක්",
        "පරිගණක",
        "கணினி",
        "கணினிகள்",
        "கணினியை",
        "கணினிக்கு",
        "computer eka",
    ),
    (
        "I",
        "bicycle",
        "bicycles",
        "බයිසිකලය",
        "බයිසිකලයක්",
        "බයිසිකල්",
        "சைக்கிள்",
        "சைக்கிள்கள்",
        "சைக்கிளை",
        "சைக்கிளுக்கு",
        "bicycle eka",
    ),
    ("I", "bag", "bags", "බෑගය", "බෑගයක්", "බෑග්", "பை", "பைகள்", "பையை", "பைக்கு", "bag eka"),
    (
        "I",
        "phone",
        "phones",
        "දුරකථනය",
        "දුරකථනයක්",
        "දුරකථන",
        "தொலைபேசி",
        "தொலைபேசிகள்",
        "தொலைபேசியை",
        "தொலைபேசிக்கு",
        "phone eka",
    ),
    ("I", "bus", "buses", "බසය", "බසයක්", "බස්", "பேருந்து", "பேருந்துகள்", "பேருந்தை", "பேருந்துக்கு", "bus eka"),
    (
        "I",
        "medicine",
        "medicines",
        "ඖෂධය",
        "ඖෂධයක්",
        "ඖෂධ",
        "மருந்து",
        "மருந்துகள்",
        "மருந்தை",
        "மருந்துக்கு",
        "beheth",
    ),
    ("I", "vehicle", "vehicles", "වාහනය", "වාහනයක්", "වාහන", "வாகனம்", "வாகனங்கள்", "வாகனத்தை", "வாகனத்துக்கு", "wahanaya"),
    ("I", "boat", "boats", "බෝට්ටුව", "බෝට්ටුවක්", "බෝට්ටු", "படகு", "படகுகள்", "படகை", "படகுக்கு", "boat eka"),
    ("I", "chair", "chairs", "පුටුව", "පුටුවක්", "පුටු", "நாற்காலி", "நாற்காலிகள்", "நாற்காலியை", "நாற்காலிக்கு", "putuwa"),
    ("I", "table", "tables", "මේසය", "මේසයක්", "මේස", "மேசை", "மேசைகள்", "மேசையை", "மேசைக்கு", "mesaya"),
    ("I", "pen", "pens", "පෑන", "පෑනක්", "පෑන්", "பேனா", "பேனாக்கள்", "பேனாவை", "பேனாவுக்கு", "pæna"),
    ("I", "tree", "trees", "ගස", "ගසක්", "ගස්", "மரம்", "மரங்கள்", "மரத்தை", "மரத்துக்கு", "gaha"),
    ("I", "gift", "gifts", "තෑග්ග", "තෑග්ගක්", "තෑගි", "பரிசு", "பரிசுகள்", "பரிசை", "பரிசுக்கு", "thagga"),
    (
        "I",
        "ticket",
        "tickets",
        "ටිකට්පත",
        "ටිකට්පතක්",
        "ටිකට්පත්",
        "டிக்கெட்",
        "டிக்கெட்டுகள்",
        "டிக்கெட்டை",
        "டிக்கெட்டுக்கு",
        "ticket eka",
    ),
    ("I", "lorry", "lorries", "ලොරිය", "ලොරියක්", "ලොරි", "லொறி", "லொறிகள்", "லொறியை", "லொறிக்கு", "lorry eka"),
    ("I", "camera", "cameras", "කැමරාව", "කැමරාවක්", "කැමරා", "கமரா", "கமராக்கள்", "கமராவை", "கமராவுக்கு", "camera eka"),
    (
        "P",
        "plan",
        "plans",
        "සැලැස්ම",
        "සැලැස්මක්",
        "සැලසුම්",
        "திட்டம்",
        "திட்டங்கள்",
        "திட்டத்தை",
        "திட்டத்துக்கு",
        "salasuma",
    ),
    (
        "P",
        "project",
        "projects",
        "ව්‍යාපෘතිය",
        "ව්‍යාපෘතියක්",
        "ව්‍යාපෘති",
        "செயற்திட்டம்",
        "செயற்திட்டங்கள்",
        "செயற்திட்டத்தை",
        "செயற்திட்டத்துக்கு",
        "project eka",
    ),
    (
        "P",
        "programme",
        "programmes",
        "වැඩසටහන",
        "වැඩසටහනක්",
        "වැඩසටහන්",
        "வேலைத்திட்டம்",
        "வேலைத்திட்டங்கள்",
        "வேலைத்திட்டத்தை",
        "வேலைத்திட்டத்துக்கு",
        "wadasatahana",
    ),
    (
        "P",
        "policy",
        "policies",
        "ප්‍රතිපත්තිය",
        "ප්‍රතිපත්තියක්",
        "ප්‍රතිපත්ති",
        "கொள்கை",
        "கொள்கைகள்",
        "கொள்கையை",
        "கொள்கைக்கு",
        "prathipaththiya",
    ),
    ("P", "law", "laws", "නීතිය", "නීතියක්", "නීති", "சட்டம்", "சட்டங்கள்", "சட்டத்தை", "சட்டத்துக்கு", "neethiya"),
    (
        "P",
        "report",
        "reports",
        "වාර්තාව",
        "වාර්තාවක්",
        "වාර්තා",
        "அறிக்கை",
        "அறிக்கைகள்",
        "அறிக்கையை",
        "அறிக்கைக்கு",
        "report eka",
    ),
    (
        "P",
        "budget",
        "budgets",
        "අයවැය",
        "අයවැයක්",
        "අයවැය",
        "வரவுசெலவுத்திட்டம்",
        "வரவுசெலவுத்திட்டங்கள்",
        "வரவுசெலவுத்திட்டத்தை",
        "வரவுசெலவுத்திட்டத்துக்கு",
        "ayawaya",
    ),
    (
        "P",
        "proposal",
        "proposals",
        "යෝජනාව",
        "යෝජනාවක්",
        "යෝජනා",
        "பிரேரணை",
        "பிரேரணைகள்",
        "பிரேரணையை",
        "பிரேரணைக்கு",
        "yojanawa",
    ),
    (
        "P",
        "agreement",
        "agreements",
        "ගිවිසුම",
        "ගිවිසුමක්",
        "ගිවිසුම්",
        "ஒப்பந்தம்",
        "ஒப்பந்தங்கள்",
        "ஒப்பந்தத்தை",
        "ஒப்பந்தத்துக்கு",
        "giwisuma",
    ),
    (
        "P",
        "service",
        "services",
        "සේවාව",
        "සේවාවක්",
        "සේවා",
        "சேவை",
        "சேவைகள்",
        "சேவையை",
        "சேவைக்கு",
        "service eka",
    ),
    ("P", "system", "systems", "ක්‍රමය", "ක්‍රමයක්", "ක්‍රම", "முறை", "முறைகள்", "முறையை", "முறைக்கு", "kramaya"),
    (
        "P",
        "decision",
        "decisions",
        "තීරණය",
        "තීරණයක්",
        "තීරණ",
        "தீர்மானம்",
        "தீர்மானங்கள்",
        "தீர்மானத்தை",
        "தீர்மானத்துக்கு",
        "theeranaya",
    ),
    (
        "P",
        "festival",
        "festivals",
        "උත්සවය",
        "උත්සවයක්",
        "උත්සව",
        "விழா",
        "விழாக்கள்",
        "விழாவை",
        "விழாவுக்கு",
        "uthsawaya",
    ),
    (
        "P",
        "competition",
        "competitions",
        "තරගය",
        "තරගයක්",
        "තරග",
        "போட்டி",
        "போட்டிகள்",
        "போட்டியை",
        "போட்டிக்கு",
        "tharagaya",
    ),
    (
        "P",
        "examination",
        "examinations",
        "විභාගය",
        "විභාගයක්",
        "විභාග",
        "பரீட்சை",
        "பரீட்சைகள்",
        "பரீட்சையை",
        "பரீட்சைக்கு",
        "wibhagaya",
    ),
    (
        "P",
        "course",
        "courses",
        "පාඨමාලාව",
        "පාඨමාලාවක්",
        "පාඨමාලා",
        "கற்கைநெறி",
        "கற்கைநெறிகள்",
        "கற்கைநெறியை",
        "கற்கைநெறிக்கு",
        "course eka",
    ),
    (
        "P",
        "meeting",
        "meetings",
        "රැස්වීම",
        "රැස්වීමක්",
        "රැස්වීම්",
        "கூட்டம்",
        "கூட்டங்கள்",
        "கூட்டத்தை",
        "கூட்டத்துக்கு",
        "meeting eka",
    ),
    (
        "P",
        "survey",
        "surveys",
        "සමීක්ෂණය",
        "සමීක්ෂණයක්",
        "සමීක්ෂණ",
        "ஆய்வு",
        "ஆய்வுகள்",
        "ஆய்வை",
        "ஆய்வுக்கு",
        "survey eka",
    ),
    (
        "P",
        "campaign",
        "campaigns",
        "ව්‍යාපාරය",
        "ව්‍යාපාරයක්",
        "ව්‍යාපාර",
        "பிரசாரம்",
        "பிரசாரங்கள்",
        "பிரசாரத்தை",
        "பிரசாரத்துக்கு",
        "campaign eka",
    ),
]

# --- verbs: class (C create, A act on a facility, P act on a plan, I act on items, S speech);
# English base, past; Sinhala past (finite), infinitive; Tamil past honorific, past neuter, infinitive -----
_VERBS = [
    (
        "C",
        "open",
        "opened",
        "විවෘත/JCV කළේය",
        "විවෘත/JCV කිරීමට/VNN",
        "திறந்து வைத்தார்/AUX",
        "திறந்து வைத்தது/AUX",
        "திறக்க",
    ),
    ("C", "build", "built", "ඉදි/RPCV කළේය", "ඉදි/RPCV කිරීමට/VNN", "நிர்மாணித்தார்", "நிர்மாணித்தது", "நிர்மாணிக்க"),
    ("C", "establish", "established", "පිහිටුවීය", "පිහිටුවීමට/VNN", "நிறுவினார்", "நிறுவியது", "நிறுவ"),
    (
        "A",
        "renovate",
        "renovated",
        "ප්‍රතිසංස්කරණය/NNC කළේය",
        "ප්‍රතිසංස්කරණය/NNC කිරීමට/VNN",
        "புனரமைத்தார்",
        "புனரமைத்தது",
        "புனரமைக்க",
    ),
    (
        "A",
        "repair",
        "repaired",
        "අලුත්වැඩියා/NCV කළේය",
        "අලුත්වැඩියා/NCV කිරීමට/VNN",
        "திருத்தினார்",
        "திருத்தியது",
        "திருத்த",
    ),
    (
        "A",
        "expand",
        "expanded",
        "පුළුල්/JJ කළේය",
        "පුළුල්/JJ කිරීමට/VNN",
        "விரிவுபடுத்தினார்",
        "விரிவுபடுத்தியது",
        "விரிவுபடுத்த",
    ),
    (
        "A",
        "inspect",
        "inspected",
        "පරීක්ෂා/NCV කළේය",
        "පරීක්ෂා/NCV කිරීමට/VNN",
        "பரிசோதித்தார்",
        "பரிசோதித்தது",
        "பரிசோதிக்க",
    ),
    ("A", "close", "closed", "වසා/VNF දැමීය", "වසා/VNF දැමීමට/VNN", "மூடினார்", "மூடியது", "மூட"),
    ("A", "visit", "visited", "නිරීක්ෂණය/NNC කළේය", "නිරීක්ෂණය/NNC කිරීමට/VNN", "பார்வையிட்டார்", "பார்வையிட்டது", "பார்வையிட"),
    (
        "A",
        "modernise",
        "modernised",
        "නවීකරණය/NNC කළේය",
        "නවීකරණය/NNC කිරීමට/VNN",
        "நவீனமயப்படுத்தினார்",
        "நவீனமயப்படுத்தியது",
        "நவீனமயப்படுத்த",
    ),
    (
        "A",
        "clean",
        "cleaned",
        "පිරිසිදු/JJ කළේය",
        "පිරිසිදු/JJ කිරීමට/VNN",
        "சுத்தம்/NOUN செய்தார்",
        "சுத்தம்/NOUN செய்தது",
        "சுத்தம்/NOUN செய்ய",
    ),
    (
        "A",
        "develop",
        "developed",
        "සංවර්ධනය/NNC කළේය",
        "සංවර්ධනය/NNC කිරීමට/VNN",
        "அபிவிருத்தி/NOUN செய்தார்",
        "அபிவிருத்தி/NOUN செய்தது",
        "அபிவிருத்தி/NOUN செய்ய",
    ),
    ("P", "approve", "approved", "අනුමත/JCV කළේය", "අනුමත/JCV කිරීමට/VNN", "அங்கீகரித்தார்", "அங்கீகரித்தது", "அங்கீகரிக்க"),
    (
        "P",
        "reject",
        "rejected",
        "ප්‍රතික්ෂේප/NCV කළේය",
        "ප්‍රතික්ෂේප/NCV කිරීමට/VNN",
        "நிராகரித்தார்",
        "நிராகரித்தது",
        "நிராகரிக்க",
    ),
    (
        "P",
        "present",
        "presented",
        "ඉදිරිපත්/RPCV කළේය",
        "ඉදිරිපත්/RPCV කිරීමට/VNN",
        "சமர்ப்பித்தார்",
        "சமர்ப்பித்தது",
        "சமர்ப்பிக்க",
    ),
    (
        "P",
        "implement",
        "implemented",
        "ක්‍රියාත්මක/JCV කළේය",
        "ක්‍රියාත්මක/JCV කිරීමට/VNN",
        "நடைமுறைப்படுத்தினார்",
        "நடைமுறைப்படுத்தியது",
        "நடைமுறைப்படுத்த",
    ),
    ("P", "launch", "launched", "දියත්/RPCV කළේය", "දියත්/RPCV කිරීමට/VNN", "ஆரம்பித்தார்", "ஆரம்பித்தது", "ஆரம்பிக்க"),
    (
        "P",
        "review",
        "reviewed",
        "සමාලෝචනය/NNC කළේය",
        "සමාලෝචනය/NNC කිරීමට/VNN",
        "மீளாய்வு/NOUN செய்தார்",
        "மீளாய்வு/NOUN செய்தது",
        "மீளாய்வு/NOUN செய்ய",
    ),
    ("P", "prepare", "prepared", "සකස්/JCV කළේය", "සකස්/JCV කිරීමට/VNN", "தயாரித்தார்", "தயாரித்தது", "தயாரிக்க"),
    (
        "P",
        "cancel",
        "cancelled",
        "අවලංගු/JJ කළේය",
        "අවලංගු/JJ කිරීමට/VNN",
        "இரத்து/NOUN செய்தார்",
        "இரத்து/NOUN செய்தது",
        "இரத்து/NOUN செய்ய",
    ),
    ("P", "support", "supported", "සහාය/NNC දුන්නේය", "සහාය/NNC දීමට/VNN", "ஆதரித்தார்", "ஆதரித்தது", "ஆதரிக்க"),
    ("P", "postpone", "postponed", "කල්/NNC දැමීය", "කල්/NNC දැමීමට/VNN", "ஒத்திவைத்தார்", "ஒத்திவைத்தது", "ஒத்திவைக்க"),
    (
        "P",
        "organise",
        "organised",
        "සංවිධානය/NNC කළේය",
        "සංවිධානය/NNC කිරීමට/VNN",
        "ஏற்பாடு/NOUN செய்தார்",
        "ஏற்பாடு/NOUN செய்தது",
        "ஏற்பாடு/NOUN செய்ய",
    ),
    (
        "I",
        "distribute",
        "distributed",
        "බෙදා/VNF දුන්නේය",
        "බෙදා/VNF දීමට/VNN",
        "விநியோகித்தார்",
        "விநியோகித்தது",
        "விநியோகிக்க",
    ),
    ("I", "buy", "bought", "මිලදී/VNF ගත්තේය", "මිලදී/VNF ගැනීමට/VNN", "வாங்கினார்", "வாங்கியது", "வாங்க"),
    (
        "I",
        "donate",
        "donated",
        "පරිත්‍යාග/NCV කළේය",
        "පරිත්‍යාග/NCV කිරීමට/VNN",
        "நன்கொடையாக/ADV வழங்கினார்",
        "நன்கொடையாக/ADV வழங்கியது",
        "நன்கொடையாக/ADV வழங்க",
    ),
    ("I", "send", "sent", "යැවීය", "යැවීමට/VNN", "அனுப்பினார்", "அனுப்பியது", "அனுப்ப"),
    ("I", "provide", "provided", "ලබා/VNF දුන්නේය", "ලබා/VNF දීමට/VNN", "வழங்கினார்", "வழங்கியது", "வழங்க"),
    (
        "I",
        "sell",
        "sold",
        "විකුණුවේය",
        "විකිණීමට/VNN",
        "விற்பனை/NOUN செய்தார்",
        "விற்பனை/NOUN செய்தது",
        "விற்பனை/NOUN செய்ய",
    ),
    ("I", "collect", "collected", "එකතු/JCV කළේය", "එකතු/JCV කිරීමට/VNN", "சேகரித்தார்", "சேகரித்தது", "சேகரிக்க"),
    (
        "I",
        "import",
        "imported",
        "ආනයනය/NNC කළේය",
        "ආනයනය/NNC කිරීමට/VNN",
        "இறக்குமதி/NOUN செய்தார்",
        "இறக்குமதி/NOUN செய்தது",
        "இறக்குமதி/NOUN செய்ய",
    ),
    ("S", "say", "said", "පැවසීය", "පැවසීමට/VNN", "கூறினார்", "கூறியது", "கூற"),
    ("S", "state", "stated", "ප්‍රකාශ/NCV කළේය", "ප්‍රකාශ/NCV කිරීමට/VNN", "தெரிவித்தார்", "தெரிவித்தது", "தெரிவிக்க"),
    (
        "S",
        "announce",
        "announced",
        "නිවේදනය/NNC කළේය",
        "නිවේදනය/NNC කිරීමට/VNN",
        "அறிவித்தார்",
        "அறிவித்தது",
        "அறிவிக்க",
    ),
    (
        "S",
        "mention",
        "mentioned",
        "සඳහන්/JCV කළේය",
        "සඳහන්/JCV කිරීමට/VNN",
        "குறிப்பிட்டார்",
        "குறிப்பிட்டது",
        "குறிப்பிட",
    ),
    (
        "S",
        "emphasise",
        "emphasised",
        "අවධාරණය/NNC කළේය",
        "අවධාරණය/NNC කිරීමට/VNN",
        "வலியுறுத்தினார்",
        "வலியுறுத்தியது",
        "வலியுறுத்த",
    ),
]

# --- adjectives: English; Sinhala; Tamil attributive, adverbial (predicate with உள்ளது); romanised; polarity
_ADJECTIVES = [
    ("good", "හොඳ", "நல்ல", "நன்றாக", "hoda", "positive"),
    ("excellent", "විශිෂ්ට", "சிறந்த", "சிறப்பாக", "niyamai", "positive"),
    ("beautiful", "ලස්සන", "அழகான", "அழகாக", "lassana", "positive"),
    ("clean", "පිරිසිදු", "சுத்தமான", "சுத்தமாக", "pirisidu", "positive"),
    ("modern", "නවීන", "நவீன", "நவீனமாக", "nawina", "positive"),
    ("safe", "ආරක්ෂිත", "பாதுகாப்பான", "பாதுகாப்பாக", "arakshitha", "positive"),
    ("fast", "වේගවත්", "வேகமான", "வேகமாக", "wegawath", "positive"),
    ("useful", "ප්‍රයෝජනවත්", "பயனுள்ள", "பயனுள்ளதாக", "prayojanawath", "positive"),
    ("successful", "සාර්ථක", "வெற்றிகரமான", "வெற்றிகரமாக", "sarthaka", "positive"),
    ("cheap", "ලාභ", "மலிவான", "மலிவாக", "laabai", "positive"),
    ("strong", "ශක්තිමත්", "பலமான", "பலமாக", "shakthimath", "positive"),
    ("quiet", "නිස්කලංක", "அமைதியான", "அமைதியாக", "niskalanka", "positive"),
    ("bad", "නරක", "மோசமான", "மோசமாக", "naraka", "negative"),
    ("dirty", "අපිරිසිදු", "அசுத்தமான", "அசுத்தமாக", "apirisidu", "negative"),
    ("dangerous", "අනතුරුදායක", "ஆபத்தான", "ஆபத்தாக", "anathurudayaka", "negative"),
    ("slow", "මන්දගාමී", "மெதுவான", "மெதுவாக", "hemin", "negative"),
    ("expensive", "මිල/NNC අධික", "விலையுயர்ந்த", "விலையுயர்ந்ததாக", "ganan wadi", "negative"),
    ("weak", "දුර්වල", "பலவீனமான", "பலவீனமாக", "durwala", "negative"),
    ("useless", "නිෂ්ඵල", "பயனற்ற", "பயனற்றதாக", "wadakata nathi", "negative"),
    ("unsafe", "අනාරක්ෂිත", "பாதுகாப்பற்ற", "பாதுகாப்பற்றதாக", "anarakshitha", "negative"),
    ("noisy", "ඝෝෂාකාරී", "சத்தமான", "சத்தமாக", "sadda wadi", "negative"),
    ("terrible", "භයානක", "பயங்கரமான", "பயங்கரமாக", "bayanakai", "negative"),
    ("large", "විශාල", "பெரிய", "பெரிதாக", "loku", "neutral"),
    ("small", "කුඩා", "சிறிய", "சிறியதாக", "podi", "neutral"),
    ("new", "නව", "புதிய", "புதிதாக", "aluth", "neutral"),
    ("old", "පැරණි", "பழைய", "பழையதாக", "parana", "neutral"),
    ("long", "දිගු", "நீண்ட", "நீளமாக", "diga", "neutral"),
    ("main", "ප්‍රධාන", "பிரதான", "பிரதானமாக", "pradhana", "neutral"),
    ("public", "පොදු", "பொது", "பொதுவாக", "podu", "neutral"),
    ("tall", "උස", "உயரமான", "உயரமாக", "usa", "neutral"),
    ("wide", "පළල්", "அகலமான", "அகலமாக", "palal", "neutral"),
    ("busy", "කාර්යබහුල", "பரபரப்பான", "பரபரப்பாக", "busy", "neutral"),
]

# --- time expressions (all inline-tagged) -------------------------------------------------------------
_TIMES = [
    ("yesterday/NN", "ඊයේ/NNC", "நேற்று/ADV"),
    ("today/NN", "අද/NNC", "இன்று/ADV"),
    ("last/JJ week/NN", "පසුගිය/VP සතියේ/NNC", "கடந்த/ADJ வாரம்/NOUN"),
    ("last/JJ month/NN", "පසුගිය/VP මාසයේ/NNC", "கடந்த/ADJ மாதம்/NOUN"),
    ("last/JJ year/NN", "පසුගිය/VP වසරේ/NNC", "கடந்த/ADJ ஆண்டு/NOUN"),
    ("this/DT morning/NN", "අද/NNC උදෑසන/NNC", "இன்று/ADV காலை/NOUN"),
    ("on/IN Monday/NNP", "සඳුදා/NNC", "திங்கட்கிழமை/NOUN"),
    ("on/IN Wednesday/NNP", "බදාදා/NNC", "புதன்கிழமை/NOUN"),
    ("on/IN Friday/NNP", "සිකුරාදා/NNC", "வெள்ளிக்கிழமை/NOUN"),
    ("on/IN Sunday/NNP", "ඉරිදා/NNC", "ஞாயிற்றுக்கிழமை/NOUN"),
]

# Numbers the templates may use ("NUM NOUNs were given"): never 1, so English plurals stay right.
NUMBERS = tuple(list(range(2, 21)) + list(range(25, 101, 5)) + list(range(150, 1001, 50)))

# --- code-mixed sentiment vocabulary: (English, romanised Sinhala) ------------------------------------
SENTIMENT_NOUNS = [
    ("signal", "signal eka"),
    ("data package", "data package eka"),
    ("internet", "internet eka"),
    ("connection", "connection eka"),
    ("service", "service eka"),
    ("bill", "bill eka"),
    ("network", "network eka"),
    ("customer care", "customer care eka"),
    ("router", "router eka"),
    ("app", "app eka"),
]
# (English, English negated, romanised, romanised negated, polarity)
SENTIMENT_VERBS = [
    ("works well", "does not work", "hodata wada karanawa", "wada karanne na", "positive"),
    ("helped us", "did not help", "loku udawwak kala", "udaw kale na", "positive"),
    ("is improving", "is not improving", "diyunu wenawa", "diyunu wenne na", "positive"),
    ("keeps dropping", "does not drop", "nithara kapenawa", "kapenne na", "negative"),
    ("wastes money", "does not waste money", "salli nasthi karanawa", "salli nasthi karanne na", "negative"),
    ("cheated us", "did not cheat us", "ape salli kala", "ape salli kale na", "negative"),
]
SENTIMENT_NEUTRAL = [
    ("how to activate the {n}", "{r} activate karanne kohomada"),
    ("please send details about the {n}", "{r} gana details ewanna"),
    ("is there a new {n} offer", "aluth {r} offer ekak thiyenawada"),
    ("I need the {n} for my office", "mata office ekata {r} ona"),
    ("what is the price of the {n}", "{r} ganan kiyada"),
    ("when will the {n} come to {l}", "{l} walata {r} enne kawadda"),
    ("who can help with the {n}", "{r} gana help karanna puluwan kauda"),
]


def _plain(text: str) -> str:
    """The words of an inline-tagged form, without tags."""
    return " ".join(w.rpartition("/")[0] or w for w in text.split())


def _entries() -> list[Entry]:
    out: list[Entry] = []
    for en, si, ta in _PEOPLE:
        out.append(
            Entry(
                "PER",
                en,
                {"en": {"base": en}, "si": {"base": si}, "ta": {"base": ta, "acc": _ta_acc_name(ta)}},
            )
        )
    for en, si, si_dat, si_loc, ta, ta_dat, ta_loc in _PLACES:
        forms = {
            "en": {"base": en},
            # genitive (attributive) form: the locative without its -දී ("යාපනයේදී" -> "යාපනයේ")
            "si": {"base": si, "dat": si_dat, "loc": si_loc, "gen": si_loc.removesuffix("දී")},
            "ta": {"base": ta, "dat": ta_dat, "loc": ta_loc},
        }
        out.append(Entry("LOC", en, forms))
    for en, si, si_gen, ta, ta_gen in _ORGS:
        forms = {
            "en": {"base": _en_name(en)},
            "si": {"base": si, "gen": si_gen},
            "ta": {"base": ta, "gen": ta_gen},
        }
        out.append(Entry("ORG", en, forms))
    for en, si, ta in _MISC:
        out.append(Entry("MISC", en, {"en": {"base": en}, "si": {"base": si}, "ta": {"base": ta}}))
    for cls, en, en_pl, si, si_ind, si_pl, ta, ta_pl, ta_acc, ta_dat, rom in _NOUNS:
        forms = {
            "en": {"base": en, "pl": en_pl},
            "si": {"base": si, "indef": si_ind, "pl": si_pl},
            "ta": {"base": ta, "pl": ta_pl, "acc": ta_acc, "dat": ta_dat},
        }
        out.append(Entry("NOUN", _plain(en), forms, cls=cls, rom=rom))
    for cls, en, en_past, si_past, si_inf, ta_h, ta_n, ta_inf in _VERBS:
        forms = {
            "en": {"base": en, "past": en_past},
            "si": {"past": si_past, "inf": si_inf},
            "ta": {"past": ta_h, "past_n": ta_n, "inf": ta_inf},
        }
        out.append(Entry("VERB", en, forms, cls=cls))
    for en, si, ta, ta_adv, rom, pol in _ADJECTIVES:
        forms = {"en": {"base": en}, "si": {"base": si}, "ta": {"base": ta, "adv": ta_adv}}
        out.append(Entry("ADJ", en, forms, rom=rom, polarity=pol))
    for en, si, ta in _TIMES:
        out.append(Entry("TIME", _plain(en), {"en": {"base": en}, "si": {"base": si}, "ta": {"base": ta}}))
    return out


ENTRIES: list[Entry] = _entries()


def entries(cat: str, cls: str = "") -> list[Entry]:
    """Entries of a category (and semantic class, when given), in lexicon order."""
    return [e for e in ENTRIES if e.cat == cat and (not cls or e.cls == cls)]


def parse_form(text: str, cat: str, lang: str, form: str) -> list[tuple[str, str]]:
    """Words and tags of a form written in the inline notation."""
    out: list[tuple[str, str]] = []
    for item in text.split():
        word, sep, tag = item.rpartition("/")
        if not sep:
            word, tag = item, default_tag(cat, lang, form)
        out.append((word, tag))
    return out
