"""The report's figures: the declared comparisons (a forest figure per family), the overview, mining F1 with
intervals, masking shares per entity type, loss curves per variant and stage; and the HTML page of the markdown.

Every error bar says what it is: on the forest figure the two-level Holm interval each verdict is read from (at
its row's level, the unadjusted one beside it: `lem.report.comparisons`); elsewhere the two-level interval of a
system's mean on a tested metric (`lem.report.intervals`), inside [0, 1] for a share.

Each figure is a PNG written atomically; every function takes the data it draws and an output path.
Model folders are named to the report as `variant:stage:seed=path` (`parse_models`): the figures read their
`masking_stats.json` (lem.masking.stats), `selection.json` (validation losses) and `train_log.jsonl` (training
losses), never paths for meaning.
"""

from __future__ import annotations

import base64
import html
import json
import re
import textwrap
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from lem.core.files import atomic_path
from lem.evidence import crossed
from lem.evidence.compare import FAMILIES, TASKS
from lem.report import verdicts
from lem.report.intervals import NONE, SEEDS, TWO_LEVEL, kind_words

# Imported inside functions: matplotlib (`lem report --help` imports this module and needs no matplotlib;
# drawing a figure does)

STAGES = ("base", "mono", "para")
PRIORITY = ("ne", "verb", "noun", "other")
IMAGE = re.compile(r"^!\[([^\]]*)\]\(([^)\s]+)\)\s*$")  # a markdown image line: ![alt](name.png)


@dataclass(frozen=True)
class ModelRef:
    variant: str
    stage: str
    seed: str
    path: Path


def parse_models(specs: list[str]) -> list[ModelRef]:
    """`variant:stage:seed=path` strings (the report rule's `--models`) as ModelRefs."""
    out = []
    for spec in specs:
        name, sep, path = spec.partition("=")
        parts = name.split(":")
        if not sep or len(parts) != 3 or parts[1] not in STAGES or not path:
            raise ValueError(
                f"--models {spec!r}: expected variant:stage:seed=path with stage one of {', '.join(STAGES)}"
            )
        out.append(ModelRef(parts[0], parts[1], parts[2], Path(path)))
    return out


def _plt():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def _save(fig, path: Path) -> None:
    """The figure as a PNG, with everything drawn outside the axes (legends, verdict words) kept."""
    plt = _plt()
    fig.tight_layout()
    with atomic_path(path) as tmp:
        fig.savefig(tmp, dpi=120, format="png", bbox_inches="tight")
    plt.close(fig)


def _bars_say(part: pd.DataFrame) -> str:
    """What the error bars of a figure's rows are (the summary's column `interval`, lem.report.intervals)."""
    kinds = (
        set(part["interval"]) if "interval" in part else {SEEDS if x else NONE for x in part["low"].notna()}
    )
    level = float(part["confidence"].iloc[0]) if "confidence" in part and len(part) else 0.95
    said = [kind_words(k, level) for k in (TWO_LEVEL, SEEDS) if k in kinds]
    return "error bars: " + " or ".join(said) if said else "no error bars: one seed"


def _errors(sub: pd.DataFrame, groups: list[str]) -> tuple[list[float], list[list[float]]]:
    """Means of `sub` (indexed by group) and the error bars of their intervals (0 where a cell has none)."""
    means = [float(sub["mean"].get(g, float("nan"))) for g in groups]
    lows = [float(sub["low"].get(g, float("nan"))) for g in groups]
    highs = [float(sub["high"].get(g, float("nan"))) for g in groups]
    return means, [
        [0.0 if pd.isna(lo) else m - lo for m, lo in zip(means, lows, strict=True)],
        [0.0 if pd.isna(hi) else hi - m for m, hi in zip(means, highs, strict=True)],
    ]


def _legend_outside(ax, **kwargs) -> None:
    """The legend right of the axes, where it covers no data."""
    if ax.get_legend_handles_labels()[0]:
        ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), borderaxespad=0.0, **kwargs)


def _curation_metric(summary: pd.DataFrame) -> str | None:
    """Curation's tested metric (the one with two-level intervals), else its first."""
    part = summary[summary.task == "curation"]
    if part.empty:
        return None
    if "interval" in part:
        tested = sorted(part[part.interval == TWO_LEVEL].metric.unique())
        if tested:
            return tested[0]
    return sorted(part.metric.unique())[0]


def overview_figure(summary: pd.DataFrame, variants: list[str], path: Path) -> None:
    """The overview: the tested metric of mining, sentiment and curation per variant and pair, the mean over
    seeds with its 95 % interval (two-level where the metric is tested: `lem.report.intervals`)."""
    plt = _plt()
    panels = [
        ("mining", "intersection_f1", "Mining F1 (intersection)"),
        ("sentiment", "macro_f1", "Sentiment macro-F1"),
    ]
    cur = _curation_metric(summary)
    if cur:
        panels.append(("curation", cur, f"Curation {cur.replace('_', ' ')}"))
    fig, axes = plt.subplots(1, len(panels), figsize=(5 * len(panels), 4.2), squeeze=False)
    for ax, (task, metric, title) in zip(axes[0], panels, strict=True):
        part = summary[(summary.task == task) & (summary.metric == metric)]
        groups = sorted((part.dataset + " " + part.pair).unique())
        present = [v for v in variants if v in set(part.variant)]
        width = 0.8 / max(1, len(present))
        for j, v in enumerate(present):
            sub = part[part.variant == v].assign(g=lambda d: d.dataset + " " + d.pair).set_index("g")
            means, err = _errors(sub, groups)
            xs = [i + j * width for i in range(len(groups))]
            ax.bar(xs, means, width, yerr=err, capsize=2, label=v)
        ax.set_xticks([i + width * (len(present) - 1) / 2 for i in range(len(groups))])
        ax.set_xticklabels([g.split(" ", 1)[1] for g in groups], rotation=0)
        ax.set_title(f"{title}\n{_wrap(_bars_say(part), 48)}", fontsize=9)
        ax.set_ylim(0, 1.02)
        ax.set_ylabel("mean over seeds")
    handles, labels = axes[0][0].get_legend_handles_labels()
    for ax in axes[0][1:]:  # every row of any panel, once
        for h, label in zip(*ax.get_legend_handles_labels(), strict=True):
            if label not in labels:
                handles.append(h)
                labels.append(label)
    if handles:
        axes[0][-1].legend(handles, labels, fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1.0))
    _save(fig, path)


def _wrap(text: str, width: int) -> str:
    return "\n".join(textwrap.wrap(text, width))


def mining_figure(summary: pd.DataFrame, variants: list[str], path: Path, marks: dict | None = None) -> None:
    """Mining intersection F1 per pair (groups) and row (bars): mean over seeds with its 95 % interval (the
    verdicts' two-level interval, `lem.report.intervals`), chance (dashed) and ceiling (dotted) of each pair,
    the verdict's mark (▲/▼/≈) over a row with a declared comparison."""
    plt = _plt()
    part = summary[(summary.task == "mining") & (summary.metric == "intersection_f1")]
    part = part.assign(group=part.dataset + " " + part.pair)
    groups = sorted(part.group.unique())
    rows = [v for v in variants if v in set(part.variant)]
    fig, ax = plt.subplots(figsize=(max(6, 1.6 * len(groups) * max(1, len(rows)) / 3), 4))
    width = 0.8 / max(1, len(rows))
    for j, v in enumerate(rows):
        sub = part[part.variant == v].set_index("group")
        xs = [i + j * width for i in range(len(groups))]
        means, err = _errors(sub, groups)
        ax.bar(xs, means, width, yerr=err, capsize=2, label=v)
        for x, g, m, up in zip(xs, groups, means, err[1], strict=True):
            ds, pair = g.split(" ", 1)
            mark = (marks or {}).get(("mining", ds, pair, v))
            if mark and not pd.isna(m):  # above the interval, clear of its cap
                ax.text(x, m + up + 0.01, mark, ha="center", va="bottom", fontsize=8)
    for i, g in enumerate(groups):
        ref = part[part.group == g]
        left, right = i - width / 2, i + width * (len(rows) - 0.5)
        ax.hlines(ref["chance"].mean(), left, right, colors="k", linestyles="dashed", linewidth=1)
        ax.hlines(ref["ceiling"].mean(), left, right, colors="grey", linestyles="dotted", linewidth=1)
    ax.set_xticks([i + width * (len(rows) - 1) / 2 for i in range(len(groups))])
    ax.set_xticklabels(groups)
    ax.set_ylim(0, 1.08)
    ax.set_ylabel("intersection F1, mean over seeds")
    ax.set_title(
        f"Bitext mining: {_bars_say(part)}\ndashed: chance, dotted: ceiling; ▲ higher, ▼ lower, ≈ equivalent "
        "(the row's verdict)",
        fontsize=9,
    )
    _legend_outside(ax, fontsize=7)
    _save(fig, path)


# What the forest figure shows (its caption in summary.md and in workflow/report/forest.rst, checked to agree by
# tests/unit/test_report_figures.py): every bar is the interval of the verdict it sits beside, at its level.
COMPARISONS_TEST = (
    f"Each declared comparison (config `evidence.families`: {', '.join(FAMILIES)}) is a two-level test over "
    f"pre-training seeds and test items ({crossed.METHOD}): seed s of a is paired with seed s of b, and the "
    "seeds x items table of per-item (jackknife) differences is analysed by its mean squares. p is two-sided; "
    "Holm's correction runs within each declared family (its size m fixed by the config, untested comparisons "
    "counted as p 1); TOST tests equivalence within the margin (`evidence.margin`); the MDE is the difference "
    "detectable with the configured power (`evidence.power`) at the family's first Holm threshold. Verdict: "
    "higher or lower (Holm p below alpha), equivalent (TOST Holm p below alpha), else inconclusive (an "
    "untested comparison too). The intervals a verdict is read from come from the test's own t and degrees "
    "of freedom: the Holm interval, at 1 - alpha / (m - j + 1) of the Holm step j that decided the comparison "
    "(for one Holm did not reject, the step where it stopped), excludes 0 exactly when the verdict is higher "
    "or lower; the TOST interval, at 1 - 2 x the TOST Holm step's alpha, lies inside the margin exactly when "
    "TOST's Holm p is below alpha; the unadjusted interval is at `evidence.confidence`. A difference without "
    "spread (identical on every seed and item) is tested exactly."
)
FOREST_CAPTION = (
    "Each declared comparison's paired difference a - b (point) with the Holm interval its verdict is read "
    "from (bar with caps, at its row's level), the unadjusted `evidence.confidence` interval (pale band) and "
    "the TOST interval (dotted, below the bar: inside the margin for an equivalent verdict), one block per "
    "declared family, one panel per task (its metric's units); solid line: zero; grey band: the equivalence "
    "margin (+- `evidence.margin`); purple ticks: +- the comparison's MDE; beside each row its verdict, its "
    "Holm p and the level of its bar. " + COMPARISONS_TEST
)
VERDICT_COLOUR = {"higher": "tab:green", "lower": "tab:red", "equivalent": "tab:blue", "inconclusive": "0.35"}


def _forest_panels(comparisons: pd.DataFrame, families: dict) -> list[tuple[str, str | None, pd.DataFrame]]:
    """(family, task, its rows) per panel: every declared family (config order of `FAMILIES`), a panel per
    task it has rows of; a family without rows one empty panel (task None)."""
    rows = pd.DataFrame() if comparisons.empty else comparisons[comparisons["role"] == "comparison"]
    panels = []
    for family in [f for f in FAMILIES if f in families]:
        part = rows[rows["family"] == family] if not rows.empty else rows
        tasks = [t for t in TASKS if not part.empty and t in set(part["task"])]
        panels += [(family, t, part[part["task"] == t]) for t in tasks] or [(family, None, part)]
    return panels


def _table_level(comparisons: pd.DataFrame, column: str, given: float) -> float:
    """The level the table's rows were computed at (its column), else the one given."""
    levels = set(comparisons[column].dropna()) if column in comparisons else set()
    return float(levels.pop()) if len(levels) == 1 else given


def comparisons_figure(
    comparisons: pd.DataFrame, families: dict, path: Path, confidence: float = 0.95, power: float = 0.8
) -> None:
    """The forest figure of the declared comparisons (`lem.report.comparisons`): per declared family (the
    config's `evidence.families`) and task, each comparison's difference a - b with the Holm interval its
    verdict is read from (at its row's level), the unadjusted interval at `confidence` and the TOST interval,
    zero, the equivalence margin's band, +-MDE at `power`, and the verdict word with its Holm p
    (`FOREST_CAPTION`). The levels are the table's own (`confidence`, `power` columns) where it has them."""
    from matplotlib.lines import Line2D
    from matplotlib.patches import Patch

    plt = _plt()
    confidence = _table_level(comparisons, "confidence", confidence)
    power = _table_level(comparisons, "power", power)
    panels = _forest_panels(comparisons, families)
    heights = [0.9 + 0.42 * max(1, len(part)) for *_, part in panels] or [1.2]
    fig, axes = plt.subplots(
        max(1, len(panels)), 1, figsize=(8, sum(heights) + 1.2), squeeze=False,
        gridspec_kw={"height_ratios": heights},
    )  # fmt: skip
    level = verdicts.level(confidence)
    if not panels:
        _empty(axes[0][0], "no family of comparisons declared (config evidence.families)")
    for ax, (family, task, part) in zip(axes[:, 0], panels, strict=False):  # no panel: one empty axes
        if task is None:
            ax.text(0.5, 0.5, f"{family} family: declared, but no comparison of it has data in this run",
                    ha="center", va="center")  # fmt: skip
            ax.set_yticks([])
            ax.set_xticks([])
            continue
        _forest_panel(ax, family, task, part, level)
    handles = [
        Line2D([], [], color="0.35", marker="o", linestyle="-",
               label="a - b with the Holm interval its verdict is read from (level per row)"),
        Line2D([], [], color="0.35", alpha=0.25, linewidth=7, label=f"unadjusted {level} interval"),
        Line2D([], [], color="0.35", linestyle=":", marker="|",
               label="TOST interval (1 - 2 x its Holm step's alpha)"),
        Patch(color="0.88", label="equivalence margin (+- evidence.margin)"),
        Line2D([], [], color="tab:purple", marker="|", markersize=10, linestyle="none",
               label=f"+- MDE ({verdicts.level(power)} power at the family's first Holm threshold)"),
    ]  # fmt: skip
    fig.suptitle(
        "Declared comparisons: paired difference a - b per family (Holm within each family)\n"
        "bars: the two-level Holm interval each verdict is read from (excludes 0 exactly when Holm rejects)",
        fontsize=10,
    )
    fig.tight_layout()
    fig.legend(handles=handles, loc="upper center", bbox_to_anchor=(0.5, 0.0), ncol=2, fontsize=8)
    with atomic_path(path) as tmp:
        fig.savefig(tmp, dpi=120, format="png", bbox_inches="tight")
    plt.close(fig)


def _forest_panel(ax, family: str, task: str, part: pd.DataFrame, level: str) -> None:
    ys = list(range(len(part) - 1, -1, -1))  # the table's order, top down
    for margin in sorted(set(part["margin"].dropna())):
        ax.axvspan(-margin, margin, color="0.88", zorder=0)
    ax.axvline(0.0, color="k", linewidth=0.8, zorder=1)
    span = [0.0]
    for y, r in zip(ys, part.itertuples(), strict=True):
        colour = VERDICT_COLOUR.get(r.verdict, "0.35")
        holm_low, holm_high = getattr(r, "holm_low", float("nan")), getattr(r, "holm_high", float("nan"))
        if not (pd.isna(r.low) or pd.isna(r.high)):  # the unadjusted interval: a pale band
            ax.plot([r.low, r.high], [y, y], color=colour, alpha=0.25, linewidth=7, solid_capstyle="butt",
                    zorder=2)  # fmt: skip
            span += [r.low, r.high]
        tost_low, tost_high = getattr(r, "tost_low", float("nan")), getattr(r, "tost_high", float("nan"))
        if not (pd.isna(tost_low) or pd.isna(tost_high)):
            ax.plot([tost_low, tost_high], [y - 0.28, y - 0.28], color=colour, linestyle=":", marker="|",
                    markersize=6, zorder=2)  # fmt: skip
            span += [tost_low, tost_high]
        tested = not (pd.isna(holm_low) or pd.isna(holm_high))
        if tested:
            ax.errorbar(
                r.diff,
                y,
                xerr=[[r.diff - holm_low], [holm_high - r.diff]],
                fmt="o",
                color=colour,
                capsize=3,
                zorder=3,
            )
            span += [holm_low, holm_high]
        else:
            ax.plot(r.diff, y, marker="o", markerfacecolor="white", color=colour, zorder=3)
            span.append(r.diff)
        if pd.notna(r.mde):
            ax.plot([-r.mde, r.mde], [y, y], linestyle="none", marker="|", markersize=10, color="tab:purple",
                    zorder=2)  # fmt: skip
            span += [-r.mde, r.mde]
        p_holm = getattr(r, "p_holm", float("nan"))
        word = f"{verdicts.verdict_label(r)} · Holm p {'-' if pd.isna(p_holm) else format(p_holm, '.3g')}"
        if r.verdict == verdicts.INTERIM:  # fewer seeds than declared: no verdict, no p to read one from
            word = f"interim: {verdicts.interim_words(r)}"
        elif tested:
            word += f" · bar {verdicts.level(r.holm_level)}"
        ax.annotate(word, xy=(1.01, y), xycoords=("axes fraction", "data"), va="center", fontsize=8,
                    color=colour, annotation_clip=False)  # fmt: skip
    span += [-m for m in part["margin"].dropna()] + list(part["margin"].dropna())
    lo, hi = min(x for x in span if pd.notna(x)), max(x for x in span if pd.notna(x))
    pad = 0.08 * (hi - lo or 1.0)
    ax.set_xlim(lo - pad, hi + pad)
    ax.set_ylim(-0.7, len(part) - 0.3)
    ax.set_yticks(ys)
    ax.set_yticklabels([f"{r.dataset} {r.pair}: {r.a} - {r.b}" for r in part.itertuples()], fontsize=8)
    metrics = ", ".join(sorted(set(part["metric"].astype(str))))
    ax.set_xlabel(
        f"a - b in {metrics} (bars: two-level Holm interval at its row's level; band: unadjusted {level} "
        "two-level interval)",
        fontsize=8,
    )
    size = int(part["family_size"].max()) if "family_size" in part else len(part)
    ax.set_title(
        f"{family} family: {task}, {len(part)} of its {size} comparisons (Holm within the family)",
        fontsize=9,
        loc="left",
    )


def masking_shares(models: list[ModelRef]) -> pd.DataFrame:
    """Share of masked positions per entity type (priority NE > VERB > NOUN, then other words) per trained
    variant and stage, pooled over languages (weighted by examples), from each model's masking_stats.json."""
    rows = []
    for m in models:
        if m.stage == "base":
            continue
        stats_file = m.path / "masking_stats.json"
        data = json.loads(stats_file.read_text(encoding="utf-8"))
        per_lang = data.get("per_lang") or {}
        total = sum(v.get("n_examples", 0) for v in per_lang.values())
        if not total:
            raise ValueError(f"{stats_file}: no per-language masking statistics (per_lang is empty)")
        for t in PRIORITY:
            share = sum(
                v["n_examples"] * (v.get("masked_by_priority") or {}).get(t, 0.0) for v in per_lang.values()
            )
            rows.append(
                {"variant": m.variant, "stage": m.stage, "seed": m.seed, "type": t, "share": share / total}
            )
    return pd.DataFrame(rows, columns=["variant", "stage", "seed", "type", "share"])


def masking_figure(models: list[ModelRef], variants: list[str], path: Path) -> None:
    """Stacked bars: what each variant's masking spent its budget on, per stage (mean over seeds)."""
    plt = _plt()
    shares = masking_shares(models)
    stages = [s for s in ("mono", "para") if s in set(shares.stage)]
    fig, axes = plt.subplots(1, max(1, len(stages)), figsize=(5 * max(1, len(stages)), 3.6), squeeze=False)
    colours = {"ne": "tab:red", "verb": "tab:green", "noun": "tab:blue", "other": "lightgrey"}
    if not stages:
        _empty(axes[0][0], "no continual pre-training in this run: no masking to show")
    for ax, stage in zip(axes[0], stages, strict=False):
        part = (
            shares[shares.stage == stage].groupby(["variant", "type"])["share"].mean().unstack(fill_value=0)
        )
        rows = [v for v in variants if v in part.index]
        bottom = [0.0] * len(rows)
        for t in PRIORITY:
            vals = [float(part.loc[v].get(t, 0.0)) for v in rows]
            ax.bar(rows, vals, bottom=bottom, color=colours[t], label=t.upper() if t != "other" else "other")
            bottom = [b + x for b, x in zip(bottom, vals, strict=True)]
        ax.set_title(f"Masked positions by entity type ({stage} stage)")
        ax.set_ylim(0, 1)
        ax.tick_params(axis="x", labelrotation=30)
    axes[0][0].set_ylabel("share of masked positions")
    if stages:
        _legend_outside(axes[0][-1], fontsize=7)
    _save(fig, path)


def loss_curves(models: list[ModelRef]) -> pd.DataFrame:
    """Training loss (train_log.jsonl) and validation loss (selection.json) per step of every model."""
    rows = []
    for m in models:
        log_file = m.path / "train_log.jsonl"
        for n, line in enumerate(log_file.read_text(encoding="utf-8").splitlines(), start=1):
            if not line.strip():
                continue
            try:
                rec = json.loads(line)
            except json.JSONDecodeError as e:
                raise ValueError(f"{log_file}:{n}: expected one JSON object per line ({e.msg})") from None
            if "loss" in rec and "step" in rec:
                rows.append({**_ref(m), "kind": "train", "step": rec["step"], "loss": rec["loss"]})
        sel = json.loads((m.path / "selection.json").read_text(encoding="utf-8"))
        for ev in sel.get("evaluations") or []:
            rows.append({**_ref(m), "kind": "valid", "step": ev["step"], "loss": ev["eval_loss"]})
    return pd.DataFrame(rows, columns=["variant", "stage", "seed", "kind", "step", "loss"])


def _empty(ax, text: str) -> None:
    ax.text(0.5, 0.5, text, ha="center", va="center", wrap=True)
    ax.set_axis_off()


def _ref(m: ModelRef) -> dict[str, str]:
    return {"variant": m.variant, "stage": m.stage, "seed": m.seed}


TRAINING_NOTE = (
    "each variant's validation set is masked by its own collator (LEM's entity-first masking, standard MLM's "
    "random masking), so a loss is comparable only within its panel, never across variants"
)


def training_figure(models: list[ModelRef], variants: list[str], path: Path) -> None:
    """Loss curves, one panel per stage (rows: base, mono, para) and variant (columns): validation loss (solid,
    the checkpoint criterion) and training loss (faint) of every seed. A panel per variant because each
    variant's validation set is masked by its own collator (`TRAINING_NOTE`): one axis would compare losses
    on differently masked sets."""
    plt = _plt()
    curves = loss_curves(models)
    stages = [s for s in STAGES if s in set(curves.stage)]
    panels = {s: [v for v in variants if v in set(curves[curves.stage == s].variant)] for s in stages}
    for s in stages:  # a model of a variant the run does not list: drawn after those it lists
        panels[s] += sorted(set(curves[curves.stage == s].variant) - set(panels[s]))
    cols = max([len(v) for v in panels.values()] or [1])
    fig, axes = plt.subplots(
        max(1, len(stages)), cols, figsize=(3.6 * cols, 2.8 * max(1, len(stages)) + 0.6), squeeze=False
    )
    for ax in axes.flat:
        ax.set_axis_off()
    if not stages:
        axes[0][0].set_axis_on()
        _empty(axes[0][0], "no model trained in this run: no loss curves to show")
    for row, stage in enumerate(stages):
        for col, variant in enumerate(panels[stage]):
            ax = axes[row][col]
            ax.set_axis_on()
            part = curves[(curves.stage == stage) & (curves.variant == variant)]
            for k, (seed, c) in enumerate(part.groupby("seed", sort=True)):
                for kind, c_kind in c.groupby("kind"):
                    c_kind = c_kind.sort_values("step")
                    ax.plot(
                        c_kind.step,
                        c_kind.loss,
                        color=f"C{k % 10}",
                        alpha=1.0 if kind == "valid" else 0.3,
                        linewidth=1.2 if kind == "valid" else 0.8,
                        label=f"seed {seed}" if kind == "valid" or "valid" not in set(c.kind) else None,
                    )
            ax.set_title(f"{variant}, {stage} stage\n(its own masked validation set)", fontsize=9)
            ax.set_xlabel("step", fontsize=8)
            ax.set_ylabel("masked-LM loss", fontsize=8)
            _legend_outside(ax, fontsize=7)
    fig.suptitle(
        "Loss curves, one panel per variant and stage: validation loss (solid, the checkpoint criterion), "
        f"training loss (faint)\n{_wrap(TRAINING_NOTE, 110)}",
        fontsize=9,
    )
    _save(fig, path)


def markdown_html(md: str, title: str, images: Path | None = None) -> str:
    """The report's markdown (headings, paragraphs, pipe tables, images) as one self-contained HTML page for
    the Snakemake report: no markdown package needed, nothing fetched. An image line (`![alt](name.png)`) is
    embedded from the folder `images` (as a data URL), or linked where it is not there."""
    out = [
        "<!DOCTYPE html><html><head><meta charset='utf-8'>",
        f"<title>{html.escape(title)}</title><style>body{{font-family:sans-serif;max-width:1100px;margin:1em auto}}"
        "table{border-collapse:collapse;margin:0.5em 0 1.5em}td,th{border:1px solid #ccc;padding:2px 6px;"
        "font-size:90%}tr:nth-child(even){background:#f6f6f6}em{color:#555}</style></head><body>",
    ]
    lines = md.splitlines()
    i = 0
    while i < len(lines):
        line = lines[i]
        if line.startswith("#"):
            level = len(line) - len(line.lstrip("#"))
            out.append(f"<h{level}>{_inline(line[level:].strip())}</h{level}>")
        elif line.startswith("|"):
            table = []
            while i < len(lines) and lines[i].startswith("|"):
                table.append([c.strip() for c in lines[i].strip().strip("|").split("|")])
                i += 1
            out.append("<table><tr>" + "".join(f"<th>{_inline(c)}</th>" for c in table[0]) + "</tr>")
            for row in table[2:]:
                out.append("<tr>" + "".join(f"<td>{_inline(c)}</td>" for c in row) + "</tr>")
            out.append("</table>")
            continue
        elif IMAGE.match(line):
            alt, name = IMAGE.match(line).groups()
            png = images / name if images is not None else None
            src = (
                "data:image/png;base64," + base64.b64encode(png.read_bytes()).decode("ascii")
                if png is not None and png.is_file()
                else html.escape(name)
            )
            out.append(f"<p><img src='{src}' alt='{html.escape(alt)}' style='max-width:100%'></p>")
        elif line.strip():
            out.append(f"<p>{_inline(line)}</p>")
        i += 1
    out.append("</body></html>")
    return "\n".join(out) + "\n"


def _inline(text: str) -> str:
    text = html.escape(text)
    text = re.sub(r"`([^`]+)`", r"<code>\1</code>", text)
    return re.sub(r"\*([^*]+)\*", r"<em>\1</em>", text)
