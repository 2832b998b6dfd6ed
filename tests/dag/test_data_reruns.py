"""One's own data folder copied again with the same content reruns nothing, and an edit to a file in it reruns
the job that reads it (a real Snakemake run of `multiner_split`, which reads three files of a folder):
lem.run.sources declares the files, profiles/default/config.yaml lets Snakemake compare their checksums."""

from __future__ import annotations

import shutil
import time
from pathlib import Path

import yaml
from support.builders import write
from support.dag import check, executed_rules, snakemake

REPO = Path(__file__).resolve().parents[2]
TARGET = "resources/multiner/stats.json"


def test_a_data_copy_with_the_same_content_reruns_nothing_and_an_edit_reruns_its_job(tmp_path: Path):
    for lang in ("English", "Sinhala", "Tamil"):
        write(tmp_path, f"data/multiner/Final_{lang}.txt", "".join(f"w{i} B-LOC\nx O\n\n" for i in range(30)))
    cfg = yaml.safe_load((REPO / "config" / "local.yaml").read_text(encoding="utf-8"))
    cfg["data_root"] = str(tmp_path / "data")
    write(tmp_path, "run/c.yaml", yaml.safe_dump(cfg))
    run, config = tmp_path / "run", tmp_path / "run" / "c.yaml"
    first = check(snakemake(run, TARGET, "--cores", "1", config=config), run)
    assert (
        "Using workflow specific profile" in first.stdout + first.stderr
    )  # profiles/default, read by itself

    time.sleep(1.1)  # a copy made later: every file newer than the outputs
    shutil.copytree(tmp_path / "data", tmp_path / "copy")
    shutil.rmtree(tmp_path / "data")
    (tmp_path / "copy").rename(tmp_path / "data")
    plan = check(snakemake(run, TARGET, "-n", "--cores", "1", config=config), run)
    assert executed_rules(plan) == {}, plan.stdout + plan.stderr

    with open(tmp_path / "data" / "multiner" / "Final_Tamil.txt", "a") as f:
        f.write("w30 B-LOC\nx O\n\n")  # an edit inside the folder: the folder's own time does not change
    plan = check(snakemake(run, TARGET, "-n", "--cores", "1", config=config), run)
    assert executed_rules(plan) == {"multiner_split": 1}, plan.stdout + plan.stderr
    assert f"Updated input files: {tmp_path}/data/multiner/Final_Tamil.txt" in plan.stdout + plan.stderr
