"""lem.run.Run, the one model of a run: the jobs it and `lem plan cost` count are the jobs Snakemake plans
(`snakemake -n`, every output of every job) for every shipped config (config/local.yaml, on the real data:
tests/realdata/test_run_model_local.py); paths and settings come from it alone."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
from support.run_model import job_grid_is_the_dags, planned_config, plans_jobs_are_the_dags

from lem.config_check import ConfigError, base_model_folder, check_config
from lem.nmt.settings import training_seed
from lem.plan import load_config
from lem.run import Run
from lem.run.settings import curate, nmt_run, pretrain_base, pretrain_mono, settings_for

REPO = Path(__file__).resolve().parents[2]
CONFIGS = ["config.yaml", "paper.yaml", "gpu-smoke.yaml", "ablation.yaml"]  # local.yaml: the real data's tier


@pytest.fixture(scope="module", params=CONFIGS)
def planned(request, tmp_path_factory) -> tuple[str, dict, dict[str, list[set[str]]]]:
    """(name, the config as the workflow holds it, the DAG's jobs) of one shipped config."""
    return planned_config(request.param, tmp_path_factory.mktemp(request.param.removesuffix(".yaml")))


def test_the_run_models_job_grid_is_the_dags(planned):
    """Every job of lem.run.grid.Grid.jobs() is one job of the DAG, of the same rule, and every DAG job of those
    rules is one of them (pre-training, embedding, controls, reference encoders, mining, sentiment,
    curation, NMT)."""
    job_grid_is_the_dags(planned)


def test_the_plans_jobs_are_the_dags(planned, tmp_path):
    """`lem plan cost` counts the DAG's jobs: its training jobs are the pre-training jobs (their model
    folders), its NMT, sentiment and NER rows the DAG's jobs of those rules."""
    plans_jobs_are_the_dags(planned, tmp_path)


def test_every_path_of_a_base_model_comes_from_one_place(tmp_path):
    """base_model_dir is defined once (lem.run); config_check and the plan read it there: a scratch model's
    folder is the first seed's, which lem.config_check treats as the config's own model (None)."""
    found = subprocess.run(
        ["grep", "-rn", "def base_model_dir", str(REPO / "src"), str(REPO / "workflow")],
        capture_output=True,
        text=True,
    ).stdout.splitlines()
    assert len(found) == 1 and "src/lem/run/rows.py" in found[0], found
    config = load_config([REPO / "config" / "config.yaml"])
    run = Run(config)
    assert run.base_model_dir() == f"results/models/base/seed{run.seeds[0]}"
    assert run.model_for("base", "si-en", 2) == "results/models/base/seed2"
    assert base_model_folder(config) is None
    paper = load_config([REPO / "config" / "paper.yaml"])
    hub = paper["base_model"]["hub"]
    assert (
        Run(paper).base_model_dir()
        == base_model_folder(paper)
        == f"resources/hf/{hub['repo']}/{hub['revision']}"
    )


def test_the_rules_settings_functions_merge_as_the_rules_pass_them():
    """The settings each rule passes: a stage's epochs for its scope and the pre-training seed, the base
    model built for pretrain.max_length, NMT trained with a seed derived from the pre-training seed (not the
    rankings' own), curation with mining's margin alone (its retrieval, threshold and index rerun no curation)."""
    config = load_config([REPO / "config" / "config.yaml"])
    run = Run(config)
    mono = pretrain_mono(run, scope="tri", tvariant="lem", seed="2")
    assert mono["training"]["seed"] == 2 and mono["masking"] == config["pretrain"]["variants"]["lem"]
    epochs = config["pretrain"]["stages"]["mono"]["epochs"]
    assert mono["training"]["epochs"] == epochs.get("tri", epochs["default"])
    base = pretrain_base(run, seed=3)
    assert base["model"]["max_length"] == config["pretrain"]["max_length"] and base["training"]["seed"] == 3
    assert nmt_run(run, seed="7")["seed"] == training_seed(7, 13) != 7  # not the rankings'
    config["mining"]["settings"].update(k=5, threshold=0.3, index="flat", device="cpu")
    mining = curate(run)["mining"]
    assert mining["k"] == 5 and "threshold" not in mining and "index" not in mining and "device" not in mining
    with pytest.raises(KeyError, match="no settings for rule 'nope'"):
        settings_for(run, "nope")


def test_common_smk_is_thin():
    """workflow/rules/common.smk: the run model's calls and the workflow's own set-up, under 200 lines."""
    text = (REPO / "workflow" / "rules" / "common.smk").read_text(encoding="utf-8")
    assert len(text.splitlines()) < 200
    assert "RUN = Run(config)" in text


def test_curation_corpora_and_mining_sets_embed_in_jobs_of_their_own():
    """A model's embed jobs: one for the mining sets, one for the curation corpora, so that a mining set added
    after a run reruns no curation or NMT job; a mining set may not be called `curation` (its folders)."""
    config = load_config([REPO / "config" / "config.yaml"])
    run = Run(config)
    rules = {job.rule: job for job in run.grid.embed_jobs()}
    assert set(rules) == {"embed_news_gen", "embed_curation"}  # one per mining set (issue 37)
    assert {e for e, _, _ in rules["embed_news_gen"].files} == set(config["mining"]["evalsets"])
    assert rules["embed_news_gen"].unit == "news_gen/all"
    assert {e for e, _, _ in rules["embed_curation"].files} == {"curation"}
    config["mining"]["evalsets"]["news_more"] = dict(config["mining"]["evalsets"]["news_gen"])
    more = {job.rule: job for job in Run(config).grid.embed_jobs()}
    assert (
        more["embed_news_gen"] == rules["embed_news_gen"]
    )  # a set added leaves the others' jobs as they were
    assert {e for e, _, _ in more["embed_news_more"].files} == {"news_more"}
    assert (
        rules["embed_curation"].unit == "curation/all"
    )  # its log: logs/embed/{row}/seed{seed}/curation/all.log
    config["mining"]["evalsets"]["curation"] = config["mining"]["evalsets"]["news_gen"]
    with pytest.raises(ConfigError, match="^mining.evalsets: name 'curation' is reserved"):
        check_config(config)


def test_every_artifact_path_is_written_in_one_place():
    """lem.run.paths is the one place an artifact's path is written: the run model and the plan build theirs
    from its templates, and the rule files read them there (`artifact`, workflow/rules/common.smk) rather
    than spelling them again."""
    from lem.run import paths

    templates = [v for k, v in vars(paths).items() if k.isupper() and isinstance(v, str) and "{" in v]
    spelled = {t.split("{", 1)[0] for t in templates if t.split("{", 1)[0].count("/") >= 2}
    spelled.discard("results/corpus/para/")  # the generated corpus's other files, its stats (rule files only)
    for path in sorted((REPO / "workflow" / "rules").glob("*.smk")) + sorted(
        (REPO / "src" / "lem" / "plan").glob("*.py")
    ):
        text = path.read_text(encoding="utf-8")
        for prefix in spelled:
            assert f'"{prefix}' not in text, (path.name, prefix)
    assert (
        paths.fill(paths.MODEL, variant="{tvariant}", stage="mono")
        == "results/models/{tvariant}/{scope}/seed{seed}/mono"
    )
    run = Run(load_config([REPO / "config" / "config.yaml"]))
    assert run.model_dir("lem", "tri", 1, "para") == paths.fill(
        paths.MODEL, variant="lem", scope="tri", seed=1, stage="para"
    )
