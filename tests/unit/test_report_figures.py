"""The report's figures and intervals (`lem.report.figures`, `lem.report.intervals`): the forest figure of the
declared comparisons, one kind of error bar everywhere (the verdicts' two-level interval, inside [0, 1] for a
share), legends clear of the data, loss curves one variant per panel, and captions that describe the test the
code runs."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from scipy.stats import t as student_t
from test_report import mining_file, sentiment_file, write

from lem.evidence import crossed, stats
from lem.report import figures, verdicts
from lem.report.build import build_report
from lem.report.intervals import (
    KIND_WORDS,
    TWO_LEVEL,
    interval_note,
    kind_words,
    report_intervals,
    two_level_interval,
)
from lem.report.settings import ReportSettings

REPO = Path(__file__).resolve().parents[2]
CAPTIONS = REPO / "workflow" / "report"
PRF = {"precision": 0.5, "recall": 0.5, "f1": 0.5}
FAMILIES = {
    "primary": [{"a": "lem*", "b": "mlm_tlm", "tasks": ["mining"]}],
    "secondary": [],  # declared, without comparisons
    "exploratory": [{"a": "mlm_tlm", "b": "base", "tasks": ["mining", "sentiment"]}],
}


@pytest.fixture(scope="module")
def report_dir(tmp_path_factory) -> Path:
    """One report for the figure tests (reading it only)."""
    return run_report(tmp_path_factory.mktemp("report"))


def run_report(tmp_path: Path, families: dict = FAMILIES) -> Path:
    """A report of three rows, three seeds each, on mining (20 documents) and sentiment (12 examples)."""
    rng = np.random.default_rng(7)
    r = tmp_path / "results"
    mining, sentiment = [], []
    for v, p in (("base", 0.3), ("mlm_tlm", 0.4), ("lem", 0.6)):
        for s in (1, 2, 3):
            counts = [(int(rng.binomial(10, p)), 10, 10) for _ in range(20)]
            total = np.sum(counts, axis=0)
            f1 = 2 * total[0] / (total[1] + total[2])
            prf = {"precision": f1, "recall": f1, "f1": f1}
            mining.append(mining_file(r, v, s, prf, counts))
            pred = [int(x) for x in rng.integers(0, 2, 12)]
            sentiment.append(sentiment_file(r, v, "cmcs", s, "si-en", 0.5, gold=[0, 1] * 6, pred=pred))
    out = tmp_path / "report"
    settings = ReportSettings.from_dict({"evidence": {"families": families}})
    build_report(
        mining=mining,
        sentiment=sentiment,
        variants=["base", "mlm_tlm", "lem"],
        out_dir=out,
        settings=settings,
    )
    return out


def captured(monkeypatch) -> list:
    """The figures the next calls draw (figures._save wrapped)."""
    figs = []
    save = figures._save

    def keep(fig, path):
        fig.tight_layout()
        fig.canvas.draw()
        renderer = fig.canvas.get_renderer()
        axes = [ax for ax in fig.axes if ax.axison]
        legends = [ax.get_legend().get_window_extent(renderer) for ax in axes if ax.get_legend() is not None]
        figs.append((fig, axes, legends, [ax.get_window_extent(renderer) for ax in axes]))
        save(fig, path)

    monkeypatch.setattr(figures, "_save", keep)
    return figs


def test_the_forest_figure_has_a_row_per_declared_comparison_and_a_panel_per_family(report_dir):
    out = report_dir
    png = out / "comparisons.png"
    assert png.read_bytes()[:4] == b"\x89PNG" and png.stat().st_size > 20_000
    comparisons = pd.read_csv(out / "comparisons.tsv", sep="\t")
    panels = figures._forest_panels(comparisons, FAMILIES)
    assert [(f, t) for f, t, _ in panels] == [
        ("primary", "mining"),
        ("secondary", None),  # declared without comparisons: an empty panel that says so
        ("exploratory", "mining"),
        ("exploratory", "sentiment"),
    ]
    drawn = pd.concat([part for *_, part in panels])
    assert sorted(zip(drawn.family, drawn.a, drawn.b, drawn.task, strict=True)) == sorted(
        zip(comparisons.family, comparisons.a, comparisons.b, comparisons.task, strict=True)
    )
    md = (out / "summary.md").read_text()
    assert "![" in md and "(comparisons.png)" in md and figures.FOREST_CAPTION in md
    html = (out / "summary.html").read_text()
    assert "<img src='data:image/png;base64," in html  # the figure inside the self-contained page


def test_the_forest_figure_draws_the_verdicts_interval_and_word(report_dir, tmp_path, monkeypatch):
    comparisons = pd.read_csv(report_dir / "comparisons.tsv", sep="\t")
    import matplotlib.pyplot as plt

    shown = []
    monkeypatch.setattr(plt, "close", lambda fig: shown.append(fig))
    figures.comparisons_figure(comparisons, FAMILIES, tmp_path / "f.png")
    fig = shown[0]
    texts = [t.get_text() for ax in fig.axes for t in ax.texts]
    words = [t for t in texts if t.split(" ")[0] in ("higher", "lower", "equivalent", "inconclusive")]
    assert len(words) == len(comparisons[comparisons.role == "comparison"])
    assert all(
        " · Holm p " in w and " · bar " in w for w in words
    )  # every row: its Holm p and its bar's level
    assert any("no comparison of it has data" in t for t in texts)
    labels = " ".join(ax.get_xlabel() for ax in fig.axes)
    assert "unadjusted 95 % two-level interval" in labels and "Holm interval" in fig._suptitle.get_text()
    primary = fig.axes[0]
    bars = [c for c in primary.collections if c.__class__.__name__ == "LineCollection"]
    segments = [seg for c in bars for seg in c.get_segments() if seg[0][1] == seg[1][1]]  # horizontal bars
    rows = comparisons[comparisons.family == "primary"]
    # the bar is the interval the verdict is read from: Holm's step's, not the unadjusted one
    drawn = sorted(round(float(s[0][0]), 9) for s in segments)
    assert drawn == sorted(round(float(x), 9) for x in rows.holm_low)
    said = [t.get_text() for t in primary.texts if " · bar " in t.get_text()]
    assert sorted(w.rsplit("bar ", 1)[1] for w in said) == sorted(verdicts.level(x) for x in rows.holm_level)


def test_the_forest_figure_says_the_configured_levels(report_dir, tmp_path, monkeypatch):
    """A table computed at confidence 0.9 and power 0.9: the figure's labels say 90 %, not 95 % and 80 %."""
    import matplotlib.pyplot as plt

    comparisons = pd.read_csv(report_dir / "comparisons.tsv", sep="\t").assign(confidence=0.9, power=0.9)
    shown = []
    monkeypatch.setattr(plt, "close", lambda fig: shown.append(fig))
    figures.comparisons_figure(comparisons, FAMILIES, tmp_path / "f.png")  # the defaults 0.95 / 0.8 not used
    fig = shown[0]
    labels = " ".join(ax.get_xlabel() for ax in fig.axes)
    legend = " ".join(t.get_text() for leg in fig.legends for t in leg.get_texts())
    assert "unadjusted 90 % two-level interval" in labels and "95 %" not in labels
    assert "90 % power" in legend and "80 %" not in legend and "unadjusted 90 % interval" in legend


def test_a_report_without_comparisons_still_writes_its_forest_figure(tmp_path):
    for families in ({}, {"primary": []}):
        path = tmp_path / f"f{len(families)}.png"
        figures.comparisons_figure(pd.DataFrame(), families, path)
        assert path.read_bytes()[:4] == b"\x89PNG" and path.stat().st_size > 1000
    one = build_report(
        mining=[mining_file(tmp_path, "base", 1, PRF)], variants=["base"], out_dir=tmp_path / "report"
    )
    assert not one.empty and (tmp_path / "report" / "comparisons.png").stat().st_size > 1000


def test_a_systems_interval_is_the_verdicts_two_level_interval():
    """One system's interval by `lem.evidence.crossed`'s procedure: the same as the test of the system against
    a recipe scoring 0 on every item (its pseudo-values 0)."""
    rng = np.random.default_rng(3)
    runs = {s: [np.stack([rng.binomial(10, 0.4 + 0.05 * k, 25), np.full(25, 10), np.full(25, 10)], axis=1)]
            for k, s in enumerate(("1", "2", "3"))}  # fmt: skip
    zero = {s: [np.zeros_like(r[0])] for s, r in runs.items()}
    iv = two_level_interval(runs, stats.f1_stat)
    test = crossed.two_level_test(runs, zero, stats.f1_stat)
    assert iv["mean"] == pytest.approx(test["diff"]) and iv["df"] == pytest.approx(test["df"])
    assert (iv["low"], iv["high"]) == pytest.approx((test["low"], test["high"]))
    assert np.isnan(two_level_interval({"1": runs["1"]}, stats.f1_stat)["low"])  # one seed: no interval


def test_intervals_of_a_share_stay_inside_0_1_and_say_what_they_are(tmp_path):
    summary = pd.DataFrame(
        [
            {"task": "curation", "dataset": "noisy", "pair": "si-en", "metric": "average_precision",
             "variant": "lem", "mean": 0.947, "std": 0.05, "n": 3, "low": 0.824, "high": 1.069},
            {"task": "sentiment", "dataset": "cmcs", "pair": "si-en", "metric": "accuracy", "variant": "lem",
             "mean": 0.05, "std": 0.05, "n": 3, "low": -0.07, "high": 0.17},
            {"task": "nmt", "dataset": "flores", "pair": "si-en", "metric": "bleu@0.5", "variant": "lem",
             "mean": 3.0, "std": 2.0, "n": 3, "low": -2.0, "high": 8.0},
            {"task": "mining", "dataset": "news", "pair": "si-en", "metric": "forward_f1", "variant": "lem",
             "mean": 0.5, "std": 0.0, "n": 1, "low": None, "high": None},
        ]
    )  # fmt: skip
    from lem.report.comparisons import Items

    out = report_intervals(summary, Items()).set_index("metric")
    t = student_t.ppf(0.975, 2) / np.sqrt(3)  # the t-interval over 3 seeds, from the row's mean and s.d.
    assert out.loc["average_precision", ["low", "high"]].tolist() == pytest.approx([0.947 - t * 0.05, 1.0])
    assert out.loc["accuracy", ["low", "high"]].tolist() == pytest.approx([0.0, 0.05 + t * 0.05])
    assert out.loc["bleu@0.5", ["low", "high"]].tolist() == pytest.approx([0.0, 3.0 + t * 2.0])  # BLEU: 0-100
    assert list(out["interval"]) == ["seeds", "seeds", "seeds", "none"]
    assert (out["confidence"] == 0.95).all()
    # at a configured level of 0.9 every interval is a 90 % one, and says so
    at90 = report_intervals(summary, Items(), confidence=0.9).set_index("metric")
    t90 = student_t.ppf(0.95, 2) / np.sqrt(3)
    assert (
        at90.loc["average_precision", "low"] == pytest.approx(0.947 - t90 * 0.05)
        and (at90.confidence == 0.9).all()
    )
    assert (
        interval_note({"seeds"}, 0.9)
        == f"Brackets: {kind_words('seeds', 0.9)}, inside the metric's range [0, 1]."
    )
    assert kind_words("seeds", 0.9).startswith("90 % t-interval")
    # a whole report: the tested metrics two-level, every bracket of a share inside [0, 1], each table saying which
    r = tmp_path / "results"
    curation = [
        write(
            r / f"curation/{v}/seed{s}/si-en/metrics.json",
            {"keys": {"task": "curation", "variant": v, "dataset": "noisy", "pair": "si-en", "seed": str(s)},
             "precision_at_0.5": 0.9 + 0.05 * s, "average_precision": 0.9 + 0.05 * s,
             "settings": {"keep_fractions": [0.5]},
             "items": {"rank": [*range(1, 11)] if s == 1 else [6, 2, 3, 4, 5, 1, 7, 8, 9, 10],
                       "clean": [1, 1, 1, 1, 1, 0, 0, 1, 0, 0]}},
        )
        for v in ("mlm_tlm", "lem")
        for s in (1, 2)
    ]  # fmt: skip
    summary = build_report(curation=curation, variants=["mlm_tlm", "lem"], out_dir=tmp_path / "report")
    tested = summary[summary.metric == "precision_at_0.5"]
    assert set(tested.interval) == {TWO_LEVEL} and set(
        summary[summary.metric == "average_precision"].interval
    ) == {"seeds"}
    md = (tmp_path / "report" / "summary.md").read_text()
    tables = md.split("## Paired comparisons")[0]
    bounds = [float(x) for pair in re.findall(r"\[(-?\d+\.\d+), (-?\d+\.\d+)\]", tables) for x in pair]
    assert bounds and all(0.0 <= b <= 1.0 for b in bounds), bounds
    assert f"Brackets: {KIND_WORDS[TWO_LEVEL]}" in md and f"Brackets: {KIND_WORDS['seeds']}" in md


def test_every_error_bar_says_what_it_is_and_no_legend_covers_data(report_dir, tmp_path, monkeypatch):
    figs = captured(monkeypatch)
    out = report_dir
    summary = pd.read_csv(out / "summary.tsv", sep="\t")
    figures.overview_figure(summary, ["base", "mlm_tlm", "lem"], tmp_path / "o.png")
    figures.mining_figure(summary, ["base", "mlm_tlm", "lem"], tmp_path / "m.png")
    assert len(figs) == 2
    for _, axes, legends, boxes in figs:
        assert any(KIND_WORDS[TWO_LEVEL].split(" (")[0] in ax.get_title() for ax in axes)
        assert legends  # right of every axes, never over a bar
        assert all(legend.x0 >= box.x1 - 1 for legend in legends for box in boxes)


def test_loss_curves_are_drawn_one_variant_per_panel(tmp_path, monkeypatch):
    import json

    refs = []
    for v, stage, seed in [
        ("base", "base", "1"),
        ("mlm_tlm", "mono", "1"),
        ("lem", "mono", "1"),
        ("lem", "mono", "2"),
    ]:
        d = tmp_path / v / stage / seed
        d.mkdir(parents=True)
        (d / "train_log.jsonl").write_text(
            "\n".join(json.dumps({"loss": 5.0 - i, "step": 10 * i}) for i in (1, 2))
        )
        (d / "selection.json").write_text(json.dumps({"evaluations": [{"step": 10, "eval_loss": 4.5}]}))
        refs.append(f"{v}:{stage}:{seed}={d}")
    figs = captured(monkeypatch)
    figures.training_figure(figures.parse_models(refs), ["base", "mlm_tlm", "lem"], tmp_path / "t.png")
    fig, axes, *_ = figs[0]
    titles = sorted(ax.get_title().split("\n")[0] for ax in axes)
    assert titles == ["base, base stage", "lem, mono stage", "mlm_tlm, mono stage"]
    assert all("own masked validation set" in ax.get_title() for ax in axes)
    assert "never across variants" in fig._suptitle.get_text().replace("\n", " ")
    assert (tmp_path / "t.png").stat().st_size > 5000


def _words(path: Path) -> str:
    return " ".join(path.read_text(encoding="utf-8").split())


def test_the_captions_describe_the_test_the_code_runs():
    """Each caption of `snakemake --report` holds the report's own description of what it shows: the
    two-level test with Holm within each declared family, not the seed-level t-test of one Holm family."""
    assert (
        crossed.METHOD in figures.COMPARISONS_TEST
        and "within each declared family" in figures.COMPARISONS_TEST
    )
    assert figures.COMPARISONS_TEST in _words(CAPTIONS / "comparisons.rst")
    assert figures.FOREST_CAPTION in _words(CAPTIONS / "forest.rst")
    assert figures.TRAINING_NOTE in _words(CAPTIONS / "training.rst")
    for name in ("overview.rst", "mining.rst"):
        assert KIND_WORDS[TWO_LEVEL] in _words(CAPTIONS / name), name
    for path in CAPTIONS.glob("*.rst"):
        text = _words(path)
        for old in ("paired t-test over", "over every comparison tested", "standard deviation over seeds;"):
            assert old not in text, (path.name, old)
    smk = (REPO / "workflow" / "rules" / "report.smk").read_text(encoding="utf-8")
    assert re.search(r'paths\.REPORT\["forest"\],\s*caption="\.\./report/forest\.rst"', smk)
    from lem.run.paths import REPORT, REPORT_OUTPUTS

    assert REPORT["forest"] == "results/report/comparisons.png" and REPORT["forest"] in REPORT_OUTPUTS
