"""Parallel data curation: rank a noisy parallel corpus by the model's margin score, keep the top pairs.

`lem curate prepare` streams the corpus once per pair (`lem.data.webmined`: cap, de-duplication, leakage
guard) into `pairs.tsv` and one sentence file per side, which the embed stage embeds for every variant (evalset
`curation`). `lem curate rank` reads those embeddings and scores each pair (x_i, y_i) with the margin of its
cosine against each side's k nearest neighbours on the other side (LASER's scoring of a given bitext,
`lem.mine.pair_margin_scores`), with mining's k, margin and neighbourhood (`mining.settings`) unless
`curation.settings` sets them. Where the corpus carries clean/noisy labels (the embedded default's generated
corpus), the ranking is evaluated: precision of clean pairs in the top-ranked share, for each configured
share, and average precision. The NMT trained on the top shares is `lem.nmt` (workflow/rules/nmt.smk); the
training pairs of a share (`select_top`, `kept_count`; without the pairs that share a sentence with NMT's held-out
sets, `held_out_overlap`) and the control rankings (`control_ranking`) are here.
"""

from __future__ import annotations

import argparse
import logging
import os
import random
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from lem.core.embeddings import load_embeddings, read_sentences
from lem.core.files import atomic_path, with_keys, write_json, write_text
from lem.core.inputs import InputError, read_lines, shown
from lem.core.settings import Settings, SettingsError
from lem.core.stage import Stage, UsageError, Verb, arg
from lem.data.leakage import normalise, read_eval_sentences
from lem.data.noisy import read_noisy
from lem.data.webmined import prepare_curation_corpus
from lem.evidence.chance import curation_chance
from lem.mine import MARGINS, NEIGHBOURHOODS, MineSettings, pair_margin_scores

log = logging.getLogger("lem.curate")


@dataclass
class CurationSettings(Settings):
    """Curation's choices. The margin (`k`, `margin`, `neighbourhood`) is mining's (`mining`: the
    `mining.settings` section, `lem.mine.MineSettings`) unless set here explicitly (None: mining's)."""

    SECTION = "curation settings"

    k: int | None = None  # neighbours per side of the margin, capped at the corpus size
    margin: str | None = None
    neighbourhood: str | None = None
    keep_fractions: list[float] = field(default_factory=lambda: [0.25, 0.5])
    mining: dict[str, Any] = field(default_factory=dict)

    def margin_settings(self) -> tuple[int, str, str]:
        """(k, margin, neighbourhood): this section's where set, else mining's (one place for the margin)."""
        mine = MineSettings.from_dict(self.mining)
        return (
            mine.k if self.k is None else self.k,
            mine.margin if self.margin is None else self.margin,
            mine.neighbourhood if self.neighbourhood is None else self.neighbourhood,
        )

    def validate(self) -> None:
        if self.k is not None and self.k < 1:
            raise SettingsError(
                f"curation settings: k={self.k!r}: expected an integer >= 1 (or null: mining's)"
            )
        if self.margin is not None and self.margin not in MARGINS:
            raise SettingsError(f"curation settings: margin={self.margin!r}: expected one of {MARGINS}")
        if self.neighbourhood is not None and self.neighbourhood not in NEIGHBOURHOODS:
            raise SettingsError(
                f"curation settings: neighbourhood={self.neighbourhood!r}: expected one of {NEIGHBOURHOODS}"
            )
        self.margin_settings()  # mining's settings are valid
        fractions = self.keep_fractions
        if any(not 0 < f <= 1 for f in fractions):
            raise SettingsError(
                f"curation settings: keep_fractions={fractions!r}: expected shares in (0, 1] (the top share "
                "of the ranked corpus whose precision is reported and on which NMT is trained)"
            )
        if len({f"{f:g}" for f in fractions}) != len(fractions):
            raise SettingsError(f"curation settings: keep_fractions={fractions!r}: expected distinct shares")


def ranking_metrics(scores: np.ndarray, clean: np.ndarray, keep_fractions: list[float]) -> dict[str, Any]:
    """Precision of clean pairs among the top-scored share of the corpus (`lem.curate.kept_count`: the pairs the
    NMT of that share trains on), and average precision."""

    order = np.argsort(-scores, kind="stable")
    hits = clean[order].astype(np.float64)
    out: dict[str, Any] = {"n": int(len(scores)), "clean_share": float(clean.mean()) if len(clean) else 0.0}
    for f in keep_fractions:
        out[f"precision_at_{f:g}"] = float(hits[: kept_count(len(scores), share=f)].mean())
    cum = np.cumsum(hits)
    ranks = np.arange(1, len(hits) + 1)
    out["average_precision"] = float((cum / ranks)[hits > 0].mean()) if hits.any() else 0.0
    return out


def curate(
    pairs: str,
    src_emb: str,
    tgt_emb: str,
    src_sents: str,
    tgt_sents: str,
    settings: CurationSettings,
    out_scores: str,
    out_metrics: str,
    keys: dict[str, str] | None = None,
) -> dict:
    """Score every pair of the prepared corpus `pairs` (`lem curate prepare`) from the embed stage's
    embeddings of its two sides (`src_emb`, `tgt_emb`, checked against the sentence files' ids) with the
    margin of `lem.mine.pair_margin_scores`; write the ranking (best first) and the metrics."""
    t0 = time.time()
    src, _, labels = read_noisy(pairs)
    sides = []
    for emb, sents in ((src_emb, src_sents), (tgt_emb, tgt_sents)):
        ids = read_sentences(sents).ids
        if len(ids) != len(src):
            raise InputError(f"{sents}: {len(ids)} sentences, but {pairs} has {len(src)} pairs")
        sides.append(load_embeddings(emb, ids, sents))
    k, margin, neighbourhood = settings.margin_settings()
    device = settings.mining.get("device", "cpu")  # mining.settings.device: the neighbour search
    scores = pair_margin_scores(
        sides[0], sides[1], k=k, margin_kind=margin, neighbourhood=neighbourhood, device=device
    )
    order = np.argsort(-scores, kind="stable")
    with atomic_path(out_scores) as tmp, open(tmp, "w", encoding="utf-8") as fh:
        fh.write("rank\tindex\tscore\tlabel\n")
        for rank, i in enumerate(order, start=1):
            fh.write(f"{rank}\t{i}\t{scores[i]:.6f}\t{labels[i] if labels else ''}\n")
    metrics: dict[str, Any] = {
        "corpus": str(pairs),
        "embeddings": [str(src_emb), str(tgt_emb)],
        "margin": {"k": k, "margin": margin, "neighbourhood": neighbourhood},
        "settings": {key: v for key, v in settings.__dict__.items() if key != "mining"},
    }
    if labels is not None:
        clean = np.array([lbl == "clean" for lbl in labels])
        metrics.update(ranking_metrics(scores, clean, settings.keep_fractions))
        metrics["chance"] = curation_chance(clean, settings.keep_fractions)  # a random ranking
        metrics["mean_score_by_label"] = {
            lbl: float(scores[np.array(labels) == lbl].mean()) for lbl in sorted(set(labels))
        }
        ranks = np.empty(len(order), dtype=np.int64)
        ranks[order] = np.arange(1, len(order) + 1)
        # per-pair items for the report's paired test (lem.report.comparisons): each pair's rank and whether it is clean
        metrics["items"] = {"rank": ranks.tolist(), "clean": clean.astype(int).tolist()}
    else:
        metrics["n"] = len(src)
    write_json(out_metrics, with_keys(metrics, keys))
    log.info("curated %s: %d pairs in %.1fs", pairs, len(src), time.time() - t0)
    return metrics


# --- the training pairs of a kept share (from nmt.py: `lem nmt select`, the report's curation test) ---------


RANKING_HEADER = ["rank", "index", "score", "label"]


def read_ranking(path: str | os.PathLike) -> list[int]:
    """Corpus row indices, best first, of a ranking file (`rank<TAB>index<TAB>score<TAB>label`)."""
    lines = read_lines(path)
    if not lines or lines[0].split("\t") != RANKING_HEADER:
        got = "an empty file" if not lines else shown(lines[0])
        raise InputError(f"{path}:1: expected the header {'<TAB>'.join(RANKING_HEADER)}, got {got}")
    order: list[int] = []
    for lineno, line in enumerate(lines[1:], start=2):
        row = line.split("\t")
        if len(row) != 4 or not row[0].isdigit() or not row[1].isdigit() or int(row[0]) != lineno - 1:
            raise InputError(
                f"{path}:{lineno}: expected rank {lineno - 1}<TAB>index<TAB>score<TAB>label, got {shown(line)}"
            )
        order.append(int(row[1]))
    if not order:
        raise InputError(f"{path}: expected ranked rows after the header, got none")
    if len(set(order)) != len(order):
        raise InputError(f"{path}: expected each corpus index once, got repeated indices")
    return order


def kept_count(n: int, share: float | None = None, count: int | None = None) -> int:
    """Pairs kept of `n`: `max(1, round(share * n))` (also the top share of `lem.curate.ranking_metrics` and
    of the report's curation test), or `count`."""
    if (share is None) == (count is None):
        raise UsageError("nmt: give exactly one of share and count")
    if share is not None:
        if isinstance(share, bool) or not isinstance(share, (int, float)) or not 0 < share <= 1:
            raise UsageError(f"nmt: share={share!r}: expected a number in (0, 1]")
        return max(1, int(round(share * n)))
    if isinstance(count, bool) or not isinstance(count, int) or count < 1:
        raise UsageError(f"nmt: count={count!r}: expected an integer >= 1")
    return min(count, n)


def held_out_overlap(src: list[str], tgt: list[str], exclude: Sequence[str | os.PathLike]) -> set[int]:
    """The corpus rows with a side equal to a sentence of the held-out files `exclude` (NMT's validation
    and test sets), after `lem.data.leakage.normalise`: what an NMT training set of the corpus leaves out."""
    banned = {normalise(s) for path in exclude for s in read_eval_sentences(path)}
    banned.discard("")
    return {
        i
        for i, (a, b) in enumerate(zip(src, tgt, strict=True))
        if normalise(a) in banned or normalise(b) in banned
    }


def select_top(ranked_tsv: str | os.PathLike, corpus_tsv: str | os.PathLike, out: str | os.PathLike, *,
               share: float | None = None, count: int | None = None,
               exclude: Sequence[str | os.PathLike] = ()) -> dict[str, Any]:  # fmt: skip
    """Write the top `share` (or `count`) pairs of `corpus_tsv` in the order of `ranked_tsv` (what
    `lem curate rank --out-scores` writes) to `out` as `src<TAB>tgt[<TAB>label]` with a header, atomically.
    With `exclude` (NMT's held-out sets), the pairs with a side among their sentences (`held_out_overlap`)
    leave the ranking first and the share is taken of the pairs left: the training set shares no sentence
    with them, whatever the curation corpus holds (it is prepared without them, so that adding NMT reruns
    no curation). Returns counts (with `exclude`, the pairs eligible and those dropped as held-out; the clean
    share of the kept pairs when the corpus has labels)."""

    src, tgt, labels = read_noisy(corpus_tsv)
    order = read_ranking(ranked_tsv)
    if len(order) != len(src) or max(order) >= len(src):
        raise InputError(
            f"{ranked_tsv}: ranks {len(order)} rows (largest index {max(order)}) but {corpus_tsv} has "
            f"{len(src)} pairs: expected a ranking of this corpus"
        )
    held_out = held_out_overlap(src, tgt, exclude) if exclude else set()
    if held_out:
        order = [i for i in order if i not in held_out]
        if not order:
            raise InputError(
                f"{corpus_tsv}: every one of its {len(src)} pairs has a side in the held-out sets "
                f"({', '.join(map(str, exclude))}): nothing left to train on"
            )
    n = kept_count(len(order), share, count)
    top = order[:n]
    header = ["src", "tgt"] + (["label"] if labels is not None else [])
    rows = ["\t".join(header)] + [
        "\t".join([src[i], tgt[i]] + ([labels[i]] if labels is not None else [])) for i in top
    ]
    write_text(out, "\n".join(rows) + "\n")
    result: dict[str, Any] = {"n_corpus": len(src), "n_kept": n, "share": n / len(order)}
    if exclude:
        result["n_eligible"] = len(order)
        result["held_out_dropped"] = len(held_out)
        result["held_out_files"] = [str(p) for p in exclude]
    if labels is not None:
        result["clean_share_kept"] = sum(labels[i] == "clean" for i in top) / n
    log.info(
        "select_top: %d of %d pairs of %s (%d dropped: a side in the held-out sets) -> %s",
        n, len(order), corpus_tsv, len(held_out), out,
    )  # fmt: skip
    return result


def control_ranking(corpus_tsv: str | os.PathLike, out: str | os.PathLike, kind: str = "random",
                    seed: int = 0) -> None:  # fmt: skip
    """A ranking file in `lem curate rank`'s format that no model made: `random` (a seeded shuffle: the floor of
    the curation table) or `oracle` (clean pairs first, each group shuffled: the ceiling; needs labels)."""

    src, _, labels = read_noisy(corpus_tsv)
    rng = random.Random(f"{seed}/{kind}")
    order = list(range(len(src)))
    rng.shuffle(order)
    if kind == "oracle":
        if labels is None:
            raise InputError(f"{corpus_tsv}: an oracle ranking needs the label column")
        if "clean" not in labels:  # good/bad labels ranked the oracle at the base rate, without a word
            seen = ", ".join(map(repr, sorted(set(labels))[:6]))
            raise InputError(
                f"{corpus_tsv}: an oracle ranking needs pairs labelled exactly 'clean' (any other label is "
                f"noisy); labels: {seen}"
            )
        order.sort(key=lambda i: labels[i] != "clean")  # stable: the shuffle within each group stays
    elif kind != "random":
        raise UsageError(f"nmt: control ranking kind {kind!r}: expected random or oracle")
    rows = ["\t".join(RANKING_HEADER)] + [
        f"{r}\t{i}\t{float(len(order) - r):.6f}\t{labels[i] if labels else ''}"
        for r, i in enumerate(order, start=1)
    ]
    write_text(out, "\n".join(rows) + "\n")


def cmd_rank(a: argparse.Namespace) -> None:
    curate(
        a.pairs, a.src_emb, a.tgt_emb, a.src_sents, a.tgt_sents, a.settings, a.out_scores, a.out_metrics,
        a.keys,
    )  # fmt: skip


def cmd_prepare(a: argparse.Namespace) -> None:
    stats = prepare_curation_corpus(
        a.pair, a.out_dir, corpus=a.corpus, src_file=a.src, tgt_file=a.tgt, max_pairs=a.max_pairs,
        exclude=a.exclude, filters=a.settings,
    )  # fmt: skip
    log.info("curation corpus %s: %s", a.pair, stats)


def cmd_control(a: argparse.Namespace) -> None:

    control_ranking(a.pairs, a.out, kind=a.kind, seed=a.seed)


STAGE = Stage(
    "curate",
    __doc__.splitlines()[0],
    (
        Verb("prepare", "stream a noisy corpus (TSV or line-aligned files): cap, dedup, leakage guard, filters; "
             "write pairs.tsv and the sentence files the embed stage reads", cmd_prepare, (
            arg("--pair", required=True),
            arg("--corpus", default=None, help="TSV with header src, tgt[, label]"),
            arg("--src", default=None, help="line-aligned source side (with --tgt)"),
            arg("--tgt", default=None, help="line-aligned target side"),
            arg("--max-pairs", type=int, default=None, help="stop after this many kept pairs"),
            arg("--exclude", nargs="*", default=[], help="evaluation files whose sentences are dropped"),
            arg("--out-dir", required=True),
        ), settings="lem.data.webmined:FilterSettings"),
        Verb("rank", "score every pair of a prepared corpus from its embeddings; rank metrics where it carries "
             "labels", cmd_rank, (
            arg("--pairs", required=True, help="pairs.tsv of lem curate prepare"),
            arg("--src-emb", required=True),
            arg("--tgt-emb", required=True),
            arg("--src-sents", required=True, help="the sentence file embedded as --src-emb"),
            arg("--tgt-sents", required=True),
            arg("--out-scores", required=True),
            arg("--out-metrics", required=True),
        ), settings=CurationSettings, keys=True),
        Verb("control", "a ranking no model made: random (the floor) or oracle (clean first)", cmd_control, (
            arg("--pairs", required=True),
            arg("--kind", default="random", choices=["random", "oracle"]),
            arg("--seed", type=int, default=0),
            arg("--out", required=True),
        )),
    ),
)  # fmt: skip
