"""The lines a run ends with (issue 45): workflow/rules/common.smk's `onsuccess:` prints where the report is,
the declared comparisons' verdicts by kind and the controls, from the report's files; it never fails."""

from __future__ import annotations

import json
import os
from pathlib import Path

from lem.report.run_summary import print_run_summary, run_summary
from lem.run import paths

REPO = Path(__file__).resolve().parents[2]
COMPARISONS = (
    "task\tdataset\tpair\ta\tb\tfamily\trole\tverdict\n"
    "mining\tnews\tsi-en\tlem\tmlm_tlm\tprimary\tcomparison\thigher\n"
    "mining\tnews\tsi-ta\tlem\tmlm_tlm\tprimary\tcomparison\tinconclusive\n"
    "sentiment\tcmcs\tsi-en\tlem\tmlm_tlm\tprimary\tcomparison\tinconclusive\n"
    "mining\tnews\tsi-en\tcontrol_lexical\tchance\tcontrol\tcontrol\tsignal\n"
)


def report(folder: Path, controls: dict | None = None) -> Path:
    out = folder / "results" / "report"
    out.mkdir(parents=True)
    (out / "summary.md").write_text("# Report\n", encoding="utf-8")
    (out / "comparisons.tsv").write_text(COMPARISONS, encoding="utf-8")
    data = controls or {"verdicts": [{"ok": True}, {"ok": True}], "no_signal": [], "failed": []}
    (out / "controls.json").write_text(json.dumps(data), encoding="utf-8")
    return out


def test_the_summary_says_where_the_report_is_the_verdicts_by_kind_and_the_controls(tmp_path):
    out = report(tmp_path)
    lines = run_summary(out)
    assert lines[0].startswith(f"report: {(out / 'summary.md').resolve()};")
    assert lines[1] == (
        "verdicts of the 3 declared comparisons: 1 higher, 2 inconclusive (mining 2, sentiment 1; comparisons.tsv)"
    )
    assert lines[2] == "controls: 2 of 2 passed (controls.json)"


def test_failed_controls_an_old_report_and_unreadable_files_are_said_never_raised(tmp_path, capsys):
    failed = {
        "verdicts": [{"ok": True}, {"ok": False}],
        "no_signal": [{"task": "mining"}],
        "failed": ["a", "b"],
    }
    out = report(tmp_path, failed)
    old = out / "summary.md"
    os.utime(old, (1_000_000, 1_000_000))
    lines = run_summary(out, started=2_000_000)
    assert "(not rebuilt by this run: from an earlier one)" in lines[0]
    assert (
        lines[2]
        == "controls: 1 of 2 passed; failed: a (and 1 more); 1 cell(s) with no signal (controls.json)"
    )
    (out / "controls.json").write_bytes(b"\x00not json")
    assert run_summary(out)[2].startswith("controls: not read (")
    assert run_summary(tmp_path / "nothing") == []  # a run of other targets: no report, no summary
    print_run_summary(out)
    err = capsys.readouterr().err.splitlines()
    assert err[0].endswith("Run summary:") and len(err) == 4


def test_the_workflow_ends_with_it():
    smk = (REPO / "workflow" / "rules" / "common.smk").read_text(encoding="utf-8")
    assert "onsuccess:" in smk and "print_run_summary(paths.REPORT_DIR, started=_RUN_STARTED)" in smk
    assert paths.REPORT_DIR == "results/report"


def test_the_summary_ends_with_how_the_run_compares_with_the_documented_one(tmp_path):
    out = report(tmp_path)
    (out / "documented.txt").write_text(
        "compared with the documented run docs/runs/default.tar.gz: 120 metric rows: 100 identical, "
        "20 within tolerance, 0 different\nverdicts: 14 of 14 declared comparisons agree\n"
        "  within tolerance: mining news_gen si-en intersection_f1 lem: ...\n",
        encoding="utf-8",
    )
    last = run_summary(out)[-1]
    assert last.startswith(
        "compared with the documented run docs/runs/default.tar.gz: 120 metric rows: 100 identical"
    )
    assert "; verdicts: 14 of 14 declared comparisons agree (1 more lines in " in last
