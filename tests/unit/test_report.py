"""The report: metrics files, keyed by their own `keys`, into one table, markdown and a figure."""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from lem.evidence import stats
from lem.report.build import build_report
from lem.report.settings import ReportSettings


def settings(controls: dict, config: dict | None = None) -> ReportSettings:
    """The report's settings with `controls` and the config's evaluation sets (as the report rule passes them)."""
    evalsets = ((config or {}).get("mining") or {}).get("evalsets", {})
    return ReportSettings.from_dict({"controls": controls, "evalsets": evalsets})


def write(path: Path, obj: dict) -> str:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(obj))
    return str(path)


def sentiment_file(
    r: Path,
    variant: str,
    dataset: str,
    seed: int,
    pair: str,
    macro_f1: float,
    gold: list[int] = (0, 1, 1, 0),
    pred: list[int] = (0, 1, 0, 0),
) -> str:
    keys = {"task": "sentiment", "variant": variant, "dataset": dataset, "pair": pair, "seed": str(seed)}
    return write(
        r / f"sentiment/{variant}/seed{seed}/{dataset}/metrics.json",
        {"keys": keys, "macro_f1": macro_f1, "accuracy": 0.7, "labels": ["neg", "pos"],
         "test_gold": list(gold), "test_pred": list(pred)},
    )  # fmt: skip


def units(counts: list[list[int]]) -> dict:
    """The per-document counts of a mining metrics file ([n_correct, n_pred, n_gold] per document)."""
    docs = [f"d{i}" for i in range(len(counts))]
    return {"kind": "document", "columns": ["n_correct", "n_pred", "n_gold"], "units": docs,
            **{d: counts for d in ("forward", "backward", "intersection")}}  # fmt: skip


def mining_file(r: Path, variant: str, seed: int, prf: dict, counts=((2, 4, 8),), **extra) -> str:
    return write(
        r / f"mining/{variant}/seed{seed}/news/si-en.metrics.json",
        {
            "keys": {
                "task": "mining",
                "variant": variant,
                "dataset": "news",
                "pair": "si-en",
                "seed": str(seed),
            },
            **{d: prf for d in ("forward", "backward", "intersection")},
            "units": units([list(c) for c in counts]),
            **extra,
        },
    )


def test_report_tabulates_every_task(tmp_path):
    r = tmp_path / "results"
    prf = {"precision": 0.5, "recall": 0.25, "f1": 1 / 3, "n_pred": 4, "n_gold": 8, "n_correct": 2}
    mining = [mining_file(r, v, 1, prf) for v in ("base", "lem")]
    sentiment = [
        sentiment_file(r, v, "cmcs", s, "si-en", 0.4 + 0.1 * s) for v in ("base", "lem") for s in (1, 2)
    ]
    curation = [
        write(
            r / f"curation/{v}/seed1/si-en/metrics.json",
            {
                "keys": {"task": "curation", "variant": v, "dataset": "noisy", "pair": "si-en", "seed": "1"},
                "precision_at_0.5": 0.8,
                "average_precision": 0.7,
                "settings": {"keep_fractions": [0.5]},
                "items": {"rank": list(range(1, 11)), "clean": [1, 1, 0, 1, 1, 0, 0, 1, 0, 0]},
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
    build_report(
        mining=mining,
        sentiment=sentiment,
        curation=curation,
        variants=["base", "lem"],
        out_dir=out,
        annotation=annotation,
    )
    summary = pd.read_csv(out / "summary.tsv", sep="\t")
    sent = summary[
        (summary.task == "sentiment") & (summary.metric == "macro_f1") & (summary.variant == "lem")
    ]
    assert sent["mean"].item() == pytest.approx(0.55) and sent["n"].item() == 2
    assert sent["std"].item() == pytest.approx(0.0707, abs=1e-3)
    assert set(summary.task) == {"mining", "sentiment", "curation", "annotation"}
    md = (out / "summary.md").read_text()
    assert "| lem | 0.333 | " not in md  # one column per dataset x pair
    # the tested metric's 95 % two-level interval (two seeds, four examples: wide), cut to [0, 1]; a t-interval
    # over the two seeds would be 0.55 +- 12.706 * 0.0707 / sqrt(2) = [-0.085, 1.185], no F1 anyone can score
    assert "0.550 [0.000, 1.000]" in md and "[-0.085, 1.185]" not in md
    assert "Annotation against held-out gold" in md and "| hf_ner |" in md
    assert (out / "overview.png").read_bytes()[:4] == b"\x89PNG"


def test_report_reads_the_keys_not_the_path(tmp_path):
    # the pair is the one the file names (the config's pair of the dataset), wherever the file lies
    ta = sentiment_file(tmp_path / "elsewhere", "lem", "tamil_mix", 1, "ta-en", 0.6)
    si = sentiment_file(tmp_path, "lem", "cmcs", 1, "si-en", 0.5)
    summary = build_report(sentiment=[ta, si], variants=["base", "lem"], out_dir=tmp_path / "report")
    f1 = summary[(summary.task == "sentiment") & (summary.metric == "macro_f1")]
    assert dict(zip(f1.dataset, f1.pair, strict=True)) == {"tamil_mix": "ta-en", "cmcs": "si-en"}
    assert "tamil_mix ta-en" in (tmp_path / "report" / "summary.md").read_text()


def test_report_refuses_a_file_without_keys(tmp_path):
    bad = write(
        tmp_path / "results/sentiment/lem/seed1/cmcs/metrics.json", {"macro_f1": 1.0, "accuracy": 1.0}
    )
    with pytest.raises(ValueError, match=f"{re.escape(bad)}: a sentiment metrics file without `keys`"):
        build_report(sentiment=[bad], variants=["lem"], out_dir=tmp_path / "report")


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
        build_report(sentiment=[bad], variants=["base", "lem"], out_dir=tmp_path / "report")


def test_chance_and_ceiling_are_shown_under_their_tables(tmp_path):
    r = tmp_path / "results"
    prf = {"precision": 0.5, "recall": 0.25, "f1": 1 / 3, "n_pred": 4, "n_gold": 8, "n_correct": 2}
    low = {"precision": 0.1, "recall": 0.1, "f1": 0.1, "n_pred": 4, "n_correct": 0.4}
    mining = [
        mining_file(
            r,
            v,
            1,
            prf,
            chance={d: low for d in ("forward", "backward", "intersection")},
            ceiling={d: {**prf, "f1": 0.9} for d in ("forward", "backward", "intersection")},
        )
        for v in ("base", "lem")
    ]
    sentiment = []
    for v in ("base", "lem"):
        path = Path(sentiment_file(r, v, "cmcs", 1, "si-en", 0.5))
        data = json.loads(path.read_text())
        sentiment.append(
            write(path, {**data, "accuracy": 0.6, "chance": {"macro_f1": 1 / 3, "accuracy": 0.45}})
        )
    out = tmp_path / "report"
    build_report(mining=mining, sentiment=sentiment, variants=["base", "lem"], out_dir=out)
    summary = pd.read_csv(out / "summary.tsv", sep="\t")
    row = summary[(summary.metric == "intersection_f1") & (summary.variant == "lem")]
    assert row["chance"].item() == pytest.approx(0.1) and row["ceiling"].item() == pytest.approx(0.9)
    md = (out / "summary.md").read_text()
    assert "| *chance* | 0.100 |" in md and "| *ceiling* | 0.900 |" in md and "| *chance* | 0.333 |" in md


LOW = {"precision": 0.1, "recall": 0.1, "f1": 0.1}


def control_metrics(f1: float, n_pred: int, n_correct: int, chance: float = 0.1) -> dict:
    low = {**LOW, "precision": chance, "f1": chance}
    prf = {"precision": n_correct / n_pred, "recall": f1, "f1": f1, "n_pred": n_pred, "n_gold": n_pred,
           "n_correct": n_correct}  # fmt: skip
    return {
        "intersection": prf,
        "chance": {"intersection": low},
        "ceiling": {"intersection": {**low, "f1": 1.0}},
    }


def control_summary(variant: str, mean: float, dataset: str = "news") -> pd.DataFrame:
    return pd.DataFrame([{"task": "mining", "metric": "intersection_f1", "variant": variant,
                          "dataset": dataset, "pair": "si-en", "mean": mean, "chance": 0.1, "ceiling": 1.0}])  # fmt: skip


def test_the_positive_control_must_also_beat_chance_by_its_test():
    """controls.positive_lift per evaluation set and positive_alpha: a lexical control above the lift but with
    too few mined pairs to tell from chance fails its cell; with enough it passes; the line gives the exact
    binomial p and the precision's interval."""
    from lem.report.controls import control_verdicts

    for n_pred, passes in ((4, False), (40, True)):
        metrics = control_metrics(0.75, n_pred, round(0.75 * n_pred))
        (v,) = control_verdicts(
            control_summary("control_lexical", 0.75),
            {"positive_lift": {"news": 0.5}, "positive_alpha": 0.001},
            control_metrics={("control_lexical", "news", "si-en"): [metrics]},
        )
        assert v.ok is passes and "control_lexical intersection F1 0.750 >= 0.550" in v.line
        assert ("p = " in v.line) and ("binomial, one-sided" in v.line) and "vs chance 0.100" in v.line
        if not passes:
            assert re.search(r"p = .* >= alpha 0\.001", v.line)
            assert v.keys[:2] == ("mining.evalsets.news.controls", "controls.positive_lift")


def test_a_reference_encoder_row_can_be_a_positive_control():
    """config reference_encoders.<name>.positive_lift: the row must clear chance + lift x (ceiling - chance)."""
    from lem.report.controls import control_verdicts

    def summary(value: float) -> pd.DataFrame:
        return control_summary("ref_labse", value, "news_itn")

    assert control_verdicts(summary(0.05)) == []  # not a control unless asked
    (v,) = control_verdicts(summary(0.4), references={"ref_labse": 0.25})
    assert v.ok and v.line.startswith(
        "news_itn si-en: reference ref_labse (a positive control) intersection F1 0.400 >= 0.325"
    )
    (v,) = control_verdicts(summary(0.3), references={"ref_labse": 0.25})
    assert not v.ok and v.keys == ("reference_encoders.labse.positive_lift",)


def test_the_negative_control_is_tested_against_chance_over_its_draws():
    """Issue 33 item 4: the random control's draws pooled; "at chance" is a two-sided binomial test that does
    not reject chance, whatever its F1: ta-en's 63 correct where chance expects 48.2 of 482 (p 0.036) is
    not at chance at 0.05 but is at 0.01; a draw far above chance fails."""
    from lem.evidence.controls import chance_p_value, negative_control_verdict

    draw = control_metrics(0.13, 482, 63)
    ok, line = negative_control_verdict([draw], "itn", "ta-en", 0.05)
    p = chance_p_value(63, 482, 0.1, "two-sided")
    assert not ok and 0.01 < p < 0.05 and f"p = {p:.2g} < alpha 0.05" in line
    assert negative_control_verdict([draw], "itn", "ta-en", 0.01)[0]
    ok, line = negative_control_verdict(
        [control_metrics(0.1, 100, 9), control_metrics(0.1, 100, 12)], "g", "si-en", 0.01
    )
    assert ok and "over 2 draw(s): 21 correct of 200 mined, 20.0 by chance" in line
    assert re.search(r"precision 0\.105 \[0\.066, 0\.156\] vs chance 0\.100", line)
    assert not negative_control_verdict([control_metrics(0.4, 100, 40)], "g", "si-en", 0.01)[0]


def two_set_run(r: Path) -> tuple[list[str], list[str]]:
    """Mining metrics of two evaluation sets (`news_a`, `news_b`, si-en), base / mlm_tlm / lem over three
    seeds and a lexical control each: the control passes on news_a and fails (at chance) on news_b."""
    paths = []
    counts = {"base": 1, "mlm_tlm": 2, "lem": 3}
    for dataset in ("news_a", "news_b"):
        for v, found in counts.items():
            for seed in (1, 2, 3):
                per_doc = [(found + (d < seed * found), 4, 4) for d in range(20)]
                n_correct = sum(c for c, _, _ in per_doc)
                m = control_metrics(n_correct / 80, 80, n_correct, chance=0.2)
                paths.append(write(
                    r / f"mining/{v}/seed{seed}/{dataset}/si-en.metrics.json",
                    {"keys": {"task": "mining", "variant": v, "dataset": dataset, "pair": "si-en",
                              "seed": str(seed)}, **m, "units": units([list(c) for c in per_doc])},
                ))  # fmt: skip
        ok = dataset == "news_a"
        m = control_metrics(0.9 if ok else 0.2, 80, 72 if ok else 16, chance=0.2)
        paths.append(write(
            r / f"mining/control_lexical/seed1/{dataset}/si-en.metrics.json",
            {"keys": {"task": "mining", "variant": "control_lexical", "dataset": dataset, "pair": "si-en",
                      "seed": "1"}, **m, "units": units([[3, 4, 4]] * 20)},
        ))  # fmt: skip
    return paths, ["base", "mlm_tlm", "lem", "control_lexical"]


def test_a_failing_control_on_one_of_two_sets_marks_that_cell_only(tmp_path):
    """Issue 37 item 2: the report is built; the failed cell is marked "no signal" in the mining tables and
    its comparisons are untested (so not in the Holm family), the other set's are tested; a line at the top
    names the cell and the keys; controls.json holds the verdicts and `lem report controls` fails naming
    them (the run's exit status), while a run whose controls pass gets its marker file."""
    from lem.cli import command
    from lem.report.controls import ControlError, controls_gate

    mining, rows = two_set_run(tmp_path / "results")
    out = tmp_path / "report"
    build_report(
        mining=mining,
        variants=rows,
        out_dir=out,
        settings=settings({"positive_lift": 0.5, "positive_alpha": 0.01}),
    )
    md = (out / "summary.md").read_text()
    head = md.split("## ", 1)[0]
    assert "**Controls failed: no signal in 1 cell(s)**" in head
    assert "news_b si-en (mining): control_lexical failed:" in head and "controls.positive_lift" in head
    assert "news_a si-en (mining)" not in head
    assert "| variant | news_a si-en | news_b si-en (no signal) |" in md
    comp = pd.read_csv(out / "comparisons.tsv", sep="\t")
    blocked = comp[comp.dataset == "news_b"]
    assert len(blocked) == 2 and blocked.p.isna().all() and blocked.p_holm.isna().all()
    assert (blocked.test == "none (no signal: control_lexical failed)").all()
    assert comp[comp.dataset == "news_a"].p.notna().all()
    verdicts = json.loads((out / "controls.json").read_text())
    assert verdicts["no_signal"] == [
        {"task": "mining", "dataset": "news_b", "pair": "si-en", "why": "control_lexical failed"}
    ]
    with pytest.raises(
        ControlError, match=r"^1 control\(s\) failed, .*news_b si-en \(mining\): control_lexical"
    ):
        controls_gate(out / "controls.json", tmp_path / "ok.json")
    assert (
        command("report")(
            ["controls", "--verdicts", str(out / "controls.json"), "--out", str(tmp_path / "ok.json")]
        )
        != 0
    )
    assert not (tmp_path / "ok.json").exists()
    # a per-set setting (mining.evalsets.news_b.controls.positive_lift / positive_alpha) decides news_b alone
    config = {
        "mining": {
            "evalsets": {"news_b": {"controls": {"positive_lift": {"si-en": 0.0}, "positive_alpha": 1.0}}}
        }
    }
    build_report(mining=mining, variants=rows, out_dir=out, settings=settings({"positive_lift": 0.5}, config))
    assert "Controls failed" not in (out / "summary.md").read_text()
    controls_gate(out / "controls.json", tmp_path / "ok.json")
    assert json.loads((tmp_path / "ok.json").read_text()) == {"passed": 2}


def test_cell_settings_per_set_and_pair():
    from lem.evidence.controls import cell_settings

    general = {"positive_lift": {"a": 0.2}, "positive_alpha": 0.05, "lexical": {"si-en": "d.tsv"}}
    sets = {
        "b": {
            "controls": {
                "positive_lift": 0.1,
                "negative_alpha": {"ta-en": 0.001},
                "lexical": {"si-en": False},
            }
        }
    }
    assert cell_settings(general, sets, "a", "si-en") == {
        "positive_lift": 0.2, "positive_alpha": 0.05, "negative_alpha": 0.01, "lexical": True}  # fmt: skip
    assert cell_settings(general, sets, "b", "si-en") == {
        "positive_lift": 0.1, "positive_alpha": 0.05, "negative_alpha": 0.01, "lexical": False}  # fmt: skip
    assert cell_settings(general, sets, "b", "ta-en")["negative_alpha"] == 0.001
    assert cell_settings(None, None, "x", "si-en")["positive_lift"] == 0.5


def test_comparisons_are_paired_over_seeds_and_holm_corrected(tmp_path):
    """Each seed's F1 comes from its own per-document counts; each declared comparison is the two-level test
    over seeds and documents (lem.evidence.crossed), in its family (lem vs mlm_tlm on mining: primary; on
    sentiment: secondary; mlm_tlm vs base: exploratory), Holm within the family, a verdict per row."""
    from lem.evidence import crossed

    def approx(x, abs=2e-6):  # comparisons.tsv holds 6 decimals
        return pytest.approx(x, abs=abs)

    r = tmp_path / "results"
    prf = {"precision": 0.5, "recall": 0.5, "f1": 0.5, "n_pred": 4, "n_gold": 4, "n_correct": 2}
    # 40 documents of 4 gold links; base finds 1 per document, mlm_tlm about 3, lem as mlm_tlm give or take
    found = {"base": (1, 1, 1), "mlm_tlm": (3, 3, 3), "lem": (3, 3, 3)}
    extra = {"base": (0, 2, 5), "mlm_tlm": (0, 9, 3), "lem": (9, 0, 6)}  # documents with one more link
    mining = [
        mining_file(r, v, s, prf, [(found[v][i] + (d < extra[v][i]), 4, 4) for d in range(40)])
        for v in ("base", "mlm_tlm", "lem")
        for i, s in enumerate((1, 2, 3))
    ]
    gold = [0, 1] * 30
    preds = {"base": [[0] * 60, [0] * 59 + [1], [1] + [0] * 59], "mlm_tlm": [gold, gold[:-1] + [0], gold]}
    preds["lem"] = [gold[:-2] + [1, 1], gold, gold[:-1] + [0]]
    sentiment = [
        sentiment_file(r, v, "cmcs", s, "si-en", 0.5, gold, preds[v][i])
        for v in ("base", "mlm_tlm", "lem")
        for i, s in enumerate((1, 2, 3))
    ]
    out = tmp_path / "report"
    build_report(mining=mining, sentiment=sentiment, variants=["base", "mlm_tlm", "lem"], out_dir=out)
    comp = pd.read_csv(out / "comparisons.tsv", sep="\t")
    assert set(zip(comp.task, comp.a, comp.b, strict=True)) == {
        (t, a, b) for t in ("mining", "sentiment") for a, b in (("lem", "mlm_tlm"), ("mlm_tlm", "base"))
    }
    row = comp[(comp.task == "mining") & (comp.a == "mlm_tlm")].iloc[0]
    f1 = {v: [(found[v][i] * 40 + extra[v][i]) / 160 for i in range(3)] for v in found}
    assert row.value_a == approx(np.mean(f1["mlm_tlm"])) and row.value_b == approx(np.mean(f1["base"]))
    assert row.sd_a == approx(np.std(f1["mlm_tlm"], ddof=1))
    docs = {
        v: {str(s): [np.array([(found[v][i] + (d < extra[v][i]), 4, 4) for d in range(40)], float)]
            for i, s in enumerate((1, 2, 3))}
        for v in found
    }  # fmt: skip
    redo_test = crossed.two_level_test(docs["mlm_tlm"], docs["base"], stats.f1_stat, margin=0.02)
    assert row.p == approx(redo_test["p"], abs=1e-6) and row.family == "exploratory"
    assert row.d_av == approx(row["diff"] / ((row.sd_a + row.sd_b) / 2), abs=1e-4)
    assert row.low < row["diff"] < row.high and row.seeds == 3 and row.units == "40 documents"
    assert row.significant and row.verdict == "higher" and row.p_holm >= row.p
    # the per-seed scores are in the table: anyone can redo the test
    redo = [float(x.split(":")[1]) for x in row.scores_a.split()]
    assert redo == pytest.approx(f1["mlm_tlm"], abs=1e-6)
    same = comp[(comp.task == "mining") & (comp.a == "lem")].iloc[0]
    assert not same.significant and same.p > 0.3 and same.family == "primary"
    for _, part in comp.groupby("family"):
        assert part.p_holm.tolist() == approx(stats.holm(part.p.tolist()))
    md = (out / "summary.md").read_text()
    assert "## Paired comparisons" in md and "| exploratory | mining | news si-en | mlm_tlm | base |" in md
    assert "| d_av | d_z |" in md and "## Verdicts" in md
    assert "mining news si-en (intersection_f1): `mlm_tlm` is higher than `base`" in md
    assert re.search(r"\| mlm_tlm \| 0\.\d{3} \[0\.\d{3}, 0\.\d{3}\] ▲ \|", md)  # marked in the pivot table
    html = (out / "summary.html").read_text()
    assert "<table>" in html and "Paired comparisons" in html
    for name in ("mining.png", "masking.png", "training.png", "overview.png"):
        assert (out / name).read_bytes()[:4] == b"\x89PNG"


def test_equal_seed_scores_pooled_would_mark_but_seeds_do_not(tmp_path):
    """The case the pooled design got wrong: two recipes whose seeds scatter around the same mean, each seed
    evaluated on many documents. Pooled over seeds a document bootstrap calls the difference certain; the
    seed-level test does not."""
    r = tmp_path / "results"
    prf = {"precision": 0.5, "recall": 0.5, "f1": 0.5, "n_pred": 4, "n_gold": 4, "n_correct": 2}
    per_seed = {"base": (0.30, 0.42, 0.36), "mlm_tlm": (0.44, 0.33, 0.40)}  # means 0.36 vs 0.39
    files, rows = [], {}
    for v, scores in per_seed.items():
        for s, f1 in zip((1, 2, 3), scores, strict=True):
            counts = [(round(f1 * 100), 100, 100)] * 200
            files.append(mining_file(r, v, s, prf, counts))
            rows.setdefault(v, []).append(np.asarray(counts, float))
    pooled = stats.paired_bootstrap(np.stack(rows["mlm_tlm"]), np.stack(rows["base"]), n=2000, seed=0)
    assert pooled["p"] < 0.01  # what the report used to mark
    build_report(mining=files, variants=["base", "mlm_tlm"], out_dir=tmp_path / "report")
    comp = pd.read_csv(tmp_path / "report/comparisons.tsv", sep="\t").iloc[0]
    assert comp.p > 0.3 and not comp.significant


def test_runs_on_different_items_are_refused(tmp_path):
    prf = {"precision": 0.5, "recall": 0.5, "f1": 0.5, "n_pred": 4, "n_gold": 4, "n_correct": 2}
    a = mining_file(tmp_path / "a", "base", 1, prf, [(1, 2, 2)] * 3)
    b = mining_file(tmp_path / "b", "mlm_tlm", 1, prf, [(1, 2, 2)] * 4)
    with pytest.raises(ValueError, match="its test items differ from another run's"):
        build_report(mining=[a, b], variants=["base", "mlm_tlm"], out_dir=tmp_path / "report")


def test_a_mining_file_without_units_names_the_file(tmp_path):
    prf = {"precision": 0.5, "recall": 0.5, "f1": 0.5, "n_pred": 4, "n_gold": 4, "n_correct": 2}
    path = Path(mining_file(tmp_path, "base", 1, prf))
    data = json.loads(path.read_text())
    del data["units"]
    bad = write(path, data)
    with pytest.raises(
        ValueError, match=f"{re.escape(bad)}: a mining metrics file without per-document counts"
    ):
        build_report(mining=[bad], variants=["base"], out_dir=tmp_path / "report")


def test_figures_of_the_trained_models(tmp_path):
    from lem.report import figures

    refs = []
    for v, stage, seed in [
        ("base", "base", "1"),
        ("mlm_tlm", "mono", "1"),
        ("lem", "mono", "1"),
        ("lem", "para", "2"),
    ]:
        d = tmp_path / v / stage / seed
        d.mkdir(parents=True)
        (d / "train_log.jsonl").write_text(
            "\n".join(json.dumps({"loss": 5.0 - i, "step": 10 * i}) for i in range(1, 4)) + "\n"
        )
        (d / "selection.json").write_text(json.dumps({"evaluations": [{"step": 10, "eval_loss": 4.5}]}))
        shares = (
            {"ne": 0.5, "verb": 0.2, "noun": 0.3, "other": 0.0} if v == "lem" else {"ne": 0.1, "other": 0.9}
        )
        (d / "masking_stats.json").write_text(json.dumps(
            {"per_lang": {"en": {"n_examples": 10, "masked_by_priority": shares}}}
        ))  # fmt: skip
        refs.append(f"{v}:{stage}:{seed}={d}")
    models = figures.parse_models(refs)
    table = figures.masking_shares(models)
    lem_ne = table[(table.variant == "lem") & (table.stage == "mono") & (table.type == "ne")]
    assert lem_ne.share.item() == pytest.approx(0.5) and "base" not in set(table.variant)
    curves = figures.loss_curves(models)
    assert len(curves[curves.kind == "train"]) == 12 and len(curves[curves.kind == "valid"]) == 4
    figures.masking_figure(models, ["base", "mlm_tlm", "lem"], tmp_path / "m.png")
    figures.training_figure(models, ["base", "mlm_tlm", "lem"], tmp_path / "t.png")
    assert (tmp_path / "m.png").stat().st_size > 5000 and (tmp_path / "t.png").stat().st_size > 5000
    with pytest.raises(ValueError, match="expected variant:stage:seed=path"):
        figures.parse_models(["lem:final:1=x"])


def test_the_readme_block_is_copied_from_the_report(tmp_path):
    from lem.report.readme import README_BEGIN, README_END, update_readme

    r = tmp_path / "results"
    prf = {"precision": 0.5, "recall": 0.5, "f1": 0.5, "n_pred": 4, "n_gold": 4, "n_correct": 2}
    mining = [mining_file(r, v, s, prf, [(2, 4, 4)] * 5) for v in ("base", "mlm_tlm") for s in (1, 2)]
    build_report(mining=mining, variants=["base", "mlm_tlm"], out_dir=tmp_path / "report")
    md = (tmp_path / "report" / "summary.md").read_text()
    readme = tmp_path / "README.md"
    readme.write_text(f"# x\n\nbefore\n{README_BEGIN}\nold numbers\n{README_END}\nafter\n")
    update_readme(readme, md, "run of today")
    text = readme.read_text()
    block = text.split(README_BEGIN)[1].split(README_END)[0]
    assert "old numbers" not in text and text.startswith("# x\n\nbefore\n") and text.endswith("after\n")
    assert "run of today" in block and "### Bitext mining F1 (intersection)" in block
    table = md.split("## Bitext mining F1 (intersection)\n", 1)[1].split("\n## ", 1)[0].strip()
    assert table in block and "### Paired comparisons" in block  # verbatim from the report
    update_readme(readme, md, "run of today")
    assert readme.read_text() == text  # idempotent
    with pytest.raises(ValueError, match="no results block"):
        update_readme(tmp_path / "report" / "summary.md", md)


def test_a_named_readme_block_is_regenerated_alone(tmp_path):
    """`lem report readme --block ablation`: config/ablation.yaml's run has its own block; the results block
    beside it is left as it is."""
    from lem.report.readme import README_BEGIN, README_END, readme_markers, update_readme

    r = tmp_path / "results"
    prf = {"precision": 0.5, "recall": 0.5, "f1": 0.5, "n_pred": 4, "n_gold": 4, "n_correct": 2}
    mining = [mining_file(r, v, s, prf, [(2, 4, 4)] * 5) for v in ("base", "mlm_tlm") for s in (1, 2)]
    build_report(mining=mining, variants=["base", "mlm_tlm"], out_dir=tmp_path / "report")
    md = (tmp_path / "report" / "summary.md").read_text()
    begin, end = readme_markers("ablation")
    readme = tmp_path / "README.md"
    readme.write_text(f"{README_BEGIN}\nkept\n{README_END}\n{begin}\nOLD-BLOCK-TEXT\n{end}\n")
    update_readme(readme, md, "the ablation run", block="ablation")
    text = readme.read_text()
    assert f"{README_BEGIN}\nkept\n{README_END}\n" in text and "OLD-BLOCK-TEXT" not in text
    assert "the ablation run" in text.split(begin)[1] and "### Paired comparisons" in text.split(begin)[1]
    with pytest.raises(ValueError, match="expected letters"):
        readme_markers("a b")
    with pytest.raises(ValueError, match="no nope block"):
        update_readme(readme, md, block="nope")


def test_validation_pairs_that_repeat_training_pairs_are_shown(tmp_path):
    """lem data pairs drops given validation pairs that repeat a training pair and counts them; the report
    shows the count beside the pairs kept (issue 24: handled explicitly, counted, shown)."""
    prf = {"precision": 0.5, "recall": 0.5, "f1": 0.5, "n_pred": 4, "n_gold": 4, "n_correct": 2}
    mining = [mining_file(tmp_path / "r", "base", 1, prf)]
    stats = write(
        tmp_path / "results/corpus/para/si-en.stats.json",
        {"train": 900, "valid": 48, "valid_given": 50, "valid_repeating_train_dropped": 2},
    )
    build_report(mining=mining, variants=["base"], out_dir=tmp_path / "report", para_stats=[stats])
    md = (tmp_path / "report/summary.md").read_text()
    assert "## Parallel training data (from files)" in md and "| si-en | 900 | 48 | 50 | 2 |" in md


def test_a_row_without_a_run_in_a_column_shows_a_dash_not_nan():
    """A row that has no run for a pair (the lexical control where the pair has no dictionary) shows "-"."""
    import pandas as pd

    from lem.report.markdown import _pivot_markdown

    summary = pd.DataFrame(
        [
            {"task": "mining", "dataset": "news", "pair": p, "metric": "intersection_f1", "variant": v,
             "mean": 0.5, "n": 1, "chance": 0.1, "ceiling": 1.0}
            for v, p in (("base", "si-en"), ("base", "ta-en"), ("control_lexical", "ta-en"))
        ]
    )  # fmt: skip
    table = _pivot_markdown(summary, "mining", "intersection_f1", ["base", "control_lexical"], {}, set())
    assert "| control_lexical | - | 0.500 |" in table and "nan" not in table
