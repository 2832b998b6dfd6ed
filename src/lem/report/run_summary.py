"""The lines a run ends with (workflow/rules/common.smk's `onsuccess:`): where the report is, the declared
comparisons' verdicts by kind, the controls, how the run compares with the documented run of its
configuration. It reads the report's own files (summary.md, comparisons.tsv, controls.json, documented.txt)
and nothing else, and never fails a run that succeeded: a file it cannot read is said so."""

from __future__ import annotations

import csv
import json
import sys
import time
from collections import Counter
from pathlib import Path

VERDICT_ORDER = ("higher", "lower", "equivalent", "inconclusive", "no signal")


def run_summary(report_dir: str | Path = "results/report", started: float | None = None) -> list[str]:
    """The summary's lines; none when the folder holds no report (a run of other targets). `started`: the
    run's start (a time.time()); a report older than it is said to be from an earlier run."""
    folder = Path(report_dir)
    md = folder / "summary.md"
    if not md.is_file():
        return []
    old = started is not None and md.stat().st_mtime < started
    when = " (not rebuilt by this run: from an earlier one)" if old else ""
    lines = [
        f"report: {md.resolve()}{when}; tables, intervals and figures: {(folder / 'summary.html').resolve()}"
    ]
    for part in (comparisons_line, controls_line, documented_line):
        try:
            line = part(folder)
        except (OSError, ValueError, KeyError, TypeError) as err:  # a summary, never a failure
            line = f"{part.__name__.replace('_line', '')}: not read ({type(err).__name__}: {err})"
        if line:
            lines.append(line)
    return lines


def comparisons_line(folder: Path) -> str | None:
    """`verdicts of the 18 declared comparisons: 2 higher, 16 inconclusive (mining 9, sentiment 9)`."""
    path = folder / "comparisons.tsv"
    if not path.is_file():
        return None
    with open(path, encoding="utf-8", newline="") as fh:
        rows = [r for r in csv.DictReader(fh, delimiter="\t") if r.get("role", "comparison") == "comparison"]
    if not rows:
        return f"verdicts: no declared comparison in this run ({path.name})"
    kinds = Counter(r.get("verdict") or "?" for r in rows)
    tasks = Counter(r.get("task") or "?" for r in rows)
    order = [k for k in VERDICT_ORDER if k in kinds] + sorted(k for k in kinds if k not in VERDICT_ORDER)
    by_kind = ", ".join(f"{kinds[k]} {k}" for k in order)
    by_task = ", ".join(f"{t} {n}" for t, n in sorted(tasks.items()))
    return f"verdicts of the {len(rows)} declared comparisons: {by_kind} ({by_task}; {path.name})"


def controls_line(folder: Path) -> str | None:
    """`controls: 12 of 12 passed` or `controls: 10 of 12 passed; failed: <the first> ...`."""
    path = folder / "controls.json"
    if not path.is_file():
        return None
    data = json.loads(path.read_text(encoding="utf-8"))
    verdicts = data.get("verdicts") or []
    if not verdicts:
        return f"controls: none in this run ({path.name})"
    passed = sum(bool(v.get("ok")) for v in verdicts)
    line = f"controls: {passed} of {len(verdicts)} passed"
    failed = data.get("failed") or []
    if failed:
        more = f" (and {len(failed) - 1} more)" if len(failed) > 1 else ""
        line += f"; failed: {failed[0]}{more}"
    no_signal = data.get("no_signal") or []
    if no_signal:
        line += f"; {len(no_signal)} cell(s) with no signal"
    return f"{line} ({path.name})"


def documented_line(folder: Path) -> str | None:
    """How this run compares with the shipped archive of its configuration (rule `documented`: its first two
    lines, and how many more it holds), or that no documented run matches."""
    path = folder / "documented.txt"
    if not path.is_file():
        return None
    lines = path.read_text(encoding="utf-8").splitlines()
    more = f" ({len(lines) - 2} more lines in {path.resolve()})" if len(lines) > 2 else ""
    return "; ".join(lines[:2]) + more


def print_run_summary(report_dir: str | Path = "results/report", started: float | None = None) -> None:
    """Print the summary to stderr, beside Snakemake's own last lines; any error is one line, never raised."""
    try:
        lines = run_summary(report_dir, started)
    except Exception as err:  # noqa: BLE001 - the run succeeded: its summary must not fail it
        lines = [f"run summary not written ({type(err).__name__}: {err})"]
    if lines:
        stamp = time.strftime("%H:%M:%S")
        print("\n".join(f"[{stamp}] {line}" for line in ["Run summary:", *lines]), file=sys.stderr)
