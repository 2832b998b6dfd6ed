"""Every job that `snakemake -n -p --forceall` plans for every shipped config, and `lem plan cost`'s table,
normalised so that two versions of the workflow compare byte for byte (a refactor that must not change
behaviour: record before, record after, `diff -r`).

    python scripts/job_blocks.py /tmp/jobblocks/before            # this checkout
    python scripts/job_blocks.py /tmp/jobblocks/after --repo DIR  # another checkout (its src/ first on the path)
    diff -r /tmp/jobblocks/before /tmp/jobblocks/after

One file per config, `<name>.jobs`: the job blocks (rule, wildcards, output, params, the shell command, ...)
with `jobid` lines and time stamps dropped and the run's folder written `<WORKDIR>`, sorted; `<name>.cost` the plan's table.
Each config runs in a fresh folder under /tmp (nothing there: every job is planned).
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
LOCAL_DATA = "/work/shared/data"


def configs(repo: Path) -> dict[str, tuple[list[Path], list[str]]]:
    """name -> (config files, extra `--config` items) of every shipped config."""
    out: dict[str, tuple[list[Path], list[str]]] = {}
    for path in sorted((repo / "config").glob("*.yaml")):
        files = [path]
        header = "".join(ln for ln in path.read_text(encoding="utf-8").splitlines(True) if ln.startswith("#"))
        # an overlay on the config its header names ("an overlay of config/local.yaml"), else on the default
        base = re.search(r"overlay of (?:config/([\w.-]+\.yaml))?", " ".join(header.lower().split()))
        if base:
            files = [repo / "config" / (base.group(1) or "config.yaml"), path]
        extra = [f"data_root={LOCAL_DATA}"] if "local.yaml" in {f.name for f in files} else []
        out[path.stem] = (files, extra)
    out["test"] = ([repo / ".test" / "config" / "config.yaml"], [])
    return out


def normalise(text: str, workdir: str, repo: Path) -> str:
    """The job blocks of a dry run's output, sorted, without jobids, the run's folder as <WORKDIR> and the
    checkout's as <REPO>."""
    text = anonymise(text, workdir, repo)
    blocks = []
    for block in re.split(r"\n\s*\n", text):
        lines = [
            ln
            for ln in block.strip("\n").splitlines()
            if not re.match(r"^\s+jobid: ", ln) and not re.match(r"^\[\w{3} \w{3} .*\d{4}\]$", ln)
        ]
        if "Job stats:" in lines:  # the job counts follow the last job without a blank line
            lines = lines[: lines.index("Job stats:")]
        if lines and re.match(r"^(local)?(rule|checkpoint) \S+:$", lines[0]):
            blocks.append("\n".join(lines))
    return "\n\n".join(sorted(blocks)) + "\n"


def anonymise(text: str, workdir: str, repo: Path) -> str:
    for path, name in ((workdir, "<WORKDIR>"), (str(repo), "<REPO>")):
        text = text.replace(os.path.realpath(path), name).replace(path, name)
    return text


def record(repo: Path, out: Path, only: list[str] | None = None) -> None:
    out.mkdir(parents=True, exist_ok=True)
    env = {**os.environ, "PYTHONPATH": str(repo / "src")}
    for name, (files, extra) in configs(repo).items():
        if only and name not in only:
            continue
        with tempfile.TemporaryDirectory(prefix=f"jobblocks-{name}-") as workdir:
            cmd = [sys.executable, "-m", "snakemake", "-n", "-p", "--forceall", "--snakefile",
                   str(repo / "Snakefile"), "--directory", workdir, "--configfile", *map(str, files)]  # fmt: skip
            if extra:
                cmd += ["--config", *extra]
            proc = subprocess.run(cmd, capture_output=True, text=True, cwd=workdir, env=env)
            if proc.returncode != 0:
                raise SystemExit(f"{name}: snakemake -n failed:\n{proc.stdout}{proc.stderr}")
            (out / f"{name}.jobs").write_text(
                normalise(proc.stdout + proc.stderr, workdir, repo), encoding="utf-8"
            )
            cost = [sys.executable, "-m", "lem", "plan", "cost", "--directory", workdir,
                    "--schema", str(repo / "workflow" / "schemas" / "config.schema.yaml"),
                    "--configfile", *map(str, files)]  # fmt: skip
            if extra:  # `lem plan cost` has no --config: the overlay as a file
                overlay = Path(workdir) / "extra.yaml"
                overlay.write_text("".join(f"{k}: {v}\n" for k, v in (e.split("=", 1) for e in extra)))
                cost.append(str(overlay))
            proc = subprocess.run(cost, capture_output=True, text=True, cwd=workdir, env=env)
            text = anonymise(proc.stdout + proc.stderr, workdir, repo)
            (out / f"{name}.cost").write_text(f"rc={proc.returncode}\n{text}", encoding="utf-8")
        print(name, file=sys.stderr)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", type=Path, help="folder for <config>.jobs and <config>.cost")
    parser.add_argument("--repo", type=Path, default=REPO, help="the checkout to run (default: this one)")
    parser.add_argument("--only", nargs="*", help="these configs alone (names as in the output files)")
    a = parser.parse_args()
    record(a.repo.resolve(), a.out, a.only)


if __name__ == "__main__":
    main()
