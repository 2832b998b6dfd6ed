"""Whole-DAG helpers shared by the workflow, interruption and reproducibility tests: the shrunken embedded
default, a Snakemake call in a temporary folder, and the digests of every metrics file and the report."""

from __future__ import annotations

import hashlib
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

REPO = Path(__file__).resolve().parents[1]
SNAKEMAKE = [sys.executable, "-m", "snakemake"]
CORES = "2"


def small_config(reference_model: Path | None = None) -> dict:
    """The embedded default, shrunk to what the DAG-level tests read: the default's four rows (base, mlm_tlm
    and two LEM variants; the other ablation variants only change the masking, tested at unit level, and
    their planning and aliases by dry runs in tests/test_configs.py), two pre-training seeds (intervals and
    pooled paired tests), curation and NMT on si-en at one kept share, and NMT a few steps long (the wiring,
    not the translation quality). With `reference_model` (a local sentence-transformers folder), a reference
    encoder row `ref_tiny` too."""
    cfg = yaml.safe_load((REPO / "config" / "config.yaml").read_text())
    cfg["corpus"]["generate"].update(
        mono_sentences=400,
        para_train=300,
        para_valid=40,
        news_documents=8,
        sentiment_examples=300,
        noisy_pairs=80,
        noisy_extra_pairs={"si-en": 40},  # NMT's pair: a few more rows (the default: thousands)
    )
    cfg["tokenizer"]["vocab_size"] = 800
    cfg["base_model"]["model"].update(hidden_size=32, intermediate_size=64)
    cfg["base_model"]["training"]["epochs"] = 1
    for stage in ("mono", "para"):
        cfg["pretrain"]["stages"][stage]["epochs"] = {"default": 1}
    cfg["pretrain"]["max_length"] = 48
    cfg["embedding"]["max_length"] = 48
    cfg["sentiment"]["training"]["max_length"] = 48
    cfg["variants"] = ["base", "mlm_tlm", "lem", "lem_ne"]
    cfg["ner_model"]["settings"].update(epochs=1, max_length=48)
    cfg["sentiment"]["seeds"] = [1]
    cfg["sentiment"]["training"]["epochs"] = 1
    cfg["pretrain"]["seeds"] = [1, 2]  # intervals over seeds and pooled paired tests
    cfg["controls"]["random_seeds"] = 1  # one random draw (its pooling over draws: tests/test_report.py)
    cfg["curation"]["corpora"] = {"si-en": cfg["curation"]["corpora"]["si-en"]}  # the NMT pair
    cfg["curation"]["settings"]["keep_fractions"] = [0.5]
    cfg["curation"]["nmt"]["no_filter"] = True  # its wiring (the embedded default leaves the run out)
    cfg["curation"]["nmt"]["settings"].update(  # NMT: the wiring, not the translation quality
        vocab_size=300, hidden=32, heads=2, ffn=64, max_steps=6, evaluations=1, bootstrap_samples=50
    )
    if reference_model is not None:
        cfg["reference_encoders"] = {
            "tiny": {"settings": {"backend": "sentence_transformers", "model": str(reference_model),
                                  "device": "cpu"}}
        }  # fmt: skip
    return cfg


TEST_CONFIG = REPO / ".test" / "config" / "config.yaml"
TEST_CONFIG_HEADER = """\
# The suite's shrunken embedded default (tests/dag.py, small_config): the whole DAG that tests/conftest.py's
# dag_reference runs in CI (there with a tiny local sentence-transformers model as reference encoder row
# `ref_tiny`). Generated: `python tests/dag.py` writes it; tests/test_module.py checks it is current. Run it:
#   snakemake --cores all --configfile .test/config/config.yaml --directory runs/test
"""


def shrunken_config_text() -> str:
    """.test/config/config.yaml's text: small_config() (no reference encoder) as YAML, under its header."""
    return TEST_CONFIG_HEADER + yaml.safe_dump(small_config(), sort_keys=False, width=110)


def snakemake_cmd(workdir: Path, *args: str, config: Path | None = None) -> list[str]:
    cmd = [*SNAKEMAKE, "--snakefile", str(REPO / "Snakefile"), "--directory", str(workdir)]
    return cmd + ["--configfile", str(config or workdir / "config.yaml"), *args]


def snakemake(workdir: Path, *args: str, config: Path | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(
        snakemake_cmd(workdir, *args, config=config), capture_output=True, text=True, cwd=workdir
    )


def new_workdir(path: Path, cfg: dict | None = None) -> Path:
    path.mkdir(parents=True, exist_ok=True)
    (path / "config.yaml").write_text(yaml.safe_dump(cfg if cfg is not None else small_config()))
    return path


def run_config(workdir: Path) -> dict:
    """The config a run folder was made with (what a dry run beside it changes one key of)."""
    return yaml.safe_load((workdir / "config.yaml").read_text())


def job_logs(workdir: Path) -> str:
    return "\n".join(f"--- {p}\n{p.read_text()[-3000:]}" for p in sorted((workdir / "logs").rglob("*.log")))


def check(proc: subprocess.CompletedProcess, workdir: Path) -> subprocess.CompletedProcess:
    """`proc`, or the test fails with Snakemake's output and the job logs."""
    if proc.returncode != 0:
        pytest.fail(f"workflow failed:\n{(proc.stdout + proc.stderr)[-6000:]}\n{job_logs(workdir)[-12000:]}")
    return proc


def run_dag(workdir: Path, cfg: dict | None = None) -> Path:
    """The whole shrunken DAG from scratch in `workdir`; the test fails with the logs if it does."""
    new_workdir(workdir, cfg)
    proc = snakemake(workdir, "--cores", CORES)
    (workdir / "snakemake.out").write_text(proc.stdout + proc.stderr)
    check(proc, workdir)
    return workdir


def executed_rules(proc: subprocess.CompletedProcess) -> dict[str, int]:
    """Rule -> number of jobs from the job-stats table of a Snakemake run (dry or real); {} when nothing ran."""
    text = proc.stdout + proc.stderr
    if "Job stats:" not in text:
        return {}
    table = text.split("Job stats:", 1)[1].split("\n\n", 1)[0]
    jobs = {m.group(1): int(m.group(2)) for m in re.finditer(r"^(\w+)\s+(\d+)\s*$", table, re.M)}
    return {rule: n for rule, n in jobs.items() if rule not in ("total", "all")}


def metrics_files(workdir: Path) -> list[Path]:
    """Every metrics file of a run: the JSON files under results/ written by `lem.core.files.with_keys` (they end
    with `provenance`), and every file of results/report/."""
    found = []
    for path in sorted((workdir / "results").rglob("*.json")):
        data = json.loads(path.read_text(encoding="utf-8"))
        if (
            isinstance(data, dict)
            and isinstance(data.get("provenance"), dict)
            and "versions" in data["provenance"]
        ):
            found.append(path)
    return found + sorted(p for p in (workdir / "results" / "report").rglob("*") if p.is_file())


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def digests(workdir: Path) -> dict[str, str]:
    """sha256 of every metrics file and report file, by path relative to `workdir`."""
    return {p.relative_to(workdir).as_posix(): sha256(p) for p in metrics_files(workdir)}


# --- a stand-in conda ---------------------------------------------------------------------------------------------

FAKE_CONDA = r"""#!@PYTHON@
# A stand-in `conda`: answers Snakemake's checks, records every call, and "creates" an environment as a
# folder whose bin/ has `lem` and `python` shims (logging their calls, then running the test's interpreter).
import json, os, sys
from pathlib import Path

import yaml

SHIM = '#!/bin/bash\nprintf \'{"ran": "%s"}\\n\' "$0" >> "$LEM_FAKE_CONDA_LOG"\nexec TARGET "$@"\n'
log = Path(os.environ["LEM_FAKE_CONDA_LOG"])
args = sys.argv[1:]
with log.open("a") as f:
    f.write(json.dumps({"conda": args}) + "\n")
if args == ["--version"]:
    print("conda 24.11.3")
elif args[:2] == ["info", "--json"]:
    print(json.dumps({"conda_prefix": "@BASE@", "platform": "linux-64"}))
elif args[:2] == ["config", "--get"]:
    print(json.dumps({"get": {"channel_priority": "strict"}}))
elif args[:2] == ["env", "create"]:
    spec = Path(args[args.index("--file") + 1].strip('"'))
    prefix = Path(args[args.index("--prefix") + 1].strip('"'))
    deps = yaml.safe_load(spec.read_text())["dependencies"]
    pips = [p for d in deps if isinstance(d, dict) for p in d.get("pip", [])]
    with log.open("a") as f:  # pip expands ${VAR} in the requirements file conda writes for it
        f.write(json.dumps({"created": str(prefix), "pip": [os.path.expandvars(p) for p in pips]}) + "\n")
    (prefix / "bin").mkdir(parents=True)
    for name, target in (("lem", "@LEM@"), ("python", "@PYTHON@")):
        shim = prefix / "bin" / name
        shim.write_text(SHIM.replace("TARGET", target))
        shim.chmod(0o755)
"""

ACTIVATE = r"""# a stand-in conda's activate: records the command line Snakemake composed, then puts the env first on PATH
printf '%s\n' "{\"composed\": $(printf '%s' "$BASH_EXECUTION_STRING" | "$LEM_FAKE_PYTHON" -c 'import json,sys; print(json.dumps(sys.stdin.read()))')}" >> "$LEM_FAKE_CONDA_LOG"
export PATH="$1/bin:$PATH"
"""


def stand_in_conda(root: Path) -> tuple[dict[str, str], Path]:
    """A stand-in `conda` in `root` (conda itself cannot be installed on these machines, so no environment is
    really solved): (the process environment for Snakemake with it first on PATH, the log it writes: one JSON
    object per line: `conda` (its arguments), `created` (an environment's prefix and its pip lines as pip
    expands them), `composed` (a job's command line as Snakemake composed it), `ran` (a shim of an environment's
    bin/ that ran))."""
    base = root / "fake-conda"
    (base / "bin").mkdir(parents=True)
    lem = Path(sys.executable).parent / "lem"
    conda = base / "bin" / "conda"
    conda.write_text(
        FAKE_CONDA.replace("@PYTHON@", sys.executable).replace("@BASE@", str(base)).replace("@LEM@", str(lem))
    )
    conda.chmod(0o755)
    (base / "bin" / "activate").write_text(ACTIVATE)
    log = root / "conda.log"
    env = {
        **os.environ,
        "PATH": f"{base / 'bin'}{os.pathsep}{os.environ.get('PATH', '')}",
        "LEM_FAKE_CONDA_LOG": str(log),
        "LEM_FAKE_PYTHON": sys.executable,
    }
    return env, log


def conda_records(log: Path) -> list[dict]:
    """What the stand-in conda of `stand_in_conda` recorded, in order."""
    return [json.loads(line) for line in log.read_text().splitlines()] if log.exists() else []


if __name__ == "__main__":
    TEST_CONFIG.parent.mkdir(parents=True, exist_ok=True)
    TEST_CONFIG.write_text(shrunken_config_text(), encoding="utf-8")
    print(f"wrote {TEST_CONFIG.relative_to(REPO)}")
