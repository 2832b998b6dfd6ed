"""The linguistic entities of LEM, defined once: what annotation writes, features carry and masking reads.

Every stage takes these names from here (docs/contracts.md, "annotate"):
- Entity flags of a word (annotation `flags`, feature `word_flags`, one uint8 per word): bit 1 = NE (a NER
  label other than O, on a word that is not a number), 2 = NOUN, 4 = VERB. `ENTITY_BITS` names them the
  way the masking settings do (`entity_types: [ne, noun, verb]`).
- Coarse classes of a POS tag (annotation `coarse`): NOUN, VERB or OTHER, mapped with the tag set the
  tagger emits (`COARSE`: penn, ucsc, upos), never with the language's native set by assumption: UPOS
  `NOUN` read as Penn would be OTHER.
- NER types: PER, LOC, ORG, MISC (IOB2 labels `B-PER`, `I-LOC`, ...); foreign type names map onto them.

Tag-set decisions (docs/annotation-quality.md repeats them):
- English, Penn: NN NNS NNP NNPS -> NOUN; VB VBD VBG VBN VBP VBZ -> VERB (MD is OTHER).
- Sinhala, UCSC/Moratuwa: NNC NNP NNJ -> NOUN (NNJ, adjectival noun, as in the lexicon's README);
  VFM VNF VNN VP -> VERB. Compound-verb parts (NCV, JCV, NVB) stay OTHER, as in the paper.
- UPOS (Tamil, and any language read from CoNLL-U: UD English EWT, UD Sinhala): NOUN and PROPN -> NOUN
  (proper nouns are nouns in the Penn and UCSC sets too, NNP); VERB -> VERB; AUX -> OTHER (auxiliaries are
  function words, and the paper's Tamil verb set is VERB only).
- NER: CoNLL types are kept; OntoNotes PERSON -> PER, GPE/LOC/FAC -> LOC, ORG -> ORG, NORP/EVENT/
  WORK_OF_ART/LAW/LANGUAGE/PRODUCT -> MISC; numeric types (DATE, TIME, MONEY, PERCENT, QUANTITY, ORDINAL,
  CARDINAL) -> O (masking excludes numbers from NE anyway).
"""

from __future__ import annotations

import re

from lem.core.text import is_punct

# --- entity flags -----------------------------------------------------------------------------------------

FLAG_NE, FLAG_NOUN, FLAG_VERB = 1, 2, 4
ENTITY_BITS = {"ne": FLAG_NE, "noun": FLAG_NOUN, "verb": FLAG_VERB}  # masking's entity type -> its bit
ENTITY_TYPES = tuple(ENTITY_BITS)  # ("ne", "noun", "verb"), in this canonical order
FLAG_BITS = tuple(ENTITY_BITS.values())
FLAG_ANY = FLAG_NE | FLAG_NOUN | FLAG_VERB

# --- coarse classes and POS tag sets ----------------------------------------------------------------------

NOUN, VERB, OTHER = "NOUN", "VERB", "OTHER"
COARSE_CLASSES = (NOUN, VERB, OTHER)

PENN = {
    **dict.fromkeys(["NN", "NNS", "NNP", "NNPS"], NOUN),
    **dict.fromkeys(["VB", "VBD", "VBG", "VBN", "VBP", "VBZ"], VERB),
}
UCSC = {**dict.fromkeys(["NNC", "NNP", "NNJ"], NOUN), **dict.fromkeys(["VFM", "VNF", "VNN", "VP"], VERB)}
UPOS = {"NOUN": NOUN, "PROPN": NOUN, "VERB": VERB}

# The native POS tag set of each language (contract: en Penn, si UCSC, ta UPOS): the default of a tagger
# whose tag set is not otherwise known (a plain `word tag` lexicon, the generated world's gold tags).
LANG_CODE = re.compile(r"[a-z]{2,3}")  # a language code: any, declared in the config with its resources
NATIVE_TAGSET = {"en": "penn", "si": "ucsc", "ta": "upos"}


def native_tagset(lang: str) -> str:
    """The POS tag set a language's tsv / tnt lexicon or CoNLL gold is read in when the settings name none
    (en Penn, si UCSC, ta UPOS); any other language code must name its own (`pos.tagset`)."""
    try:
        return NATIVE_TAGSET[lang]
    except KeyError:
        raise ValueError(
            f"language {lang!r} has no default POS tag set (en, si and ta have one): set its pos.tagset "
            "(annotation.<lang>.pos.tagset, or the command's --tagset / --gold-tagset) to penn, ucsc or upos"
        ) from None


COARSE = {"penn": PENN, "ucsc": UCSC, "upos": UPOS}
TAGSETS = tuple(COARSE)

# --- NER types --------------------------------------------------------------------------------------------

NER_TYPES = ("PER", "LOC", "ORG", "MISC")
ONTONOTES = {
    "PERSON": "PER",
    "PER": "PER",
    "GPE": "LOC",
    "LOC": "LOC",
    "FAC": "LOC",
    "ORG": "ORG",
    "NORP": "MISC",
    "EVENT": "MISC",
    "WORK_OF_ART": "MISC",
    "LAW": "MISC",
    "LANGUAGE": "MISC",
    "PRODUCT": "MISC",
    "MISC": "MISC",
}


def check_tagset(tagset: str, where: str = "tag set") -> str:
    if tagset not in COARSE:
        raise ValueError(f"{where}: tag set must be one of {list(TAGSETS)}, got {tagset!r}")
    return tagset


def coarse_map(tagset: str) -> dict[str, str]:
    """tag -> NOUN / VERB of `tagset` (every other tag is OTHER)."""
    return COARSE[check_tagset(tagset)]


def coarse_class(tag: str, tagset: str) -> str:
    """NOUN, VERB or OTHER for a tag of `tagset` (penn, ucsc, upos)."""
    return coarse_map(tagset).get(tag, OTHER)


def coarse_for_lang(tag: str, lang: str) -> str:
    """The coarse class of a tag of the language's *native* tag set (en Penn, si UCSC, ta UPOS). Annotation
    does not use this: it maps with the tag set the POS tagger declares (`Annotator.pos_tagset`)."""
    return coarse_class(tag, native_tagset(lang))


def ner_type(label: str) -> str | None:
    """PER/LOC/ORG/MISC for an entity type name of CoNLL or OntoNotes (case-insensitive), None for O."""
    return ONTONOTES.get(label.upper().replace("-", "_"))


def to_iob2(label: str) -> str:
    """A model's word label (`B-PERSON`, `I-ORG`, `S-LOC`, `E-GPE`, `PER`, `O`) as IOB2 over PER/LOC/ORG/MISC;
    unknown or numeric types become O. BIOES S/E are read as B/I; a bare type is read as I (repaired later)."""
    if label in ("O", "", "_"):
        return "O"
    prefix, sep, typ = label.partition("-")
    if not sep or prefix.upper() not in ("B", "I", "S", "E", "L", "U"):
        prefix, typ = "I", label
    t = ner_type(typ)
    if t is None:
        return "O"
    return ("B-" if prefix.upper() in ("B", "S", "U") else "I-") + t


def repair_iob2(labels: list[str]) -> list[str]:
    """Turn an `I-X` that does not continue an X entity into `B-X`."""
    out, prev = [], "O"
    for lab in labels:
        if lab.startswith("I-") and prev[2:] != lab[2:]:
            lab = "B-" + lab[2:]
        out.append(lab)
        prev = lab
    return out


# --- a word's flags ---------------------------------------------------------------------------------------


def is_number(word: str) -> bool:
    """A word made of digits (any script) and number punctuation only: `2013`, `1,200.50`, `18/2`."""
    return any(c.isdigit() for c in word) and all(c.isdigit() or is_punct(c) for c in word)


def entity_flags(words: list[str], coarse: list[str], ner: list[str]) -> list[int]:
    """Masking flags per word from its coarse class and NER label."""
    flags = []
    for w, c, n in zip(words, coarse, ner, strict=True):
        f = FLAG_NE if n != "O" and not is_number(w) else 0
        f |= FLAG_NOUN if c == NOUN else FLAG_VERB if c == VERB else 0
        flags.append(f)
    return flags
