"""lem.run.Run against the DAG: a shipped config planned by `snakemake -n` (every output of every job), and the
two checks that the jobs Run and `lem plan cost` count are the DAG's, for every shipped config
(tests/planning/test_run_model.py) and for config/local.yaml on the real data
(tests/realdata/test_run_model_local.py)."""

from __future__ import annotations

import copy
import re
from pathlib import Path

from lem.config_check import check_config, expand_data_root
from lem.plan import load_config, make_plan
from lem.run import Run
from support import REPO
from support.dag import snakemake

OVERLAYS = {"ablation.yaml": ["config.yaml", "ablation.yaml"]}  # an overlay: given after the embedded default


def dry_run_jobs(workdir: Path, configfile: Path | list[Path], *extra: str) -> dict[str, list[set[str]]]:
    """Rule -> the outputs of each job that `snakemake -n` plans in `workdir` (nothing runs)."""
    proc = snakemake(workdir, "-n", *extra, config=configfile)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    jobs: dict[str, list[set[str]]] = {}
    for m in re.finditer(r"^(?:local)?rule (\w+):\n((?:    .*\n)+)", proc.stdout + proc.stderr, re.M):
        out = re.search(r"^    output: (.*)$", m.group(2), re.M)
        jobs.setdefault(m.group(1), []).append(set(out.group(1).split(", ")) if out else set())
    return jobs


def planned_config(name: str, workdir: Path, data_root: Path | None = None) -> tuple[str, dict, dict]:
    """(name, the config as the workflow holds it, the DAG's jobs) of one shipped config, planned in `workdir`;
    `data_root`: the folder of its data (config/local.yaml: the real data of ../shared/data)."""
    extra: tuple[str, ...] = ()
    files = [REPO / "config" / f for f in OVERLAYS.get(name, [name])]
    config = load_config(files)
    if data_root is not None:
        extra = ("--config", f"data_root={data_root}")
        config["data_root"] = str(data_root)
    expand_data_root(config)
    check_config(config)
    return name, config, dry_run_jobs(workdir, files, *extra)


def job_grid_is_the_dags(planned: tuple[str, dict, dict]) -> None:
    """Every job of lem.run.grid.Grid.jobs() is one job of the DAG, of the same rule, and every DAG job of those
    rules is one of them (pre-training, embedding, controls, reference encoders, mining, sentiment,
    curation, NMT)."""
    name, config, dag = planned
    grid = Run(config).grid.jobs()
    assert grid["mine"] and grid["pretrain_mono"], name
    for rule, paths in grid.items():
        jobs = dag.get(rule, [])
        matched = [sorted(p for p in paths if p in outputs) for outputs in jobs]
        # a sentiment job runs every fine-tuning seed of its pre-training seed: one file per seed
        per_job = len(config["sentiment"]["seeds"]) if rule == "sentiment" else 1
        assert all(len(m) == per_job for m in matched), (
            name,
            rule,
            [m for m in matched if len(m) != per_job][:3],
        )
        missing = paths - {p for m in matched for p in m}
        assert not missing, (name, rule, sorted(missing)[:5])
    embed_rules = {r for r in dag if r == "embed" or r.startswith("embed_")}
    every = {"pretrain_base", "pretrain_mono", "pretrain_para", "mine", "sentiment", "curate", "nmt_run"}
    assert set(grid) >= (set(dag) & (every | embed_rules)), name


def plans_jobs_are_the_dags(planned: tuple[str, dict, dict], tmp_path: Path) -> None:
    """`lem plan cost` counts the DAG's jobs: its training jobs are the pre-training jobs (their model
    folders), its NMT, sentiment and NER rows the DAG's jobs of those rules."""
    name, config, dag = planned
    config = copy.deepcopy(config)
    estimates = config["plan"]["estimates"]  # sizes where the config gives none (local.yaml: made by the run)
    for lang in config["languages"]:
        estimates["mono_sentences"].setdefault(lang, 1000)
    for pair in config["pairs"]:
        estimates["para_pairs"].setdefault(pair, 1000)
        estimates["para_valid_pairs"].setdefault(pair, 100)
    plan = make_plan(config, tmp_path)  # a fresh run: nothing counted from files
    training = {f"results/models/{j['name']}" for j in plan["jobs"]}
    dag_training = {
        o
        for r in ("pretrain_base", "pretrain_mono", "pretrain_para")
        for outs in dag.get(r, [])
        for o in outs
    }
    assert training == dag_training, name
    tasks = {t["name"]: t["jobs"] for t in plan["tasks"]}
    for pair in config["curation"]["nmt"]["pairs"]:
        runs = [
            o for outs in dag["nmt_run"] for o in outs if o.endswith("/metrics.json") and f"/{pair}/" in o
        ]
        assert tasks[f"nmt/{pair}"] == len(runs), (name, pair)
    for dataset in config["sentiment"].get("datasets", {}):
        runs = [outs for outs in dag["sentiment"] if any(f"/{dataset}/finetune" in o for o in outs)]
        assert tasks[f"sentiment/{dataset}"] == len(runs), (name, dataset)
    assert tasks.get("ner/model", 0) == len(dag.get("train_ner", [])), name
