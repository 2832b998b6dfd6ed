"""Both configurations validate against the schema and plan their DAGs (dry runs, nothing executed)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml
from support.dag import snakemake

REPO = Path(__file__).resolve().parents[2]


def dry_run(tmp_path: Path, configfile: Path | list[Path], *extra: str) -> dict[str, int]:
    proc = snakemake(tmp_path, "-n", "--quiet", "rules", *extra, config=configfile)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return {
        m.group(1): int(m.group(2))
        for m in re.finditer(r"^(\w+)\s+(\d+)\s*$", proc.stdout + proc.stderr, re.M)
    }


def test_paper_config_plans_every_variant_for_every_pair(tmp_path):
    jobs = dry_run(tmp_path, REPO / "config" / "paper.yaml")
    paper = yaml.safe_load((REPO / "config" / "paper.yaml").read_text())
    trained = len(paper["variants"]) - 2  # base is not trained; lem_ne_noun_verb is lem's masking
    assert jobs["pretrain_mono"] == jobs["pretrain_para"] == trained * 3
    rows = len(paper["variants"]) + 1  # and the negative control (no dictionary for a positive one)
    rows += len(paper["reference_encoders"])  # and the reference encoders (ref_laser, ref_labse)
    assert jobs["mine"] == rows * 3 * len(paper["mining"]["evalsets"])
    assert jobs["embed_control"] == 3 * len(paper["mining"]["evalsets"])
    # one embedding job per model and set (the mining sets and the curation corpora): laser and labse
    sets = len(paper["mining"]["evalsets"]) + 1
    laser = sum(n for rule, n in jobs.items() if rule.startswith("embed_reference_laser_"))
    other = sum(n for rule, n in jobs.items() if rule.startswith("embed_reference_")) - laser
    assert laser == other == sets
    assert jobs["madlad"] == 3 and jobs["train_ner"] == 1 and jobs["fetch_base_model"] == 1
    assert "pretrain_base" not in jobs and "train_tokenizer" not in jobs  # the hub model and its tokenizer
    # curation, the paper's second task, for every pair: the web-mined corpora through the download layer,
    # one ranking per variant and reference encoder and pre-training seed (one seed here), NMT per ranking,
    # kept share and seed (and the random and no_filter controls; no oracle: the web-mined corpora have no
    # labels), compared by the report over seeds
    cur = paper["curation"]
    assert set(cur["corpora"]) == set(cur["nmt"]["pairs"]) == set(paper["pairs"])
    shares = len(cur["settings"]["keep_fractions"])
    ranked = len(paper["variants"]) + len(paper["reference_encoders"])
    assert len(paper["pretrain"]["seeds"]) == 1 and not cur["nmt"].get("oracle")
    assert jobs["prepare_curation"] == jobs["curate_control"] == 3
    assert jobs["curate"] == ranked * 3
    assert jobs["nmt_select"] == jobs["nmt_run"] == 3 * ((ranked + 1) * shares + 1)
    assert "nmt_compare" not in jobs and jobs["nmt_heldout"] == 3 * 2
    assert jobs["fetch_nmt_model"] == 1


def test_embedded_default_plans_the_whole_dag(tmp_path):
    cfg = yaml.safe_load((REPO / "config" / "config.yaml").read_text())
    jobs = dry_run(tmp_path, REPO / "config" / "config.yaml")
    seeds = len(cfg["pretrain"]["seeds"])
    assert seeds >= 3  # the report's intervals and paired tests need several pre-training seeds
    assert jobs["generate_corpus"] == 1 and jobs["pretrain_base"] == seeds and jobs["report"] == 1
    trained = len(cfg["variants"]) - 1
    assert jobs["pretrain_mono"] == jobs["pretrain_para"] == trained * seeds
    # curation on every pre-training seed; NMT only with config/nmt.yaml (the next test)
    cur = cfg["curation"]
    rows = len(cfg["variants"]) + len(cfg["reference_encoders"])
    assert jobs["curate"] == rows * seeds * len(cur["corpora"]) and cur["nmt"]["pairs"] == []
    assert not {"nmt_run", "nmt_select", "curate_control"} & set(jobs)
    # the lexical control once, the random control once per pre-training seed (controls.random_seeds: null)
    rows = len(cfg["variants"]) * seeds + 1 + seeds
    assert jobs["mine"] == rows * len(cfg["pairs"])
    assert "fetch_file" not in jobs and "madlad" not in jobs  # offline
    # sentiment replicated within each pre-training seed: several fine-tuning seeds, one job runs them all
    assert len(cfg["sentiment"]["seeds"]) >= 3 and jobs["sentiment"] == len(cfg["variants"]) * seeds


def test_nmt_overlay_adds_the_replicated_nmt_runs_and_nothing_else(tmp_path):
    """config/nmt.yaml over the embedded default: NMT on si-en for every row, the random ranking and the
    oracle (its positive control), on every pre-training seed; every other job as in the default."""
    from snakemake.utils import update_config

    overlay = yaml.safe_load((REPO / "config" / "nmt.yaml").read_text())
    assert overlay == {"curation": {"nmt": {"pairs": ["si-en"]}}}
    cfg = yaml.safe_load((REPO / "config" / "config.yaml").read_text())
    update_config(cfg, overlay)
    cur = cfg["curation"]
    assert (
        cur["nmt"]["oracle"] and cur["nmt"]["valid"] and cur["settings"]["keep_fractions"]
    )  # kept by the merge
    plain = dry_run(tmp_path / "plain", REPO / "config" / "config.yaml")
    jobs = dry_run(tmp_path / "nmt", [REPO / "config" / "config.yaml", REPO / "config" / "nmt.yaml"])
    seeds, rows = len(cfg["pretrain"]["seeds"]), len(cfg["variants"])
    shares = len(cur["settings"]["keep_fractions"])
    no_filter = int(cur["nmt"].get("no_filter", True))  # every pair, share 1: once per seed where asked
    assert jobs["nmt_run"] == seeds * ((rows + 2) * shares + no_filter) == 15
    assert jobs["curate_control"] == 2 * seeds  # random and oracle rankings, per seed
    added = {r: n - plain.get(r, 0) for r, n in jobs.items() if n != plain.get(r, 0)}
    assert set(added) == {
        "nmt_run",
        "nmt_select",
        "curate_control",
        "nmt_heldout",
        "leakage_check",
        "total",
    }, added


def test_local_config_plans_the_whole_dag_on_the_data_on_disk(tmp_path):
    """config/local.yaml plans every stage from the folder `data_root` names: the real one when it is here,
    else the same layout of empty files (a dry run only looks at names)."""
    cfg = yaml.safe_load((REPO / "config" / "local.yaml").read_text())
    shared = (REPO / cfg["data_root"]).resolve()
    if not shared.is_dir():
        shared = tmp_path / "data"
        named = re.findall(r"\{data_root\}/([^\"]+)", (REPO / "config" / "local.yaml").read_text())
        for rel in named:
            path = shared / rel
            if path.suffix:  # a file
                path.parent.mkdir(parents=True, exist_ok=True)
                path.touch()
            else:  # a folder (multiNER, the news benchmark)
                path.mkdir(parents=True, exist_ok=True)
    jobs = dry_run(tmp_path / "run", REPO / "config" / "local.yaml", "--config", f"data_root={shared}")
    assert jobs["multiner_split"] == 1 and jobs["train_crf"] == len(cfg["crf_models"]) and jobs["report"] == 1
    assert jobs["prepare_news"] == 3 and jobs["prepare_sentiment"] == 1 and jobs["prepare_curation"] == 1
    assert jobs["pretrain_para"] == (len(cfg["variants"]) - 1) * len(cfg["pretrain"]["seeds"])
    # whole sets: the sentiment set, the curation corpus, the NMT set; the two mining sets per item, per pair
    assert jobs["leakage_check"] == 3 and jobs["leakage_items"] == 6
    assert jobs["prepare_retrieval"] == 3  # multiNER's test split as a retrieval set, one job per pair
    assert not {"fetch_file", "unpack_archive", "madlad", "fetch_base_model"} & set(jobs)  # offline


def test_a_config_typo_fails_before_any_job(tmp_path):
    cfg = yaml.safe_load((REPO / "config" / "config.yaml").read_text())
    cfg["mining"]["setings"] = {}
    bad = tmp_path / "bad.yaml"
    bad.write_text(yaml.safe_dump(cfg))
    proc = snakemake(tmp_path, "-n", config=bad)
    assert proc.returncode != 0
    assert "mining.setings: unknown key" in proc.stdout + proc.stderr
    # issue 38: a few lines naming the key, never the schema and the config dumped (1,500 lines before)
    assert len((proc.stdout + proc.stderr).splitlines()) < 10, proc.stdout + proc.stderr


@pytest.mark.parametrize("variant", ["lem_ne", "lem_noun_verb"])
def test_an_ablation_variant_is_selected_from_the_config(tmp_path, variant):
    jobs = dry_run(tmp_path, REPO / "config" / "config.yaml", "--config", f"variants=[base,{variant}]")
    assert jobs["pretrain_mono"] == jobs["pretrain_para"] == 3  # one per pre-training seed


def test_a_variant_with_the_same_masking_is_trained_once_and_evaluated_under_its_name(tmp_path):
    """In the paper config lem_ne_noun_verb masks as lem does: no model of its own, lem's model evaluated."""
    proc = snakemake(tmp_path, "-n", config=REPO / "config" / "paper.yaml")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    plan = proc.stdout + proc.stderr
    assert "results/models/lem_ne_noun_verb/" not in plan
    assert "results/models/lem/si-en/seed13/para" in plan
    # every job of the alias (embed, sentiment) reads lem's models
    jobs = [j for j in plan.split("\nrule ") if re.search(r"wildcards: .*variant=lem_ne_noun_verb\b", j)]
    found = (re.findall(r"results/models/[^/]+/[^/]+/seed\d+/para", j.split("output:")[0]) for j in jobs)
    models = {m for ms in found for m in ms}
    assert models == {f"results/models/lem/{p}/seed13/para" for p in ("si-en", "si-ta", "ta-en")}
    assert "results/mining/lem_ne_noun_verb/seed13/news_itn/si-en.metrics.json" in plan


def test_unlock_works_without_cores(tmp_path):
    """`snakemake --unlock` alone (no --cores) must not fail on the training rules' threads."""
    proc = snakemake(tmp_path, "--unlock", config=REPO / "config" / "config.yaml")
    assert proc.returncode == 0 and "Unlocked working directory" in proc.stdout + proc.stderr, proc.stderr


@pytest.mark.parametrize("wanted, cores, expected", [(1, "4", "1"), (None, "4", "4"), (8, "2", "2")])
def test_training_threads_come_from_the_config_capped_at_the_cores(tmp_path, wanted, cores, expected):
    """resources.threads_training sets every training job's threads (`--threads` of its command), at most
    --cores; null takes all the cores. Other jobs keep 1 thread."""
    cfg = yaml.safe_load((REPO / "config" / "config.yaml").read_text())
    cfg["resources"]["threads_training"] = wanted
    (tmp_path / "c.yaml").write_text(yaml.safe_dump(cfg))
    proc = snakemake(tmp_path, "-n", "-p", "--forceall", "--cores", cores, config=tmp_path / "c.yaml")
    assert proc.returncode == 0, proc.stderr
    shells = [
        line.split("Shell command: ", 1)[1] for line in proc.stdout.splitlines() if "Shell command: " in line
    ]
    training = [s for s in shells if s.startswith(("lem pretrain base", "lem pretrain continue"))]
    assert len(training) == 3 * (1 + 2 * (len(cfg["variants"]) - 1))  # base, mono, para per seed
    assert all(re.search(rf"--threads {expected} ", s) for s in training), training[0]
    sentiment = [s for s in shells if s.startswith("lem sentiment finetune")]
    assert sentiment and all("--threads 1 " in s for s in sentiment)


def test_config_strings_reach_the_shell_quoted(tmp_path):
    """A site name with shell metacharacters and paths with spaces are single, literal arguments."""
    import shlex

    cfg = yaml.safe_load((REPO / "config" / "config.yaml").read_text())
    site, root = "GEN; touch PWNED; echo", "my news"
    cfg["mining"]["evalsets"]["news_gen"].update(site=site, root=root)
    cfg["sentiment"]["datasets"]["cmcs_gen"]["input"] = "data dir/sentiment set.csv"
    (tmp_path / root).mkdir()  # user files, present before the run
    (tmp_path / "data dir").mkdir()
    (tmp_path / "data dir" / "sentiment set.csv").write_text("Sentence,Sentiment\n")
    (tmp_path / "c.yaml").write_text(yaml.safe_dump(cfg))
    proc = snakemake(tmp_path, "-n", "-p", "--forceall", config=tmp_path / "c.yaml")
    out = proc.stdout + proc.stderr
    shells = [line.split("Shell command: ", 1)[1] for line in out.splitlines() if "Shell command: " in line]
    news = [shlex.split(s) for s in shells if s.startswith("lem data news")]
    assert news and all(a[a.index("--site") + 1] == site and a[a.index("--root") + 1] == root for a in news)
    senti = [shlex.split(s) for s in shells if s.startswith("lem data sentiment")]
    assert senti and senti[0][senti[0].index("--input") + 1] == "data dir/sentiment set.csv"
    assert not (tmp_path / "PWNED").exists()


def test_ablation_config_plans_one_trained_model_per_ingredient(tmp_path):
    """config/ablation.yaml: an overlay of the embedded default (`--configfile config/config.yaml
    config/ablation.yaml`, merged by Snakemake) with four LEM variants, each changing one ingredient, two TLM
    epochs, and sentiment and curation switched off by an explicit key; none is an alias of another (each
    masks differently), so each is pre-trained on every seed."""
    from snakemake.utils import update_config

    from lem.masking.collate import MaskingSettings

    overlay = yaml.safe_load((REPO / "config" / "ablation.yaml").read_text())
    assert set(overlay) <= {"variants", "pretrain", "sentiment", "curation", "evidence"}  # no mining key
    assert overlay["sentiment"] == overlay["curation"] == {"enabled": False}
    cfg = yaml.safe_load((REPO / "config" / "config.yaml").read_text())
    update_config(cfg, overlay)
    trained = [v for v in cfg["variants"] if v != "base"]
    masks = {MaskingSettings.from_dict(cfg["pretrain"]["variants"][v]).canonical() for v in trained}
    assert len(masks) == len(trained) == 6
    jobs = dry_run(tmp_path, [REPO / "config" / "config.yaml", REPO / "config" / "ablation.yaml"])
    seeds = len(cfg["pretrain"]["seeds"])
    assert jobs["pretrain_mono"] == jobs["pretrain_para"] == len(trained) * seeds
    assert not {"sentiment", "prepare_sentiment", "curate", "prepare_curation", "nmt_run"} & set(jobs)


def test_data_root_is_named_once_and_required_where_used():
    from lem.config_check import ConfigError, expand_data_root

    cfg = {"data_root": "/data/", "a": {"b": ["{data_root}/x.txt", "y"]}, "c": "{data_root}"}
    assert expand_data_root(cfg) == {"data_root": "/data/", "a": {"b": ["/data/x.txt", "y"]}, "c": "/data"}
    with pytest.raises(
        ConfigError, match=r"^a\.b\[0\]: '\{data_root\}/x\.txt' uses \{data_root\} but data_root is not"
    ):
        expand_data_root({"a": {"b": ["{data_root}/x.txt"]}})
