"""Where annotation sits in the DAG of both configurations (dry runs and job graphs, nothing executed): the
coverage check gates training, the paper's Tamil CRF is trained before Tamil annotation, and annotation
jobs take their resources from the config."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml
from support import dag

REPO = Path(__file__).resolve().parents[2]
CONFIGS = {"embedded": REPO / "config" / "config.yaml", "paper": REPO / "config" / "paper.yaml"}


def snakemake(tmp_path: Path, configfile: Path, *args: str) -> str:
    proc = dag.snakemake(tmp_path, *args, config=configfile)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    return proc.stdout


_GRAPHS: dict[Path, tuple[dict[str, str], set[tuple[str, str]]]] = {}


def job_graph(tmp_path: Path, configfile: Path) -> tuple[dict[str, str], set[tuple[str, str]]]:
    """Jobs (id -> `rule` or `rule k=v ...` with its wildcards) and edges (producer, consumer); each config's
    graph is computed once per session (two tests read the paper's)."""
    if configfile not in _GRAPHS:
        _GRAPHS[configfile] = _job_graph(tmp_path, configfile)
    return _GRAPHS[configfile]


def _job_graph(tmp_path: Path, configfile: Path) -> tuple[dict[str, str], set[tuple[str, str]]]:
    dot = snakemake(tmp_path, configfile, "--dag", "--cores", "1")
    nodes = {
        m.group(1): " ".join(m.group(2).replace("\\n", "\n").split("\n")).replace(": ", "=")
        for m in re.finditer(r'^\s*(\d+)\[label = "([^"]*)"', dot, re.M)
    }
    edges = {(nodes[a], nodes[b]) for a, b in re.findall(r"^\s*(\d+) -> (\d+)", dot, re.M)}
    return nodes, edges


@pytest.mark.parametrize("name", sorted(CONFIGS))
def test_coverage_check_is_planned_before_every_training_job(tmp_path, name):
    nodes, edges = job_graph(tmp_path, CONFIGS[name])
    assert list(nodes.values()).count("annotation_coverage") == 1
    training = [j for j in nodes.values() if j.split()[0] in ("pretrain_base", "pretrain_mono")]
    cfg = yaml.safe_load(CONFIGS[name].read_text())
    assert len(training) >= len(cfg["variants"]) - 1
    for job in training:
        assert ("annotation_coverage", job) in edges, job
    assert ("annotation_coverage", "report") in edges
    # It samples every language's own training text.
    for lang in cfg["languages"]:
        assert any(a.startswith("leakage_guard") and b == "annotation_coverage" for a, b in edges), lang


def test_paper_trains_the_tamil_crf_before_tamil_annotation(tmp_path):
    nodes, edges = job_graph(tmp_path, CONFIGS["paper"])
    crf = "train_crf crf=ta_pos"
    assert crf in nodes.values() and ("fetch_file source=ta_ttb-ud-train.conllu", crf) in edges
    tamil = [
        j
        for j in nodes.values()
        if j.split()[0] in ("annotate_mono", "annotate_para") and "lang=ta" in j.split()
    ]
    assert len(tamil) == 1 + 2 * 2  # mono, and train + valid of si-ta and ta-en
    for job in tamil:
        assert (crf, job) in edges, job
    assert (crf, "annotation_coverage") in edges
    others = [j for j in nodes.values() if j.startswith("annotate_") and "lang=ta" not in j.split()]
    assert others and not any((crf, j) in edges for j in others)


def test_embedded_default_trains_no_crf_and_annotates_on_cpu(tmp_path):
    out = snakemake(tmp_path, CONFIGS["embedded"], "-n", "--quiet", "rules")
    assert "train_crf" not in out and re.search(r"^annotation_coverage\s+1\s*$", out, re.M)


def resources_of(text: str, rule: str) -> list[dict[str, str]]:
    """The resources the dry run shows for each job of `rule`."""
    found, current = [], None
    for line in text.splitlines():
        m = re.match(r"^(?:local)?rule (\w+):", line)
        if m:
            current = m.group(1)
        elif current == rule and line.strip().startswith("resources: "):
            found.append(dict(kv.split("=", 1) for kv in line.strip()[len("resources: ") :].split(", ")))
            current = None
    return found


def test_annotation_jobs_take_their_resources_from_the_config(tmp_path):
    paper = snakemake(tmp_path / "paper", CONFIGS["paper"], "-n")
    for rule in ("annotate_mono", "annotate_para", "annotation_coverage"):
        jobs = resources_of(paper, rule)
        assert jobs, rule
        for res in jobs:  # every language's NER is hf_ner: one GPU each
            assert res.get("gpu") == "1" and res.get("mem_mb") == "16000" and res.get("runtime") == "720", res
    (crf,) = resources_of(paper, "train_crf")
    assert crf.get("gpu", "0") == "0" and crf.get("mem_mb") == "16000"
    embedded = snakemake(tmp_path / "embedded", CONFIGS["embedded"], "-n")
    for rule in ("annotate_mono", "annotate_para", "annotation_coverage", "annotation_eval"):
        jobs = resources_of(embedded, rule)
        assert jobs, rule
        for res in jobs:  # lexicons and gazetteers; the hf_ner annotator of annotation_eval with 0 GPUs
            assert res.get("gpu") == "0" and res.get("mem_mb") == "4000", res
