"""MADLAD-400 (`clean` split) sentence extraction with the paper's filters, streamed, authors' bugs fixed.

Per document: split paragraphs at the literal `\\n` escapes, drop the leading title paragraphs, remove
URLs, split sentences with a splitter fit for the language, then keep a sentence only if it has more than
`min_words` whitespace tokens, is in the language (pluggable LID), has no bad ending, names no Bible book
(multi-word names too), has no excluded word or pattern; strip a numeric prefix; deduplicate; drop
validation/evaluation sentences. Fixed relative to the authors' scripts: the Sinhala script kept at most
the last sentence of each paragraph (an indentation bug), multi-word Bible names never matched a
single-token set, and only `.html` URLs were removed.
"""

from __future__ import annotations

import gzip
import json
import logging
import os
import re
import time
import unicodedata
import zlib
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from lem.core.files import atomic_path, write_json
from lem.core.inputs import InputError
from lem.core.settings import Settings, SettingsError
from lem.data.download import FetchError, hub_provenance, require_pinned, resolve_hub_commit, sha256_file
from lem.data.leakage import read_eval_sentences

# Imported inside functions: fasttext and datasets (planning reads MadladSettings from this module and needs
# neither; fasttext is optional)

log = logging.getLogger(__name__)

LANGS = ("en", "si", "ta")
FASTTEXT_LABELS = {"en": "eng_Latn", "si": "sin_Sinh", "ta": "tam_Taml"}  # NLLB LID (lid218e) labels
SCRIPT_RANGES = {"si": (0x0D80, 0x0DFF), "ta": (0x0B80, 0x0BFF)}

BIBLE_BOOKS = {
    "en": "Genesis|Exodus|Leviticus|Numbers|Deuteronomy|Joshua|Judges|Ruth|1 Samuel|2 Samuel|1 Kings|2 Kings|"
    "1 Chronicles|2 Chronicles|Ezra|Nehemiah|Esther|Job|Psalms|Proverbs|Ecclesiastes|Song of Solomon|Isaiah|"
    "Jeremiah|Lamentations|Ezekiel|Daniel|Hosea|Joel|Amos|Obadiah|Jonah|Micah|Nahum|Habakkuk|Zephaniah|Haggai|"
    "Zechariah|Malachi|Matthew|Mark|Luke|John|Acts|Romans|1 Corinthians|2 Corinthians|Galatians|Ephesians|"
    "Philippians|Colossians|1 Thessalonians|2 Thessalonians|1 Timothy|2 Timothy|Titus|Philemon|Hebrews|James|"
    "1 Peter|2 Peter|1 John|2 John|3 John|Jude|Revelation",
    "si": "උත්පත්ති|නික්මයාම|ලෙවී කථාව|ගණන් කථාව|ද්වීතීය කථාව|යෝෂුවා|විනිශ්චයකාරයන්ගේ පොත|රූත්ගේ කථාව|"
    "1 සාමුවෙල්|2 සාමුවෙල්|1 රාජාවලිය|2 රාජාවලිය|1 ලේකම්|2 ලේකම්|එස්රා|නෙහෙමියා|එස්තර්|යෝබ්|ගීතාවලිය|"
    "හිතෝපදේශ|දේශනාකාරයා|සාලමොන්ගේ ගීතිකා|යෙසායා|යෙරෙමියා|විලාප ගී|එසකියෙල්|දානියෙල්|හොෂෙයා|යෝවෙල්|ආමොස්|"
    "ඔබදියා|යෝනා|මීකා|නාහුම්|හබක්කුක්|ශෙපනියා|හග්ගයි|සෙකරියා|මලාකි|ශු. මතෙව්|ශු. මාර්ක්|ශු. ලූක්|ශු. යොහන්|"
    "ක්රිරයා|රෝම|1 කොරින්ති|2 කොරින්ති|ගලාති|එපීස|පිලිප්පි|කොලොස්සි|1 තෙසලෝනික|2 තෙසලෝනික|1 තිමෝති|2 තිමෝති|"
    "තීතස්|පිලෙමොන්|හෙබ්රෙනව්|යාකොබ්|1 පේතෘස්|2 පේතෘස්|1 යොහන්|2 යොහන්|3 යොහන්|යූදස්|එළිදරව්",
    "ta": "ஆதியாகமம்|யாதிராகமம்|லேவியராகமம்|எண்ணாகமம்|உபாகமம்|யோசுவா|நியாயாதிபதிகள்|ரூத்|1 சாமுவேல்|2 சாமுவேல்|"
    "1 நாளன்|2 நாளன்|எஸ்றா|நெகேமியா|எஸ்தர்|யோபு|சங்கீதம்|நீதிமொழிகள்|ஏசாயா|எரேமியா|எசேக்கியேல்|தானியேல்|ஓசியா|"
    "யோவேல்|ஆமோஸ்|ஒபதியா|யோனா|மீகா|நாகூம்|ஆபகூக்|செப்பனியா|சகரியா|மலாக்கி|மத்தேயு|மார்க்|லூக்கா|யோவான்|"
    "அப்போஸ்தலருடைய நடபடிகள்|ரோமர்|1 கொரிந்தியர்|2 கொரிந்தியர்|கலாத்தியர்|எபேசியர்|பிலிப்பியர்|கொலோசெயர்|"
    "எபிரெயர்|யாக்கோபு|1 பேதுரு|2 பேதுரு|1 யோவான்|2 யோவான்|3 யோவான்|யூதா|வெளிப்படுத்தின விசேஷம்",
}
# The English script's token exclusion list (a sentence containing any of these tokens is dropped).
EXCLUDE_WORDS_EN = (
    "Jan Feb Mar Apr May Jun Jul Aug Sep Oct Nov Dec bedroom feet […] <BR>- I RTI January February March April "
    "June July August September October November December comments AM PM more facilities room Posted ahhhh :D"
).split()
EXCLUDE_PATTERNS_EN = [r"<p>", r"<BR>", r"\b(?:\d{4}-\d{2}-\d{2}|\d{4}/\d{2}/\d{2}|(?:\d{2}/){2}\d{4})\b"]

URL_RE = re.compile(r"(?:https?://|www\.)\S+")
NUM_PREFIX_RE = re.compile(r"^(?:\(\d+\)\s|\d+\.|\d+:)")
EN_ABBREV = set(
    "mr mrs ms dr prof sr jr st no vs etc e.g i.e fig vol pp inc ltd co corp dept gen col capt lt sgt rev hon "
    "jan feb mar apr jun jul aug sep sept oct nov dec u.s u.k a.m p.m".split()
)
ABBREV = {  # short forms written with a stop that do not end a sentence
    "si": {"ශු", "පෙ", "ප", "ව", "ක්‍රි", "පූ", "ඩී", "ඩො", "මහ", "අංක"},
    "ta": {"திரு", "டாக்", "டாக்டர்", "க", "மு", "பி", "கி", "இ", "எண்"},
}


@dataclass
class MadladSettings(Settings):
    SECTION = "madlad settings"

    size: int = 1000  # sentences to keep (paper: 1_000_000 en, 1_000_000 si, 150_000 ta)
    dataset: str = "allenai/madlad-400"
    revision: str | None = None  # hub revision (pin a commit hash for the paper run)
    split: str = "clean"
    skip_paragraphs: int = 2  # leading paragraphs of a document dropped (the title and its repetition)
    min_words: int = 6  # keep sentences with MORE than this many whitespace tokens
    lid: str = "script"  # "script" (Unicode block share), "fasttext" (needs `fasttext` + lid_model) or "none"
    lid_model: str | None = None  # path of a fastText LID model (e.g. NLLB lid218e.bin)
    lid_label: str | None = None  # fastText label to accept; default eng_Latn / sin_Sinh / tam_Taml
    script_min_share: float = 0.7  # script LID: share of letters in the language's script
    bad_endings: list[str] = field(default_factory=lambda: ["...", "///", "???", "..", "//"])
    bible_books: list[str] | None = None  # None: the paper's list for the language
    exclude_words: list[str] | None = None  # None: the paper's English list (en), nothing (si, ta)
    exclude_patterns: list[str] | None = None  # regexes; None: the paper's `<p>`, `<BR>`, dates (en)
    strip_chars: str = '"~ '  # stripped from both ends after the numeric prefix
    dedupe: bool = True
    exclude_files: list[str] = field(default_factory=list)  # validation/evaluation sentences to keep out
    max_docs: int | None = None  # stop after this many documents (None: until `size` sentences)

    def validate(self) -> None:
        if self.lid not in ("script", "fasttext", "none"):
            raise SettingsError(f"madlad settings: lid must be script, fasttext or none, got {self.lid!r}")


# --- sentence splitting -------------------------------------------------------------------------------------

_SPLIT_RE = re.compile(r"(?<=[.!?\u0DF4\u0964])([\"'”’)\]]*)\s+")


def split_sentences(text: str, lang: str) -> list[str]:
    """Rule-based splitter: after `.`, `!`, `?` (and Sinhala kunddaliya `෴`) plus closing quotes, then space.

    A split is undone after an abbreviation: English titles/months/initials (`Dr.`, `J.`), and for Sinhala
    and Tamil a dotted or listed short form (`පෙ.ව.`, `ශු.`), since no Punkt model exists for them.
    """
    parts: list[str] = []
    start = 0
    for m in _SPLIT_RE.finditer(text):
        end = m.start() + len(m.group(1))
        chunk = text[start:end]
        last = chunk.rstrip("\"'”’)]").split()[-1] if chunk.split() else ""
        if chunk.rstrip("\"'”’)]").endswith(".") and _is_abbrev(last, lang):
            continue
        if re.fullmatch(r"\(?\d+[.):]", chunk.strip()):
            continue  # a numeric prefix (`1. ...`) is stripped later, not a sentence of its own
        if lang == "en" and not re.match(r"[\"'“‘(\[]?[A-Z0-9]", text[m.end() :]):
            continue  # English sentences start upper-case or with a digit
        parts.append(chunk.strip())
        start = m.end()
    parts.append(text[start:].strip())
    return [p for p in parts if p]


def _is_abbrev(token: str, lang: str) -> bool:
    core = token.rstrip(".").lstrip("\"'“‘([")
    if not core:
        return False
    if lang == "en":
        return (
            core.lower() in EN_ABBREV
            or (len(core) == 1 and core.isalpha())
            or bool(re.fullmatch(r"\w(\.\w)+", core))
        )
    # Sinhala/Tamil: dotted forms (පෙ.ව.) or a listed short form; a bare one-syllable word is not enough,
    # since the Sinhala sentence-final particle `ය.` is one syllable too.
    return "." in core or core in ABBREV.get(lang, set())


# --- language identification --------------------------------------------------------------------------------

LanguageId = Callable[[str], bool]


def script_lid(lang: str, min_share: float) -> LanguageId:
    """Accept a sentence when at least `min_share` of its letters are in the language's script block
    (Latin letters for English)."""

    def accept(text: str) -> bool:
        letters = [c for c in text if c.isalpha() or unicodedata.category(c) in ("Mn", "Mc")]
        if not letters:
            return False
        if lang == "en":
            hits = sum(1 for c in letters if ord(c) < 0x250)
        else:
            lo, hi = SCRIPT_RANGES[lang]
            hits = sum(1 for c in letters if lo <= ord(c) <= hi)
        return hits / len(letters) >= min_share

    return accept


def fasttext_lid(model_path: str, label: str) -> LanguageId:
    """fastText LID (the paper used NLLB lid218e); `fasttext` is an optional dependency."""
    try:
        import fasttext  # type: ignore[import-not-found]
    except ImportError as err:
        raise ImportError(
            "lid='fasttext' needs the `fasttext` package (pip install fasttext-wheel) and a model file in "
            "lid_model; or set lid='script' for the Unicode-block fallback"
        ) from err
    if not Path(model_path).is_file():
        raise FileNotFoundError(f"fastText LID model {model_path} not found (settings key lid_model)")
    model = fasttext.load_model(model_path)

    def accept(text: str) -> bool:
        labels, _ = model.predict(text.replace("\n", " "), k=1)
        return labels[0].split("__")[-1] == label

    return accept


def make_lid(lang: str, settings: MadladSettings) -> LanguageId:
    if settings.lid == "none":
        return lambda text: True
    if settings.lid == "fasttext":
        if not settings.lid_model:
            raise ValueError("madlad settings: lid='fasttext' needs lid_model (path of the model file)")
        return fasttext_lid(settings.lid_model, settings.lid_label or FASTTEXT_LABELS[lang])
    return script_lid(lang, settings.script_min_share)


# --- filters ------------------------------------------------------------------------------------------------


def _spaced(text: str) -> str:
    """Punctuation other than `.` becomes a space (vowel signs and viramas stay: `\\w` would drop them)."""
    chars = [" " if c != "." and unicodedata.category(c)[0] in "PS" else c for c in text]
    return " " + " ".join("".join(chars).split()) + " "


def mentions_any(text: str, names: Iterable[str]) -> bool:
    """True when a name (one or more words) occurs as whole words, e.g. `Song of Solomon`, `1 Samuel`."""
    padded = _spaced(text)
    return any(f" {n} " in padded or f" {n}. " in padded for n in (" ".join(n.split()) for n in names))


@dataclass
class Extractor:
    """Applies the filters sentence by sentence and counts why each rejected sentence was dropped."""

    lang: str
    settings: MadladSettings
    lid: LanguageId
    exclude: set[str] = field(default_factory=set)
    counts: Counter[str] = field(default_factory=Counter)
    seen: set[str] = field(default_factory=set)

    def __post_init__(self) -> None:
        s = self.settings
        self.books = s.bible_books if s.bible_books is not None else BIBLE_BOOKS[self.lang].split("|")
        if s.exclude_words is not None:
            self.words = set(s.exclude_words)
        else:
            self.words = set(EXCLUDE_WORDS_EN) if self.lang == "en" else set()
        pats = (
            s.exclude_patterns
            if s.exclude_patterns is not None
            else (EXCLUDE_PATTERNS_EN if self.lang == "en" else [])
        )
        self.patterns = [re.compile(p) for p in pats]

    def reject(self, s: str) -> str | None:
        """Why sentence `s` is rejected, or None to keep it (cheap checks first, LID last)."""
        if len(s.split()) <= self.settings.min_words:
            return "too_short"
        if s.endswith(tuple(self.settings.bad_endings)):
            return "bad_ending"
        if self.words and self.words.intersection(s.split()):
            return "excluded_word"
        if any(p.search(s) for p in self.patterns):
            return "excluded_pattern"
        if mentions_any(s, self.books):
            return "bible_book"
        if not self.lid(s):
            return "wrong_language"
        return None

    def sentences(self, document: str) -> Iterator[str]:
        self.counts["documents"] += 1
        paragraphs = document.split("\\n")  # MADLAD keeps paragraph breaks as a literal backslash-n
        self.counts["title_paragraphs_dropped"] += min(len(paragraphs), self.settings.skip_paragraphs)
        for para in paragraphs[self.settings.skip_paragraphs :]:
            para, n_urls = URL_RE.subn(" ", para)
            self.counts["urls_removed"] += n_urls
            for s in split_sentences(" ".join(para.split()), self.lang):
                self.counts["sentences_seen"] += 1
                why = self.reject(s)
                if why:
                    self.counts[why] += 1
                    continue
                stripped = NUM_PREFIX_RE.sub("", s).strip(self.settings.strip_chars)
                if stripped != s:
                    self.counts["prefix_or_quotes_stripped"] += 1
                if not stripped:
                    continue
                if stripped in self.exclude:
                    self.counts["excluded_eval_sentence"] += 1
                    continue
                if self.settings.dedupe:
                    if stripped in self.seen:
                        self.counts["duplicate"] += 1
                        continue
                    self.seen.add(stripped)
                yield stripped


# --- reading --------------------------------------------------------------------------------------------------


def iter_local_jsonl(path: str | os.PathLike) -> Iterator[str]:
    """Documents of a local file in the MADLAD layout: one JSON object `{"text": ...}` per line (`.gz` too);
    a line that is not UTF-8 or not such an object, or a broken gzip stream, fails naming the file and the
    line (`lem.core.inputs.InputError`)."""

    opener = gzip.open if str(path).endswith(".gz") else open
    lineno = 0
    try:
        with opener(path, "rb") as f:
            for lineno, raw in enumerate(f, 1):
                try:
                    line = raw.decode("utf-8-sig" if lineno == 1 else "utf-8")
                except UnicodeDecodeError as err:
                    raise InputError(f"{path}:{lineno}: expected UTF-8 text ({err})") from None
                if not line.strip():
                    continue
                try:
                    row = json.loads(line)
                    text = row["text"]
                except (json.JSONDecodeError, KeyError, TypeError, IndexError, RecursionError) as err:
                    raise InputError(
                        f"{path}:{lineno}: expected a JSON object with a 'text' field ({err})"
                    ) from None
                if not isinstance(text, str):
                    raise InputError(
                        f"{path}:{lineno}: expected 'text' to be a string, got {type(text).__name__}"
                    )
                yield text
    except (gzip.BadGzipFile, EOFError, zlib.error) as err:
        raise InputError(f"{path}:{lineno + 1}: expected a gzip stream ({err})") from None


def hub_data_files(lang: str, settings: MadladSettings, commit: str | None = None) -> str:
    """The `hf://` pattern of a language's shards, at `commit` (else at the configured revision)."""
    rev = commit or settings.revision
    at = f"@{rev}" if rev else ""
    return f"hf://datasets/{settings.dataset}{at}/data/{lang}/{lang}_{settings.split}_*.jsonl.gz"


def iter_hub(lang: str, settings: MadladSettings, commit: str | None = None) -> Iterator[str]:
    """Documents streamed from the hub (`datasets`, streaming=True) at `commit`: nothing is downloaded in
    full."""
    from datasets import load_dataset

    # the JSON builder over the repo's own shards: no loading script, no trust_remote_code
    files = hub_data_files(lang, settings, commit)
    try:
        ds = load_dataset("json", data_files=files, split="train", streaming=True)
    except Exception as err:
        raise RuntimeError(
            f"could not stream {files}: {type(err).__name__}: {err}. With no network, download the "
            f"{lang}_{settings.split}_*.jsonl.gz shards elsewhere and pass them with --local-jsonl"
        ) from err
    for row in ds:
        yield row["text"]


def read_exclusions(paths: Iterable[str | os.PathLike]) -> set[str]:
    out: set[str] = set()
    for p in paths:
        out.update(s.strip() for s in read_eval_sentences(p) if s.strip())
    return out


def extract(
    lang: str, documents: Iterable[str], settings: MadladSettings
) -> tuple[list[str], dict[str, int]]:
    """Up to `settings.size` filtered sentences from `documents`, and the filter counts."""
    if lang not in LANGS:
        raise ValueError(f"lang must be one of {LANGS}, got {lang!r}")
    ex = Extractor(lang, settings, make_lid(lang, settings), read_exclusions(settings.exclude_files))
    out: list[str] = []
    for k, doc in enumerate(documents):
        if settings.max_docs is not None and k >= settings.max_docs:
            break
        for s in ex.sentences(doc):
            out.append(s)
            if len(out) >= settings.size:
                break
        if len(out) >= settings.size:
            break
    ex.counts["kept"] = len(out)
    return out, dict(sorted(ex.counts.items()))


def source_provenance(
    lang: str, settings: MadladSettings, local_jsonl: list[str] | None, allow_unpinned: bool
) -> dict[str, Any]:
    """Where the documents come from. From the hub: the configured revision must be a commit unless
    `allow_unpinned`; it is resolved to its commit, and the documents are streamed at that commit."""
    if local_jsonl:
        files = {str(p): {"bytes": Path(p).stat().st_size, "sha256": sha256_file(p)} for p in local_jsonl}
        return {
            "source": "local MADLAD-layout files",
            "requested_revision": settings.revision,
            "files": files,
        }
    what = f"hub dataset {settings.dataset} (sources.madlad.settings.revision)"
    require_pinned(settings.revision, what, allow_unpinned)
    try:
        commit = resolve_hub_commit(settings.dataset, settings.revision or "main", "dataset")
    except FetchError:
        raise
    except Exception as err:  # the hub client raises many types for "no network"
        raise RuntimeError(
            f"could not resolve {settings.dataset}@{settings.revision or 'main'} to a commit: "
            f"{type(err).__name__}: {err}. With no network, download the {lang}_{settings.split}_*.jsonl.gz "
            "shards of that commit elsewhere and pass them with --local-jsonl"
        ) from err
    return hub_provenance(
        settings.dataset,
        "dataset",
        settings.revision,
        commit,
        data_files=hub_data_files(lang, settings, commit),
        resolved_by="hub API (repo_info), documents streamed at that commit",
    )


def extract_to_file(
    lang: str,
    settings: MadladSettings,
    out: str | os.PathLike,
    local_jsonl: list[str] | None = None,
    provenance: str | os.PathLike | None = None,
    allow_unpinned: bool = False,
) -> dict[str, int]:
    """Extract and write one sentence per line to `out`; log one summary line; return the counts.

    `provenance` (optional JSON path): the source of the documents, for the hub the commit they were
    streamed at, and the sentence count."""

    started = time.monotonic()
    record = source_provenance(lang, settings, local_jsonl, allow_unpinned)
    if local_jsonl:
        docs: Iterable[str] = (d for p in local_jsonl for d in iter_local_jsonl(p))
    else:
        docs = iter_hub(lang, settings, record["resolved_commit"])
        log.info(
            "madlad %s: %s@%s is commit %s",
            lang,
            settings.dataset,
            settings.revision,
            record["resolved_commit"],
        )
    sentences, counts = extract(lang, docs, settings)
    with atomic_path(out) as tmp:
        tmp.write_text("".join(s + "\n" for s in sentences), encoding="utf-8")
    if provenance:
        write_json(provenance, {**record, "lang": lang, "split": settings.split, "sentences": len(sentences)})
    if len(sentences) < settings.size:
        log.warning(
            "madlad %s: only %d of %d sentences requested were found", lang, len(sentences), settings.size
        )
    log.info(
        "madlad %s: %d sentences -> %s; %s; %.1fs",
        lang,
        len(sentences),
        out,
        counts,
        time.monotonic() - started,
    )
    return counts
