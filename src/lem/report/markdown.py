"""The report's markdown (`summary.md`): one pivot table per task with variants as rows, the controls, the
NMT table, the paired comparisons and their verdicts, annotation quality and coverage, and the parallel
training data."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd

from lem.data.news import gold_counts_markdown
from lem.evidence.controls import ControlVerdict, failed_lines, no_signal_cells
from lem.report.comparisons import HEADLINE
from lem.report.figures import FOREST_CAPTION
from lem.report.intervals import interval_note
from lem.report.tables import COVERAGE_TYPES, NMT_CONTROLS, NMT_METRICS
from lem.report.verdicts import comparisons_markdown, level
from lem.report.verdicts import marks as comparison_marks

FOREST_FILE = "comparisons.png"  # beside summary.md (lem.report.build writes both)
FOREST_TITLE = "Figure: each declared comparison's difference, its interval and its verdict"


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


def _interval_note(summary: pd.DataFrame, task: str, metric: str) -> str:
    """What the brackets of one table are (`lem.report.intervals`), from the summary's `interval` and
    `confidence` columns."""
    part = summary[(summary.task == task) & (summary.metric == metric)]
    return interval_note(set(part["interval"]), _confidence(part)) if "interval" in part else ""


def _confidence(summary: pd.DataFrame) -> float:
    """The level of the summary's intervals (`lem.report.intervals.report_intervals` writes it; 0.95, the
    level of `lem.report.tables.summarise`, where it has not run)."""
    levels = set(summary["confidence"].dropna()) if "confidence" in summary else set()
    return float(levels.pop()) if len(levels) == 1 else 0.95


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
    marks = comparison_marks(comparisons)
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
        f"pre-training x fine-tuning seed) with its {level(_confidence(summary))} interval in brackets where "
        "there are several: on a "
        "task's tested metric (mining intersection F1, sentiment macro-F1, curation precision at the largest "
        "kept share) the two-level interval over pre-training seeds and test items, the procedure of the "
        "verdicts; on the other metrics (no per-item rows) the t-interval over seeds; every interval of a share "
        "cut to [0, 1] (the line under each table says which). "
        "Under each table, *chance* is what a system that knows nothing scores on the same test set "
        "(analytic for mining, `lem.mine.chance`; the best input-blind classifier for sentiment and a random "
        "ranking for curation, `lem.evidence.chance`) and *ceiling* the best any system can reach under mining's candidate structure. "
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
    tested = set(HEADLINE.items())
    if not comparisons.empty:
        tested |= set(zip(comparisons.task, comparisons.metric, strict=True))
    for title, task, metric in blocks:
        table = _pivot_markdown(summary, task, metric, variants, marks, tested, no_signal)
        if table:
            sections += [f"## {title}", "", table, ""]
            note = _interval_note(summary, task, metric)
            if note:
                sections += [note, ""]
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
    sections += comparisons_markdown(comparisons, alpha)
    if not comparisons.empty:
        sections += [f"## {FOREST_TITLE}", "", f"![{FOREST_TITLE}]({FOREST_FILE})", "", FOREST_CAPTION, ""]
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


def nmt_markdown(
    summary: pd.DataFrame,
    variants: list[str],
    comparisons: pd.DataFrame | None = None,
    marks: dict | None = None,
) -> list[str]:
    """The curation/NMT table: BLEU and chrF per ranking row (variants, then oracle, random and no_filter)
    and kept share, one column group per pair, mean +- seed s.d. over the pre-training seeds. ▲/▼ on BLEU
    from the seed-level comparisons (lem.report.comparisons), made only where the oracle beat random: a kept share
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
