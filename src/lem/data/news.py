"""The comparable-news gold-alignment benchmark (Fernando et al., KAIS 2023) and its generated twin.

Layout: `<root>/<Src>-<Tgt>/<site>/{<Src>,<Tgt>}/<docid>` plus a gold file inside the site folder whose
name ends in the pair after a `.`, `-` or `_`, in any case (`ITN.si-en`, `ArmyNews.si-en`, and in the public
archive `Tamil-English/Army_news/ArmyNews-ta-en`). A language's folder is its English name for en, si and ta
(the archive's `Sinhala-English/ITN/Sinhala`) and its code for any other language (`xx-English/GEN/xx`):
`language_folder`; any pair of two language codes loads. Document lines are `<lang>_<docid>_<k>\\t<sentence>`;
gold lines `<srcID>\\t<tgtID>`. Every defect of the real files is repaired or dropped here and counted in
`stats.json` (a line of more than `lem.core.inputs.MAX_LINE_CHARS` characters is dropped and counted too): wrong-case
prefixes (`Si_`), one-to-two links (`ta_311285_6,7`, and the range `ta_311285_6-7`), CRLF; a gold id written with
the other language's prefix (Newsfirst si-en `en_4439030_0<TAB>en_4439030_0`) or the two ids of a link swapped
is a slip of unknown kind (Army si-ta `ta_32668_6<TAB>ta_32668_5` would become `si_32668_6`, a sentence about
something else): by default such a link is dropped as `ambiguous`, listed with its gold file and line
(`gold_ambiguous`), and counted; a set opts into a named repair rule (`REPAIR_RULES`, the evaluation set's
`gold_repairs`), which then repairs only where the repair is consistent (`repair_link`: the right-language
sentence exists and no other gold line names it), each repair listed with its line (`gold_repairs`), else the
link is dropped as `ambiguous`; links to no sentence and repeated links are dropped, per reason (`gold_dropped`); links across
documents are kept and counted (a per-document miner cannot reach them: `lem.mine.chance.mining_ceiling`).
`gold_counts_markdown` turns `stats.json` files into the report's table of gold counts and drops. What cannot be repaired fails in one
line naming the file (and line) or the folder, site and pair (`lem.core.inputs.InputError`): text that is not
UTF-8 or holds a NUL byte, a document file whose name is not UTF-8 (its name is the document id written to the
outputs), a side without sentences, a gold file none of whose links names a sentence of the documents (mining
would have nothing to score).
"""

from __future__ import annotations

import json
import logging
import os
import re
import time
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from lem.core.files import atomic_path, write_json
from lem.core.inputs import MAX_LINE_CHARS, InputError, decode

log = logging.getLogger(__name__)

PAIRS = ("si-en", "si-ta", "ta-en")  # the pairs of the public benchmark (any pair of codes loads)
FOLDERS = {"en": "English", "si": "Sinhala", "ta": "Tamil"}  # the archive's language folders
SITES = ("Army_News", "Hiru", "ITN", "Newsfirst")
ID_RE = re.compile(r"^([A-Za-z]{2,3})_(\w+?)_(\d+(?:,\d+)*)$")
RANGE_RE = re.compile(r"^([A-Za-z]{2,3})_(\w+?)_(\d+)-(\d+)$")  # `ta_311285_6-7`: sentences 6 to 7
MAX_RANGE = 20  # a longer (or descending) range is no slip we can read: the link is dropped as malformed
PAIR_RE = re.compile(r"([a-z]{2,3})-([a-z]{2,3})")
# the rewrites of a gold id a set may opt into (`mining.evalsets.<name>.gold_repairs`; none by default): the
# two ids of a link exchanged; one id's language prefix replaced by its side's. Case-only prefix fixes
# (`Si_` -> `si_`) are always made: they name one sentence and no other reading exists.
REPAIR_RULES = ("swapped", "other_language_prefix")


def language_folder(lang: str) -> str:
    """A language's folder in the layout: its English name for en, si and ta, its code for any other."""
    return FOLDERS.get(lang, lang)


def pair_languages(pair: str) -> tuple[str, str]:
    """(src, tgt) of `pair`: two different language codes joined by `-` (ValueError otherwise)."""
    m = PAIR_RE.fullmatch(pair)
    if not m or m.group(1) == m.group(2):
        raise ValueError(
            f"expected a pair 'src-tgt' of two different language codes (e.g. si-en), got {pair!r}"
        )
    return m.group(1), m.group(2)


@dataclass
class NewsBenchmark:
    """Sentences of the selected document pairs and the cleaned gold links."""

    pair: str
    site: str
    src: list[tuple[str, str, str]]  # (id, doc, text)
    tgt: list[tuple[str, str, str]]
    gold: list[tuple[str, str]]
    stats: dict[str, Any] = field(default_factory=dict)


def _key(name: str) -> str:
    return re.sub(r"[\s_\-]", "", name).lower()


def find_dir(parent: Path, name: str) -> Path:
    """`parent/name`, matched ignoring case, spaces, `-` and `_` (`Army_News` = `ArmyNews`, `Sinhala - English`)."""
    exact = parent / name
    if exact.is_dir():
        return exact
    if parent.is_dir():
        for child in sorted(parent.iterdir()):
            if child.is_dir() and _key(child.name) == _key(name):
                return child
    raise FileNotFoundError(f"no folder {name!r} in {parent} (matched ignoring case, spaces, '-' and '_')")


def gold_name_re(pair: str) -> re.Pattern[str]:
    """A gold file's name: anything, then `.`, `-` or `_`, then the pair with `-`, `_` or `.` between its two
    codes, in any case (`ITN.si-en`, `ArmyNews-ta-en`, `hiru_SI_EN`)."""
    src, tgt = (re.escape(code) for code in pair.split("-"))
    return re.compile(rf"(?:^|[._-]){src}[._-]{tgt}$", re.IGNORECASE)


def find_gold(site_dir: Path, pair: str) -> Path:
    """The gold file: the one file in the site folder whose name ends in the pair (`gold_name_re`)."""
    name = gold_name_re(pair)
    files = sorted(p for p in site_dir.iterdir() if p.is_file())
    hits = [p for p in files if name.search(p.name)]
    if len(hits) != 1:
        raise InputError(
            f"{site_dir}: expected one gold file named '<site>.{pair}' (or with '-' or '_', any case, e.g. "
            f"'ArmyNews-{pair}'), got {len(hits)}: {[p.name for p in hits] if hits else [p.name for p in files]}"
        )
    return hits[0]


def normalise_id(raw: str, counts: Counter[str], gold: bool = False) -> str:
    """Lower-case the 2- or 3-letter language prefix (`Si_12_3` -> `si_12_3`); strip stray spaces and a BOM."""
    sid = raw.strip().lstrip("\ufeff")
    prefix, sep, rest = sid.partition("_")
    if sep and rest and len(prefix) in (2, 3) and prefix.isalpha() and prefix != prefix.lower():
        counts["id_prefix_case_fixed"] += 1
        counts["gold_id_prefix_case_fixed"] += gold
        sid = prefix.lower() + sep + rest
    return sid


def expand_id(sid: str, counts: Counter[str]) -> list[str]:
    """`ta_311285_6,7` -> [`ta_311285_6`, `ta_311285_7`] (a one-to-two link written in one ID); the range
    `ta_311285_6-7` likewise (ascending, at most `MAX_RANGE` sentences; any other range: ValueError)."""
    r = RANGE_RE.match(sid)
    if r:
        first, last = int(r.group(3)), int(r.group(4))
        if not first < last <= first + MAX_RANGE:
            raise ValueError(
                f"a sentence range {sid!r}: expected an ascending range of at most {MAX_RANGE} sentences"
            )
        counts["multi_id_expanded"] += 1
        counts["gold_id_range_expanded"] += 1
        return [f"{r.group(1)}_{r.group(2)}_{k}" for k in range(first, last + 1)]
    m = ID_RE.match(sid)
    if not m or "," not in m.group(3):
        return [sid]
    counts["multi_id_expanded"] += 1
    return [f"{m.group(1)}_{m.group(2)}_{k}" for k in m.group(3).split(",")]


def read_document(path: Path, lang: str, counts: Counter[str]) -> list[tuple[str, str]]:
    """(id, text) of one document file; CRLF, a BOM, bad lines and repeated IDs are handled and counted."""
    raw = path.read_bytes()
    if b"\r\n" in raw:
        counts["crlf_files"] += 1
    text = decode(raw, path)
    out: list[tuple[str, str]] = []
    for lineno, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            counts["doc_blank_lines"] += 1
            continue
        if len(line) > MAX_LINE_CHARS:
            counts["doc_too_long_lines"] += 1
            log.warning("%s:%d: a line of %d characters (dropped)", path, lineno, len(line))
            continue
        sid, tab, sentence = line.partition("\t")
        if not tab:
            counts["doc_malformed_lines"] += 1
            log.debug("%s:%d: expected '<id>\\t<sentence>', got %r", path, lineno, line[:80])
            continue
        sid = normalise_id(sid, counts)
        if not sid.startswith(lang + "_"):
            counts["doc_wrong_language_ids"] += 1
        sentence = " ".join(sentence.split())  # inner tabs/newlines would break the TSV outputs
        if not sentence:
            counts["doc_empty_sentences"] += 1
            continue
        out.append((sid, sentence))
    return out


def read_gold(path: Path, counts: Counter[str]) -> list[tuple[str, str, int]]:
    """Raw gold links (IDs normalised, `_6,7` and `_6-7` expanded) with their line numbers, before checking
    them against the documents."""
    raw = path.read_bytes()
    if b"\r\n" in raw:
        counts["gold_crlf"] = 1
    links: list[tuple[str, str, int]] = []
    for lineno, line in enumerate(decode(raw, path).splitlines(), 1):
        if not line.strip():
            continue
        if len(line) > MAX_LINE_CHARS:
            counts["gold_malformed_lines"] += 1
            log.warning("%s:%d: a line of %d characters (dropped)", path, lineno, len(line))
            continue
        parts = line.split("\t") if "\t" in line else line.split()
        parts = [p for p in parts if p.strip()]
        if len(parts) != 2:
            counts["gold_malformed_lines"] += 1
            log.warning("%s:%d: expected '<srcID>\\t<tgtID>', got %r (dropped)", path, lineno, line[:80])
            continue
        counts["gold_lines"] += 1
        try:
            srcs = expand_id(normalise_id(parts[0], counts, gold=True), counts)
            tgts = expand_id(normalise_id(parts[1], counts, gold=True), counts)
        except ValueError as e:
            counts["gold_malformed_lines"] += 1
            log.warning("%s:%d: %s (dropped)", path, lineno, e)
            continue
        links.extend((s, t, lineno) for s in srcs for t in tgts)
    return links


def repair_link(
    s: str,
    t: str,
    src: str,
    tgt: str,
    index: dict[str, dict[str, Any]],
    counts: Counter[str],
    claimed: Callable[[str], bool] = lambda sid: False,
    rules: Iterable[str] = (),
) -> tuple[str, str] | None:
    """A gold link whose ids need a rewrite to resolve: repaired by a rule of `rules` (`REPAIR_RULES`) the set
    opted into, else None (dropped, counted `gold_ambiguous_id`: the slip is of unknown kind). The rules: the
    two ids swapped (`en_1_0<TAB>si_1_2` in si-en: each id names a sentence of the other side only), and one id
    written with the other language's prefix (Newsfirst si-en `en_4439030_0<TAB>en_4439030_0`) when the
    sentence with the right prefix exists and no other gold line names it (`claimed(id)`; else None, counted
    `gold_ambiguous_repair`). A link that needs no rewrite, or names an id of no side, is returned unchanged."""
    rules = frozenset(rules)
    if s not in index[src] and t not in index[tgt] and s in index[tgt] and t in index[src]:
        if "swapped" not in rules:
            counts["gold_ambiguous_id"] += 1
            return None
        counts["gold_swapped_repaired"] += (
            1  # the one reading: each id names a sentence of the other side only
        )
        return t, s
    for side, (lang, other) in (("src", (src, tgt)), ("tgt", (tgt, src))):
        sid = s if side == "src" else t
        if sid not in index[lang] and sid.startswith(other + "_"):
            if "other_language_prefix" not in rules:
                counts["gold_ambiguous_id"] += 1
                return None
            fixed = lang + sid[len(other) :]
            if fixed in index[lang]:
                if claimed(fixed):
                    counts["gold_ambiguous_repair"] += 1
                    return None
                counts[f"gold_{side}_other_language_prefix_repaired"] += 1
                s, t = (fixed, t) if side == "src" else (s, fixed)
    return s, t


def _doc_of(sid: str) -> str:
    m = ID_RE.match(sid)
    return m.group(2) if m else ""


def read_documents(lang_dir: Path, lang: str, counts: Counter[str]) -> dict[str, list[tuple[str, str]]]:
    """The documents of one side (file name -> its sentences); a file name that cannot be a document id
    (not UTF-8, control characters) fails before any is read."""
    files = [p for p in sorted(lang_dir.iterdir()) if p.is_file()]
    for p in files:
        try:
            p.name.encode("utf-8")
            readable = p.name.isprintable()
        except UnicodeEncodeError:  # a byte that is not UTF-8, kept by the file system as a surrogate
            readable = False
        if not readable:
            raise InputError(
                f"{str(p).encode('utf-8', 'backslashreplace').decode('ascii', 'backslashreplace')}: "
                "expected a document file name in UTF-8 without control characters (it is the document "
                "id written to the prepared files): rename the file"
            )
    return {p.name: read_document(p, lang, counts) for p in files}


def sentence_index(docs, common: list[str], src: str, tgt: str, counts: Counter[str]) -> dict:
    """Language -> sentence ID -> (doc, text) over the documents both sides have; the first of a repeated ID
    wins."""
    index: dict[str, dict[str, tuple[str, str]]] = {src: {}, tgt: {}}
    for lang in (src, tgt):
        for doc in common:
            for sid, text in docs[lang][doc]:
                if sid in index[lang]:
                    counts[f"duplicate_{'src' if lang == src else 'tgt'}_sentence_ids"] += 1
                    continue
                if _doc_of(sid) != doc:
                    counts["id_doc_mismatch"] += 1
                index[lang][sid] = (doc, text)
    return index


def gold_links(
    raw_links: list[tuple[str, str, int]],
    src: str,
    tgt: str,
    index: dict,
    counts: Counter[str],
    rules: Iterable[str] = (),
    gold_file: str | os.PathLike = "",
):
    """The gold links kept (repaired by the opted-in `rules` where the repair is consistent), the repairs made
    and the links dropped as ambiguous, each with its gold file and line; what is dropped is counted in
    `counts`."""
    lines_naming: dict[str, set[int]] = {}
    for s, t, lineno in raw_links:
        lines_naming.setdefault(s, set()).add(lineno)
        lines_naming.setdefault(t, set()).add(lineno)
    seen: set[tuple[str, str]] = set()
    gold: list[tuple[str, str]] = []
    repairs: list[dict[str, Any]] = []
    ambiguous: list[dict[str, Any]] = []
    for s0, t0, lineno in raw_links:
        before = Counter(counts)
        fixed = repair_link(
            s0,
            t0,
            src,
            tgt,
            index,
            counts,
            lambda sid, n=lineno: bool(lines_naming.get(sid, set()) - {n}),
            rules,
        )
        if fixed is None:
            reason = next(k for k in ("gold_ambiguous_id", "gold_ambiguous_repair") if counts[k] > before[k])
            ambiguous.append(
                {
                    "file": str(gold_file),
                    "line": lineno,
                    "link": [s0, t0],
                    "reason": reason.removeprefix("gold_"),
                }
            )
            log.warning("%s:%d: %s<TAB>%s dropped (%s)", gold_file, lineno, s0, t0, GOLD_DROPPED[reason])
            continue
        s, t = fixed
        if (s, t) != (s0, t0):
            reason = next(k for k in GOLD_REPAIRED if counts[k] > before[k])
            repairs.append(
                {"line": lineno, "from": [s0, t0], "to": [s, t], "reason": reason.removeprefix("gold_")}
            )
        if s not in index[src] or t not in index[tgt]:
            counts["gold_missing_src_id" if s not in index[src] else "gold_missing_tgt_id"] += 1
            continue
        if (s, t) in seen:
            counts["gold_duplicate_links"] += 1
            continue
        seen.add((s, t))
        if index[src][s][0] != index[tgt][t][0]:
            counts["gold_cross_document_links"] += 1
        gold.append((s, t))
    counts["gold_src_ids_repeated"] = sum(c - 1 for c in Counter(s for s, _ in gold).values() if c > 1)
    counts["gold_tgt_ids_repeated"] = sum(c - 1 for c in Counter(t for _, t in gold).values() if c > 1)
    return gold, repairs, ambiguous


def load_news(
    root: str | os.PathLike, site: str, pair: str, doc_pairs: str = "gold", repairs: Iterable[str] = ()
) -> NewsBenchmark:
    """Load one site and pair; `doc_pairs` = `gold` (document pairs covered by gold, the paper) or `all`;
    `repairs`: the rules of `REPAIR_RULES` the set opts into (none: a link needing a rewrite is dropped)."""
    src, tgt = pair_languages(pair)
    if doc_pairs not in ("gold", "all"):
        raise ValueError(f"doc_pairs must be 'gold' or 'all', got {doc_pairs!r}")
    repairs = tuple(repairs)
    unknown = [r for r in repairs if r not in REPAIR_RULES]
    if unknown:
        raise ValueError(f"gold repairs: {unknown} are no repair rule; expected some of {list(REPAIR_RULES)}")
    started = time.monotonic()
    src_lang_name, tgt_lang_name = language_folder(src), language_folder(tgt)
    folder = f"{src_lang_name}-{tgt_lang_name}"
    site_dir = find_dir(find_dir(Path(root), folder), site)
    counts: Counter[str] = Counter()
    docs = {lang: read_documents(find_dir(site_dir, name), lang, counts)
            for lang, name in ((src, src_lang_name), (tgt, tgt_lang_name))}  # fmt: skip
    common = sorted(set(docs[src]) & set(docs[tgt]))
    counts["docs_only_src"] = len(set(docs[src]) - set(docs[tgt]))
    counts["docs_only_tgt"] = len(set(docs[tgt]) - set(docs[src]))
    index = sentence_index(docs, common, src, tgt, counts)
    gold_file = find_gold(site_dir, pair)
    raw_links = read_gold(gold_file, counts)
    gold, repaired, ambiguous = gold_links(raw_links, src, tgt, index, counts, repairs, gold_file)

    for lang, name in ((src, src_lang_name), (tgt, tgt_lang_name)):
        if not index[lang]:
            raise InputError(
                f"{site_dir / name}: expected '<id><TAB><sentence>' lines in documents that both sides have, "
                f"got no sentence ({len(docs[lang])} documents, {len(common)} shared; site {site!r}, pair "
                f"{pair}; defects { ({k: v for k, v in sorted(counts.items()) if v}) })"
            )
    if not gold:
        got = (
            f"{len(raw_links)} links, none naming a sentence of both sides (missing {src} ids: "
            f"{counts['gold_missing_src_id']}, missing {tgt} ids: {counts['gold_missing_tgt_id']}, "
            f"needing a rewrite: {counts['gold_ambiguous_id'] + counts['gold_ambiguous_repair']}; the set's "
            f"gold_repairs: {list(repairs) or 'none'})"
            if raw_links
            else "no link"
        )
        raise InputError(
            f"{gold_file}: expected gold links '<{src}_<doc>_<k>><TAB><{tgt}_<doc>_<k>>' naming sentences of "
            f"the documents in {site_dir}, got {got}; malformed lines: {counts['gold_malformed_lines']} "
            f"(site {site!r}, pair {pair}): mining would have nothing to score"
        )
    gold_docs = sorted({index[src][s][0] for s, _ in gold} | {index[tgt][t][0] for _, t in gold})
    selected = set(common if doc_pairs == "all" else gold_docs)
    rows = {
        lang: [(sid, doc, text) for sid, (doc, text) in index[lang].items() if doc in selected]
        for lang in (src, tgt)
    }
    stats: dict[str, Any] = {
        "site": site_dir.name,
        "pair": pair,
        "doc_pairs": doc_pairs,
        "doc_pairs_total": len(common),
        "doc_pairs_with_gold": len(gold_docs),
        "doc_pairs_used": len(selected),
        "src_sentences": len(rows[src]),
        "tgt_sentences": len(rows[tgt]),
        "gold_links": len(gold),
        "defects": {k: v for k, v in sorted(counts.items()) if k != "gold_lines"},
        "gold_lines": counts["gold_lines"],
        "gold_links_read": len(raw_links),
        **gold_summary(counts),
        "gold_file": str(gold_file),
        "gold_repair_rules": list(repairs),  # the rules the set opted into
        "gold_repairs": repaired,  # each repair with its gold line number
        "gold_ambiguous": ambiguous,  # links needing a rewrite no rule made (or could not make): dropped
    }
    log.info(
        "news %s %s: %d/%d doc pairs (%s), %d+%d sentences, %d gold links from %d lines; defects %s; %.1fs",
        site_dir.name,
        pair,
        len(selected),
        len(common),
        doc_pairs,
        len(rows[src]),
        len(rows[tgt]),
        len(gold),
        counts["gold_lines"],
        {k: v for k, v in stats["defects"].items() if v},
        time.monotonic() - started,
    )
    return NewsBenchmark(pair, site_dir.name, rows[src], rows[tgt], gold, stats)


# defects (stats.json) -> what the report calls them: gold links (or lines) dropped, ids repaired
GOLD_DROPPED = {
    "gold_malformed_lines": "malformed lines",
    "gold_missing_src_id": "source id in no shared document",
    "gold_missing_tgt_id": "target id in no shared document",
    "gold_duplicate_links": "repeated links",
    "gold_ambiguous_id": "an id to rewrite (other language's prefix or swapped; no repair rule set)",
    "gold_ambiguous_repair": "ambiguous repair (the repaired id is named by another line)",
    "gold_dropped_leakage": "a sentence equal to pre-training text",  # lem.data.leakage.drop_leaked_items
    # a line-aligned retrieval set (lem.data.retrieval): lines that are no unambiguous pair
    "gold_empty_line": "a line empty on either side",
    "gold_long_line": "a line too long",
    "gold_repeated_src_text": "a source text repeated in the set",
    "gold_repeated_tgt_text": "a target text repeated in the set",
}
GOLD_REPAIRED = {
    "gold_id_prefix_case_fixed": "id prefix case",
    "multi_id_expanded": "one-to-many ids expanded",
    "gold_src_other_language_prefix_repaired": "source id with the other language's prefix",
    "gold_tgt_other_language_prefix_repaired": "target id with the other language's prefix",
    "gold_swapped_repaired": "ids swapped",
}


def gold_summary(defects: Counter[str] | dict[str, int]) -> dict[str, Any]:
    """The gold side of the defects: `gold_dropped` (reason -> links dropped; malformed lines count lines),
    `gold_repaired` (reason -> ids repaired) and `gold_cross_document_links` (kept)."""
    return {
        "gold_dropped": {k.removeprefix("gold_"): defects.get(k, 0) for k in GOLD_DROPPED},
        "gold_repaired": {k.removeprefix("gold_"): defects.get(k, 0) for k in GOLD_REPAIRED},
        "gold_cross_document_links": defects.get("gold_cross_document_links", 0),
    }


def _reasons(defects: dict[str, int], names: dict[str, str]) -> str:
    return ", ".join(f"{names[k]} {defects[k]:,}" for k in names if defects.get(k)) or "none"


def _leakage_cell(st: dict[str, Any]) -> str:
    """Sentences dropped at evaluation time as equal to pre-training text (`lem.data.leakage.drop_leaked_items`):
    per side, per reason; `-` where the set was not checked per item, `guarded` where the guard covered it."""
    lk = st.get("leakage")
    if not lk:
        return "-"
    if lk.get("status") == "guarded":
        return "none (guarded)"
    sides = " + ".join(f"{lang} {n:,}" for lang, n in lk["sentences_dropped"].items())
    why = ", ".join(f"{r} {n:,}" for r, n in lk["by_reason"].items() if n) or "none"
    return f"{sides} ({why})"


def gold_counts_markdown(stats_files: Iterable[str | os.PathLike]) -> list[str]:
    """The report's table of each news evaluation set's gold: lines read, links kept, links across documents,
    repairs and drops per reason, and the sentences dropped as equal to pre-training text, one row per
    `stats.json` written by `write_news` or `lem.data.leakage.drop_leaked_items`
    (`results/eval/{prepared,clean}/<evalset>/<pair>/stats.json`: the evaluation set is the grandparent
    folder's name). Markdown table lines (header first); no line for no file."""
    rows = []
    for path in stats_files:
        path = Path(path)
        st = json.loads(path.read_text(encoding="utf-8"))
        d = st.get("defects", {})
        rows.append(
            f"| {path.parent.parent.name} | {st['pair']} | {st['site']} | {st['doc_pairs_used']:,} / "
            f"{st['doc_pairs_total']:,} ({st['doc_pairs']}) | {st['gold_lines']:,} | {st['gold_links']:,} | "
            f"{d.get('gold_cross_document_links', 0):,} | {_reasons(d, GOLD_REPAIRED)} | "
            f"{_reasons(d, GOLD_DROPPED)} | {_leakage_cell(st)} |"
        )
    if not rows:
        return []
    return [
        "| evaluation set | pair | site | document pairs used / all | gold lines | gold links kept | "
        "across documents (kept) | repaired | dropped | sentences dropped: in pre-training text |",
        "|---|---|---|---|---:|---:|---:|---|---|---|",
        *rows,
    ]


def write_news(bench: NewsBenchmark, out_dir: str | os.PathLike) -> None:
    """`{src}.tsv`, `{tgt}.tsv` (id, doc, text), `gold.tsv` (src_id, tgt_id) and `stats.json` in `out_dir`."""
    out_dir = Path(out_dir)
    src, tgt = bench.pair.split("-")
    for lang, rows in ((src, bench.src), (tgt, bench.tgt)):
        with atomic_path(out_dir / f"{lang}.tsv") as tmp:
            with open(tmp, "w", encoding="utf-8", newline="\n") as f:
                f.write("id\tdoc\ttext\n")
                f.writelines(f"{sid}\t{doc}\t{text}\n" for sid, doc, text in rows)
    with atomic_path(out_dir / "gold.tsv") as tmp:
        with open(tmp, "w", encoding="utf-8", newline="\n") as f:
            f.write("src_id\ttgt_id\n")
            f.writelines(f"{s}\t{t}\n" for s, t in bench.gold)
    write_json(out_dir / "stats.json", bench.stats)
