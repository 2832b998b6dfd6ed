"""The report's values: every metrics file read by its `keys` into one long table, and its summary per cell.

Inputs are the metrics files of the evaluation stages; each names what it measures in its top-level `keys`
(`task`, `variant`, `dataset`, `pair`, `seed` where it applies; `docs/contracts.md`), which the report reads:
a file without them, or whose keys disagree with the flag it is given under or the variants asked for, fails
naming the file. So does a file that is not JSON (a truncated one: its line and column) or holds a value of the
wrong type where the report reads one (the value's line and column, and what was expected): one line
(`lem.core.inputs.InputError`), never a traceback from deep in the tables.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, NamedTuple

import pandas as pd

from lem.core.inputs import InputError, json_key, json_type_error, read_json
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
    """The keys (with `seed`, "" where the task has none) and the metrics of one file given as `task`, every
    value the report reads of it checked (`_check`)."""
    data, text = read_json(path, f"a JSON {task} metrics file")
    keys = data.get("keys") if isinstance(data, dict) else None
    if not isinstance(keys, dict):
        raise InputError(f"{path}: a {task} metrics file without `keys` (expected {', '.join(KEYS[task])})")
    missing = [k for k in KEYS[task] if not isinstance(keys.get(k), str) or not keys[k]]
    if missing:
        raise InputError(f"{path}: `keys` {keys} lacks {', '.join(missing)}")
    if keys["task"] != task:
        raise InputError(f"{path}: `keys` name task {keys['task']!r}, but the file was given as {task}")
    if variants is not None and "variant" in KEYS[task] and keys["variant"] not in variants:
        raise InputError(
            f"{path}: `keys` name variant {keys['variant']!r}, not one of the variants {variants}"
        )
    _check(task, path, text, data)
    out = {k: keys[k] for k in KEYS[task] if k != "task"}
    out.setdefault("seed", "")
    return out, data


# --- the values the report reads of each task's metrics file, checked before any is used ----------------------

NUMBER = "a number"


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _is_index(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


def _is_flag(value: Any) -> bool:
    return isinstance(value, bool) or value in (0, 1)


class _File(NamedTuple):
    path: str
    text: str
    data: dict

    def value(self, keys: tuple) -> tuple[bool, Any]:
        """(whether the file has a value at `keys`, the value)."""
        value: Any = self.data
        for key in keys:
            if isinstance(key, str) and isinstance(value, dict) and key in value:
                value = value[key]
            elif isinstance(key, int) and isinstance(value, list) and key < len(value):
                value = value[key]
            else:
                return False, None
        return True, value

    def expect(self, keys: tuple, ok: Callable[[Any], bool], expected: str, required: bool = True) -> Any:
        """The value at `keys` when `ok(value)`; else InputError at its place (a missing one: when `required`)."""
        present, value = self.value(keys)
        if not present:
            if required:
                raise InputError(
                    f"{self.path}: expected `{json_key(keys)}` ({expected}), which the file lacks"
                )
            return None
        if not ok(value):
            raise json_type_error(self.path, self.text, keys, expected, value)
        return value

    def each(
        self, keys: tuple, ok: Callable[[Any], bool], item: str, items: str, required: bool = True
    ) -> list | None:
        """The list at `keys` (`items`), every item `ok` (`item`); else InputError at the first item that is not."""
        values = self.expect(keys, lambda v: isinstance(v, list), f"a list of {items}", required)
        for i, value in enumerate(values or ()):
            if not ok(value):
                raise json_type_error(self.path, self.text, (*keys, i), item, value)
        return values


def _check(task: str, path: str, text: str, data: dict) -> None:
    """Every value of a `task` metrics file that the report reads (`collect`, the paired tests' items) is of its
    type: InputError naming the file, the value's line and column and what was expected."""
    f = _File(path, text, data)
    if task == "mining":
        for direction, metric in MINING_METRICS:
            if direction in data:
                f.expect((direction,), lambda v: isinstance(v, dict), "an object of its metrics")
                f.expect((direction, metric), _is_number, NUMBER)
        if isinstance(data.get("units"), dict):  # none: the paired test says what is missing
            units = f.each(("units", "units"), lambda v: isinstance(v, str | int), "a unit id", "unit ids")
            rows = f.each(("units", "intersection"), lambda v: isinstance(v, list) and len(v) == 3
                          and all(map(_is_number, v)), "a row of 3 counts (n_correct, n_pred, n_gold)",
                          "rows of 3 counts")  # fmt: skip
            if len(rows) != len(units):
                raise json_type_error(path, text, ("units", "intersection"),
                                      f"a list of {len(units)} rows, one per unit", rows)  # fmt: skip
    elif task == "sentiment":
        for metric in SENTIMENT_METRICS:
            f.expect((metric,), _is_number, NUMBER)
        for name in ("test_gold", "test_pred"):
            f.each((name,), _is_index, "a label index (an integer >= 0)", "label indices", required=False)
        f.each(
            ("labels",),
            lambda v: isinstance(v, str),
            "a label name (a string)",
            "label names",
            required=False,
        )
    elif task == "curation":
        for metric in data:
            if metric.startswith("precision_at_") or metric == "average_precision":
                f.expect((metric,), _is_number, NUMBER)
        if "average_precision" in data and isinstance(data.get("items"), dict):
            f.each(("items", "rank"), _is_index, "a rank (an integer >= 0)", "ranks", required=False)
            f.each(
                ("items", "clean"),
                _is_flag,
                "a clean flag (true, false, 1 or 0)",
                "clean flags",
                required=False,
            )
            if isinstance(data.get("settings"), dict):
                f.each(("settings", "keep_fractions"), lambda v: _is_number(v) and 0 < v <= 1, "a share in (0, 1]",
                       "shares", required=False)  # fmt: skip
    elif task == "annotation":
        for part, metric in ANNOTATION_METRICS:
            f.expect((part,), lambda v: isinstance(v, dict), "an object of its metrics")
            f.expect((part, metric), lambda v: v is None or _is_number(v), "a number or null")
    elif task == "nmt":
        for metric, _ in NMT_METRICS:
            f.expect((metric,), _is_number, NUMBER)
        if isinstance(data.get("items"), dict) and data["items"].get("stats"):
            f.each(("items", "stats"), lambda v: isinstance(v, list) and len(v) == 10 and all(map(_is_number, v)),
                   "a row of 10 BLEU statistics", "rows of 10 BLEU statistics")  # fmt: skip
            f.each(("items", "ids"), lambda v: isinstance(v, str | int), "a sentence id", "sentence ids",
                   required=False)  # fmt: skip


def _items(add: Callable[[dict, dict, str], None], key: dict, data: dict, path: str) -> None:
    """`add` (an `Items.add_*`) of one file: a file it refuses (per-item values missing, or other items than another
    run's) is an input error in one line naming the file (InputError), not a traceback."""
    try:
        add(key, data, path)
    except InputError:
        raise
    except ValueError as err:
        message = str(err)
        raise InputError(message if message.startswith(str(path)) else f"{path}: {message}") from None


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
        _items(items.add_mining, key, data, path)
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
        _items(items.add_sentiment, key, data, path)
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
        _items(items.add_curation, key, data, path)
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
            _items(items.add_nmt, {**key, "share": share}, data, path)
        for metric, _ in NMT_METRICS:
            rows.append({**key, "task": "nmt", "metric": f"{metric}@{share}", "value": data[metric]})
    return rows
