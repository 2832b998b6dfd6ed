"""The report: metrics files, keyed by their own `keys`, into one table, markdown and a figure."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pandas as pd
import pytest

from lem.report import build_report


def write(path: Path, obj: dict) -> str:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(obj))
    return str(path)


def sentiment_file(r: Path, variant: str, dataset: str, seed: int, pair: str, macro_f1: float) -> str:
    keys = {"task": "sentiment", "variant": variant, "dataset": dataset, "pair": pair, "seed": str(seed)}
    return write(
        r / f"sentiment/{variant}/{dataset}/seed{seed}/metrics.json",
        {"keys": keys, "macro_f1": macro_f1, "accuracy": 0.7},
    )


def test_report_tabulates_every_task(tmp_path):
    r = tmp_path / "results"
    prf = {"precision": 0.5, "recall": 0.25, "f1": 1 / 3, "n_pred": 4, "n_gold": 8, "n_correct": 2}
    mining = [
        write(
            r / f"mining/{v}/news/si-en.metrics.json",
            {
                "keys": {"task": "mining", "variant": v, "dataset": "news", "pair": "si-en"},
                **{d: prf for d in ("forward", "backward", "intersection")},
            },
        )
        for v in ("base", "lem")
    ]
    sentiment = [
        sentiment_file(r, v, "cmcs", s, "si-en", 0.4 + 0.1 * s) for v in ("base", "lem") for s in (1, 2)
    ]
    curation = [
        write(
            r / f"curation/{v}/si-en/metrics.json",
            {
                "keys": {"task": "curation", "variant": v, "dataset": "noisy", "pair": "si-en"},
                "precision_at_0.5": 0.8,
                "average_precision": 0.7,
            },
        )
        for v in ("base", "lem")
    ]
    annotation = [
        write(
            r / f"annotation_eval/{a}/si.json",
            {
                "keys": {"task": "annotation", "dataset": a, "pair": "si"},
                "pos": {"accuracy": 0.9, "coarse_accuracy": 0.95},
                "ner": {"f1": 0.6},
            },
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


def test_report_reads_the_keys_not_the_path(tmp_path):
    # the pair is the one the file names (the config's pair of the dataset), wherever the file lies
    ta = sentiment_file(tmp_path / "elsewhere", "lem", "tamil_mix", 1, "ta-en", 0.6)
    si = sentiment_file(tmp_path, "lem", "cmcs", 1, "si-en", 0.5)
    summary = build_report([], [ta, si], [], ["base", "lem"], tmp_path / "report")
    f1 = summary[(summary.task == "sentiment") & (summary.metric == "macro_f1")]
    assert dict(zip(f1.dataset, f1.pair, strict=True)) == {"tamil_mix": "ta-en", "cmcs": "si-en"}
    assert "tamil_mix ta-en" in (tmp_path / "report" / "summary.md").read_text()


def test_report_refuses_a_file_without_keys(tmp_path):
    bad = write(
        tmp_path / "results/sentiment/lem/cmcs/seed1/metrics.json", {"macro_f1": 1.0, "accuracy": 1.0}
    )
    with pytest.raises(ValueError, match=f"{re.escape(bad)}: a sentiment metrics file without `keys`"):
        build_report([], [bad], [], ["lem"], tmp_path / "report")


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"task": "mining"}, "name task 'mining', but the file was given as sentiment"),
        ({"variant": "other"}, "name variant 'other', not one of the variants"),
        ({"pair": ""}, "lacks pair"),
    ],
)
def test_report_refuses_keys_that_disagree(tmp_path, change, message):
    path = Path(sentiment_file(tmp_path, "lem", "cmcs", 1, "si-en", 0.5))
    data = json.loads(path.read_text())
    data["keys"].update(change)
    bad = write(path, data)
    with pytest.raises(ValueError, match=f"{re.escape(bad)}: `keys` .*{re.escape(message)}"):
        build_report([], [bad], [], ["base", "lem"], tmp_path / "report")


def test_chance_and_ceiling_are_shown_under_their_tables(tmp_path):
    r = tmp_path / "results"
    prf = {"precision": 0.5, "recall": 0.25, "f1": 1 / 3, "n_pred": 4, "n_gold": 8, "n_correct": 2}
    low = {"precision": 0.1, "recall": 0.1, "f1": 0.1, "n_pred": 4, "n_correct": 0.4}
    mining = [
        write(
            r / f"mining/{v}/news/si-en.metrics.json",
            {
                "keys": {"task": "mining", "variant": v, "dataset": "news", "pair": "si-en"},
                **{d: prf for d in ("forward", "backward", "intersection")},
                "chance": {d: low for d in ("forward", "backward", "intersection")},
                "ceiling": {d: {**prf, "f1": 0.9} for d in ("forward", "backward", "intersection")},
            },
        )
        for v in ("base", "lem")
    ]
    sentiment = [
        write(
            r / f"sentiment/{v}/cmcs/seed1/metrics.json",
            {
                "keys": {"task": "sentiment", "variant": v, "dataset": "cmcs", "pair": "si-en", "seed": "1"},
                "macro_f1": 0.5,
                "accuracy": 0.6,
                "chance": {"macro_f1": 1 / 3, "accuracy": 0.45},
            },
        )
        for v in ("base", "lem")
    ]
    out = tmp_path / "report"
    build_report(mining, sentiment, [], ["base", "lem"], out)
    summary = pd.read_csv(out / "summary.tsv", sep="\t")
    row = summary[(summary.metric == "intersection_f1") & (summary.variant == "lem")]
    assert row["chance"].item() == pytest.approx(0.1) and row["ceiling"].item() == pytest.approx(0.9)
    md = (out / "summary.md").read_text()
    assert "| *chance* | 0.100 |" in md and "| *ceiling* | 0.900 |" in md and "| *chance* | 0.333 |" in md


@pytest.mark.parametrize(
    "variant,value,message",
    [
        ("control_lexical", 0.2, "the positive control .* not clearly above chance"),
        ("control_random", 0.6, "the negative control .* above chance"),
    ],
)
def test_a_control_that_misbehaves_fails_the_report(tmp_path, variant, value, message):
    from lem.report import ControlError

    prf = {"precision": value, "recall": value, "f1": value, "n_pred": 4, "n_gold": 8, "n_correct": 2}
    low = {"precision": 0.1, "recall": 0.1, "f1": 0.1}
    path = write(
        tmp_path / f"mining/{variant}/news/si-en.metrics.json",
        {
            "keys": {"task": "mining", "variant": variant, "dataset": "news", "pair": "si-en"},
            **{d: prf for d in ("forward", "backward", "intersection")},
            "chance": {d: low for d in ("forward", "backward", "intersection")},
            "ceiling": {d: {**low, "f1": 1.0} for d in ("forward", "backward", "intersection")},
        },
    )
    with pytest.raises(ControlError, match=message):
        build_report([path], [], [], [variant], tmp_path / "report")
    assert not (tmp_path / "report" / "summary.tsv").exists()  # nothing written from an untrustworthy chain


def test_a_reference_encoder_row_can_be_a_positive_control(tmp_path):
    """config reference_encoders.<name>.positive_lift: the row must clear chance + lift x (ceiling - chance)."""
    from lem.report import ControlError, check_controls

    def summary(value: float) -> pd.DataFrame:
        return pd.DataFrame([{"task": "mining", "metric": "intersection_f1", "variant": "ref_labse",
                              "dataset": "news_itn", "pair": "si-ta", "mean": value, "chance": 0.1,
                              "ceiling": 1.0}])  # fmt: skip

    assert check_controls(summary(0.05)) == []  # not a control unless asked
    assert check_controls(summary(0.4), references={"ref_labse": 0.25}) == [
        "news_itn si-ta: reference ref_labse 0.400 >= 0.325"
    ]
    with pytest.raises(
        ControlError, match=r"reference encoder ref_labse \(a positive control\) scores .* 0.300"
    ):
        check_controls(summary(0.3), references={"ref_labse": 0.25})
