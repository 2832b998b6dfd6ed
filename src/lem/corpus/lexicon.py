"""The trilingual lexicon of the generated corpus: entities, nouns, verbs, adjectives, time words.

The vocabulary is data, shipped with the package: one TSV file per category under `data/lexicon/`
(`people`, `places`, `organisations`, `festivals`, `nouns`, `verbs`, `adjectives`, `times` and the
code-mixed sentiment words; data/lexicon/README.md). A linguist extends the generated world by adding rows;
this module only reads them, checks them and applies the few rules below. Row order is lexicon order: the
generator draws from it with seeded choices, so adding a row changes the generated text.

Every surface form carries its gold POS tag in each language's own tag set (English Penn, Sinhala UCSC,
Tamil UPOS). A form is written in a small inline notation: words separated by spaces, each word either
`word/TAG` or bare `word` (which then takes the entry's default tag for that language and form,
`default_tag`). Only the inflected forms the templates need are listed: Sinhala and Tamil case endings are
written by hand, not by rule, so every form is a real spelling. The rules this module applies:
- English names (PER, LOC, ORG, MISC): the function words of/and/the/for are tagged IN/CC/DT/IN, the other
  bare words NNP.
- A person's Tamil accusative (`ta.acc`), when not given, is derived from the name's last word.
- A place's Sinhala genitive (`si.gen`), when not given, is its locative without the final -දී.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

from lem.core.entities import NER_TYPES

LANGS = ("en", "si", "ta")
ENTITY_TYPES = NER_TYPES  # the categories that are named entities (and their NER type)
PUNCT_TAG = {"en": {".": ".", ",": ","}, "si": {".": "FS", ",": "PUNC"}, "ta": {".": "PUNCT", ",": "PUNCT"}}
NUMBER_TAG = {"en": "CD", "si": "NUM", "ta": "NUM"}
# Numbers the templates may use ("NUM NOUNs were given"): never 1, so English plurals stay right.
NUMBERS = tuple(list(range(2, 21)) + list(range(25, 101, 5)) + list(range(150, 1001, 50)))

DATA_DIR = Path(__file__).parent / "data" / "lexicon"

# Syllables of the names composed per world (`composed_name`): one consonant (English spelling, Sinhala and
# Tamil letter) times one vowel (English spelling, Sinhala and Tamil vowel sign; "a" is the inherent vowel),
# so a name has one consistent transliteration in the three scripts.
CONSONANTS = (
    ("k", "ක", "க"),
    ("t", "ත", "த"),
    ("n", "න", "ந"),
    ("p", "ප", "ப"),
    ("m", "ම", "ம"),
    ("y", "ය", "ய"),
    ("r", "ර", "ர"),
    ("l", "ල", "ல"),
    ("v", "ව", "வ"),
    ("s", "ස", "ஸ"),
    ("h", "හ", "ஹ"),
    ("ch", "ච", "ச"),
    ("j", "ජ", "ஜ"),
)
VOWELS = (
    ("a", "", ""),
    ("i", "\u0dd2", "\u0bbf"),
    ("u", "\u0dd4", "\u0bc1"),
    ("e", "\u0dd9", "\u0bc6"),
    ("o", "\u0ddc", "\u0bca"),
)
# Month names for dates written with digits ("on 14 May 2023"): English, Sinhala, Tamil.
MONTHS = (
    ("January", "ජනවාරි", "ஜனவரி"),
    ("February", "පෙබරවාරි", "பெப்ரவரி"),
    ("March", "මාර්තු", "மார்ச்"),
    ("April", "අප්‍රේල්", "ஏப்ரல்"),
    ("May", "මැයි", "மே"),
    ("June", "ජූනි", "ஜூன்"),
    ("July", "ජූලි", "ஜூலை"),
    ("August", "අගෝස්තු", "ஆகஸ்ட்"),
    ("September", "සැප්තැම්බර්", "செப்டம்பர்"),
    ("October", "ඔක්තෝබර්", "ஒக்டோபர்"),
    ("November", "නොවැම්බර්", "நவம்பர்"),
    ("December", "දෙසැම්බර්", "டிசம்பர்"),
)
POLARITIES = ("positive", "negative", "neutral")


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


@dataclass(frozen=True)
class Table:
    """One file of entries: its category, the columns every row fills, the columns it may leave empty (or
    leave out) and the values of `class` the templates know."""

    name: str
    cat: str
    required: tuple[str, ...]
    optional: tuple[str, ...] = ()
    classes: tuple[str, ...] = ()


# In lexicon order. Columns `<lang>.<form>` are surface forms; `class`, `rom`, `polarity` as in Entry.
TABLES = (
    Table("people", "PER", ("en.base", "si.base", "ta.base"), ("ta.acc",)),
    Table(
        "places",
        "LOC",
        ("en.base", "si.base", "si.dat", "si.loc", "ta.base", "ta.dat", "ta.loc"),
        ("si.gen",),
    ),
    Table("organisations", "ORG", ("en.base", "si.base", "si.gen", "ta.base", "ta.gen")),
    Table("festivals", "MISC", ("en.base", "si.base", "ta.base")),
    Table(
        "nouns",
        "NOUN",
        ("class", "en.base", "en.pl", "si.base", "si.indef", "si.pl", "ta.base", "ta.pl", "ta.acc", "ta.dat"),
        ("rom",),
        classes=("F", "I", "P"),  # facility, item, plan/event
    ),
    Table(
        "verbs",
        "VERB",
        ("class", "en.base", "en.past", "si.past", "si.inf", "ta.past", "ta.past_n", "ta.inf"),
        classes=("C", "A", "P", "I", "S"),  # create, act on a facility / a plan / items, speech
    ),
    Table("adjectives", "ADJ", ("en.base", "si.base", "ta.base", "ta.adv", "rom", "polarity")),
    Table("times", "TIME", ("en.base", "si.base", "ta.base")),
)
# The code-mixed sentiment vocabulary: file -> its columns, all required; rows are read as tuples.
SENTIMENT_TABLES = {
    "sentiment_nouns": ("en", "rom"),  # English, romanised Sinhala
    "sentiment_verbs": ("en", "en_neg", "rom", "rom_neg", "polarity"),
    "sentiment_neutral": ("en", "rom"),  # templates with {n} (noun), {r} (romanised noun), {l} (place)
}


class LexiconError(ValueError):
    """A lexicon file that cannot be read: the message names the file, the line and what was expected."""


@dataclass(frozen=True)
class Lexicon:
    """Everything the generator draws words from."""

    entries: tuple[Entry, ...]
    sentiment_nouns: tuple[tuple[str, str], ...]
    sentiment_verbs: tuple[tuple[str, str, str, str, str], ...]
    sentiment_neutral: tuple[tuple[str, str], ...]


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


def parse_form(text: str, cat: str, lang: str, form: str) -> list[tuple[str, str]]:
    """Words and tags of a form written in the inline notation."""
    out: list[tuple[str, str]] = []
    for item in text.split():
        word, sep, tag = item.rpartition("/")
        if not sep:
            word, tag = item, default_tag(cat, lang, form)
        out.append((word, tag))
    return out


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


def _plain(text: str) -> str:
    """The words of an inline-tagged form, without tags."""
    return " ".join(w.rpartition("/")[0] or w for w in text.split())


def read_tsv(path: Path, required: tuple[str, ...], optional: tuple[str, ...] = ()) -> list[tuple[int, dict]]:
    """(line number, {column: value}) per row of a headed UTF-8 TSV; blank lines are skipped. The header
    must hold every `required` column and may hold `optional` ones (in any order); a required cell must be
    non-empty, an empty optional cell is left out of the row."""
    if not path.is_file():
        raise LexiconError(f"{path}: lexicon file not found")
    lines = path.read_text(encoding="utf-8-sig").splitlines()
    if not lines or not lines[0].strip():
        raise LexiconError(f"{path}:1: expected a header line with the columns {list(required)}")
    header = [c.strip() for c in lines[0].split("\t")]
    unknown = [c for c in header if c not in required + optional]
    missing = [c for c in required if c not in header]
    if unknown or missing or len(set(header)) != len(header):
        raise LexiconError(
            f"{path}:1: header {header}: expected the columns {list(required)}"
            + (f" and optionally {list(optional)}" if optional else "")
            + " once each"
            + (f"; unknown {unknown}" if unknown else "")
            + (f"; missing {missing}" if missing else "")
        )
    rows = []
    for n, line in enumerate(lines[1:], start=2):
        if not line.strip():
            continue
        cells = [c.strip() for c in line.split("\t")]
        if len(cells) != len(header):
            raise LexiconError(
                f"{path}:{n}: {len(cells)} tab-separated cells, expected {len(header)} ({header})"
            )
        empty = [c for c, v in zip(header, cells, strict=True) if not v and c in required]
        if empty:
            raise LexiconError(f"{path}:{n}: empty {empty}")
        rows.append((n, {c: v for c, v in zip(header, cells, strict=True) if v}))
    return rows


def _entry(table: Table, row: dict[str, str]) -> Entry:
    forms: dict[str, dict[str, str]] = {lang: {} for lang in LANGS}
    for column, value in row.items():
        lang, dot, form = column.partition(".")
        if dot:
            forms[lang][form] = value
    key = _plain(forms["en"]["base"])
    if table.cat in ENTITY_TYPES:
        forms["en"]["base"] = _en_name(forms["en"]["base"])
    if table.cat == "PER":
        forms["ta"].setdefault("acc", _ta_acc_name(forms["ta"]["base"]))
    if table.cat == "LOC":
        forms["si"].setdefault("gen", forms["si"]["loc"].removesuffix("දී"))
    return Entry(
        table.cat,
        key,
        forms,
        cls=row.get("class", ""),
        rom=row.get("rom", ""),
        polarity=row.get("polarity", "neutral"),
    )


def _check_entry(path: Path, n: int, table: Table, e: Entry) -> None:
    problems = []
    if table.classes and e.cls not in table.classes:
        problems.append(f"class {e.cls!r} not in {list(table.classes)}")
    if e.polarity not in POLARITIES:
        problems.append(f"polarity {e.polarity!r} not in {list(POLARITIES)}")
    for lang, by_form in e.forms.items():
        for form, text in by_form.items():
            try:
                ok = all(w and t for w, t in parse_form(text, e.cat, lang, form))
            except ValueError as err:  # a bare word where the category has no default tag
                ok, text = False, f"{text} ({err})"
            if not ok:
                problems.append(f"{lang}.{form} {text!r}: every word is `word/TAG` or a bare `word`")
    if problems:
        raise LexiconError(f"{path}:{n}: " + "; ".join(problems))


def load(data_dir: str | os.PathLike | None = None) -> Lexicon:
    """Read and check the lexicon files of `data_dir` (default: the packaged `data/lexicon`)."""
    root = Path(data_dir) if data_dir is not None else DATA_DIR
    entries: list[Entry] = []
    seen: dict[tuple[str, str], str] = {}
    for table in TABLES:
        path = root / f"{table.name}.tsv"
        for n, row in read_tsv(path, table.required, table.optional):
            e = _entry(table, row)
            _check_entry(path, n, table, e)
            where = seen.setdefault((e.cat, e.key), f"{path}:{n}")
            if where != f"{path}:{n}":
                raise LexiconError(f"{path}:{n}: {e.cat} {e.key!r} is already listed at {where}")
            entries.append(e)
    sentiment = {}
    for name, columns in SENTIMENT_TABLES.items():
        path = root / f"{name}.tsv"
        rows = []
        for n, row in read_tsv(path, columns):
            if "polarity" in row and row["polarity"] not in POLARITIES:
                raise LexiconError(f"{path}:{n}: polarity {row['polarity']!r} not in {list(POLARITIES)}")
            if name == "sentiment_neutral":
                for text in row.values():
                    try:
                        text.format(n="", r="", l="")
                    except (KeyError, IndexError, ValueError) as err:
                        raise LexiconError(
                            f"{path}:{n}: {text!r}: only {{n}}, {{r}}, {{l}} ({err})"
                        ) from None
            rows.append(tuple(row[c] for c in columns))
        sentiment[name] = tuple(rows)
    return Lexicon(
        tuple(entries),
        sentiment["sentiment_nouns"],
        sentiment["sentiment_verbs"],
        sentiment["sentiment_neutral"],
    )


_LEXICON = load()
ENTRIES: list[Entry] = list(_LEXICON.entries)
SENTIMENT_NOUNS: list[tuple[str, str]] = list(_LEXICON.sentiment_nouns)
SENTIMENT_VERBS: list[tuple[str, str, str, str, str]] = list(_LEXICON.sentiment_verbs)
SENTIMENT_NEUTRAL: list[tuple[str, str]] = list(_LEXICON.sentiment_neutral)


def entries(cat: str, cls: str = "") -> list[Entry]:
    """Entries of a category (and semantic class, when given), in lexicon order."""
    return [e for e in ENTRIES if e.cat == cat and (not cls or e.cls == cls)]


def _syllables(rng, n: int, last_vowel: str = "") -> tuple[str, str, str]:
    """n random syllables in the three scripts (the last one with vowel `last_vowel` when given)."""
    en, si, ta = "", "", ""
    for i in range(n):
        c = rng.choice(CONSONANTS)
        v = (
            next(x for x in VOWELS if x[0] == last_vowel)
            if (last_vowel and i == n - 1)
            else rng.choice(VOWELS)
        )
        en, si, ta = en + c[0] + v[0], si + c[1] + v[1], ta + c[2] + v[2]
    return en[:1].upper() + en[1:], si, ta


def composed_name(rng, cat: str) -> Entry:
    """A person (PER: given name and surname) or a place (LOC, ending in -i) composed from `CONSONANTS` x
    `VOWELS` with the seeded `rng`: a name the lexicon does not list, transliterated alike in the three
    scripts, with the case forms the templates need (Sinhala dative -ට, locative -දී; Tamil dative -க்கு,
    locative -யில், person accusative by `_ta_acc_name`)."""
    if cat == "PER":
        parts = [_syllables(rng, rng.randint(2, 3)), _syllables(rng, rng.randint(2, 4))]
        en, si, ta = (" ".join(p[i] for p in parts) for i in range(3))
        forms = {"en": {"base": en}, "si": {"base": si}, "ta": {"base": ta, "acc": _ta_acc_name(ta)}}
    elif cat == "LOC":
        en, si, ta = _syllables(rng, rng.randint(3, 4), last_vowel="i")
        forms = {
            "en": {"base": en},
            "si": {"base": si, "dat": si + "ට", "loc": si + "දී", "gen": si},
            "ta": {"base": ta, "dat": ta + "க்கு", "loc": ta + "யில்"},
        }
    else:
        raise ValueError(f"composed_name: no composition for category {cat!r}")
    return Entry(cat, en, forms)
