"""The report's values: every metrics file read by its `keys` into one long table, and its summary per cell.

Inputs are the metrics files of the evaluation stages; each names what it measures in its top-level `keys`
(`task`, `variant`, `dataset`, `pair`, `seed` where it applies; `docs/contracts.md`), which the report reads:
a file without them, or whose keys disagree with the flag it is given under or the variants asked for, fails
naming the file.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import NamedTuple

import pandas as pd

from lem.report.comparisons import Items, intervals

# The keys each task's metrics files must carry (the annotation is not per variant).
KEYS = {
    "mining": ("task", "variant", "dataset", "pair", "seed"),
    "sentiment": ("task", "variant", "dataset", "pair", "seed"),
    "curation": ("task", "variant", "dataset", "pair", "seed"),
    "annotation": ("task", "dataset", "pair"),
    "nmt": ("task", "variant", "dataset", "pair", "share", "seed"),
}
COVERAGE_TYPES = ("ne", "noun", "verb")
ANNOTATION_METRICS = [("pos", "accuracy"), ("pos", "coarse_accuracy"), ("ner", "f1")]
# The headline metric of each task (first) and the others we tabulate.
MINING_METRICS = [
    ("intersection", "f1"),
    ("forward", "f1"),
    ("backward", "f1"),
    ("intersection", "precision"),
    ("intersection", "recall"),
]
SENTIMENT_METRICS = ["macro_f1", "accuracy"]


def _read(task: str, path: str, variants: list[str] | None) -> tuple[dict[str, str], dict]:
    """The keys (with `seed`, "" where the task has none) and the metrics of one file given as `task`."""
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except (json.JSONDecodeError, UnicodeDecodeError) as err:
        raise ValueError(f"{path}: not a JSON {task} metrics file ({err})") from None
    keys = data.get("keys") if isinstance(data, dict) else None
    if not isinstance(keys, dict):
        raise ValueError(f"{path}: a {task} metrics file without `keys` (expected {', '.join(KEYS[task])})")
    missing = [k for k in KEYS[task] if not isinstance(keys.get(k), str) or not keys[k]]
    if missing:
        raise ValueError(f"{path}: `keys` {keys} lacks {', '.join(missing)}")
    if keys["task"] != task:
        raise ValueError(f"{path}: `keys` name task {keys['task']!r}, but the file was given as {task}")
    if variants is not None and "variant" in KEYS[task] and keys["variant"] not in variants:
        raise ValueError(
            f"{path}: `keys` name variant {keys['variant']!r}, not one of the variants {variants}"
        )
    out = {k: keys[k] for k in KEYS[task] if k != "task"}
    out.setdefault("seed", "")
    return out, data


def _at(data: dict, *path: str) -> float:
    """A number nested in a metrics file (`chance`, `ceiling`), NaN where the file has none."""
    for p in path:
        if not isinstance(data, dict) or p not in data:
            return float("nan")
        data = data[p]
    return float(data) if isinstance(data, int | float) else float("nan")


class Collected(NamedTuple):
    """What `collect` reads from the metrics files: `values`, one row per (variant, task, dataset, pair,
    metric, seed) value; `items`, each run's per-item rows for the paired tests (lem.report.comparisons);
    `controls`, the metrics of every run of a control row (`control_lexical`, `control_random`, `ref_*`) by
    (row, dataset, pair), for its verdict."""

    values: pd.DataFrame
    items: Items
    controls: dict[tuple[str, str, str], list[dict]]


def collect(
    *,
    mining: Sequence[str] = (),
    sentiment: Sequence[str] = (),
    curation: Sequence[str] = (),
    annotation: Sequence[str] = (),
    nmt: Sequence[str] = (),
    coverage: dict | None = None,
    variants: list[str] | None = None,
) -> Collected:
    """Every metrics file read, keyed by its `keys` (a file's variant must be one of `variants` when
    given); `coverage` (the annotation coverage JSON) adds task `coverage`, one row per language (as `pair`)
    and entity-type share."""
    items: Items = Items()
    controls: dict[tuple[str, str, str], list[dict]] = {}
    rows = []
    for path in mining:
        key, data = _read("mining", path, variants)
        items.add_mining(key, data, path)
        if key["variant"].startswith(("control_", "ref_")):
            controls.setdefault((key["variant"], key["dataset"], key["pair"]), []).append(data)
        for direction, metric in MINING_METRICS:
            if direction in data:
                rows.append(
                    {
                        **key,
                        "task": "mining",
                        "metric": f"{direction}_{metric}",
                        "value": data[direction][metric],
                        "chance": _at(data, "chance", direction, metric),
                        "ceiling": _at(data, "ceiling", direction, metric),
                    }
                )
    for path in sentiment:
        key, data = _read("sentiment", path, variants)
        items.add_sentiment(key, data, path)
        for metric in SENTIMENT_METRICS:
            rows.append(
                {
                    **key,
                    "task": "sentiment",
                    "metric": metric,
                    "value": data[metric],
                    "chance": _at(data, "chance", metric),
                }
            )
    for path in curation:
        key, data = _read("curation", path, variants)
        items.add_curation(key, data, path)
        for metric, value in data.items():
            if metric.startswith("precision_at_") or metric == "average_precision":
                rows.append(
                    {
                        **key,
                        "task": "curation",
                        "metric": metric,
                        "value": value,
                        "chance": _at(data, "chance", metric),
                    }
                )
    for path in annotation:  # annotators scored on held-out gold: not per variant
        key, data = _read("annotation", path, None)
        for part, metric in ANNOTATION_METRICS:
            if data[part][metric] is None:  # e.g. tag accuracy across two tag sets: not defined
                continue
            rows.append(
                {
                    **key,
                    "variant": "-",
                    "task": "annotation",
                    "metric": f"{part}_{metric}",
                    "value": data[part][metric],
                }
            )
    for lang, cov in (coverage or {}).get("languages", {}).items():
        for t in COVERAGE_TYPES:
            rows.append(
                {
                    "variant": "-",
                    "task": "coverage",
                    "dataset": "sample",
                    "pair": lang,
                    "metric": f"{t}_share",
                    "value": cov["shares"][t],
                    "seed": "",
                }
            )
    rows += nmt_rows(nmt, items)
    if not rows:
        raise ValueError("no metrics files given to the report")
    return Collected(pd.DataFrame(rows), items, controls)


def summarise(values: pd.DataFrame) -> pd.DataFrame:
    keys = ["task", "dataset", "pair", "metric", "variant"]
    values = values.assign(**{c: values.get(c, float("nan")) for c in ("chance", "ceiling")})
    grouped = values.groupby(keys, sort=True)
    out = grouped["value"].agg(mean="mean", std="std", n="count").reset_index()
    out["std"] = out["std"].fillna(0.0)
    # chance and ceiling depend on the test set, not on the model: one value per cell
    out["chance"] = grouped["chance"].mean().to_numpy()
    out["ceiling"] = grouped["ceiling"].mean().to_numpy()
    # the t-based 95 % interval of the mean over seeds (none with one seed)
    return out.merge(intervals(values), on=keys, how="left")


NMT_METRICS = (("bleu", "BLEU"), ("chrf", "chrF"))
NMT_CONTROLS = ("oracle", "random", "no_filter")  # clean pairs first; a random ranking; every pair (share 1)


def nmt_rows(paths: Sequence[str], items: Items | None = None) -> list[dict]:
    """Rows of task `nmt` (metric `bleu@<share>`, `chrf@<share>`) from `lem nmt run` metrics files, one per
    pre-training seed; the variant may be a ranking control (oracle, random, no_filter). `items`, when
    given, takes each run's BLEU for the seed-level comparisons."""
    rows = []
    for path in paths:
        key, data = _read("nmt", path, None)
        share = key.pop("share")
        if items is not None:
            items.add_nmt({**key, "share": share}, data, path)
        for metric, _ in NMT_METRICS:
            rows.append({**key, "task": "nmt", "metric": f"{metric}@{share}", "value": data[metric]})
    return rows
