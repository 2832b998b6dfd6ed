"""Where a test DAG's CPU goes: run the suite's shrunken shared DAG (tests/support/dag.py, `shared`) or the
shrunken real-data DAG (tests/realdata/test_local_data.py, `local`) from scratch in a folder, every Python process
of it recording its own CPU at exit, and print the CPU seconds per `lem` verb and of Snakemake's own process.
What CI's time is made of (issue 51, item 7): `bash .ci/run` runs both in the background of the test session.

    .venv/bin/python bench/dag_cpu.py shared|local WORKDIR [--data ../shared/data] [--forkserver]

`--forkserver`: the run with `LEM_FORKSERVER=1` (lem.core.forkserver), its jobs forks of one process that has
imported the stack, as the test suite runs its long DAGs.

A process records itself through a `sitecustomize` module put first on PYTHONPATH for the run (user + system
CPU of the process and of the children it waited for, at exit). CPU seconds, not wall: a busy machine inflates
them less than it does the wall time, but still somewhat (caches, frequency); name the machine and its load.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(REPO / "tests"), str(REPO / "tests" / "realdata")]

HOOK = """import atexit, json, os, resource, sys
def _record():
    own, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    with open(os.environ["LEM_DAG_CPU_OUT"], "a") as f:
        f.write(json.dumps({"argv": sys.argv[:3], "self": own.ru_utime + own.ru_stime,
                            "children": kids.ru_utime + kids.ru_stime}) + "\\n")
if os.environ.get("LEM_DAG_CPU_OUT"):
    atexit.register(_record)
"""


def config(which: str, data: Path) -> dict:
    if which == "shared":
        from support.dag import small_config

        return small_config()
    from test_local_data import shrunken_local_config

    return shrunken_local_config(data.resolve())


def summary(records: list[dict]) -> list[str]:
    """Per verb: processes and CPU seconds (own and waited-for children); Snakemake's own process apart."""
    verbs: dict[str, list[float]] = defaultdict(lambda: [0, 0.0])
    lines, smk, server = [], None, None
    for r in records:
        argv = [Path(a).name for a in r["argv"]]
        if argv and argv[0] == "__main__.py" and "--fork-server" in argv:
            server = r  # its children are the jobs it forked: each recorded itself, as a `lem` process
            continue
        if argv and argv[0] == "__main__.py":
            smk = r
            continue
        if argv and argv[0] == "lem":
            key = " ".join(argv[:3])
            verbs[key][0] += 1
            verbs[key][1] += r["self"] + r["children"]
    total = smk["self"] + smk["children"] if smk else sum(v[1] for v in verbs.values())
    if server:  # not a child Snakemake waits for: its CPU and its jobs' are added
        total += server["self"] + server["children"]
    lines.append(f"the whole run: {total:.0f} CPU-s ({total / 60:.1f} core-minutes)")
    if smk:
        lines.append(f"  Snakemake's own process: {smk['self']:.0f} CPU-s")
    if server:
        lines.append(
            f"  the fork server: {server['self']:.0f} CPU-s of its own (its imports), its jobs "
            f"{server['children']:.0f} CPU-s (below: each served command twice, the `lem` command and its job)"
        )
    for key, (n, cpu) in sorted(verbs.items(), key=lambda kv: -kv[1][1]):
        lines.append(f"  {key:32s} {n:4d} processes {cpu:8.1f} CPU-s")
    return lines


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("which", choices=("shared", "local"))
    ap.add_argument("workdir", type=Path)
    ap.add_argument("--data", type=Path, default=REPO.parent / "shared" / "data")
    ap.add_argument(
        "--forkserver", action="store_true", help="LEM_FORKSERVER=1: the jobs forks of one server"
    )
    args = ap.parse_args()
    workdir = args.workdir.resolve()
    if workdir.exists() and any(workdir.iterdir()):
        ap.error(f"{workdir} is not empty: the run starts from scratch")
    workdir.mkdir(parents=True, exist_ok=True)
    (workdir / "config.yaml").write_text(yaml.safe_dump(config(args.which, args.data)))
    with tempfile.TemporaryDirectory() as hook:
        (Path(hook) / "sitecustomize.py").write_text(HOOK)
        out = workdir / "cpu.jsonl"
        env = {**os.environ, "LEM_DAG_CPU_OUT": str(out),
               "PYTHONPATH": os.pathsep.join(filter(None, [hook, os.environ.get("PYTHONPATH")]))}  # fmt: skip
        if args.forkserver:
            env["LEM_FORKSERVER"] = "1"
        cmd = [sys.executable, "-m", "snakemake", "--snakefile", str(REPO / "Snakefile"), "--directory",
               str(workdir), "--cores", "2", "--configfile", str(workdir / "config.yaml")]  # fmt: skip
        with open(workdir / "snakemake.out", "w") as log:
            rc = subprocess.run(cmd, stdout=log, stderr=subprocess.STDOUT, env=env).returncode
    if rc != 0:
        print(f"the run failed (rc {rc}): {workdir / 'snakemake.out'}", file=sys.stderr)
        return rc
    deadline = time.monotonic() + 60
    while args.forkserver and "--fork-server" not in out.read_text() and time.monotonic() < deadline:
        time.sleep(0.5)  # the server ends a second or so after Snakemake, then records itself
    records = [json.loads(line) for line in out.read_text().splitlines() if line.strip()]
    print("\n".join(summary(records)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
