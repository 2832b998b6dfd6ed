"""The report's verdicts in words the tests allow (`lem.report.comparisons`): the marks of the tables, one
generated sentence per declared comparison, and the comparisons' markdown table."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pandas as pd

from lem.evidence.compare import FAMILIES

MARK = {"higher": "▲", "lower": "▼", "equivalent": "≈"}


def marks(table: pd.DataFrame) -> dict[tuple[str, str, str, str], str]:
    """(task, dataset, pair, variant) -> the mark of the row against its reference: ▲ higher, ▼ lower, ≈
    equivalent within the margin (each by its family's Holm-corrected test), "" inconclusive."""
    out = {}
    for r in table.itertuples() if not table.empty else ():
        if r.role == "comparison" and r.verdict in MARK:
            out[(r.task, r.dataset, r.pair, r.a)] = MARK[r.verdict]
    return out


def _num(x: float, fmt: str) -> str:
    return "-" if pd.isna(x) else format(x, fmt)


def _fmt(task: str) -> str:
    return ".2f" if task == "nmt" else ".3f"


def verdict_sentence(r: Any) -> str:
    """One comparison in words its tests allow: the verdict, the difference with its interval, and for an
    inconclusive one the smallest difference the run could have detected. `r`: a row of `compare`'s table
    (a pandas Series or an itertuples row)."""
    r = SimpleNamespace(**(r._asdict() if hasattr(r, "_asdict") else r.to_dict()))
    f = _fmt(r.task)
    where = f"{r.task} {r.dataset} {r.pair} ({r.metric})"
    iv = "" if pd.isna(r.low) else f", 95 % interval [{r.low:+{f}}, {r.high:+{f}}]"
    delta = f"`{r.a}` - `{r.b}` = {r.diff:+{f}}{iv}"
    if r.verdict in ("higher", "lower"):
        return f"{where}: `{r.a}` is {r.verdict} than `{r.b}` ({delta}; Holm p {r.p_holm:.3g} of {r.family_size})."
    if r.verdict == "equivalent":
        return (
            f"{where}: `{r.a}` is equivalent to `{r.b}` within ±{r.margin:g} ({delta}; TOST Holm p "
            f"{r.p_tost_holm:.3g} of {r.family_size})."
        )
    if str(r.test).startswith("none"):
        return f"{where}: untested, {str(r.test)[6:-1]} ({delta})."
    return (
        f"{where}: inconclusive ({delta}; neither different nor equivalent within ±{r.margin:g}); this run "
        f"detects a difference of {_num(r.mde, f)} or more with 80 % power."
    )


def verdict_lines(table: pd.DataFrame) -> list[str]:
    """The report's (and README's) words about results: one generated line per declared comparison, by family."""
    if table.empty:
        return []
    lines = [
        "## Verdicts (generated from the tests: higher, lower, equivalent within the margin, or inconclusive)",
        "",
    ]
    for family in FAMILIES:
        part = table[table["family"] == family]
        if part.empty:
            continue
        lines += [f"**{family}** ({len(part)} comparisons, Holm within the family):", ""]
        lines += [f"- {verdict_sentence(r)}" for r in part.itertuples()]
        lines.append("")
    return lines


def comparisons_markdown(table: pd.DataFrame, alpha: float) -> list[str]:
    if table.empty:
        return []
    lines = [
        "## Paired comparisons (declared families; two-level tests over pre-training seeds and test items)",
        "",
        "Each declared comparison (config `evidence.families`) is a two-level test: the pre-training seeds (with "
        "their fine-tuning seeds, for sentiment) and the test items both resampled, through the mean squares of "
        "the seed x item table of per-item (jackknife) differences, on Satterthwaite's degrees of freedom; seed s "
        "of `a` is paired with seed s of `b`. Means and seed s.d. over the paired seeds; a - b with its 95 % "
        "interval; d_av: a - b over the mean seed s.d.; d_z: over the s.d. of the per-seed differences; p "
        f"two-sided; Holm within each family (its size fixed by the config; untested rows count); TOST against "
        f"the margin; MDE: the difference detectable with 80 % power at the family's first Holm threshold. "
        f"Verdict at family-wise {alpha:g}: ▲ higher, ▼ lower, ≈ equivalent within the margin, else inconclusive. "
        "NMT: BLEU per kept share, compared only where its control (oracle vs random, one-sided, uncorrected) "
        "shows signal. Per-seed scores: comparisons.tsv.",
        "",
        "| family | task | dataset pair | a | b | a mean (seed s.d.) | b mean (seed s.d.) | a - b | 95 % interval | "
        "d_av | d_z | p | p (Holm) | margin | p TOST (Holm) | MDE | verdict | seeds | units |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in table.itertuples():
        f = _fmt(r.task)
        iv = "-" if pd.isna(r.low) else f"[{r.low:+{f}}, {r.high:+{f}}]"
        verdict = f"{MARK.get(r.verdict, '')} {r.verdict}".strip()
        lines.append(
            f"| {r.family} | {r.task} | {r.dataset} {r.pair} | {r.a} | {r.b} | {r.value_a:{f}} "
            f"({_num(r.sd_a, f)}) | {r.value_b:{f}} ({_num(r.sd_b, f)}) | {r.diff:+{f}} | {iv} | "
            f"{_num(r.d_av, '+.2f')} | {_num(r.d_z, '+.2f')} | {_num(r.p, '.4f')} | {_num(r.p_holm, '.4f')} | "
            f"{r.margin:g} | {_num(r.p_tost_holm, '.4f')} | {_num(r.mde, f)} | {verdict} | {r.seeds} | {r.units} |"
        )
    return [*lines, "", *verdict_lines(table)]
