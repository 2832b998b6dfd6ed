"""Every metrics file names the code it ran: lem's version and the commit of the checkout it came from."""

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import lem
from lem.core.code_identity import code_identity, short
from lem.core.files import run_provenance


def test_the_code_is_the_imported_package_version_and_its_checkouts_commit():
    code = code_identity()
    assert code["version"] == lem.__version__
    src = Path(lem.__file__).resolve().parent
    head = subprocess.run(["git", "rev-parse", "HEAD"], cwd=src, capture_output=True, text=True)
    if head.returncode == 0:  # a git checkout (the tests' case); an installed wheel has no commit
        assert code["commit"] == head.stdout.strip()
        assert isinstance(code["dirty"], bool)
    else:
        assert code["commit"] is None
    assert run_provenance()["code"] == code


def test_short_names_version_commit_and_edits():
    assert (
        short({"version": "0.1.0", "commit": "1a2b3c4d5e", "dirty": True})
        == "0.1.0 at 1a2b3c4 + uncommitted edits"
    )
    assert short({"version": "0.1.0", "commit": "1a2b3c4d5e", "dirty": False}) == "0.1.0 at 1a2b3c4"
    assert short({"version": "0.1.0", "commit": None, "dirty": None}) == "0.1.0"
    assert short(None) == "unknown"


def identity_in(root: Path) -> dict:
    """code_identity() of the package under `root`/src, imported by a fresh Python in `root`."""
    script = (
        "from lem.core.code_identity import code_identity; import json; print(json.dumps(code_identity()))"
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    proc = subprocess.run(
        [sys.executable, "-c", script], cwd=root, env={**env, "PYTHONPATH": str(root / "src")},
        capture_output=True, text=True,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


def test_a_modules_package_is_named_by_its_file_list_and_a_nested_folder_by_no_commit(tmp_path):
    """A package folder written by workflow/rules/source.smk names its code by the digest in its marker; a
    package folder inside another repository (a deployment's .snakemake/) is no checkout of it."""
    outer = tmp_path / "project"
    package = Path(lem.__file__).resolve().parent
    shutil.copytree(package, outer / "deploy" / "src" / "lem", ignore=shutil.ignore_patterns("__pycache__"))
    subprocess.run(["git", "init", "-q", str(outer)], check=True)
    subprocess.run(["git", "-C", str(outer), "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q",
                    "--allow-empty", "-m", "x"], check=True)  # fmt: skip
    code = identity_in(outer / "deploy")
    assert code["commit"] is None and code["dirty"] is None  # the project's commit is not the package's
    (outer / "deploy" / ".lem-src-complete").write_text("ab" * 32 + "\nsrc/lem/__init__.py\n")
    code = identity_in(outer / "deploy")
    assert code["commit"] is None and code["files_sha256"] == "ab" * 32
    assert short(code) == f"{lem.__version__} (a module's files, sha256 abababa)"
