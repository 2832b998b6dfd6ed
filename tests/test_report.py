"""The report: metrics files from their contract paths into one table, markdown and a figure."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest

from lem.report import build_report


def write(path: Path, obj: dict) -> str:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(obj))
    return str(path)


def test_report_tabulates_every_task(tmp_path):
    r = tmp_path / "results"
    prf = {"precision": 0.5, "recall": 0.25, "f1": 1 / 3, "n_pred": 4, "n_gold": 8, "n_correct": 2}
    mining = [
        write(
            r / f"mining/{v}/news/si-en.metrics.json",
            {d: prf for d in ("forward", "backward", "intersection")},
        )
        for v in ("base", "lem")
    ]
    sentiment = [
        write(r / f"sentiment/{v}/cmcs/seed{s}/metrics.json", {"macro_f1": 0.4 + 0.1 * s, "accuracy": 0.7})
        for v in ("base", "lem")
        for s in (1, 2)
    ]
    curation = [
        write(r / f"curation/{v}/si-en/metrics.json", {"precision_at_0.5": 0.8, "average_precision": 0.7})
        for v in ("base", "lem")
    ]
    annotation = [
        write(
            r / f"annotation_eval/{a}/si.json",
            {"pos": {"accuracy": 0.9, "coarse_accuracy": 0.95}, "ner": {"f1": 0.6}},
        )
        for a in ("configured", "hf_ner")
    ]
    out = tmp_path / "report"
    build_report(mining, sentiment, curation, ["base", "lem"], out, annotation)
    summary = pd.read_csv(out / "summary.tsv", sep="\t")
    sent = summary[
        (summary.task == "sentiment") & (summary.metric == "macro_f1") & (summary.variant == "lem")
    ]
    assert sent["mean"].item() == pytest.approx(0.55) and sent["n"].item() == 2
    assert sent["std"].item() == pytest.approx(0.0707, abs=1e-3)
    assert set(summary.task) == {"mining", "sentiment", "curation", "annotation"}
    md = (out / "summary.md").read_text()
    assert "| lem | 0.333 | " not in md  # one column per dataset x pair
    assert "0.550 ± 0.071" in md and "Annotation against held-out gold" in md and "| hf_ner |" in md
    assert (out / "overview.png").read_bytes()[:4] == b"\x89PNG"


def test_report_rejects_a_path_outside_the_contract(tmp_path):
    bad = write(tmp_path / "elsewhere/metrics.json", {"macro_f1": 1.0, "accuracy": 1.0})
    with pytest.raises(ValueError, match="not a sentiment metrics path"):
        build_report([], [bad], [], ["base"], tmp_path / "report")
