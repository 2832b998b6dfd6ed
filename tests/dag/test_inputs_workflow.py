"""A bad input file stops the workflow at its job (a real Snakemake run: the `dag` tier). Every loader's
refusals: tests/unit/test_inputs.py."""

from __future__ import annotations

from pathlib import Path

import yaml
from support.builders import write
from support.dag import snakemake

REPO = Path(__file__).resolve().parents[2]


def test_files_corpus_with_an_empty_language_stops_the_workflow(tmp_path):
    """A real `corpus.source: files` run: the Tamil text file is empty; its preparation job fails, naming
    the file, instead of the run training on 0 Tamil sentences."""
    cfg = yaml.safe_load((REPO / "config" / "config.yaml").read_text(encoding="utf-8"))
    for lang in ("en", "si"):
        write(tmp_path, f"in/{lang}.txt", "a sentence\n")
    write(tmp_path, "in/ta.txt", "")
    cfg["corpus"] = {"source": "files", "files": {"mono": {lang: f"in/{lang}.txt" for lang in ("en", "si", "ta")},
                     "para": {p: {"train": "in/p.tsv", "valid_size": 1} for p in cfg["pairs"]}}}  # fmt: skip
    write(tmp_path, "c.yaml", yaml.safe_dump(cfg))
    proc = snakemake(tmp_path, "results/corpus/mono/ta.txt", "--cores", "1", config=tmp_path / "c.yaml")
    assert proc.returncode != 0, proc.stdout + proc.stderr
    log = (tmp_path / "logs/corpus/mono_ta.log").read_text()
    assert "lem data mono: in/ta.txt: expected one sentence per line, got no sentence" in log, log
    assert not (tmp_path / "results/corpus/mono/ta.txt").exists()
