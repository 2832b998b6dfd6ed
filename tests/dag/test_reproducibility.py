"""Jobs run again write byte-identical metrics and reports.

The shared whole-DAG run (`dag_reference`) is copied into a folder whose name has a space and a `;` (every path
of the rules rerun here reaches the shell quoted), and one job of each metrics writer after embedding is forced
to run again there: sentiment fine-tuning, curation ranking, the NMT of a variant's and of a control's
selection, NER training and annotation scoring; then the run is brought up to date (the report and what read
the new NER model). Every metrics and report file must equal the whole run's, byte for byte. The stages before
(corpus, annotation, tokenizer, features, training, embedding, mining) are run a second time from scratch, in
another such folder, by the kill-and-resume chain of tests/dag/test_interruptions.py, and compared the same way.
The whole run's jobs were forks of its fork server (`LEM_FORKSERVER=1`, lem.core.forkserver); the jobs run again
here, and the chain's, are processes of their own: a served job writes what the job run by itself writes.
"""

from __future__ import annotations

import json
import shutil
import time
from pathlib import Path

from support.dag import CORES, check, digests, executed_rules, forkserver_log, snakemake

RERUN = {  # target -> the rules that run for it when forced
    "results/sentiment/lem/seed1/cmcs_gen/finetune1/metrics.json": {"sentiment"},
    "results/nmt/lem/seed1/si-en/keep0.5/metrics.json": {"curate", "nmt_select", "nmt_run"},
    "results/nmt/random/seed2/si-en/keep0.5/metrics.json": {"curate_control", "nmt_select", "nmt_run"},
    "results/annotation_eval/hf_ner/si.json": {"train_ner", "annotation_eval"},
    "results/annotation_eval/configured/si.json": {"annotation_eval"},
}


def test_jobs_run_again_write_identical_metrics_and_report(dag_reference: Path, tmp_path: Path):
    served = forkserver_log(dag_reference)
    assert "serving commands" in served and " served " in served, served[-3000:]
    # every job of the whole run was a fork of the server's
    assert "ran by itself" not in served, served[-3000:]
    first = digests(dag_reference)
    metrics = [p for p in first if p.endswith(".json") and not p.startswith("results/report/")]
    tasks = {json.loads((dag_reference / p).read_text())["keys"]["task"] for p in metrics}
    assert {"mining", "sentiment", "curation", "annotation", "nmt"} <= tasks  # every metrics writer
    assert "results/report/summary.tsv" in first and "results/report/summary.md" in first

    again = tmp_path / "run again; x"
    shutil.copytree(dag_reference, again, symlinks=True)  # file times kept: the copy is up to date
    started = time.time()
    rules = sorted(set().union(*RERUN.values()))
    forced = check(snakemake(again, "--cores", CORES, *RERUN, "--forcerun", *rules), again)
    assert set(executed_rules(forced)) == set(rules), executed_rules(forced)
    update = check(snakemake(again, "--cores", CORES), again)
    assert "report" in executed_rules(update)
    assert set(executed_rules(update)) <= {"report", "controls_gate", "documented", "annotation_eval"}

    second = digests(again)
    rewritten = [p for p in second if (again / p).stat().st_mtime > started]
    assert set(RERUN) <= set(rewritten) and "results/report/summary.tsv" in rewritten
    assert {json.loads((again / p).read_text())["keys"]["task"] for p in rewritten if p in metrics} == {
        "sentiment",
        "curation",
        "nmt",
        "annotation",
    }
    assert set(second) == set(first)
    differ = sorted(p for p in first if first[p] != second[p])
    assert not differ, f"{len(differ)} of {len(first)} files differ after running jobs again: {differ[:10]}"
    some = json.loads((dag_reference / metrics[0]).read_text())
    prov = some["provenance"]  # what the runs were made with, recorded in every metrics file
    assert prov["command"].startswith("lem ") and len(prov["settings_sha256"]) == 64
    assert prov["versions"]["torch"] and prov["versions"]["python"]
