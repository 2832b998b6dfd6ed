"""The rules' conda environments as Snakemake sees them: envs/<name>.yaml with the package's source written in.

Snakemake names a conda environment by the bytes of its file (and of the file's post-deploy script and pin
file, and the folder of the environments): `${LEM_PIPELINE_PACKAGE}`, the package's source that pip expands
when the environment is created (`package_source`, called by workflow/rules/common.smk), is not part of it. With
envs/*.yaml named as they are, a workflow whose package code changed (a new commit, a new version, an edited
checkout) would run the environment created for the old code. So the rules name a copy of envs/<name>.yaml that
common.smk writes when the workflow loads (`lem_env`), under `.snakemake/lem-envs/` of the working directory,
with the package's source and its digest as a comment on top: new package code, new bytes, a new environment;
the same code, the same bytes, the environment already created.

The digest (`package_digest`): for a local folder (a checkout, a local module), sha256 over pyproject.toml and
every file under src/ (what pip builds the package from; caches left out), so a commit that changes only docs
or tests keeps the environment; for a git source (`git+https://host/repo@ref`, a deployed workflow) the source
itself, whose tag or commit names the code (a branch does not: a moved branch keeps the environment).
Standard library only (`package_source` imports Snakemake's source classes when the workflow calls it): the workflow
calls it at every load, SLURM jobs included.
"""

from __future__ import annotations

import hashlib
import os
import tempfile
from pathlib import Path
from urllib.parse import unquote, urlparse

# Imported inside functions: snakemake (Snakemake is the `workflow` extra: only package_source, which the
# workflow calls, needs its source classes)


def package_source(rules_dir) -> str:
    """Where the rules' environments install the `lem` package from (`${LEM_PIPELINE_PACKAGE}` in
    envs/*.yaml, expanded by pip when Snakemake creates them), for the rules' folder `rules_dir` (Snakemake's
    `workflow.current_basedir`): this workflow's own folder when it is a local folder, also when another
    workflow uses it as a module (a file:// URL); its git repository at the deployed tag, commit or branch when
    it comes from a git host (snakedeploy, `github(...)`). Never a path of the deploying workflow's folder."""
    from snakemake.exceptions import WorkflowError
    from snakemake.sourcecache import HostingProviderFile, LocalGitFile, LocalSourceFile

    if isinstance(rules_dir, LocalSourceFile):
        return Path(rules_dir.get_path_or_uri(secret_free=True)).resolve().parents[1].as_uri()
    if isinstance(rules_dir, HostingProviderFile):
        ref = rules_dir.tag or rules_dir.commit or rules_dir.branch
        return f"git+https://{rules_dir.host}/{rules_dir.repo}@{ref}"
    if isinstance(rules_dir, LocalGitFile):
        return f"git+file://{os.path.abspath(rules_dir.repo_path)}@{rules_dir.ref}"
    raise WorkflowError(f"cannot tell where the workflow's package is for {rules_dir}")


# where common.smk writes the rules' environment files, relative to the working directory
ENV_DIR = Path(".snakemake") / "lem-envs"
SKIPPED = {"__pycache__", ".pytest_cache", ".ruff_cache"}


def package_root(package: str) -> Path | None:
    """The local folder of a `file://` package source; None for a git (or any other) source."""
    url = urlparse(package)
    return Path(unquote(url.path)) if url.scheme == "file" else None


def source_files(root: Path) -> list[Path]:
    """pyproject.toml and every file under src/ of a package folder, in a fixed order (caches, compiled files
    and egg-info left out)."""
    files = [root / "pyproject.toml"]
    for folder, dirs, names in os.walk(root / "src"):
        dirs[:] = sorted(d for d in dirs if d not in SKIPPED and not d.endswith(".egg-info"))
        files += [Path(folder) / n for n in sorted(names) if not n.endswith((".pyc", ".pyo"))]
    return [f for f in files if f.is_file()]


def package_digest(package: str) -> str:
    """sha256 of the package's source files for a local folder (each file's path relative to the folder and
    its bytes); of the source itself for a git source, whose tag or commit names the code."""
    root = package_root(package)
    digest = hashlib.sha256()
    if root is None:
        digest.update(package.encode())
        return digest.hexdigest()
    for path in source_files(root):
        rel = path.relative_to(root).as_posix().encode()
        data = path.read_bytes()
        digest.update(b"%d:%s%d:" % (len(rel), rel, len(data)))
        digest.update(data)
    return digest.hexdigest()


def env_text(template: str, name: str, package: str, digest: str) -> str:
    """envs/<name>.yaml's text with the package's source and its digest written on top."""
    what = "pyproject.toml and src/" if package_root(package) else "the source's ref"
    return (
        f"# Generated from envs/{name}.yaml when the workflow loaded (workflow/rules/common.smk, lem_env; "
        "lem.run.envs): do not edit.\n"
        f"# The package this environment installs: {package}\n"
        f"# its source sha256 ({what}): {digest}\n"
        "# Snakemake names an environment by its file's bytes: new package code, a new environment.\n"
        f"{template}"
    )


def write_env(template: Path, out_dir: Path, package: str, digest: str) -> Path:
    """Write `template` (envs/<name>.yaml) with the package's source and digest on top as `out_dir`/<name>.yaml,
    unless it already holds those bytes (atomically: jobs loading the workflow side by side write the same
    bytes); its absolute path, as the rules' `conda:` names it."""
    name = Path(template).stem
    text = env_text(Path(template).read_text(encoding="utf-8"), name, package, digest)
    out = (Path(out_dir) / f"{name}.yaml").absolute()
    if out.is_file() and out.read_text(encoding="utf-8") == text:
        return out
    out.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{name}.", suffix=".tmp", dir=out.parent)  # unique across hosts too
    with os.fdopen(fd, "w", encoding="utf-8") as f:
        f.write(text)
    os.chmod(tmp, 0o644)
    os.replace(tmp, out)
    return out
