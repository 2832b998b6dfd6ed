"""The report's figures: the overview, mining F1 with intervals, masking shares per entity type, loss curves per
stage; and the HTML page of the markdown.

Each figure is a PNG written atomically; every function takes the data it draws and an output path.
Model folders are named to the report as `variant:stage:seed=path` (`parse_models`): the figures read their
`masking_stats.json` (lem.masking.stats), `selection.json` (validation losses) and `train_log.jsonl` (training
losses), never paths for meaning.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from lem.core.files import atomic_path

STAGES = ("base", "mono", "para")
PRIORITY = ("ne", "verb", "noun", "other")


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
    plt = _plt()
    fig.tight_layout()
    with atomic_path(path) as tmp:
        fig.savefig(tmp, dpi=120, format="png")
    plt.close(fig)


def overview_figure(summary: pd.DataFrame, variants: list[str], path: Path) -> None:
    """The overview: the headline metric of mining, sentiment and curation per variant and pair (bars: mean
    and seed s.d.)."""
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


def mining_figure(summary: pd.DataFrame, variants: list[str], path: Path, marks: dict | None = None) -> None:
    """Mining intersection F1 per pair (groups) and row (bars): mean over seeds with its 95 % interval,
    chance (dashed) and ceiling (dotted) of each pair, ▲/▼ over significant comparisons."""
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
        means = [sub["mean"].get(g, float("nan")) for g in groups]
        lows = [sub["low"].get(g, float("nan")) for g in groups]
        highs = [sub["high"].get(g, float("nan")) for g in groups]
        err = [
            [0 if pd.isna(lo) else m - lo for m, lo in zip(means, lows, strict=True)],
            [0 if pd.isna(hi) else hi - m for m, hi in zip(means, highs, strict=True)],
        ]
        ax.bar(xs, means, width, yerr=err, capsize=2, label=v)
        for x, g, m, hi in zip(xs, groups, means, highs, strict=True):
            ds, pair = g.split(" ", 1)
            mark = (marks or {}).get(("mining", ds, pair, v))
            if mark and not pd.isna(m):  # above the interval, clear of its cap
                top = m if pd.isna(hi) else max(m, hi)
                ax.text(x, min(1.02, top + 0.02), mark, ha="center", va="bottom", fontsize=8)
    for i, g in enumerate(groups):
        ref = part[part.group == g]
        left, right = i - width / 2, i + width * (len(rows) - 0.5)
        ax.hlines(ref["chance"].mean(), left, right, colors="k", linestyles="dashed", linewidth=1)
        ax.hlines(ref["ceiling"].mean(), left, right, colors="grey", linestyles="dotted", linewidth=1)
    ax.set_xticks([i + width * (len(rows) - 1) / 2 for i in range(len(groups))])
    ax.set_xticklabels(groups)
    ax.set_ylim(0, 1.2)
    ax.set_ylabel("intersection F1")
    ax.set_title(
        "Bitext mining: mean over seeds, 95 % interval\ndashed: chance, dotted: ceiling", fontsize=10
    )
    if rows:
        ax.legend(fontsize=7, ncol=4, loc="upper center")
    _save(fig, path)


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
        axes[0][-1].legend(fontsize=7)
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


def training_figure(models: list[ModelRef], variants: list[str], path: Path) -> None:
    """Loss curves per stage (base, mono, para): validation loss (solid, the checkpoint criterion) and
    training loss (faint) per variant; every seed drawn."""
    plt = _plt()
    curves = loss_curves(models)
    stages = [s for s in STAGES if s in set(curves.stage)]
    fig, axes = plt.subplots(1, max(1, len(stages)), figsize=(5 * max(1, len(stages)), 3.6), squeeze=False)
    colour = {v: f"C{i % 10}" for i, v in enumerate(variants)}
    if not stages:
        _empty(axes[0][0], "no model trained in this run: no loss curves to show")
    for ax, stage in zip(axes[0], stages, strict=False):
        part = curves[curves.stage == stage]
        labelled = set()
        for (variant, _seed, kind), c in part.groupby(["variant", "seed", "kind"], sort=True):
            c = c.sort_values("step")
            label = variant if (variant, kind) not in labelled and kind == "valid" else None
            labelled.add((variant, kind))
            ax.plot(
                c.step,
                c.loss,
                color=colour.get(variant, "k"),
                alpha=1.0 if kind == "valid" else 0.3,
                linewidth=1.2 if kind == "valid" else 0.8,
                label=label,
            )
        ax.set_title(f"{stage} stage: validation (solid) and training loss")
        ax.set_xlabel("step")
    axes[0][0].set_ylabel("masked-LM loss")
    for ax in axes[0]:
        if ax.get_legend_handles_labels()[0]:
            ax.legend(fontsize=7)
    _save(fig, path)


def markdown_html(md: str, title: str) -> str:
    """The report's markdown (headings, paragraphs, pipe tables) as one self-contained HTML page for the
    Snakemake report: no markdown package needed, nothing fetched."""
    import html

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
        elif line.strip():
            out.append(f"<p>{_inline(line)}</p>")
        i += 1
    out.append("</body></html>")
    return "\n".join(out) + "\n"


def _inline(text: str) -> str:
    import html
    import re

    text = html.escape(text)
    text = re.sub(r"`([^`]+)`", r"<code>\1</code>", text)
    return re.sub(r"\*([^*]+)\*", r"<em>\1</em>", text)
