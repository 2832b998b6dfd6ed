"""workflow/package-files.txt, the list by which a module from a git repository reads the package through
Snakemake's documented `workflow.source_path` (workflow/rules/source.smk), is current: every file the package is
built from, with its sha256 (`python scripts/package_files.py` writes it)."""

from __future__ import annotations

import hashlib
import subprocess
import sys
from pathlib import Path

from lem.run.envs import PACKAGE_FILES, package_files_text

REPO = Path(__file__).resolve().parents[2]


def test_the_package_file_list_is_current():
    listed = (REPO / PACKAGE_FILES).read_text(encoding="utf-8")
    assert listed == package_files_text(REPO), (
        f"{PACKAGE_FILES} is not current: run python scripts/package_files.py"
    )
    proc = subprocess.run(
        [sys.executable, "scripts/package_files.py", "--check"], cwd=REPO, capture_output=True
    )
    assert proc.returncode == 0, proc.stderr


def test_the_list_names_every_package_file_and_a_link_by_the_file_it_names(tmp_path):
    (tmp_path / "src" / "lem" / "__pycache__").mkdir(parents=True)
    (tmp_path / "pyproject.toml").write_text("[project]\n")
    (tmp_path / "src" / "lem" / "__init__.py").write_text("X = 1\n")
    (tmp_path / "src" / "lem" / "__pycache__" / "x.pyc").write_bytes(b"\0")
    (tmp_path / "workflow").mkdir()
    (tmp_path / "workflow" / "schema.yaml").write_text("type: object\n")
    (tmp_path / "src" / "lem" / "schema.yaml").symlink_to("../../workflow/schema.yaml")
    lines = [line for line in package_files_text(tmp_path).splitlines() if not line.startswith("#")]

    def sha(text: str) -> str:
        return hashlib.sha256(text.encode()).hexdigest()

    assert lines == [
        f"{sha('[project]' + chr(10))}  pyproject.toml",
        f"{sha('X = 1' + chr(10))}  src/lem/__init__.py",
        f"{sha('type: object' + chr(10))}  src/lem/schema.yaml  <- workflow/schema.yaml",
        "-  README.md",
    ]
