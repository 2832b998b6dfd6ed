"""The report: metrics files, keyed by their own `keys`, into one table, markdown and a figure."""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from lem.evidence import stats
from lem.report import build_report


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
    # mean and t-based 95 % interval over the two seeds: 0.55 +- 12.706 * 0.0707 / sqrt(2)
    assert "0.550 [-0.085, 1.185]" in md and "Annotation against held-out gold" in md and "| hf_ner |" in md
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
        tmp_path / "results/sentiment/lem/seed1/cmcs/metrics.json", {"macro_f1": 1.0, "accuracy": 1.0}
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
    build_report(mining, sentiment, [], ["base", "lem"], out)
    summary = pd.read_csv(out / "summary.tsv", sep="\t")
    row = summary[(summary.metric == "intersection_f1") & (summary.variant == "lem")]
    assert row["chance"].item() == pytest.approx(0.1) and row["ceiling"].item() == pytest.approx(0.9)
    md = (out / "summary.md").read_text()
    assert "| *chance* | 0.100 |" in md and "| *ceiling* | 0.900 |" in md and "| *chance* | 0.333 |" in md


@pytest.mark.parametrize(
    "variant,value,message",
    [
        (
            "control_lexical",
            0.2,
            r"the positive control \(control_lexical\) is not clearly above chance: .*< 0\.550",
        ),
        ("control_random", 0.6, "the negative control .* above chance"),
    ],
)
def test_a_control_that_misbehaves_fails_the_report(tmp_path, variant, value, message):
    from lem.report import ControlError

    prf = {"precision": value, "recall": value, "f1": value, "n_pred": 4, "n_gold": 8, "n_correct": 2}
    low = {"precision": 0.1, "recall": 0.1, "f1": 0.1}
    path = mining_file(
        tmp_path,
        variant,
        13,
        prf,
        chance={d: low for d in ("forward", "backward", "intersection")},
        ceiling={d: {**low, "f1": 1.0} for d in ("forward", "backward", "intersection")},
    )
    with pytest.raises(ControlError, match=message):
        build_report([path], [], [], [variant], tmp_path / "report")
    assert not (tmp_path / "report" / "summary.tsv").exists()  # nothing written from an untrustworthy chain


def test_the_positive_control_must_also_beat_chance_by_its_test(tmp_path):
    """controls.positive_lift per evaluation set and positive_alpha: a lexical control above the lift but with
    too few mined pairs to tell from chance fails; with enough it passes, and the verdict line is logged."""
    from lem.evidence.controls import PositiveBar
    from lem.report import ControlError, check_controls

    low = {"precision": 0.1, "recall": 0.1, "f1": 0.1}
    for n_pred, passes in ((4, False), (40, True)):
        prf = {
            "precision": 0.75,
            "recall": 0.75,
            "f1": 0.75,
            "n_pred": n_pred,
            "n_gold": n_pred,
            "n_correct": 0.75 * n_pred,
        }
        metrics = {
            "intersection": prf,
            "chance": {"intersection": low},
            "ceiling": {"intersection": {**low, "f1": 1.0}},
        }
        summary = pd.DataFrame([{"task": "mining", "metric": "intersection_f1", "variant": "control_lexical",
                                 "dataset": "news", "pair": "si-en", "mean": 0.75, "chance": 0.1, "ceiling": 1.0}])  # fmt: skip
        bar = PositiveBar({"news": 0.5}, alpha=0.001)
        if passes:
            (line,) = check_controls(summary, bar, control_metrics={("news", "si-en"): metrics})
            assert "control_lexical intersection F1 0.750 >= 0.550" in line
        else:
            with pytest.raises(ControlError, match=r"p = .* >= alpha 0\.001"):
                check_controls(summary, bar, control_metrics={("news", "si-en"): metrics})


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


def test_comparisons_are_paired_over_seeds_and_holm_corrected(tmp_path):
    """Each seed's F1 comes from its own per-document counts; the test is a paired t over seeds, reproducible
    from the per-seed scores written in comparisons.tsv (scipy's ttest_rel gives the same p)."""
    from scipy.stats import ttest_rel

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
    build_report(mining, sentiment, [], ["base", "mlm_tlm", "lem"], out)
    comp = pd.read_csv(out / "comparisons.tsv", sep="\t")
    assert set(zip(comp.task, comp.a, comp.b, strict=True)) == {
        (t, a, b) for t in ("mining", "sentiment") for a, b in (("lem", "mlm_tlm"), ("mlm_tlm", "base"))
    }
    row = comp[(comp.task == "mining") & (comp.a == "mlm_tlm")].iloc[0]
    f1 = {v: [(found[v][i] * 40 + extra[v][i]) / 160 for i in range(3)] for v in found}
    assert row.value_a == approx(np.mean(f1["mlm_tlm"])) and row.value_b == approx(np.mean(f1["base"]))
    assert row.sd_a == approx(np.std(f1["mlm_tlm"], ddof=1))
    assert row.p == approx(ttest_rel(f1["mlm_tlm"], f1["base"]).pvalue)
    assert row.effect_size == approx(row["diff"] / np.sqrt((row.sd_a**2 + row.sd_b**2) / 2), abs=1e-4)
    assert row.low < row["diff"] < row.high and row.seeds == 3 and row.units == "40 documents"
    assert row.significant and row.p_holm >= row.p
    # the per-seed scores are in the table: anyone can redo the test
    redo = [float(x.split(":")[1]) for x in row.scores_a.split()]
    assert redo == pytest.approx(f1["mlm_tlm"], abs=1e-6)
    same = comp[(comp.task == "mining") & (comp.a == "lem")].iloc[0]
    assert not same.significant and same.p > 0.3
    assert comp.p_holm.tolist() == approx(stats.holm(comp.p.tolist()))
    md = (out / "summary.md").read_text()
    assert "## Paired comparisons" in md and "| mining | news si-en | mlm_tlm | base |" in md
    assert "| effect size |" in md and "adjusted over the 4 comparisons tested" in md
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
    build_report(files, [], [], ["base", "mlm_tlm"], tmp_path / "report")
    comp = pd.read_csv(tmp_path / "report/comparisons.tsv", sep="\t").iloc[0]
    assert comp.p > 0.3 and not comp.significant


def test_runs_on_different_items_are_refused(tmp_path):
    prf = {"precision": 0.5, "recall": 0.5, "f1": 0.5, "n_pred": 4, "n_gold": 4, "n_correct": 2}
    a = mining_file(tmp_path / "a", "base", 1, prf, [(1, 2, 2)] * 3)
    b = mining_file(tmp_path / "b", "mlm_tlm", 1, prf, [(1, 2, 2)] * 4)
    with pytest.raises(ValueError, match="its test items differ from another run's"):
        build_report([a, b], [], [], ["base", "mlm_tlm"], tmp_path / "report")


def test_a_mining_file_without_units_names_the_file(tmp_path):
    prf = {"precision": 0.5, "recall": 0.5, "f1": 0.5, "n_pred": 4, "n_gold": 4, "n_correct": 2}
    path = Path(mining_file(tmp_path, "base", 1, prf))
    data = json.loads(path.read_text())
    del data["units"]
    bad = write(path, data)
    with pytest.raises(
        ValueError, match=f"{re.escape(bad)}: a mining metrics file without per-document counts"
    ):
        build_report([bad], [], [], ["base"], tmp_path / "report")


def test_figures_of_the_trained_models(tmp_path):
    from lem.evidence import figures

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
    from lem.report import README_BEGIN, README_END, update_readme

    r = tmp_path / "results"
    prf = {"precision": 0.5, "recall": 0.5, "f1": 0.5, "n_pred": 4, "n_gold": 4, "n_correct": 2}
    mining = [mining_file(r, v, s, prf, [(2, 4, 4)] * 5) for v in ("base", "mlm_tlm") for s in (1, 2)]
    build_report(mining, [], [], ["base", "mlm_tlm"], tmp_path / "report")
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
    from lem.report import README_BEGIN, README_END, readme_markers, update_readme

    r = tmp_path / "results"
    prf = {"precision": 0.5, "recall": 0.5, "f1": 0.5, "n_pred": 4, "n_gold": 4, "n_correct": 2}
    mining = [mining_file(r, v, s, prf, [(2, 4, 4)] * 5) for v in ("base", "mlm_tlm") for s in (1, 2)]
    build_report(mining, [], [], ["base", "mlm_tlm"], tmp_path / "report")
    md = (tmp_path / "report" / "summary.md").read_text()
    begin, end = readme_markers("ablation")
    readme = tmp_path / "README.md"
    readme.write_text(f"{README_BEGIN}\nkept\n{README_END}\n{begin}\nold\n{end}\n")
    update_readme(readme, md, "the ablation run", block="ablation")
    text = readme.read_text()
    assert f"{README_BEGIN}\nkept\n{README_END}\n" in text and "old" not in text
    assert "the ablation run" in text.split(begin)[1] and "### Paired comparisons" in text.split(begin)[1]
    with pytest.raises(ValueError, match="expected letters"):
        readme_markers("a b")
    with pytest.raises(ValueError, match="no nope block"):
        update_readme(readme, md, block="nope")


def test_the_project_readme_has_one_results_block_for_lem_report_readme():
    from lem.report import README_BEGIN, README_END

    text = (Path(__file__).resolve().parents[1] / "README.md").read_text(encoding="utf-8")
    assert text.count(README_BEGIN) == 1 and text.count(README_END) == 1
    assert text.index(README_BEGIN) < text.index(README_END)


def test_validation_pairs_that_repeat_training_pairs_are_shown(tmp_path):
    """lem data pairs drops given validation pairs that repeat a training pair and counts them; the report
    shows the count beside the pairs kept (issue 24: handled explicitly, counted, shown)."""
    prf = {"precision": 0.5, "recall": 0.5, "f1": 0.5, "n_pred": 4, "n_gold": 4, "n_correct": 2}
    mining = [mining_file(tmp_path / "r", "base", 1, prf)]
    stats = write(
        tmp_path / "results/corpus/para/si-en.stats.json",
        {"train": 900, "valid": 48, "valid_given": 50, "valid_repeating_train_dropped": 2},
    )
    build_report(mining, [], [], ["base"], tmp_path / "report", para_stats=[stats])
    md = (tmp_path / "report/summary.md").read_text()
    assert "## Parallel training data (from files)" in md and "| si-en | 900 | 48 | 50 | 2 |" in md


def test_a_row_without_a_run_in_a_column_shows_a_dash_not_nan():
    """A row that has no run for a pair (the lexical control where the pair has no dictionary) shows "-"."""
    import pandas as pd

    from lem.report import _pivot_markdown

    summary = pd.DataFrame(
        [
            {"task": "mining", "dataset": "news", "pair": p, "metric": "intersection_f1", "variant": v,
             "mean": 0.5, "n": 1, "chance": 0.1, "ceiling": 1.0}
            for v, p in (("base", "si-en"), ("base", "ta-en"), ("control_lexical", "ta-en"))
        ]
    )  # fmt: skip
    table = _pivot_markdown(summary, "mining", "intersection_f1", ["base", "control_lexical"], {}, set())
    assert "| control_lexical | - | 0.500 |" in table and "nan" not in table
