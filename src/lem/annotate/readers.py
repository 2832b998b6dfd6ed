"""Readers of the annotation resources: CoNLL NER, CoNLL-U, the TnT `.lex` lexicon, TSV lexicons, gazetteers.

Every reader handles a UTF-8 BOM and CRLF line endings, and treats a malformed line (a line of more than
`lem.core.inputs.MAX_LINE_CHARS` characters included) by the `on_error` policy: `raise` (a `ReaderError` naming
the file, the line and what was expected) or `skip` (the line is dropped and counted in the returned
object's `skipped` / `skip_reasons`). Text that is not UTF-8 or holds a NUL byte, and a file that yields no
sentence or entry at all (empty, or every line skipped), raise `ReaderError` whatever the policy.
`ReaderError` is a `lem.core.inputs.InputError` (a ValueError).
"""

from __future__ import annotations

import logging
import os
import unicodedata
from collections import Counter
from dataclasses import dataclass, field

from lem.core.entities import NER_TYPES
from lem.core.inputs import MAX_LINE_CHARS, InputError, shown
from lem.core.inputs import read_lines as _read_input_lines
from lem.core.text import words

log = logging.getLogger(__name__)

ON_ERROR = ("raise", "skip")
# Tags of the Sinhala TnT lexicon (and others) that carry no information.
JUNK_TAGS = frozenset({"???", "UNK", "TAG_UNDEFINED", "_", ""})


class ReaderError(InputError):
    """Malformed input: the message names the file, the 1-based line and what was expected."""


class TaggedSentences(list):
    """A list of sentences, each a list of (token, tag); `skipped` counts dropped lines/sentences."""

    def __init__(self, *args, path: str = "") -> None:
        super().__init__(*args)
        self.path = path
        self.skip_reasons: Counter[str] = Counter()

    @property
    def skipped(self) -> int:
        return sum(self.skip_reasons.values())


@dataclass
class TagLexicon:
    """word -> most frequent tag; `skipped` counts malformed lines, `dropped_tags` junk tags ignored."""

    tags: dict[str, str] = field(default_factory=dict)
    path: str = ""
    skip_reasons: Counter[str] = field(default_factory=Counter)
    dropped_tags: int = 0

    @property
    def skipped(self) -> int:
        return sum(self.skip_reasons.values())


@dataclass
class Gazetteer:
    """Entity phrases (tuples of normalised words) -> type (PER/LOC/ORG/MISC)."""

    phrases: dict[tuple[str, ...], str] = field(default_factory=dict)
    path: str = ""
    skip_reasons: Counter[str] = field(default_factory=Counter)

    @property
    def max_len(self) -> int:
        return max((len(p) for p in self.phrases), default=0)

    @property
    def skipped(self) -> int:
        return sum(self.skip_reasons.values())


def check_on_error(on_error: str) -> None:
    if on_error not in ON_ERROR:
        raise ValueError(f"on_error must be one of {ON_ERROR}, got {on_error!r}")


def read_lines(path: str | os.PathLike) -> list[str]:
    """Lines of a UTF-8 file with BOM and CR/LF stripped (text that is not UTF-8 or holds a NUL byte fails
    naming the file and the line)."""
    try:
        return _read_input_lines(path)
    except InputError as e:
        raise ReaderError(str(e)) from None


def _bad(path, lineno: int, what: str, line: str, on_error: str, reasons: Counter) -> None:
    msg = f"{path}:{lineno}: {what}, got {shown(line)}"
    if on_error == "raise":
        raise ReaderError(msg)
    reasons[what] += 1
    log.debug("skipped %s", msg)


def _numbered(path, on_error: str, reasons: Counter):
    """(line number, line) of `path`; a line of more than MAX_LINE_CHARS characters is malformed."""
    for lineno, line in enumerate(read_lines(path), 1):
        if len(line) > MAX_LINE_CHARS:
            what = f"expected a line of at most {MAX_LINE_CHARS:,} characters"
            _bad(path, lineno, what, line, on_error, reasons)
            continue
        yield lineno, line


def _require(obj, n: int, what: str) -> None:
    """A file that gave nothing usable fails, whatever the on_error policy."""
    if not n:
        why = [f"{obj.skipped} malformed lines skipped"] if obj.skipped else []
        if getattr(obj, "dropped_tags", 0):
            why.append(f"{obj.dropped_tags} junk tags dropped")
        raise ReaderError(f"{obj.path}: expected {what}, got none ({', '.join(why) or 'an empty file'})")


def is_junk_tag(tag: str) -> bool:
    """Junk tags: placeholders, tags with stray zero-width joiners or other format characters, and anything
    that is not an upper-case ASCII tag name (numbers, words and typos such as `NNc` leak into the TnT
    lexicon's tag columns)."""
    if tag in JUNK_TAGS or any(unicodedata.category(c) == "Cf" for c in tag):
        return True
    return not (tag.isascii() and tag.replace("_", "").isalpha() and tag.isupper())


def valid_iob2(tag: str) -> bool:
    if tag == "O":
        return True
    prefix, _, typ = tag.partition("-")
    return prefix in ("B", "I") and typ in NER_TYPES


def read_conll_ner(
    path: str | os.PathLike, on_error: str = "raise", column: int = -1, min_columns: int = 2
) -> TaggedSentences:
    """CoNLL NER: `token TAG` (space or tab separated; the tag is `column`, default last), blank line between
    sentences. Returns sentences of (token, IOB2 tag). A line with a wrong column count or a tag outside
    IOB2 over PER/LOC/ORG/MISC is malformed; an `I-X` that starts an entity is repaired to `B-X` (IOB1)."""
    check_on_error(on_error)
    out = TaggedSentences(path=str(path))
    current: list[tuple[str, str]] = []
    ncols: int | None = None
    for lineno, line in _numbered(path, on_error, out.skip_reasons):
        if not line.strip():
            if current:
                out.append(_iob2(current))
            current = []
            continue
        if line.startswith("-DOCSTART-"):
            continue
        parts = line.split()
        if ncols is None and len(parts) >= min_columns:
            ncols = len(parts)
        if len(parts) < min_columns or (ncols is not None and len(parts) != ncols):
            _bad(
                path,
                lineno,
                f"expected {ncols or min_columns} columns 'token ... TAG'",
                line,
                on_error,
                out.skip_reasons,
            )
            continue
        tag = parts[column]
        if not valid_iob2(tag):
            _bad(path, lineno, "expected an IOB2 tag over PER/LOC/ORG/MISC", line, on_error, out.skip_reasons)
            continue
        current.append((parts[0], tag))
    if current:
        out.append(_iob2(current))
    _require(out, len(out), "sentences of 'token ... TAG' lines")
    _log_skips(out)
    return out


def _iob2(sent: list[tuple[str, str]]) -> list[tuple[str, str]]:
    fixed, prev = [], "O"
    for tok, tag in sent:
        if tag.startswith("I-") and prev[2:] != tag[2:]:
            tag = "B-" + tag[2:]
        fixed.append((tok, tag))
        prev = tag
    return fixed


def read_conll_columns(path: str | os.PathLike, ncols: int, on_error: str = "raise") -> TaggedSentences:
    """Tab- or space-separated CoNLL with exactly `ncols` columns (e.g. gold `word\\tPOS\\tNER`);
    sentences of tuples of all columns."""
    check_on_error(on_error)
    out = TaggedSentences(path=str(path))
    current: list[tuple[str, ...]] = []
    for lineno, line in _numbered(path, on_error, out.skip_reasons):
        if not line.strip():
            if current:
                out.append(current)
            current = []
            continue
        parts = line.split("\t") if "\t" in line else line.split()
        if len(parts) != ncols or not all(parts):
            _bad(path, lineno, f"expected {ncols} tab-separated columns", line, on_error, out.skip_reasons)
            continue
        current.append(tuple(parts))
    if current:
        out.append(current)
    _require(out, len(out), "sentences of tab-separated columns")
    _log_skips(out)
    return out


def read_conllu(path: str | os.PathLike, on_error: str = "raise", surface: bool = False) -> TaggedSentences:
    """CoNLL-U: sentences of (FORM, UPOS). Empty nodes (`1.1`) are skipped. With `surface=False` multi-word
    token lines (`1-2`) are skipped and syntactic words returned (the UD view); with `surface=True` the
    surface token is returned instead of its parts, tagged with the UPOS of its first part (in Tamil the
    stem comes first and the suffixes after), which is what a tagger of whitespace-separated text sees."""
    check_on_error(on_error)
    out = TaggedSentences(path=str(path))
    current: list[tuple[str, str]] = []
    skip_until = 0
    mwt: tuple[str, int] | None = None
    for lineno, line in _numbered(path, on_error, out.skip_reasons):
        if not line.strip():
            if current:
                out.append(current)
            current, skip_until, mwt = [], 0, None
            continue
        if line.startswith("#"):
            continue
        parts = line.split("\t")
        if len(parts) != 10:
            _bad(path, lineno, "expected 10 tab-separated CoNLL-U columns", line, on_error, out.skip_reasons)
            continue
        tid, form, upos = parts[0], parts[1], parts[3]
        if "." in tid:
            continue
        if "-" in tid:
            a, _, b = tid.partition("-")
            if not (a.isdigit() and b.isdigit()):
                _bad(path, lineno, "expected a token id range 'N-M'", line, on_error, out.skip_reasons)
                continue
            if surface:
                mwt, skip_until = (form, int(b)), int(b)
            continue
        if not tid.isdigit() or not upos or upos == "_":
            _bad(path, lineno, "expected an integer id and a UPOS tag", line, on_error, out.skip_reasons)
            continue
        if surface and int(tid) <= skip_until:
            if mwt is not None:
                current.append((mwt[0], upos))
                mwt = None
            continue
        current.append((form, upos))
    if current:
        out.append(current)
    _require(out, len(out), "CoNLL-U sentences (10 tab-separated columns)")
    _log_skips(out)
    return out


def read_tnt_lex(path: str | os.PathLike, on_error: str = "raise") -> TagLexicon:
    """TnT lexicon `word<TAB><TAB>count<TAB>tag1<TAB>n1<TAB>tag2<TAB>n2...`: most frequent non-junk tag per
    word. `%%` comments and `@` pseudo-entries (`@CARD`, ...) are skipped."""
    check_on_error(on_error)
    lex = TagLexicon(path=str(path))
    for lineno, line in _numbered(path, on_error, lex.skip_reasons):
        if not line.strip() or line.startswith("%%") or line.startswith("@"):
            continue
        parts = [p for p in line.split("\t") if p != ""]
        if len(parts) < 4 or len(parts) % 2 != 0:
            _bad(
                path, lineno, "expected 'word, count, then tag/count pairs'", line, on_error, lex.skip_reasons
            )
            continue
        word, pairs = parts[0], parts[2:]
        best, best_n = "", -1
        try:
            for tag, n in zip(pairs[::2], pairs[1::2], strict=True):
                if is_junk_tag(tag):
                    lex.dropped_tags += 1
                    continue
                if int(n) > best_n:
                    best, best_n = tag, int(n)
        except ValueError:
            _bad(path, lineno, "expected integer tag counts", line, on_error, lex.skip_reasons)
            continue
        if best:
            lex.tags[word] = best
    _require(lex, len(lex.tags), "lexicon entries 'word<TAB><TAB>count<TAB>tag<TAB>n...' with a usable tag")
    _log_skips(lex)
    return lex


def read_tsv_lexicon(path: str | os.PathLike, on_error: str = "raise") -> TagLexicon:
    """Plain TSV lexicon `word<TAB>tag[<TAB>count]`: most frequent tag per word (count 1 when absent)."""
    check_on_error(on_error)
    lex = TagLexicon(path=str(path))
    counts: dict[str, Counter[str]] = {}
    for lineno, line in _numbered(path, on_error, lex.skip_reasons):
        if not line.strip():
            continue
        parts = line.split("\t")
        if len(parts) not in (2, 3) or not parts[0] or not parts[1]:
            _bad(path, lineno, "expected 'word<TAB>tag[<TAB>count]'", line, on_error, lex.skip_reasons)
            continue
        try:
            n = int(parts[2]) if len(parts) == 3 else 1
        except ValueError:
            _bad(path, lineno, "expected an integer count in column 3", line, on_error, lex.skip_reasons)
            continue
        if is_junk_tag(parts[1]):
            lex.dropped_tags += 1
            continue
        counts.setdefault(parts[0], Counter())[parts[1]] += n
    lex.tags = {w: c.most_common(1)[0][0] for w, c in counts.items()}
    _require(lex, len(lex.tags), "lexicon entries 'word<TAB>tag[<TAB>count]' with a usable tag")
    _log_skips(lex)
    return lex


def lexicon_from_sentences(sentences: list[list[tuple[str, str]]], path: str = "") -> TagLexicon:
    """Most frequent tag per word of tagged sentences (CoNLL-U as a lexicon source)."""
    counts: dict[str, Counter[str]] = {}
    for sent in sentences:
        for word, tag in sent:
            if not is_junk_tag(tag):
                counts.setdefault(word, Counter())[tag] += 1
    return TagLexicon(tags={w: c.most_common(1)[0][0] for w, c in counts.items()}, path=path)


def read_gazetteer_tsv(path: str | os.PathLike, on_error: str = "raise", normalize=None) -> Gazetteer:
    """Gazetteer `phrase<TAB>TYPE`; phrases are split into words with `lem.core.text.words`."""
    check_on_error(on_error)
    norm = normalize or (lambda w: w)
    gaz = Gazetteer(path=str(path))
    for lineno, line in _numbered(path, on_error, gaz.skip_reasons):
        if not line.strip():
            continue
        parts = line.split("\t")
        if len(parts) != 2 or parts[1] not in NER_TYPES or not words(parts[0]):
            _bad(path, lineno, "expected 'phrase<TAB>PER|LOC|ORG|MISC'", line, on_error, gaz.skip_reasons)
            continue
        gaz.phrases[tuple(norm(w) for w in words(parts[0]))] = parts[1]
    _require(gaz, len(gaz.phrases), "gazetteer entries 'phrase<TAB>PER|LOC|ORG|MISC'")
    _log_skips(gaz)
    return gaz


def gazetteer_from_conll(sentences: list[list[tuple[str, str]]], normalize=None, path: str = "") -> Gazetteer:
    """Entity phrases of IOB2-tagged sentences, each with its most frequent type."""
    norm = normalize or (lambda w: w)
    counts: dict[tuple[str, ...], Counter[str]] = {}
    for sent in sentences:
        for phrase, typ in entity_spans_words(sent):
            counts.setdefault(tuple(norm(w) for w in phrase), Counter())[typ] += 1
    return Gazetteer(phrases={p: c.most_common(1)[0][0] for p, c in counts.items()}, path=path)


def entity_spans_words(sent: list[tuple[str, str]]) -> list[tuple[list[str], str]]:
    """(words, type) of each IOB2 entity of a sentence."""
    out: list[tuple[list[str], str]] = []
    for tok, tag in sent:
        if tag.startswith("B-") or (
            tag.startswith("I-") and (not out or out[-1][1] != tag[2:] or out[-1][2])
        ):
            out.append(([tok], tag[2:], False))  # type: ignore[arg-type]
        elif tag.startswith("I-"):
            out[-1][0].append(tok)
        elif out:
            out[-1] = (out[-1][0], out[-1][1], True)  # type: ignore[assignment]
    return [(w, t) for w, t, *_ in out]


def _log_skips(obj) -> None:
    if obj.skipped:
        log.warning("%s: skipped %d malformed lines (%s)", obj.path, obj.skipped, dict(obj.skip_reasons))
