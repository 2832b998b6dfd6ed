"""The controls' verdicts on the report's mining cells (`controls.json`) and the run's gate on them (`lem report
controls`): a failed control marks its cell "no signal" (`lem.evidence.controls`)."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd

from lem.core.files import write_text
from lem.evidence.controls import KEYS as CONTROL_KEYS
from lem.evidence.controls import (
    ControlVerdict,
    PositiveBar,
    cell_settings,
    failed_lines,
    negative_control_verdict,
    no_signal_cells,
    positive_control_verdict,
)


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
