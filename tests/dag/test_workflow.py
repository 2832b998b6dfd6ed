"""The whole DAG on a shrunken embedded default, in a temporary folder, then what reruns after a change."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from pathlib import Path

import pandas as pd
import pytest
import yaml
from support.dag import run_config, snakemake


def planned_rules(proc: subprocess.CompletedProcess) -> set[str]:
    """Rule names of the jobs a dry run plans (from its job-stats table)."""
    assert proc.returncode == 0, proc.stdout + proc.stderr
    text = proc.stdout + proc.stderr
    if "Nothing to be done" in text:
        return set()
    table = text.split("Job stats:", 1)[1].split("Reasons:", 1)[0]
    return {m.group(1) for m in re.finditer(r"^(\w+)\s+\d+\s*$", table, re.M)} - {"total", "all"}


@pytest.fixture(scope="module")
def run_dir(dag_reference: Path) -> Path:
    """The uninterrupted shrunken DAG, run once per session (tests/conftest.py) and shared with the curation,
    interruption and reproducibility tests; the tests here only read it and dry-run other configs beside it."""
    return dag_reference


def test_report_holds_every_variant_task_and_pair(run_dir: Path):
    summary = pd.read_csv(run_dir / "results/report/summary.tsv", sep="\t")
    cfg = run_config(run_dir)
    controls = {"control_lexical", "control_random"}
    refs = {f"ref_{name}" for name in cfg["reference_encoders"]}  # the reference encoder rows: no sentiment
    assert refs == {"ref_tiny"}
    for task, extra in (("mining", controls | refs), ("sentiment", set()), ("curation", refs)):
        part = summary[summary.task == task]
        assert set(part.variant) == set(cfg["variants"]) | extra, task
        assert part["mean"].between(0, 1).all(), task
    mining = summary[(summary.task == "mining") & (summary.metric == "intersection_f1")]
    assert set(mining.pair) == set(cfg["pairs"])
    # the controls prove the chain: the lexical encoder far above chance, random embeddings near it
    assert mining["chance"].between(0.01, 0.5).all() and (mining["ceiling"] == 1.0).all()
    positive = mining[mining.variant == "control_lexical"]
    negative = mining[mining.variant == "control_random"]
    assert (positive["mean"] > positive["chance"] + 0.5).all(), positive
    assert (negative["mean"] < negative["chance"] + 0.2).all(), negative
    assert (run_dir / "results/report/overview.png").stat().st_size > 1000
    ann = summary[summary.task == "annotation"]
    assert set(ann.dataset) == {"configured", "hf_ner"} and set(ann.pair) == {"en", "si", "ta"}
    lexicon_ner = ann[(ann.dataset == "configured") & (ann.metric == "ner_f1")]["mean"]
    assert (lexicon_ner > 0.9).all()  # the gazetteer is the generator's own lexicon
    md = (run_dir / "results/report/summary.md").read_text()
    assert "Bitext mining F1" in md and "sentiment macro-F1" in md
    # every trained row has both seeds, the controls and reference encoders one (they are not pre-trained);
    # the comparisons cover every lem* and mlm_tlm row
    n = mining.set_index("variant")["n"].groupby(level=0).max()
    assert (n[list(cfg["variants"])] == 2).all() and (n[list(controls | refs)] == 1).all()
    comp = pd.read_csv(run_dir / "results/report/comparisons.tsv", sep="\t")
    lem_rows = [v for v in cfg["variants"] if v.startswith("lem")]
    for task in ("mining", "sentiment"):
        part = comp[comp.task == task]
        pairs = set(zip(part.a, part.b, strict=True))
        assert pairs == {(v, "mlm_tlm") for v in lem_rows} | {("mlm_tlm", "base")}, task
        assert part.p_holm.between(0, 1).all() and (part.p_holm >= part.p).all()
    assert "## Paired comparisons" in md
    nmt = summary[summary.task == "nmt"]  # every variant and the controls at each kept share (curation.nmt)
    assert cfg["curation"]["nmt"]["oracle"]
    assert set(nmt.variant) == set(cfg["variants"]) | refs | {"oracle", "random", "no_filter"}
    # one NMT run per pre-training seed, controls included; a reference encoder's ranking has no such seed
    ref = nmt.variant.isin(refs)
    assert (nmt[~ref]["n"] == 2).all() and (nmt[ref]["n"] == 1).all()
    assert "## Curation: NMT on the top share" in md and "| *no_filter* |" in md and "| *oracle* |" in md
    control = comp[(comp.task == "nmt") & (comp.role == "control")]
    assert (
        set(zip(control.a, control.b, strict=True)) == {("oracle", "random")} and control.p_holm.isna().all()
    )


def test_the_html_report_holds_tables_figures_and_config(run_dir: Path):
    proc = snakemake(run_dir, "--report", "report.html")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    html = (run_dir / "report.html").read_text(errors="replace")
    for name in (
        "summary.html",
        "comparisons.tsv",
        "mining.png",
        "masking.png",
        "training.png",
        "config.json",
    ):
        assert name in html, name
    for name in ("mining.png", "masking.png", "training.png"):
        assert (run_dir / "results/report" / name).stat().st_size > 10_000, name
    config = json.loads((run_dir / "results/report/config.json").read_text())
    assert config["pretrain"]["seeds"] == [1, 2]


def test_stage_outputs_are_sane(run_dir: Path):
    metrics = json.loads((run_dir / "results/mining/lem/seed1/news_gen/si-en.metrics.json").read_text())
    for direction in ("forward", "backward", "intersection"):
        m = metrics[direction]
        assert m["n_gold"] > 0 and 0 <= m["precision"] <= 1 and 0 <= m["recall"] <= 1
    sel = json.loads((run_dir / "results/models/lem/tri/seed2/para/selection.json").read_text())
    assert sel["best_step"] > 0 and sel["evaluations"]

    # entity-first masking for the LEM variants, not for mlm_tlm (whose masks follow the text's shares)
    def stats(variant: str, lang: str) -> dict:
        path = run_dir / f"results/models/{variant}/tri/seed1/mono/masking_stats.json"
        return json.loads(path.read_text())["per_lang"][lang]

    def shares(variant: str, lang: str) -> dict:
        return stats(variant, lang)["entity_share"]

    for lang in ("en", "si", "ta"):
        lem, std = shares("lem", lang), shares("mlm_tlm", lang)
        # other words only once an example's entity words are used up (a few examples have fewer entity
        # words than the budget, so the masked share is just below 1); one entity type alone (lem_ne) and every
        # other set: tests/unit/test_masking.py
        assert stats("lem", lang)["entity_first_broken"] == 0
        assert lem["enabled"]["masked"] > 0.95 and lem["enabled"]["text"] < 0.95, lang
        assert lem["ne"]["masked"] > lem["ne"]["text"], lang
        assert abs(std["ne"]["masked"] - std["ne"]["text"]) < 0.1, lang
    assert (run_dir / "results/models/lem/tri/seed1/para/model.safetensors").exists()
    # (a variant masking as another is trained once: tests/planning/test_configs.py plans it)
    for variant in [v for v in run_config(run_dir)["variants"] if v != "base"]:
        for stage in ("mono", "para"):
            folder = run_dir / f"results/models/{variant}/tri/seed2/{stage}"
            sel = json.loads((folder / "selection.json").read_text())
            assert sel["best_step"] == min(sel["evaluations"], key=lambda e: e["eval_loss"])["step"]
            assert sel["evaluations_done"] == sel["schedule"]["evaluations"] >= min(5, sel["global_steps"])
    leakage = json.loads((run_dir / "results/corpus/leakage.json").read_text())
    assert all(v["dropped"] == 0 for v in leakage["train"].values())  # the generator keeps eval text out
    assert not list((run_dir / "results").rglob("*.bin")), "models must be safetensors"


def test_nothing_to_do_after_a_run(run_dir: Path):
    assert planned_rules(snakemake(run_dir, "-n")) == set()


def test_mining_change_reruns_only_mining_and_report(run_dir: Path):
    cfg = run_config(run_dir)
    cfg["mining"]["settings"]["retrieval"] = ["forward", "intersection"]
    changed = run_dir / "changed_retrieval.yaml"
    changed.write_text(yaml.safe_dump(cfg))
    # the report, and the controls gate that reads its verdicts
    assert planned_rules(snakemake(run_dir, "-n", config=changed)) == {
        "mine",
        "report",
        "controls_gate",
        "documented",
    }


def test_margin_change_reruns_mining_and_curation_not_training(run_dir: Path):
    # curation ranks with mining's margin (k, margin, neighbourhood): a new k reruns it and the NMT on it
    cfg = run_config(run_dir)
    cfg["mining"]["settings"]["k"] = 3
    changed = run_dir / "changed_k.yaml"
    changed.write_text(yaml.safe_dump(cfg))
    rules = planned_rules(snakemake(run_dir, "-n", config=changed))
    assert {"mine", "curate", "nmt_run", "report"} <= rules
    assert not rules & {"pretrain_mono", "pretrain_para", "embed_news_gen", "sentiment", "curate_control"}


# What a change of pre-training (its settings or its code) never reruns: everything before it.
BEFORE_PRETRAINING = {
    "generate_corpus",
    "annotate_mono",
    "annotate_para",
    "train_tokenizer",
    "features_mono",
    "features_para",
}


def test_pretrain_change_reruns_training_and_downstream_only(run_dir: Path):
    cfg = run_config(run_dir)
    cfg["pretrain"]["stages"]["para"]["training"]["learning_rate"] = 0.0001
    changed = run_dir / "changed_lr.yaml"
    changed.write_text(yaml.safe_dump(cfg))
    rules = planned_rules(snakemake(run_dir, "-n", config=changed))
    assert {"pretrain_para", "embed_news_gen", "mine", "sentiment", "curate", "report"} <= rules
    assert not rules & (BEFORE_PRETRAINING | {"pretrain_base", "pretrain_mono"})


# What no change of the evaluation sets or of `variants:` may rerun: the leakage guard, annotation and every
# pre-training job (lem.data.leakage: the guard keeps the evaluation sets it was built with; a set added
# later is checked against the guarded text by its own leakage_check job).
PRE_TRAINING = {
    "leakage_guard",
    "annotate_mono",
    "annotate_para",
    "annotation_coverage",
    "train_tokenizer",
    "features_mono",
    "features_para",
    "pretrain_base",
    "pretrain_mono",
    "pretrain_para",
}


def added_mining_set(run_dir: Path, text: bool = False) -> set[str] | str:
    cfg = run_config(run_dir)
    cfg["mining"]["evalsets"]["news_more"] = {**cfg["mining"]["evalsets"]["news_gen"], "pairs": ["si-en"]}
    changed = run_dir / "added_mining_set.yaml"
    changed.write_text(yaml.safe_dump(cfg))
    proc = snakemake(run_dir, "-n", config=changed)
    return proc.stdout + proc.stderr if text else planned_rules(proc)


def test_a_mining_set_added_after_pretraining_is_prepared_checked_and_mined_without_retraining(run_dir: Path):
    rules = added_mining_set(run_dir)
    assert {"prepare_news", "leakage_items", "embed_news_more", "mine", "report"} <= rules
    assert not rules & (PRE_TRAINING | {"sentiment", "prepare_curation", "prepare_sentiment"})


def test_a_mining_set_added_after_pretraining_reruns_only_its_own_jobs(run_dir: Path):
    """Issue 37 item 4: the new set's prepare, leakage, embed (one job per model and set), mine and report
    jobs only: no job of the existing set (news_gen) is planned, so its embeddings and mining stay as they
    are."""
    text = added_mining_set(run_dir, text=True)
    rules = planned_rules(subprocess.CompletedProcess([], 0, text, ""))
    own = {"prepare_news", "leakage_items", "mine", "embed_control", "report", "controls_gate", "documented"}
    assert not rules - own - {r for r in rules if r.startswith("embed") and r.endswith("_news_more")}, rules
    assert "news_gen" not in "".join(re.findall(r"^\s+output: (.*)$", text, re.M))


def test_removing_a_row_or_an_evaluation_set_reruns_the_report_alone(run_dir: Path):
    for name, change in [
        ("dropped_row", lambda cfg: cfg.update(reference_encoders={})),  # the row ref_tiny
        ("dropped_sentiment", lambda cfg: cfg["sentiment"].update(datasets={})),
    ]:
        cfg = run_config(run_dir)
        change(cfg)
        changed = run_dir / f"{name}.yaml"
        changed.write_text(yaml.safe_dump(cfg))
        assert planned_rules(snakemake(run_dir, "-n", config=changed)) == {
            "report",
            "controls_gate",
            "documented",
        }, name


def workflow_copy(folder: Path, edit: str) -> Path:
    """This workflow in `folder` (rules, package source, environments, profiles, embedded config) with `edit`
    appended to lem/pretrain/stage.py; the Snakefile to plan it with."""
    repo = Path(__file__).resolve().parents[2]
    for name in ("Snakefile", "pyproject.toml"):
        shutil.copy(repo / name, folder / name)
    for name in ("workflow", "src", "envs", "profiles", "config"):
        shutil.copytree(
            repo / name, folder / name, ignore=shutil.ignore_patterns("__pycache__", "*.egg-info")
        )
    stage = folder / "src" / "lem" / "pretrain" / "stage.py"
    stage.write_text(stage.read_text(encoding="utf-8") + edit, encoding="utf-8")
    return folder / "Snakefile"


@pytest.mark.parametrize(
    ("edit", "retrains"),
    [("\n# a comment\n", False), ("\nTRAINING_CODE_EDITED = 1\n", True)],
    ids=["comment", "code"],
)
def test_an_edit_of_the_training_code_retrains_every_model_and_a_comment_nothing(
    run_dir, tmp_path, edit, retrains
):
    """Planned with a copy of the workflow whose pre-training module differs (lem.run.training_code: the rules'
    `training_code` parameter): every pre-training job and what depends on it, nothing before them."""
    snakefile = workflow_copy(tmp_path, edit)
    env = {**os.environ, "PYTHONPATH": str(tmp_path / "src")}  # planning imports the copy's package, its own
    rules = planned_rules(snakemake(run_dir, "-n", snakefile=snakefile, env=env))
    if not retrains:
        assert rules == set()
        return
    assert {"pretrain_base", "pretrain_mono", "pretrain_para", "embed_news_gen", "mine", "report"} <= rules
    assert not rules & BEFORE_PRETRAINING
