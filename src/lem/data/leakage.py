"""Leakage guard: training lines that also occur in an evaluation set are counted and (by default) dropped.

Two matches: exact (after stripping) and normalised (NFKC, case-folded, punctuation, zero-width joiners
and spacing removed), so "The road, closed." in training hides "the road closed" in evaluation too.

The guard runs once, before pre-training, against the evaluation sets configured then (its report lists
them). An evaluation set added later is not guarded (that would change the training text, hence rerun the
whole pre-training). A mining set is then handled per item at evaluation time (`drop_leaked_items`, rule
`leakage_items`): each of its sentences equal to guarded training text (the guard's exact or normalised
match, shorter than the set's `min_chars` never) is dropped from that set and pair with its gold links,
counted per reason and listed with file and id; a pair losing more than `max_dropped_share` of its sentences
is refused naming the set (`EvalLeakageSettings`, `mining.evalsets.<name>.leakage`). Other kinds of set
(sentiment, curation, NMT) are checked whole by `check_evalset`, refused by name if they share a sentence.
"""

from __future__ import annotations

import json
import logging
import os
import re
import time
import unicodedata
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from lem.core.files import atomic_path, write_json, write_text
from lem.core.inputs import InputError, read_text
from lem.core.settings import Settings
from lem.data.noisy import NOISY_HEADERS, read_noisy

log = logging.getLogger(__name__)


@dataclass
class LeakageSettings(Settings):
    SECTION = "leakage settings"

    drop: bool = True  # drop overlapping training lines (False: only report)
    normalised: bool = True  # also match after normalisation (else exact only)
    min_chars: int = 0  # evaluation sentences shorter than this (normalised) are not matched


def normalise(text: str) -> str:
    """Comparison key: NFKC, case-folded, punctuation/symbols/format chars (ZWJ) dropped, spaces collapsed."""
    text = unicodedata.normalize("NFKC", text).casefold()
    kept = [
        " " if unicodedata.category(c)[0] in "PSZ" else c for c in text if unicodedata.category(c) != "Cf"
    ]
    return re.sub(r"\s+", " ", "".join(kept)).strip()


def read_eval_sentences(path: str | os.PathLike) -> list[str]:
    """Sentences of an evaluation file: `.txt` lines; `.tsv` the `text`/`src`/`tgt`/`Sentence` columns of a
    headed file (a curation corpus, header `src<TAB>tgt[<TAB>label]`, read strictly by
    `lem.data.noisy.read_noisy`), else every column; `.conll` tokens (first column) joined by spaces."""
    path = Path(path)
    lines = read_text(path).splitlines()
    if path.suffix in (".conll", ".conllu"):
        out, cur = [], []
        column = 1 if path.suffix == ".conllu" else 0
        for line in lines + [""]:
            if not line.strip():
                if cur:
                    out.append(" ".join(cur))
                cur = []
            elif not line.startswith("#") and len(line.split()) > column:
                cur.append(line.split()[column])
        return out
    if path.suffix == ".tsv" and lines:
        header = lines[0].split("\t")
        if header in NOISY_HEADERS:  # a curation corpus: checked now, long before `lem curate rank` reads it
            src, tgt, _ = read_noisy(path)
            return src + tgt
        cols = [i for i, h in enumerate(header) if h in ("text", "src", "tgt", "Sentence", "sentence")]
        if cols:
            return [f[i] for line in lines[1:] for f in [line.split("\t")] for i in cols if i < len(f)]
        return [c for line in lines for c in line.split("\t")]
    return lines


def eval_keys(
    evals: list[str | os.PathLike], settings: LeakageSettings
) -> tuple[dict[str, set[str]], dict[str, set[str]]]:
    """The exact and normalised keys of every evaluation sentence, each with the files it occurs in."""
    exact: dict[str, set[str]] = {}
    norm: dict[str, set[str]] = {}
    for e in evals:
        for s in read_eval_sentences(e):
            key = normalise(s)
            if not s.strip() or len(key) < settings.min_chars:
                continue
            exact.setdefault(s.strip(), set()).add(str(e))
            norm.setdefault(key, set()).add(str(e))
    return exact, norm


def guard(
    train: list[str | os.PathLike],
    evals: list[str | os.PathLike],
    out_clean: list[str | os.PathLike] | None,
    settings: LeakageSettings,
) -> dict[str, Any]:
    """Count (and drop) training lines overlapping any eval set; a `.tsv` training line is checked per column."""
    started = time.monotonic()
    exact, norm = eval_keys(evals, settings)
    if out_clean is not None and len(out_clean) != len(train):
        raise ValueError(f"--out-clean needs one path per --train file ({len(train)}), got {len(out_clean)}")
    report: dict[str, Any] = {"train": {}, "eval_sentences_seen_in_training": {str(e): 0 for e in evals}}
    hit_eval: dict[str, set[str]] = {str(e): set() for e in evals}
    for k, t in enumerate(train):
        lines = read_text(t).splitlines()
        keep: list[str] = []
        n_exact = n_norm = 0
        for line in lines:
            cols = line.split("\t") if str(t).endswith(".tsv") else [line]
            ex = [exact[c.strip()] for c in cols if c.strip() in exact]
            no = [norm[normalise(c)] for c in cols if settings.normalised and normalise(c) in norm]
            if ex:
                n_exact += 1
            if ex or no:
                n_norm += 1
                for sets in ex + no:
                    for e in sets:
                        hit_eval[e].update(normalise(c) for c in cols)
                if settings.drop:
                    continue
            keep.append(line)
        if lines and not keep:
            raise InputError(
                f"{t}: every one of its {len(lines)} lines is in an evaluation set (leakage.drop): nothing "
                "left to train on"
            )
        report["train"][str(t)] = {
            "lines": len(lines),
            "exact_overlap": n_exact,
            "normalised_overlap": n_norm if settings.normalised else None,
            "dropped": len(lines) - len(keep),
        }
        if out_clean is not None:
            with atomic_path(out_clean[k]) as tmp:
                tmp.write_text("".join(x + "\n" for x in keep), encoding="utf-8")
    for e in evals:
        report["eval_sentences_seen_in_training"][str(e)] = len(hit_eval[str(e)] & set(norm))
    report["evals"] = [str(e) for e in evals]  # what the training text is guarded against (check_evalset)
    report["settings"] = settings.__dict__
    log.info(
        "leakage: %d eval sentences from %d files; %s; %.1fs",
        len(norm),
        len(evals),
        {
            Path(k).name: (v["exact_overlap"], v["normalised_overlap"], v["dropped"])
            for k, v in report["train"].items()
        },
        time.monotonic() - started,
    )
    return report


def write_report(report: dict[str, Any], path: str | os.PathLike) -> None:
    write_json(path, report)


class LeakageError(ValueError):
    """An evaluation set added after the guard ran shares sentences with the pre-training text."""


def guarded_evals(report: str | os.PathLike) -> list[str]:
    """The evaluation files a guard report was built with (`evals`; older reports: the keys of
    `eval_sentences_seen_in_training`)."""
    data = json.loads(read_text(report))
    return list(data.get("evals", data.get("eval_sentences_seen_in_training", {})))


def check_evalset(
    name: str,
    evals: list[str | os.PathLike],
    train: list[str | os.PathLike],
    guard_report: str | os.PathLike,
    settings: LeakageSettings,
) -> dict[str, Any]:
    """Evaluation set `name` (its files `evals`) against the guarded pre-training text `train`.

    Files the guard was built with pass unread: the guard dropped their sentences from `train` (or reported
    them, with `leakage.drop: false`). Any other file (a set added after pre-training) must share no
    sentence with `train` (the guard's exact and normalised matches), else LeakageError naming the set,
    the count and an example: drop those sentences from the set, or guard the training text against it
    (delete the guard's report; pre-training then reruns)."""
    started = time.monotonic()
    built_with = set(guarded_evals(guard_report))
    added = [e for e in evals if str(e) not in built_with]
    result: dict[str, Any] = {
        "evalset": name,
        "guard_report": str(guard_report),
        "guarded": [str(e) for e in evals if str(e) in built_with],
        "checked": [str(e) for e in added],
        "train": [str(t) for t in train] if added else [],
        "overlap": 0,
    }
    if not added:
        return result
    exact, norm = eval_keys(added, settings)
    hits: set[str] = set()
    example = ""
    for t in train:
        for line in read_text(t).splitlines():
            cols = line.split("\t") if str(t).endswith(".tsv") else [line]
            for c in cols:
                key = normalise(c)
                if c.strip() in exact or (settings.normalised and key in norm):
                    hits.add(key)
                    example = example or c.strip()
    result["overlap"] = len(hits)
    log.info(
        "leakage check %s: %d files added after the guard, %d sentences, %d in the training text; %.1fs",
        name, len(added), len(norm), len(hits), time.monotonic() - started,
    )  # fmt: skip
    if hits:
        raise LeakageError(
            f"evaluation set {name!r} ({', '.join(map(str, added))}) shares {len(hits)} sentence(s) with "
            f"the pre-training text (e.g. {example[:80]!r}): it was added after the leakage guard ran "
            f"({guard_report}); remove those sentences from it, or delete {guard_report} to guard the "
            "training text against it (pre-training then reruns)"
        )
    return result


# --------------------------------------------------------------------------- per item, at evaluation time


@dataclass
class EvalLeakageSettings(Settings):
    """The evaluation-side rule of one mining set (`mining.evalsets.<name>.leakage`): a change reruns only
    that set's jobs (the training-side guard, `LeakageSettings`, is untouched)."""

    SECTION = "evaluation-set leakage settings"

    min_chars: int = 0  # a sentence shorter than this (normalised) never counts as a match
    max_dropped_share: float = 0.05  # a pair losing a larger share of its sentences is refused by name

    def validate(self) -> None:
        if isinstance(self.min_chars, bool) or self.min_chars < 0:
            raise ValueError(f"min_chars: {self.min_chars!r}: expected an integer count >= 0")
        if not 0 <= self.max_dropped_share <= 1:
            raise ValueError(f"max_dropped_share: {self.max_dropped_share!r}: expected a share in [0, 1]")


def _read_rows(path: Path) -> tuple[str, list[list[str]]]:
    """The header and rows of a prepared TSV (`lem data news`: id, doc, text; gold: src_id, tgt_id)."""
    lines = read_text(path).splitlines()
    if not lines:
        raise InputError(f"{path}: expected a header line, got an empty file")
    return lines[0], [line.split("\t") for line in lines[1:] if line]


def training_matches(
    sentences: list[str], train: list[str | os.PathLike], min_chars: int = 0
) -> dict[str, tuple[str, str]]:
    """Sentence -> (reason, training file) for each of `sentences` equal to a line (a column of a `.tsv`
    line) of `train`: `exact` (the same after stripping) or `normalised` (the same after `normalise` only);
    a sentence whose normalised form is empty (punctuation alone, e.g. a lone `“` of the ITN Tamil side, which
    would match every blank training line) or shorter than `min_chars` never matches."""
    keys = {x: k for x in sentences if (k := normalise(x)) and len(k) >= min_chars}
    exact = {x.strip(): x for x in keys}
    by_key: dict[str, list[str]] = {}
    for x, key in keys.items():
        by_key.setdefault(key, []).append(x)
    found: dict[str, tuple[str, str]] = {}
    for t in train:
        for line in read_text(t).splitlines():
            cols = line.split("\t") if str(t).endswith(".tsv") else [line]
            for c in cols:
                hit = exact.get(c.strip())
                if hit is not None and found.get(hit, ("",))[0] != "exact":
                    found[hit] = ("exact", str(t))
                for x in by_key.get(normalise(c), ()):
                    found.setdefault(x, ("normalised", str(t)))
    return found


def drop_leaked_items(
    name: str,
    pair: str,
    prepared: str | os.PathLike,
    out_dir: str | os.PathLike,
    train: list[str | os.PathLike],
    guard_report: str | os.PathLike,
    settings: EvalLeakageSettings,
) -> dict[str, Any]:
    """Mining set `name`, pair `pair`, as `lem data news` prepared it in `prepared` ({src}.tsv, {tgt}.tsv,
    gold.tsv, stats.json), written to `out_dir` without its sentences that equal the guarded pre-training
    text `train` (`training_matches`), and without the gold links of those sentences. Files the guard was
    built with are copied unread (the guard dropped their sentences from the training text). `stats.json`
    gains `leakage`: the status, the settings, the sentences dropped per side and per reason, the gold links
    dropped and every dropped item (file, id, reason, the training file); `gold_links` counts the links
    kept. LeakageError naming the set when a side loses more than `max_dropped_share` of its sentences."""
    started = time.monotonic()
    prepared, out_dir = Path(prepared), Path(out_dir)
    src, tgt = pair.split("-")
    files = {lang: prepared / f"{lang}.tsv" for lang in (src, tgt)}
    built_with = set(guarded_evals(guard_report))
    guarded = all(str(f) in built_with for f in files.values())
    sides = {lang: _read_rows(f) for lang, f in files.items()}
    gold_header, gold = _read_rows(prepared / "gold.tsv")
    stats = json.loads(read_text(prepared / "stats.json"))
    dropped: dict[str, dict[str, str]] = {src: {}, tgt: {}}
    items = []
    if not guarded:
        texts = [r[2] for lang in (src, tgt) for r in sides[lang][1] if len(r) >= 3]
        found = training_matches(texts, train, settings.min_chars)
        for lang in (src, tgt):
            for r in sides[lang][1]:
                if len(r) >= 3 and r[2] in found:
                    reason, where = found[r[2]]
                    dropped[lang][r[0]] = reason
                    items.append({"file": str(files[lang]), "id": r[0], "lang": lang, "reason": reason,
                                  "train_file": where, "text": r[2][:200]})  # fmt: skip
    for lang in (src, tgt):
        total = len(sides[lang][1])
        share = len(dropped[lang]) / total if total else 0.0
        if share > settings.max_dropped_share:
            example = next(i for i in items if i["lang"] == lang)
            raise LeakageError(
                f"evaluation set {name!r} {pair}: {len(dropped[lang])} of its {total} {lang} sentences "
                f"({share:.1%}) equal pre-training text, more than mining.evalsets.{name}.leakage."
                f"max_dropped_share = {settings.max_dropped_share:g} (e.g. {example['file']} id "
                f"{example['id']} {example['text'][:60]!r}, found in {example['train_file']}): the set "
                "overlaps the training data; raise the share, or min_chars, if these are short common lines"
            )
    kept_gold = [g for g in gold if g[0] not in dropped[src] and g[1] not in dropped[tgt]]
    for lang in (src, tgt):
        header, rows = sides[lang]
        text = header + "\n" + "".join("\t".join(r) + "\n" for r in rows if r[0] not in dropped[lang])
        write_text(out_dir / f"{lang}.tsv", text)
    write_text(out_dir / "gold.tsv", gold_header + "\n" + "".join("\t".join(g) + "\n" for g in kept_gold))
    reasons = {r: sum(i["reason"] == r for i in items) for r in ("exact", "normalised")}
    stats["leakage"] = {
        "status": "guarded" if guarded else "checked",
        "guard_report": str(guard_report),
        "settings": {"min_chars": settings.min_chars, "max_dropped_share": settings.max_dropped_share},
        "sentences_dropped": {lang: len(dropped[lang]) for lang in (src, tgt)},
        "by_reason": reasons,
        "gold_links_dropped": len(gold) - len(kept_gold),
        "items": items,
    }
    stats["gold_links"] = len(kept_gold)
    stats["src_sentences"] = len(sides[src][1]) - len(dropped[src])
    stats["tgt_sentences"] = len(sides[tgt][1]) - len(dropped[tgt])
    if "defects" in stats:
        stats["defects"]["gold_dropped_leakage"] = len(gold) - len(kept_gold)
    if "gold_dropped" in stats:
        stats["gold_dropped"]["dropped_leakage"] = len(gold) - len(kept_gold)
    write_json(out_dir / "stats.json", stats)
    log.info(
        "leakage items %s %s (%s): dropped %s sentences (%s), %d gold links; %.1fs",
        name, pair, stats["leakage"]["status"], stats["leakage"]["sentences_dropped"], reasons,
        len(gold) - len(kept_gold), time.monotonic() - started,
    )  # fmt: skip
    return stats
