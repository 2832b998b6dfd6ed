"""Releases (issue 45): every tag the README and docs name exists in the repository (`git tag`), and the
version is one: `pyproject.toml`, `lem.__version__`, `CITATION.cff` and the newest version of
`CHANGELOG.md` agree."""

from __future__ import annotations

import re
import shutil
import subprocess
import tomllib
from pathlib import Path

import pytest

import lem

REPO = Path(__file__).resolve().parents[2]
PAGES = [
    REPO / "README.md",
    REPO / "CHANGELOG.md",
    REPO / "config" / "README.md",
    *sorted((REPO / "docs").glob("*.md")),
]
# `--tag v1.2.3`, `tag="v1.2.3"`, `git+<url>@v1.2.3`: a release named by its tag (not `v<version>`, a pattern)
TAG = re.compile(r"(?:--tag[ =]|tag=[\"']|@)(v\d+(?:\.\d+)*[\w.-]*)")


def named_tags(text: str) -> set[str]:
    return set(TAG.findall(text))


def repository_tags() -> set[str]:
    if shutil.which("git") is None or not (REPO / ".git").exists():
        pytest.skip("needs a git checkout")
    proc = subprocess.run(["git", "tag"], cwd=REPO, capture_output=True, text=True, check=True)
    return set(proc.stdout.split())


def test_the_tag_finder():
    text = 'snakedeploy deploy-workflow URL d --tag v0.1.0; github("o/r", tag="v2.0"); git+URL@v1.2.3-rc1 v<version>'
    assert named_tags(text) == {"v0.1.0", "v2.0", "v1.2.3-rc1"}
    assert named_tags("--branch main, a release is tagged `v<version>`") == set()


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(REPO)))
def test_every_tag_the_docs_name_exists(page):
    missing = named_tags(page.read_text(encoding="utf-8")) - repository_tags()
    assert not missing, f"{page.relative_to(REPO)} names tags the repository lacks: {sorted(missing)}"


def test_the_version_is_one():
    pyproject = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["project"]["version"]
    citation = re.search(r"^version: *(\S+)$", (REPO / "CITATION.cff").read_text(encoding="utf-8"), re.M)
    changelog = re.search(r"^## \[(\d[^\]]*)\]", (REPO / "CHANGELOG.md").read_text(encoding="utf-8"), re.M)
    assert citation and changelog
    assert lem.__version__ == pyproject == citation.group(1).strip("'\"") == changelog.group(1), (
        lem.__version__,
        pyproject,
        citation.group(1),
        changelog.group(1),
    )
