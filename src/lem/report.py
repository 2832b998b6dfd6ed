"""The report: every variant on every task and language pair, in one table, plus figures.

Inputs are the metrics files of the evaluation stages; each names what it measures in its top-level `keys`
(`task`, `variant`, `dataset`, `pair`, `seed` where it applies; `docs/contracts.md`), which the report reads:
a file without them, or whose keys disagree with the flag it is given under or the variants asked for, fails
naming the file. Output: `summary.tsv` (long format, one row per variant x task x
dataset x pair x metric, with mean, standard deviation and number of seeds), `summary.md` (one pivot table
per task, variants as rows) and PNG figures.
"""

from __future__ import annotations

import argparse
import json
import logging
from pathlib import Path

import pandas as pd

from lem.core.files import atomic_path, write_text
from lem.core.inputs import InputError
from lem.core.stage import Stage, Verb, arg, json_object
from lem.data.news import gold_counts_markdown
from lem.evidence import compare as evidence
from lem.evidence import figures
from lem.evidence.controls import KEYS as CONTROL_KEYS
from lem.evidence.controls import (
    ControlVerdict,
    PositiveBar,
    cell_settings,
    failed_lines,
    lexical_control_lines,
    negative_control_verdict,
    no_signal_cells,
    positive_control_verdict,
)

log = logging.getLogger("lem.report")

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


def collect(
    mining: list[str],
    sentiment: list[str],
    curation: list[str],
    annotation: list[str] = (),
    coverage: dict | None = None,
    variants: list[str] | None = None,
    items: evidence.Items | None = None,
    nmt: list[str] = (),
    controls: dict | None = None,
) -> pd.DataFrame:
    """One row per (variant, task, dataset, pair, metric, seed) value, keyed by each file's `keys` (a file's
    variant must be one of `variants` when given); `coverage` (the annotation coverage JSON) adds task
    `coverage`, one row per language (as `pair`) and entity-type share. `items`, when given, collects each
    run's per-item rows for the paired tests (lem.evidence.compare); `controls`, when given, takes the metrics of
    every run of a control row (`control_lexical`, `control_random`, `ref_*`) by (row, dataset, pair), for
    its verdict."""
    rows = []
    for path in mining:
        key, data = _read("mining", path, variants)
        if items is not None:
            items.add_mining(key, data, path)
        if controls is not None and key["variant"].startswith(("control_", "ref_")):
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
        if items is not None:
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
        if items is not None:
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
    return pd.DataFrame(rows)


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
    return out.merge(evidence.intervals(values), on=keys, how="left")


def _pivot_markdown(
    summary: pd.DataFrame,
    task: str,
    metric: str,
    variants: list[str],
    marks: dict,
    tested: set,
    no_signal: dict | None = None,
) -> str:
    """The table of one task's metric (rows: variants; columns: dataset pair); `marks` go on the metrics the
    paired tests ran on (`tested`: (task, metric) pairs); a column whose cell failed a control (`no_signal`:
    (task, dataset, pair) -> why) is headed "no signal"."""
    part = summary[(summary.task == task) & (summary.metric == metric)]
    if part.empty:
        return ""
    failed = {(d, p) for t, d, p in (no_signal or {}) if t == task}
    part = part.assign(
        column=[
            f"{d} {p}" + (" (no signal)" if (d, p) in failed else "")
            for d, p in zip(part.dataset, part.pair, strict=True)
        ]
    )
    marks = marks if (task, metric) in tested else {}

    def cell(r) -> str:
        text = f"{r['mean']:.3f}"
        if r["n"] > 1 and not pd.isna(r.get("low", float("nan"))):
            text += f" [{r['low']:.3f}, {r['high']:.3f}]"
        mark = marks.get((task, r["dataset"], r["pair"], r["variant"]), "")
        return f"{text} {mark}" if mark else text

    part = part.assign(cell=part.apply(cell, axis=1))
    table = part.pivot(index="variant", columns="column", values="cell")
    table = table.reindex([v for v in variants if v in table.index])
    header = "| variant | " + " | ".join(table.columns) + " |"
    sep = "|---|" + "---|" * len(table.columns)
    lines = [header, sep] + [
        f"| {v} | " + " | ".join("-" if pd.isna(x) else str(x) for x in row) + " |"  # "-": no such run
        for v, row in table.iterrows()
    ]
    for ref in ("chance", "ceiling"):  # where the values stand: a model that knows nothing, the best possible
        by_col = part.groupby("column")[ref].mean().reindex(table.columns)
        if by_col.notna().any():
            lines.append(
                f"| *{ref}* | " + " | ".join("-" if pd.isna(x) else f"{x:.3f}" for x in by_col) + " |"
            )
    return "\n".join(lines)


def para_markdown(paths: list[str]) -> list[str]:
    """The parallel training data read from the user's files (`lem data pairs --stats`): per pair, the pairs
    kept for training and validation, and the given validation pairs dropped because they repeat a training
    pair (checkpoint selection must not read training data)."""
    rows = []
    for path in paths:
        st = json.loads(Path(path).read_text(encoding="utf-8"))
        pair = Path(path).name.removesuffix(".stats.json")
        given = st.get("valid_given")
        rows.append(
            f"| {pair} | {st.get('train', '-')} | {st.get('valid', '-')} | {'-' if given is None else given} | "
            f"{st.get('valid_repeating_train_dropped', 0)} |"
        )
    if not rows:
        return []
    return [
        "## Parallel training data (from files)",
        "",
        "| pair | train pairs | validation pairs | validation pairs given | dropped: repeat a training pair |",
        "|---|---:|---:|---:|---:|",
        *rows,
        "",
    ]


def coverage_markdown(coverage: dict) -> list[str]:
    """The annotation coverage table: one row per language."""
    enabled = coverage.get("enabled", {})
    lines = [
        f"## Annotation coverage (share of words in a sample of up to {coverage['sample']} sentences of each "
        "language's training text)",
        "",
        "Entity types masked by the LEM variants (a zero share fails the run before training): "
        + (", ".join(t.upper() for t in enabled) or "none")
        + ".",
        "",
        "| lang | sentences | words | NE | NOUN | VERB | POS untagged | POS backend (tag set) | NER backend |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for lang, c in coverage["languages"].items():
        shares = " | ".join(f"{c['shares'][t]:.3f}" for t in COVERAGE_TYPES)
        lines.append(
            f"| {lang} | {c['sentences']} | {c['words']} | {shares} | {c['pos_untagged_share']:.3f} "
            f"| {c['pos_backend']} ({c['pos_tagset']}) | {c['ner_backend']} |"
        )
    return [*lines, ""]


def markdown(
    summary: pd.DataFrame,
    variants: list[str],
    coverage: dict | None = None,
    comparisons: pd.DataFrame | None = None,
    alpha: float = 0.05,
    news_stats: list[str] = (),
    control_notes: list[str] = (),
    verdicts: list[ControlVerdict] = (),
) -> str:
    comparisons = pd.DataFrame() if comparisons is None else comparisons
    marks = evidence.marks(comparisons)
    no_signal = no_signal_cells(verdicts)
    sections = ["# LEM pipeline: results", ""]
    failed = failed_lines(verdicts)
    if failed:
        sections += [
            f"**Controls failed: no signal in {len(no_signal)} cell(s)** (their values are shown, marked "
            "*no signal*, and none of their comparisons is tested; every other cell stands):",
            "",
            *[f"- {line}" for line in failed],
            "",
        ]
    sections += [
        "Every value is measured by this run: the mean over seeds (pre-training seeds; for sentiment every "
        "pre-training x fine-tuning seed) with its t-based 95 % interval in brackets where there are several. "
        "Under each table, *chance* is what a system that knows nothing scores on the same test set "
        "(`lem.evidence.chance`: analytic for mining, the best input-blind classifier for sentiment, a random ranking "
        "for curation) and *ceiling* the best any system can reach under mining's candidate structure. "
        "Rows `control_lexical` (a bag of dictionary concepts) and `control_random` (random vectors) are the "
        "positive and negative controls of the evaluation chain. ▲ higher, ▼ lower, ≈ equivalent within the margin: "
        "the verdict of the row's declared comparison with its reference (config `evidence.families`; Holm within "
        "each family; see the comparisons and the verdicts); no mark: inconclusive or not compared.",
        "",
    ]
    blocks = [
        ("Bitext mining F1 (intersection)", "mining", "intersection_f1"),
        ("Bitext mining F1 (forward)", "mining", "forward_f1"),
        ("Bitext mining F1 (backward)", "mining", "backward_f1"),
        ("Code-mixed sentiment macro-F1", "sentiment", "macro_f1"),
    ]
    for metric in sorted(summary[summary.task == "curation"].metric.unique()):
        blocks.append((f"Curation: {metric.replace('_', ' ')} (share of clean pairs)", "curation", metric))
    tested = set(evidence.HEADLINE.items())
    if not comparisons.empty:
        tested |= set(zip(comparisons.task, comparisons.metric, strict=True))
    for title, task, metric in blocks:
        table = _pivot_markdown(summary, task, metric, variants, marks, tested, no_signal)
        if table:
            sections += [f"## {title}", "", table, ""]
            if task == "mining" and metric == "intersection_f1" and control_notes:
                sections += ["Positive control (`control_lexical`): " + "; ".join(control_notes) + ".", ""]
            if task == "mining" and metric == "intersection_f1" and verdicts:
                sections += [
                    "Controls, per evaluation set and pair (95 % Clopper-Pearson intervals of the precision; "
                    '"at chance": the binomial test does not reject chance):',
                    "",
                    *[f"- {'passed' if v.ok else '**failed**'}: {v.line}" for v in verdicts],
                    "",
                ]
    gold = gold_counts_markdown(news_stats)
    if gold:
        sections += [
            "## Mining benchmarks: gold alignments (read, kept, repaired and dropped per reason)",
            "",
            *gold,
            "",
        ]
    sections += nmt_markdown(summary, variants, comparisons, marks)
    sections += evidence.comparisons_markdown(comparisons, alpha)
    ann = summary[summary.task == "annotation"]
    if not ann.empty:
        table = ann.pivot(index="dataset", columns=["pair", "metric"], values="mean").sort_index(axis=1)
        cols = list(table.columns)
        sections += [
            "## Annotation against held-out gold tags (POS tag and coarse accuracy, NER entity F1)",
            "",
            "| annotator | " + " | ".join(f"{lang} {m.replace('_', ' ')}" for lang, m in cols) + " |",
            "|---|" + "---|" * len(cols),
        ]
        sections += [f"| {a} | " + " | ".join(f"{v:.3f}" for v in row) + " |" for a, row in table.iterrows()]
        sections.append("")
    if coverage:
        sections += coverage_markdown(coverage)
    return "\n".join(sections)


NMT_METRICS = (("bleu", "BLEU"), ("chrf", "chrF"))
NMT_CONTROLS = ("oracle", "random", "no_filter")  # clean pairs first; a random ranking; every pair (share 1)


def nmt_rows(paths: list[str], items: evidence.Items | None = None) -> list[dict]:
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


def nmt_markdown(
    summary: pd.DataFrame,
    variants: list[str],
    comparisons: pd.DataFrame | None = None,
    marks: dict | None = None,
) -> list[str]:
    """The curation/NMT table: BLEU and chrF per ranking row (variants, then oracle, random and no_filter)
    and kept share, one column group per pair, mean +- seed s.d. over the pre-training seeds. ▲/▼ on BLEU
    from the seed-level comparisons (lem.evidence.compare), made only where the oracle beat random: a kept share
    where it did not has "no signal" and no mark."""
    part = summary[summary.task == "nmt"]
    if part.empty:
        return []
    comparisons = pd.DataFrame() if comparisons is None else comparisons
    marks = marks or {}
    part = part.assign(base_metric=part.metric.str.split("@").str[0], share=part.metric.str.split("@").str[1])
    columns = sorted(
        {(r.pair, r.share) for r in part.itertuples() if r.variant != "no_filter"},
        key=lambda c: (c[0], float(c[1])),
    )
    rows = [v for v in [*variants, *NMT_CONTROLS] if v in set(part.variant)]
    head = [f"{pair} keep {share} {label}" for pair, share in columns for _, label in NMT_METRICS]
    signal = []
    if not comparisons.empty:
        for r in comparisons[(comparisons.task == "nmt") & (comparisons.a == "oracle")].itertuples():
            verdict = "signal" if r.significant else "**no signal**"
            signal.append(
                f"{r.pair} {r.dataset.split(' ', 1)[1]}: oracle - random {r.diff:+.1f} BLEU, p {r.p:.3g}: {verdict}"
            )
    lines = [
        f"## Curation: NMT on the top share of each ranking ({', '.join(sorted(set(part.dataset)))} test set)",
        "",
        "BLEU and chrF (sacrebleu) of a model trained on the kept share of the corpus as each row ranks it, mean "
        "± s.d. over the pre-training seeds (each seed's ranking, NMT trained with that seed); *oracle*: clean "
        "pairs first (the positive control), *random*: a random ranking (chance)"
        + (", *no_filter*: every pair (the same run under each share)" if "no_filter" in rows else "")
        + ". ▲/▼ on BLEU: the seed-level comparison (below), made only at a kept share "
        "where the oracle beats random (one-sided, uncorrected: a control, not a claim); otherwise that share "
        "has no signal and no mark.",
        "",
        *(["Control: " + "; ".join(signal) + ".", ""] if signal else []),
        "| row | " + " | ".join(head) + " |",
        "|---|" + "---|" * len(head),
    ]
    for row in rows:
        cells = []
        for pair, share in columns:
            for metric, _ in NMT_METRICS:
                at = "1" if row == "no_filter" else share  # every pair: the same run under each share
                hit = part[(part.variant == row) & (part.pair == pair) & (part.metric == f"{metric}@{at}")]
                if hit.empty:
                    cells.append("-")
                    continue
                r = hit.iloc[0]
                value = f"{r['mean']:.1f} ± {r['std']:.1f}" if r["n"] > 1 else f"{r['mean']:.1f}"
                mark = (
                    marks.get(("nmt", f"{r['dataset']} keep {share}", pair, row), "")
                    if metric == "bleu"
                    else ""
                )
                cells.append(f"{value} {mark}" if mark else value)
        label = f"*{row}*" if row in NMT_CONTROLS else row
        lines.append(f"| {label} | " + " | ".join(cells) + " |")
    return [*lines, ""]


def figure(summary: pd.DataFrame, variants: list[str], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    panels = [
        ("mining", "intersection_f1", "Mining F1 (intersection)"),
        ("sentiment", "macro_f1", "Sentiment macro-F1"),
    ]
    cur = sorted(summary[summary.task == "curation"].metric.unique())
    if cur:
        panels.append(("curation", cur[0], f"Curation {cur[0].replace('_', ' ')}"))
    fig, axes = plt.subplots(1, len(panels), figsize=(5 * len(panels), 3.8), squeeze=False)
    for ax, (task, metric, title) in zip(axes[0], panels, strict=True):
        part = summary[(summary.task == task) & (summary.metric == metric)]
        groups = sorted((part.dataset + " " + part.pair).unique())
        present = [v for v in variants if v in set(part.variant)]
        width = 0.8 / max(1, len(present))
        for j, v in enumerate(present):
            sub = part[part.variant == v].assign(g=lambda d: d.dataset + " " + d.pair).set_index("g")
            xs = [i + j * width for i in range(len(groups))]
            ax.bar(
                xs,
                [sub["mean"].get(g, 0.0) for g in groups],
                width,
                yerr=[sub["std"].get(g, 0.0) for g in groups],
                label=v,
            )
        ax.set_xticks([i + width * (len(present) - 1) / 2 for i in range(len(groups))])
        ax.set_xticklabels([g.split(" ", 1)[1] for g in groups], rotation=0)
        ax.set_title(title)
        ax.set_ylim(0, 1)
    if axes[0][0].get_legend_handles_labels()[0]:
        axes[0][0].legend(fontsize=8)
    fig.tight_layout()
    with atomic_path(path) as tmp:
        fig.savefig(tmp, dpi=120, format="png")
    plt.close(fig)


def control_verdicts(
    summary: pd.DataFrame,
    controls: dict | None = None,
    evalsets: dict | None = None,
    references: dict[str, float] | None = None,
    control_metrics: dict[tuple[str, str, str], list[dict]] | None = None,
) -> list[ControlVerdict]:
    """The controls' verdicts on mining, one per control row and (dataset, pair), with the settings of that
    set and pair (`lem.evidence.controls.cell_settings`: `mining.evalsets.<set>.controls`, else `controls`):
    the positive control (`control_lexical`) by `positive_control_verdict`, the negative control
    (`control_random`, its draws pooled) by `negative_control_verdict`, and a reference encoder row given in
    `references` (row -> its lift; config reference_encoders.<name>.positive_lift) as a positive control
    with its own lift. `control_metrics`: (row, dataset, pair) -> the metrics of its runs (`collect`). A row
    without chance, ceiling or metrics fails its cell, saying so."""
    part = summary[(summary.task == "mining") & (summary.metric == "intersection_f1")]
    references = references or {}
    control_metrics = control_metrics or {}
    verdicts = []
    for row in part.itertuples():
        if row.variant not in ("control_lexical", "control_random", *references):
            continue
        cell = cell_settings(controls, evalsets, row.dataset, row.pair)
        own = f"mining.evalsets.{row.dataset}.controls"
        runs = control_metrics.get((row.variant, row.dataset, row.pair), [])
        if row.variant in references:
            keys = (f"reference_encoders.{row.variant.removeprefix('ref_')}.positive_lift",)
            bar = row.chance + references[row.variant] * (row.ceiling - row.chance)
            ok = not pd.isna(bar) and row.mean >= bar
            line = (
                f"{row.dataset} {row.pair}: reference {row.variant} (a positive control) intersection F1 "
                f"{row.mean:.3f} {'>=' if ok else '<'} {bar:.3f} (chance {row.chance:.3f} + "
                f"{references[row.variant]:g} x (ceiling - chance))"
            )
        elif row.variant == "control_lexical":
            keys = (own, *CONTROL_KEYS["positive"])
            if not runs:
                ok, line = False, f"{row.dataset} {row.pair}: control_lexical has no metrics file given"
            else:
                bar = PositiveBar(cell["positive_lift"], cell["positive_alpha"])
                ok, line = positive_control_verdict(runs[0], row.dataset, row.pair, bar)
        else:
            keys = (own, *CONTROL_KEYS["negative"])
            if not runs:
                ok, line = False, f"{row.dataset} {row.pair}: control_random has no metrics file given"
            else:
                ok, line = negative_control_verdict(runs, row.dataset, row.pair, cell["negative_alpha"])
        verdicts.append(ControlVerdict("mining", row.dataset, row.pair, row.variant, bool(ok), line, keys))
    return verdicts


def write_verdicts(verdicts: list[ControlVerdict], path: Path) -> None:
    """`controls.json`: every verdict, and the cells with no signal (what `lem report controls` checks)."""
    data = {
        "verdicts": [v.as_dict() for v in verdicts],
        "no_signal": [
            {"task": t, "dataset": d, "pair": p, "why": why}
            for (t, d, p), why in no_signal_cells(verdicts).items()
        ],
        "failed": failed_lines(verdicts),
    }
    write_text(path, json.dumps(data, indent=2, ensure_ascii=False) + "\n")


class ControlError(ValueError):
    """A control that failed on some cell (`lem report controls`): the run's exit status says so."""


def controls_gate(verdicts_file: str | Path, out: str | Path) -> None:
    """The run's verdict on its controls: ControlError naming every failed cell, the row and the keys that
    govern it (the report itself is built, with those cells marked); `out` records the checked verdicts."""
    data = json.loads(Path(verdicts_file).read_text(encoding="utf-8"))
    if data.get("failed"):
        raise ControlError(
            f"{len(data['failed'])} control(s) failed, so these cells have no signal (the report "
            f"{Path(verdicts_file).parent / 'summary.md'} is built with them marked): "
            + " | ".join(data["failed"])
        )
    write_text(out, json.dumps({"passed": len(data.get("verdicts", []))}) + "\n")


def build_report(
    mining: list[str],
    sentiment: list[str],
    curation: list[str],
    variants: list[str],
    out_dir: Path,
    annotation: list[str] = (),
    coverage: str | None = None,
    controls: dict | None = None,
    models: list[str] = (),
    significance: dict | None = None,
    config: dict | None = None,
    nmt: list[str] = (),
    news_stats: list[str] = (),
    para_stats: list[str] = (),
) -> pd.DataFrame:
    """Every output of the report in `out_dir`: summary.tsv / .md / .html, comparisons.tsv, the figures
    (overview, mining, and with `models`: masking and training) and, with `config`, config.json (the run's
    configuration, for the Snakemake report)."""
    cov = json.loads(Path(coverage).read_text(encoding="utf-8")) if coverage else None
    items, control_metrics = evidence.Items(), {}
    values = collect(mining, sentiment, curation, annotation, cov, variants, items, nmt, control_metrics)
    summary = summarise(values)
    ev = evidence.evidence_settings((config or {}).get("evidence"))  # the declared families
    sig = {"alpha": ev["alpha"], **{k: v for k, v in (significance or {}).items() if v is not None}}
    controls = controls or {}
    evalsets = controls.get("evalsets")
    if evalsets is None:
        evalsets = ((config or {}).get("mining") or {}).get("evalsets", {})
    verdicts = control_verdicts(summary, controls, evalsets, controls.get("references"), control_metrics)
    for v in verdicts:
        (log.info if v.ok else log.warning)("controls: %s%s", "" if v.ok else "FAILED ", v.line)
    comparisons = evidence.compare(
        items, variants, sig["alpha"], no_signal=no_signal_cells(verdicts), evidence=ev
    )
    order = {v: i for i, v in enumerate(variants)}
    summary = summary.sort_values(
        ["task", "dataset", "pair", "metric", "variant"],
        key=lambda c: c.map(order) if c.name == "variant" else c,
    )
    out_dir.mkdir(parents=True, exist_ok=True)
    with atomic_path(out_dir / "summary.tsv") as tmp:
        summary.to_csv(tmp, sep="\t", index=False, float_format="%.6f")
    with atomic_path(out_dir / "comparisons.tsv") as tmp:
        comparisons.to_csv(tmp, sep="\t", index=False, float_format="%.6f")
    notes = lexical_control_lines(
        ((config or {}).get("controls") or {}).get("lexical"),
        ((config or {}).get("mining") or {}).get("evalsets", {}),
    )
    md = markdown(summary, variants, cov, comparisons, sig["alpha"], news_stats, notes, verdicts)
    md += "\n".join(para_markdown(para_stats))
    write_text(out_dir / "summary.md", md)
    write_text(out_dir / "summary.html", figures.markdown_html(md, "LEM pipeline: results"))
    figure(summary, variants, out_dir / "overview.png")
    figures.mining_figure(summary, variants, out_dir / "mining.png", evidence.marks(comparisons))
    write_verdicts(verdicts, out_dir / "controls.json")
    refs = figures.parse_models(list(models))
    figures.masking_figure(refs, variants, out_dir / "masking.png")
    figures.training_figure(refs, variants, out_dir / "training.png")
    if config is not None:
        write_text(out_dir / "config.json", json.dumps(config, indent=2, sort_keys=True) + "\n")
    return summary


README_BEGIN = (
    "<!-- results: begin (generated by `lem report readme` from results/report/summary.md; do not edit) -->"
)
README_END = "<!-- results: end -->"


def readme_markers(block: str = "results") -> tuple[str, str]:
    """The begin and end lines of a generated README block: `results` (the embedded default's run) or
    another name (e.g. `ablation`, config/ablation.yaml's run), each regenerated on its own."""
    if block == "results":
        return README_BEGIN, README_END
    if not block.isidentifier():
        raise InputError(f"README block name {block!r}: expected letters, digits and '_'")
    return (
        f"<!-- {block}: begin (generated by `lem report readme --block {block}`; do not edit) -->",
        f"<!-- {block}: end -->",
    )


README_SECTIONS = (
    "Bitext mining F1 (intersection)",
    "Code-mixed sentiment macro-F1",
    "Paired comparisons",
    "Verdicts",
)


def readme_block(md: str, note: str = "", block: str = "results") -> str:
    """The README's results block: the report's headline sections (mining intersection F1, sentiment
    macro-F1, the paired comparisons; curation tables where the report has them) copied verbatim from its
    markdown, each as a level-3 section."""
    parts = md.split("\n## ")
    chosen = []
    for part in parts[1:]:
        title, _, body = part.partition("\n")
        if title.startswith(README_SECTIONS) or title.startswith("Curation"):
            chosen.append(f"### {title}\n{body.rstrip()}\n")
    if not chosen:
        raise InputError(
            "the report's markdown has none of the sections the README shows (is it a summary.md?)"
        )
    head = f"{note}\n\n" if note else ""
    begin, end = readme_markers(block)
    return f"{begin}\n{head}" + "\n".join(chosen) + f"{end}"


def update_readme(readme: Path, md: str, note: str = "", block: str = "results") -> None:
    """Replace one generated block of the README (between its markers) with `readme_block(md)`."""
    text = readme.read_text(encoding="utf-8")
    begin, end = readme_markers(block)
    if begin not in text or end not in text:
        raise InputError(f"{readme}: no {block} block (expected the lines {begin!r} ... {end!r})")
    before, rest = text.split(begin, 1)
    after = rest.split(end, 1)[1]
    write_text(readme, before + readme_block(md, note, block) + after)


def cmd_readme(a: argparse.Namespace) -> None:
    update_readme(Path(a.readme), Path(a.summary).read_text(encoding="utf-8"), a.note, a.block)
    print(f"{a.readme}: {a.block} block regenerated from {a.summary}")


def cmd_build(a: argparse.Namespace) -> None:
    build_report(
        a.mining,
        a.sentiment,
        a.curation,
        a.variants,
        Path(a.out_dir),
        a.annotation,
        a.coverage,
        {
            "positive_lift": a.positive_lift,
            "positive_alpha": a.positive_alpha,
            "negative_alpha": a.negative_alpha,
            "references": a.reference_controls,
        },
        a.models,
        {"alpha": a.alpha},
        a.config,
        a.nmt,
        a.news_stats,
        a.para_stats,
    )
    out = Path(a.out_dir).resolve()
    print(
        f"report written: {out / 'summary.md'} (table: {out / 'summary.tsv'}, figure: {out / 'overview.png'})"
    )


def cmd_controls(a: argparse.Namespace) -> None:
    controls_gate(a.verdicts, a.out)
    print(f"controls: every control passed ({a.verdicts})")


STAGE = Stage(
    "report",
    __doc__.splitlines()[0],
    (
        Verb("build", "the summary table (tsv, markdown) and figures of every metrics file", cmd_build, (
            arg("--mining", nargs="*", default=[]),
            arg("--sentiment", nargs="*", default=[]),
            arg("--curation", nargs="*", default=[]),
            arg("--annotation", nargs="*", default=[], help="annotation_eval/<annotator>/<lang>.json files"),
            arg("--nmt", nargs="*", default=[], help="metrics.json of lem nmt run (keys: variant, share)"),
            arg("--coverage", default=None, help="the annotation coverage JSON (results/annotate/coverage.json)"),
            arg("--variants", nargs="+", required=True, help="row order of the tables"),
            arg("--positive-lift", type=json.loads, default=0.5,
                help="the positive control must reach chance + lift x (ceiling - chance): a number or JSON "
                "{evalset: lift}"),
            arg("--positive-alpha", type=float, default=0.01,
                help="and beat chance by a one-sided test at this level (lem.evidence.controls.chance_p_value)"),
            arg("--para-stats", nargs="*", default=[],
                help="stats.json of lem data pairs per pair (validation pairs that repeated training pairs)"),
            arg("--news-stats", nargs="*", default=[],
                help="stats.json of each prepared news evaluation set (gold read, kept, repaired, dropped)"),
            arg("--negative-alpha", type=float, default=0.01,
                help="the negative control is at chance unless a two-sided binomial test rejects chance at "
                "this level"),
            arg("--reference-controls", type=json_object, default=None,
                help="JSON {row: lift}: reference encoder rows checked as positive controls with that lift"),
            arg("--models", nargs="*", default=[],
                help="variant:stage:seed=model folder (stage base, mono or para): masking and loss figures"),
            arg("--alpha", type=float, default=None,
                help="family-wise level of each family's Holm-corrected verdicts (default: the config's "
                "evidence.alpha, 0.05)"),
            arg("--config", type=json.loads, default=None,
                help="the run's configuration as JSON, written as config.json for the HTML report"),
            arg("--out-dir", required=True),
        )),
        Verb("controls", "fail naming every cell whose control failed (the report's controls.json)",
             cmd_controls, (
            arg("--verdicts", default="results/report/controls.json"),
            arg("--out", required=True, help="written when every control passed"),
        ), errors=(ControlError,)),
        Verb("readme", "regenerate the README's results block from a report's summary.md", cmd_readme, (
            arg("--summary", default="results/report/summary.md"),
            arg("--readme", default="README.md"),
            arg("--note", default="", help="a line above the tables (which run, when, how long)"),
            arg("--block", default="results",
                help="which generated block: results (the embedded default) or another name (ablation)"),
        ), errors=(OSError,)),
    ),
)  # fmt: skip
