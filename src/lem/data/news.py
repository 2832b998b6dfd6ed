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
documents are kept and counted (a per-document miner cannot reach them: `lem.mine.chance.mining_ceiling`). A gold
file not named `<site>.<pair>` and CRLF endings are counted too (`gold_file_name_nonstandard`, `gold_crlf`). Every
gold line a defect touches is said in a line of the log with its file and line and listed in `gold_events` (never
a silent drop). Sites: `root` is the benchmark's folder, or a folder of copies of it (../shared/data holds ITN in
`sent-align-news-itn/` and Army and Hiru in `sent-align-news-army-hiru/`), each site read from the one copy that
holds it (`find_site`); several sites pool into one set per pair (`load_sites`: ids `<site>/<id>`, the site a
stratum of the test items, `document_site`).
`gold_counts_markdown` turns `stats.json` files into the report's table of gold counts and drops, with the gold
lines of each drop, repair and cross-document link (a pooled set: a row per site, then the pooled row). What cannot be repaired fails in one
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


def find_site(root: Path, folder: str, site: str) -> Path:
    """A site's folder: `root/<folder>/<site>` (`find_dir`), or, where `root` holds several copies of the
    benchmark (../shared/data: `sent-align-news-itn/`, `sent-align-news-army-hiru/`), the one
    `root/<copy>/<folder>/<site>` there is; none or several fail naming what was looked for."""
    try:
        return find_dir(find_dir(root, folder), site)
    except FileNotFoundError as e:
        missing = e
    copies, hits = [], []
    for copy in sorted(p for p in root.iterdir() if p.is_dir()) if root.is_dir() else []:
        try:
            pair_dir = find_dir(copy, folder)
        except FileNotFoundError:
            continue
        copies.append(copy.name)
        try:
            hits.append(find_dir(pair_dir, site))
        except FileNotFoundError:
            continue
    if len(hits) == 1:
        return hits[0]
    if not copies:
        raise missing
    raise InputError(
        f"{root}: expected the site folder '{folder}/{site}' in exactly one of its copies of the benchmark "
        f"({', '.join(copies)}; names matched ignoring case, spaces, '-' and '_'), got "
        + (f"{len(hits)}: {', '.join(str(h) for h in hits)}" if hits else "none")
    )


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


def gold_file_name_standard(path: Path, pair: str) -> bool:
    """Whether a gold file is named `<site>.<pair>` (`ITN.si-en`); any other name `gold_name_re` accepts
    (`ArmyNews-ta-en`: a hyphen before the pair) is read too, and counted."""
    return path.name.endswith(f".{pair}") and len(path.name) > len(pair) + 1


def read_gold(
    path: Path, counts: Counter[str], events: list[dict[str, Any]] | None = None
) -> list[tuple[str, str, int]]:
    """Raw gold links (IDs normalised, `_6,7` and `_6-7` expanded) with their line numbers, before checking
    them against the documents. Each line a defect touches is appended to `events` (`gold_event`): a
    malformed line (dropped), a prefix's case fixed, a one-to-many id expanded; CRLF endings are counted
    (`gold_crlf`) and said in one line."""
    events = [] if events is None else events
    raw = path.read_bytes()
    if b"\r\n" in raw:
        counts["gold_crlf"] = 1
        log.info("%s: CRLF line endings (%d lines; read as LF)", path, raw.count(b"\r\n"))
    links: list[tuple[str, str, int]] = []
    for lineno, line in enumerate(decode(raw, path).splitlines(), 1):
        if not line.strip():
            continue
        if len(line) > MAX_LINE_CHARS:
            counts["gold_malformed_lines"] += 1
            events.append(gold_event(path, lineno, "malformed_lines", text=line[:80]))
            log.warning("%s:%d: a line of %d characters (dropped)", path, lineno, len(line))
            continue
        parts = line.split("\t") if "\t" in line else line.split()
        parts = [p for p in parts if p.strip()]
        if len(parts) != 2:
            counts["gold_malformed_lines"] += 1
            events.append(gold_event(path, lineno, "malformed_lines", text=line[:80]))
            log.warning("%s:%d: expected '<srcID>\\t<tgtID>', got %r (dropped)", path, lineno, line[:80])
            continue
        counts["gold_lines"] += 1
        before = Counter(counts)
        try:
            srcs = expand_id(normalise_id(parts[0], counts, gold=True), counts)
            tgts = expand_id(normalise_id(parts[1], counts, gold=True), counts)
        except ValueError as e:
            counts["gold_malformed_lines"] += 1
            events.append(gold_event(path, lineno, "malformed_lines", text=line[:80]))
            log.warning("%s:%d: %s (dropped)", path, lineno, e)
            continue
        written = [p.strip() for p in parts]
        for key in ("gold_id_prefix_case_fixed", "multi_id_expanded"):
            if counts[key] > before[key]:
                events.append(gold_event(path, lineno, key.removeprefix("gold_"), written))
                log.info("%s:%d: %s<TAB>%s: %s", path, lineno, *written, GOLD_REPAIRED[key])
        links.extend((s, t, lineno) for s in srcs for t in tgts)
    return links


def gold_event(
    path: str | os.PathLike, line: int, what: str, link: Iterable[str] = (), text: str | None = None
) -> dict[str, Any]:
    """One gold line a defect touched, as `stats.json` lists it (`gold_events`): its file and line, the link
    (or, for a malformed line, its text) and what was done (a key of `gold_dropped` or `gold_repaired`
    without its `gold_` prefix, or `cross_document_links`: kept, out of a per-document miner's reach)."""
    event: dict[str, Any] = {"file": str(path), "line": line, "what": what}
    if text is not None:
        event["text"] = text
    else:
        event["link"] = list(link)
    return event


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


def document_files(lang_dir: Path) -> list[Path]:
    """The files of one side's folder, each a document (what `read_documents` reads)."""
    return [p for p in sorted(lang_dir.iterdir()) if p.is_file()]


def news_files(root: str | os.PathLike, sites: str | Iterable[str], pair: str) -> list[Path]:
    """Every file `load_sites` reads for a pair: of each site, both sides' documents and the gold file (what
    the workflow declares as the job's input, so that an edit to one of them reruns it)."""
    src, tgt = pair_languages(pair)
    files = []
    for site in [sites] if isinstance(sites, str) else sites:
        site_dir = find_site(Path(root), f"{language_folder(src)}-{language_folder(tgt)}", site)
        for lang in (src, tgt):
            files += document_files(find_dir(site_dir, language_folder(lang)))
        files.append(find_gold(site_dir, pair))
    return files


def read_documents(lang_dir: Path, lang: str, counts: Counter[str]) -> dict[str, list[tuple[str, str]]]:
    """The documents of one side (file name -> its sentences); a file name that cannot be a document id
    (not UTF-8, control characters) fails before any is read."""
    files = document_files(lang_dir)
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
    events: list[dict[str, Any]] | None = None,
):
    """The gold links kept (repaired by the opted-in `rules` where the repair is consistent), the repairs made
    and the links dropped as ambiguous, each with its gold file and line; what is dropped is counted in
    `counts`, and every link dropped, repaired or kept across documents is appended to `events` (`gold_event`)
    and said in a line of the log with its file and line."""
    events = [] if events is None else events
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
            events.append(gold_event(gold_file, lineno, reason.removeprefix("gold_"), (s0, t0)))
            log.warning("%s:%d: %s<TAB>%s dropped (%s)", gold_file, lineno, s0, t0, GOLD_DROPPED[reason])
            continue
        s, t = fixed
        if (s, t) != (s0, t0):
            reason = next(k for k in GOLD_REPAIRED if counts[k] > before[k])
            repairs.append(
                {"line": lineno, "from": [s0, t0], "to": [s, t], "reason": reason.removeprefix("gold_")}
            )
            events.append(gold_event(gold_file, lineno, reason.removeprefix("gold_"), (s0, t0)))
            log.info("%s:%d: %s<TAB>%s repaired to %s<TAB>%s (%s)", gold_file, lineno, s0, t0, s, t,
                     GOLD_REPAIRED[reason])  # fmt: skip
        drop = None
        if s not in index[src] or t not in index[tgt]:
            drop = "gold_missing_src_id" if s not in index[src] else "gold_missing_tgt_id"
        elif (s, t) in seen:
            drop = "gold_duplicate_links"
        if drop:
            counts[drop] += 1
            events.append(gold_event(gold_file, lineno, drop.removeprefix("gold_"), (s, t)))
            log.warning("%s:%d: %s<TAB>%s dropped (%s)", gold_file, lineno, s, t, GOLD_DROPPED[drop])
            continue
        seen.add((s, t))
        if index[src][s][0] != index[tgt][t][0]:
            counts["gold_cross_document_links"] += 1
            events.append(gold_event(gold_file, lineno, "cross_document_links", (s, t)))
            log.info(
                "%s:%d: %s<TAB>%s links documents %s and %s (kept; a per-document miner cannot reach it)",
                gold_file, lineno, s, t, index[src][s][0], index[tgt][t][0],
            )  # fmt: skip
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
    site_dir = find_site(Path(root), folder, site)
    counts: Counter[str] = Counter()
    docs = {lang: read_documents(find_dir(site_dir, name), lang, counts)
            for lang, name in ((src, src_lang_name), (tgt, tgt_lang_name))}  # fmt: skip
    common = sorted(set(docs[src]) & set(docs[tgt]))
    counts["docs_only_src"] = len(set(docs[src]) - set(docs[tgt]))
    counts["docs_only_tgt"] = len(set(docs[tgt]) - set(docs[src]))
    index = sentence_index(docs, common, src, tgt, counts)
    gold_file = find_gold(site_dir, pair)
    if not gold_file_name_standard(gold_file, pair):
        counts["gold_file_name_nonstandard"] = 1
        log.info("%s: a gold file not named '<site>.%s' (read as the %s gold of site %s)", gold_file, pair,
                 pair, site_dir.name)  # fmt: skip
    events: list[dict[str, Any]] = []
    raw_links = read_gold(gold_file, counts, events)
    gold, repaired, ambiguous = gold_links(raw_links, src, tgt, index, counts, repairs, gold_file, events)
    events.sort(key=lambda e: e["line"])  # stable: a line's events in the order they happened

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
        "gold_events": events,  # every gold line a defect touched: file, line, link, what was done
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


SITE_SEP = "/"  # a pooled set's document and sentence ids: `<site>/<id>` (a file name holds no `/`)


def document_site(unit: str) -> str:
    """The site of a test item of a pooled news set (`load_sites`: document `Army_news/32668`), `""` for an
    item of one site's set: the stratum the two-level test resamples the item within."""
    site, sep, _ = str(unit).partition(SITE_SEP)
    return site if sep else ""


def load_sites(
    root: str | os.PathLike,
    sites: str | Iterable[str],
    pair: str,
    doc_pairs: str = "gold",
    repairs: Iterable[str] = (),
) -> NewsBenchmark:
    """One site's set (`load_news`), or several sites of the benchmark pooled into one set: each site read
    alone (its own defects, counts and gold lines), then its documents and sentence ids written as
    `<site>/<id>` (sites reuse document numbers: ITN and Hiru si-en both have 54415), so that mining, which
    runs per document pair, scores each document as its own site's set would, and the test items (documents)
    carry their site as a stratum (`document_site`). `stats.json` holds the pooled counts and, under `sites`,
    each site's own."""
    names = [sites] if isinstance(sites, str) else list(sites)
    if not names:
        raise ValueError("news: expected one site or more, got none")
    keys = [_key(n) for n in names]
    repeated = sorted({n for n, k in zip(names, keys, strict=True) if keys.count(k) > 1})
    if repeated:
        raise ValueError(
            f"news: sites {repeated} are named twice (matched ignoring case, spaces, '-' and '_')"
        )
    if len(names) == 1:
        return load_news(root, names[0], pair, doc_pairs, repairs)
    benches = [load_news(root, n, pair, doc_pairs, repairs) for n in names]

    def tag(bench: NewsBenchmark, rows: list[tuple[str, str, str]]) -> list[tuple[str, str, str]]:
        return [(f"{bench.site}{SITE_SEP}{i}", f"{bench.site}{SITE_SEP}{d}", t) for i, d, t in rows]

    defects: Counter[str] = Counter()
    for b in benches:
        defects.update(b.stats["defects"])
    total = {k: sum(b.stats[k] for b in benches) for k in (
        "doc_pairs_total", "doc_pairs_with_gold", "doc_pairs_used", "src_sentences", "tgt_sentences",
        "gold_links", "gold_lines", "gold_links_read")}  # fmt: skip
    stats: dict[str, Any] = {
        "site": " + ".join(b.site for b in benches),
        "pair": pair,
        "doc_pairs": doc_pairs,
        **total,
        "defects": dict(sorted(defects.items())),
        **gold_summary(defects),
        "gold_file": [b.stats["gold_file"] for b in benches],
        "gold_repair_rules": list(repairs),
        "gold_repairs": [
            {"file": b.stats["gold_file"], **r} for b in benches for r in b.stats["gold_repairs"]
        ],
        "gold_ambiguous": [a for b in benches for a in b.stats["gold_ambiguous"]],
        "gold_events": [e for b in benches for e in b.stats["gold_events"]],
        "strata": "site",  # the test items are documents `<site>/<doc>`: the site is their stratum
        "sites": [b.stats for b in benches],
    }
    log.info("news %s %s: %d sites pooled, %d/%d doc pairs, %d gold links", stats["site"], pair, len(benches),
             total["doc_pairs_used"], total["doc_pairs_total"], total["gold_links"])  # fmt: skip
    return NewsBenchmark(
        pair,
        stats["site"],
        [r for b in benches for r in tag(b, b.src)],
        [r for b in benches for r in tag(b, b.tgt)],
        [(f"{b.site}{SITE_SEP}{s}", f"{b.site}{SITE_SEP}{t}") for b in benches for s, t in b.gold],
        stats,
    )


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


MAX_LINES_LISTED = 6  # gold lines listed per reason in the report's table (stats.json lists every one)


def _lines(events: list[dict[str, Any]], what: str) -> str:
    """` (line 245)`, ` (lines 12, 40)`, ` (lines 1, 2, ... and 3 more)`: the gold lines of `events` that
    `what` touched; `""` for none."""
    lines = sorted({e["line"] for e in events if e.get("what") == what})
    if not lines:
        return ""
    shown = ", ".join(str(n) for n in lines[:MAX_LINES_LISTED])
    more = f" and {len(lines) - MAX_LINES_LISTED} more" if len(lines) > MAX_LINES_LISTED else ""
    return f" (line{'s' if len(lines) > 1 else ''} {shown}{more})"


def _reasons(defects: dict[str, int], names: dict[str, str], events: list[dict[str, Any]] = ()) -> str:
    return (
        ", ".join(
            f"{names[k]} {defects[k]:,}{_lines(list(events), k.removeprefix('gold_'))}"
            for k in names
            if defects.get(k)
        )
        or "none"
    )


def _gold_lines_cell(st: dict[str, Any]) -> str:
    """The gold lines read, and how the file was read where it is not `<site>.<pair>` with LF endings."""
    d = st.get("defects", {})
    notes = []
    if d.get("gold_file_name_nonstandard"):
        notes.append(
            f"file named `{Path(st['gold_file']).name}`"
            if isinstance(st.get("gold_file"), str)
            else f"{d['gold_file_name_nonstandard']} of {len(st['sites'])} files not named '<site>.<pair>'"
        )
    if d.get("gold_crlf"):
        sites = st.get("sites")
        notes.append(
            f"{d['gold_crlf']} of {len(sites)} files with CRLF line endings" if sites else "CRLF line endings"
        )
    return f"{st['gold_lines']:,}" + (f" ({'; '.join(notes)})" if notes else "")


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
    """The report's table of each news evaluation set's gold: lines read (and how the file was read), links
    kept, links across documents, repairs and drops per reason with their gold lines (`gold_events`), and
    the sentences dropped as equal to pre-training text, one row per `stats.json` written by `write_news` or
    `lem.data.leakage.drop_leaked_items` (`results/eval/{prepared,clean}/<evalset>/<pair>/stats.json`: the
    evaluation set is the grandparent folder's name); a pooled set (`load_sites`) has a row per site, then
    its pooled row. Markdown table lines (header first); no line for no file."""
    rows = []
    for path in stats_files:
        path = Path(path)
        st = json.loads(path.read_text(encoding="utf-8"))
        sites = st.get("sites") or []
        for part in [*sites, st]:
            d = part.get("defects", {})
            events = [] if part is st and sites else part.get("gold_events", [])
            site = f"pooled: {len(sites)} sites" if part is st and sites else part["site"]
            leakage = "(pooled row)" if part is not st else _leakage_cell(st)
            rows.append(
                f"| {path.parent.parent.name} | {st['pair']} | {site} | {part['doc_pairs_used']:,} / "
                f"{part['doc_pairs_total']:,} ({part['doc_pairs']}) | {_gold_lines_cell(part)} | "
                f"{part['gold_links']:,} | {d.get('gold_cross_document_links', 0):,}"
                f"{_lines(events, 'cross_document_links')} | {_reasons(d, GOLD_REPAIRED, events)} | "
                f"{_reasons(d, GOLD_DROPPED, events)} | {leakage} |"
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
