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


def level(x: float) -> str:
    """A level as the report prints it: 0.95 -> "95 %", 1 - 0.05 / 6 -> "99.17 %"."""
    return "-" if pd.isna(x) else f"{100 * x:.4g} %"


def _interval(low: float, high: float, f: str) -> str:
    return "-" if pd.isna(low) or pd.isna(high) else f"[{low:+{f}}, {high:+{f}}]"


def _row(r: Any) -> SimpleNamespace:
    return SimpleNamespace(**(r._asdict() if hasattr(r, "_asdict") else r.to_dict()))


def untested(r: Any) -> bool:
    """A declared comparison left untested (fewer than two paired seeds, no signal): its test says why."""
    return str(r.test).startswith("none")


def spread_of(r: Any) -> str:
    """Why the row's differences have no spread ("" where they have; NaN read back from a TSV is "")."""
    spread = getattr(r, "spread", "")
    return spread if isinstance(spread, str) else ""


def verdict_label(r: Any) -> str:
    """The row's verdict as the table, the sentence and the figure say it: the verdict word, "(untested)"
    where nothing was tested, the reason where the difference has no spread."""
    label = f"{r.verdict} (untested)" if r.role == "comparison" and untested(r) else str(r.verdict)
    spread = spread_of(r)
    return f"{label} ({spread})" if spread else label


def verdict_sentence(r: Any) -> str:
    """One comparison in words its tests allow: the verdict; the difference with the interval the verdict is
    read from (Holm's step's, and TOST's for equivalence), each with its level, and the unadjusted
    `evidence.confidence` interval beside them; p and Holm's p (an untested row says so); for an
    inconclusive one the smallest difference the run could have detected, at the configured power. `r`: a
    row of `compare`'s table (a pandas Series or an itertuples row)."""
    r = _row(r)
    f = _fmt(r.task)
    where = f"{r.task} {r.dataset} {r.pair} ({r.metric})"
    if r.verdict == INTERIM:
        return (
            f"{where}: interim, {interim_words(r)}: no verdict is worded before the declared seeds have run "
            f"(`{r.a}` - `{r.b}` = {r.diff:+{f}} on {int(r.seeds)} seeds)."
        )
    spread = spread_of(r)
    delta = f"{spread}: " if spread else ""
    delta += f"`{r.a}` - `{r.b}` = {r.diff:+{f}}"
    raw = (
        "" if pd.isna(r.low) else f"unadjusted {level(r.confidence)} interval {_interval(r.low, r.high, f)}; "
    )
    within = f"±{r.margin:g}"
    m = r.family_size
    if untested(r):
        return (
            f"{where}: {verdict_label(r)}: {str(r.test)[6:-1]} ({delta}; {raw}p -, Holm p - of {m}: counted as "
            "p 1 in its family's Holm)."
        )
    holm = f"{level(r.holm_level)} Holm interval {_interval(r.holm_low, r.holm_high, f)}"
    tost = f"{level(r.tost_level)} TOST interval {_interval(r.tost_low, r.tost_high, f)}"
    ps = f"p {_num(r.p, '.3g')}, Holm p {_num(r.p_holm, '.3g')} of {m}"
    tost_p = f"TOST Holm p {_num(r.p_tost_holm, '.3g')} of {m}"
    if r.verdict in ("higher", "lower"):
        return f"{where}: `{r.a}` is {r.verdict} than `{r.b}` ({delta}; {holm}, excluding 0; {raw}{ps})."
    if r.verdict == "equivalent":
        return (
            f"{where}: `{r.a}` is equivalent to `{r.b}` within {within} ({delta}; {tost}, inside {within}; "
            f"{holm}, including 0; {raw}{ps}; {tost_p})."
        )
    return (
        f"{where}: {verdict_label(r)}, neither different nor equivalent within {within} ({delta}; {holm}, "
        f"including 0; {tost}, not inside {within}; {raw}{ps}; {tost_p}); this run detects a difference of "
        f"{_num(r.mde, f)} or more with {level(r.power)} power."
    )


INTERIM = "interim"


def interim_words(r: Any) -> str:
    """`3 of 12 declared seeds`."""
    return f"{int(r.seeds)} of {int(r.seeds_declared)} declared seeds"


def interim(table: pd.DataFrame, declared: int | None) -> pd.DataFrame:
    """The comparisons of a run with fewer paired pre-training seeds than the number declared before it
    (`evidence.seeds_declared`), every declared comparison's verdict replaced by `interim`: a run that grows
    over sessions words nothing before it is complete. The tests' numbers stay in the table."""
    if declared is None or table.empty or "seeds" not in table:
        return table
    rows = table["role"] == "comparison" if "role" in table else pd.Series(True, index=table.index)
    seeds = pd.to_numeric(table.loc[rows, "seeds"], errors="coerce")
    if not len(seeds) or seeds.max() >= declared:
        return table
    out = table.copy()
    out.loc[rows, "verdict"] = INTERIM
    out.loc[rows, "seeds_declared"] = declared
    return out


def verdict_lines(table: pd.DataFrame) -> list[str]:
    """The report's (and README's) words about results: one generated line per declared comparison, by family."""
    if table.empty:
        return []
    lines = [
        "## Verdicts (generated from the tests: higher, lower, equivalent within the margin, or inconclusive)",
        "",
    ]
    waiting = table[table["verdict"] == INTERIM]
    if len(waiting):
        first = next(waiting.itertuples())
        lines += [
            f"**Interim: {interim_words(first)}.** The number of pre-training seeds was declared before the run "
            "(`evidence.seeds_declared`); until they have all run, no comparison is worded as higher, lower, "
            "equivalent or inconclusive.",
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


def _one(table: pd.DataFrame, column: str, default: float) -> str:
    """The level of a column of the table as one word ("95 %"), or "per-row" where rows differ."""
    values = set(table[column].dropna()) if column in table else {default}
    return level(values.pop()) if len(values) == 1 else "per-row"


def comparisons_markdown(table: pd.DataFrame, alpha: float) -> list[str]:
    if table.empty:
        return []
    conf, power = _one(table, "confidence", 0.95), _one(table, "power", 0.8)
    lines = [
        "## Paired comparisons (declared families; two-level tests over pre-training seeds and test items)",
        "",
        "Each declared comparison (config `evidence.families`) is a two-level test: the pre-training seeds (with "
        "their fine-tuning seeds, for sentiment) and the test items both resampled, through the mean squares of "
        "the seed x item table of per-item (jackknife) differences, on Satterthwaite's degrees of freedom; seed s "
        "of `a` is paired with seed s of `b`. Means and seed s.d. over the paired seeds; a - b with its "
        f"unadjusted {conf} interval (`evidence.confidence`); d_av: a - b over the mean seed s.d.; d_z: over "
        "the s.d. of the per-seed differences; p two-sided; Holm within each family (its size m fixed by the "
        "config; untested rows count as p 1); TOST against the margin; MDE: the difference detectable with "
        f"{power} power (`evidence.power`) at the family's first Holm threshold. Verdict at family-wise "
        f"{alpha:g}: ▲ higher, ▼ lower, ≈ equivalent within the margin, else inconclusive (an untested row "
        "too). The verdict is read from two intervals of the test's own t and degrees of freedom, each with its "
        "level: the Holm interval, at 1 - alpha / (m - j + 1) of the Holm step j that decided the row (for a "
        "row Holm did not reject, the step where it stopped), excludes 0 exactly when the verdict is higher or "
        "lower; the TOST interval, at 1 - 2 x its TOST Holm step's alpha, lies inside the margin exactly when "
        "the TOST Holm p is below alpha. A difference without spread (identical on every seed and item) is "
        "tested exactly and says so. NMT: BLEU per kept share, compared only where its control (oracle vs "
        "random, one-sided, uncorrected) shows signal. Per-seed scores: comparisons.tsv.",
        "",
        f"| family | task | dataset pair | a | b | a mean (seed s.d.) | b mean (seed s.d.) | a - b | {conf} interval "
        "(unadjusted) | Holm interval (level) | d_av | d_z | p | p (Holm) | margin | TOST interval (level) | "
        f"p TOST (Holm) | MDE ({power} power) | verdict | seeds | units |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in table.itertuples():
        f = _fmt(r.task)
        holm = _interval(r.holm_low, r.holm_high, f)
        holm += f" ({level(r.holm_level)})" if holm != "-" else ""
        tost = _interval(r.tost_low, r.tost_high, f)
        tost += f" ({level(r.tost_level)})" if tost != "-" else ""
        verdict = f"{MARK.get(r.verdict, '')} {verdict_label(r)}".strip()
        lines.append(
            f"| {r.family} | {r.task} | {r.dataset} {r.pair} | {r.a} | {r.b} | {r.value_a:{f}} "
            f"({_num(r.sd_a, f)}) | {r.value_b:{f}} ({_num(r.sd_b, f)}) | {r.diff:+{f}} | "
            f"{_interval(r.low, r.high, f)} | {holm} | {_num(r.d_av, '+.2f')} | {_num(r.d_z, '+.2f')} | "
            f"{_num(r.p, '.4f')} | {_num(r.p_holm, '.4f')} | {r.margin:g} | {tost} | {_num(r.p_tost_holm, '.4f')} "
            f"| {_num(r.mde, f)} | {verdict} | {r.seeds} | {r.units} |"
        )
    return [*lines, "", *verdict_lines(table)]
