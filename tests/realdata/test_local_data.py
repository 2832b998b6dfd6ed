"""config/local.yaml: the whole DAG on the public real data on disk (../shared/data), no network."""

from __future__ import annotations

import atexit
import os
from pathlib import Path

import yaml
from support import SHARED_DATA
from support.dag import CORES, Background, shared_run, snakemake_cmd

REPO = Path(__file__).resolve().parents[2]


def shrunken_local_config(data_root: Path) -> dict:
    """config/local.yaml at the smallest size that still runs every stage on every dataset: one seed, the base
    model and one continued variant (LEM), a 32-wide model, 10 to 20 training steps per stage, short CRF training, one epoch of
    sentiment fine-tuning on a twentieth of the CMCS examples (epochs are whole since early stopping), 300 pairs
    per curation corpus, one kept share and 12 NMT steps; pre-training text from multiNER only."""
    from lem.plan import load_config

    # the schema's defaults filled in: config/local.yaml sets only the keys that differ from them
    cfg = load_config([REPO / "config" / "local.yaml"])
    cfg["data_root"] = str(data_root)
    for spec in cfg["mining"][
        "evalsets"
    ].values():  # the filled-in defaults of the other format's keys, which
        other = (
            ("root", "site", "doc_pairs", "gold_repairs") if spec.get("format") == "parallel" else ("files",)
        )
        for key in other:  # a config file that writes them is refused (tests/planning/test_refusals.py)
            spec.pop(key, None)
    # the base model and LEM alone (the standard collator's row is the shared DAG's: tests/dag/test_workflow.py),
    # compared as the paper's two families do, LEM against the row it continues from
    cfg["variants"] = ["base", "lem"]
    cfg["evidence"]["families"] = {
        "primary": [{"a": "lem", "b": "base", "tasks": ["mining"]}],
        "secondary": [{"a": "lem", "b": "base", "tasks": ["sentiment", "curation", "nmt"]}],
        "exploratory": [],
    }
    cfg["pretrain"]["seeds"] = [1]
    cfg["mining"]["evalsets"]["news"]["pairs"] = ["si-ta"]
    # ta-en trains on multiNER alone, a list of one file: the NLPC corpus (8,899 pairs, two fifths of all the
    # text to annotate) is left out; its reader still runs on the glossary (the lexical control), merging a
    # list of pair files is tested in tests/unit/test_data_files.py and planned for local.yaml in
    # tests/planning/test_configs.py
    cfg["corpus"]["files"]["para"]["ta-en"]["train"] = ["resources/pairs/multiner_ta-en.train.tsv"]
    cfg["tokenizer"]["vocab_size"] = 1000
    cfg["base_model"]["model"].update(hidden_size=32, intermediate_size=64, max_length=48)
    cfg["base_model"]["training"].update(epochs=1, max_steps=20, checkpoint_every=10)
    for stage in ("mono", "para"):
        cfg["pretrain"]["stages"][stage]["epochs"] = {"default": 1}
        cfg["pretrain"]["stages"][stage]["training"].update(max_steps=10, checkpoint_every=5)
    cfg["pretrain"]["max_length"] = cfg["embedding"]["max_length"] = 48
    for spec in cfg["crf_models"].values():
        spec["settings"] = {"max_iterations": 10}
    cfg["annotation_coverage"]["sample"] = 300
    cfg["sentiment"]["datasets"]["cmcs"]["prepare"].update(train=0.05, valid=0.05, test=0.9)
    cfg["sentiment"]["training"].update(epochs=1, max_length=48)
    cfg["curation"]["max_pairs"] = 300
    cfg["curation"]["settings"]["keep_fractions"] = [0.5]
    cfg["curation"]["nmt"]["settings"].update(
        vocab_size=300, hidden=32, heads=2, ffn=64, max_steps=12, evaluations=1, bootstrap_samples=50
    )
    return cfg


STARTED: dict[str, Background] = {}


def start_run(workdir: Path, data_root: Path) -> Background:
    """The shrunken real-data DAG from scratch in `workdir`, in the background, at a lower CPU priority than
    the shared DAG's (tests/conftest.py): it takes the CPU that the other tests leave idle."""
    workdir.mkdir(parents=True, exist_ok=True)
    (workdir / "config.yaml").write_text(yaml.safe_dump(shrunken_local_config(data_root.resolve())))
    return Background(workdir, snakemake_cmd(workdir, "--cores", CORES), nice=15, forkserver=True)


def start_in_background(tmp_path_factory) -> None:
    """Called by tests/conftest.py at the session's first test when a test here is selected: the run starts
    then when the real data is there (the test skips, saying why, when it is not)."""
    if SHARED_DATA.is_dir() and os.access(SHARED_DATA, os.R_OK):
        STARTED["run"] = shared_run(
            "real-data", lambda: start_run(tmp_path_factory.mktemp("local"), SHARED_DATA)
        )
        atexit.register(STARTED["run"].stop)  # when no test of here waits for it (pytest -x)


def test_local_config_runs_on_the_real_data_and_reports_every_table(shared_data: Path, tmp_path: Path):
    run = STARTED.pop("run", None) or start_run(tmp_path, shared_data)
    tmp_path = run.finish()[0]
    summary = (tmp_path / "results" / "report" / "summary.md").read_text()
    headings = [line for line in summary.splitlines() if line.startswith("#")]
    for table in (
        "Bitext mining F1",
        "Mining benchmarks: gold alignments",
        "Code-mixed sentiment",
        "Curation: NMT",
        "Paired comparisons",
        "Annotation coverage",
        "Parallel training data",
    ):
        assert any(table in h for h in headings), (table, headings)
    assert "| news | si-ta | pooled: 3 sites |" in summary  # the news set's gold rows: per site, then pooled
    assert "cmcs" in summary and "no dictionary" in summary
    assert not list(tmp_path.rglob("*.bin")), "models must be safetensors"
