"""workflow/rules/source.smk: which `lem` planning imports (the workflow's own code: its folder's src/lem, or a
module's package named by its version and file list), and how a module from a git repository gets its package
with Snakemake's documented `workflow.source_path` alone: the repository's workflow/package-files.txt read
first, then each file it lists, checked against its sha256 (the last newline Snakemake's git reader drops
restored; a link read from the file it names), into .snakemake/lem-src/<digest>/; a list or a file that could
leave its folder or is not the listed one is refused in one line, and a half-written folder written again. The
whole deployment (snakedeploy, a git host): tests/dag/test_planning_env.py."""

from __future__ import annotations

import hashlib
import runpy
from pathlib import Path
from types import SimpleNamespace

import pytest
from snakemake.exceptions import WorkflowError

import lem

REPO = Path(__file__).resolve().parents[2]
# source.smk run as a workflow in this folder does: the suite's `lem` is the workflow's own, so nothing is changed
SOURCE = runpy.run_path(
    str(REPO / "workflow" / "rules" / "source.smk"),
    init_globals={
        "workflow": SimpleNamespace(
            current_basedir=REPO / "workflow" / "rules",
            source_path=lambda rel: str(REPO / "workflow" / "rules" / rel),
        )
    },
)
module_package, COMPLETE = SOURCE["module_package"], SOURCE["COMPLETE"]


def sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


class Repository:
    """A module's repository as `workflow.source_path` gives it: bytes by path from the root (what Snakemake's
    git reader returns: a file's last newline dropped), a link's path giving its target's text."""

    def __init__(self, files: dict[str, bytes], links: dict[str, str] | None = None, version: str = "9.8.7"):
        self.files = {"pyproject.toml": b"[project]\nname = 'lem-pipeline'\n", "README.md": b"# lem\n",
                      "src/lem/__init__.py": b"X = 1\n",
                      "src/lem/core/version.py": f'__version__ = "{version}"\n'.encode(), **files}  # fmt: skip
        self.links = links or {}
        self.reads: list[str] = []

    def listing(self, extra: str = "") -> bytes:
        lines = ["# a comment line"]
        for rel, data in sorted(self.files.items()):
            if rel == "README.md":
                lines.append(f"-  {rel}")
            elif rel.startswith(("src/", "pyproject")):
                lines.append(f"{sha(data)}  {rel}")
        for rel, target in sorted(self.links.items()):
            lines.append(f"{sha(self.files[target])}  {rel}  <- {target}")
        return ("\n".join(lines) + "\n" + extra).encode()

    def read(self, rel: str) -> bytes:
        self.reads.append(rel)
        if rel == "workflow/package-files.txt" and rel not in self.files:
            return self.listing().removesuffix(b"\n")
        if rel in self.links:
            return self.links[rel].encode()  # git shows a link as its target's text
        return self.files[rel].removesuffix(b"\n")


def folder_files(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def test_a_modules_package_is_read_file_by_file_checked_and_links_read_from_their_targets(tmp_path):
    repo = Repository(
        {"src/lem/sub/mod.py": b"Y = 2\n\n", "workflow/schema.yaml": b"type: object\n", "src/lem/raw": b"no newline"},
        links={"src/lem/schema.yaml": "workflow/schema.yaml"},
    )  # fmt: skip
    tree, files, digest = module_package(repo.read, tmp_path / "lem-src")
    assert tree == tmp_path / "lem-src" / digest and files["src/lem/schema.yaml"] == (
        sha(b"type: object\n"),
        "workflow/schema.yaml",
    )
    got = folder_files(tree)
    marker = got.pop(COMPLETE).decode().splitlines()
    assert got == {
        "pyproject.toml": repo.files["pyproject.toml"], "README.md": b"# lem",  # build metadata: as read
        "src/lem/__init__.py": b"X = 1\n", "src/lem/core/version.py": b'__version__ = "9.8.7"\n',
        "src/lem/sub/mod.py": b"Y = 2\n\n", "src/lem/raw": b"no newline", "src/lem/schema.yaml": b"type: object\n",
    }  # fmt: skip
    assert marker == [digest, *sorted(got)]
    assert [p.name for p in (tmp_path / "lem-src").iterdir()] == [digest]  # no temporary folder left
    # read again: the list alone (the folder of that digest is complete)
    repo.reads.clear()
    assert module_package(repo.read, tmp_path / "lem-src")[0] == tree
    assert repo.reads == ["workflow/package-files.txt"]
    # the digest names the list, not its comments
    repo.files["workflow/package-files.txt"] = repo.listing().replace(b"# a comment line", b"# another")
    assert module_package(repo.read, tmp_path / "lem-src")[2] == digest


def refused(repo: Repository, root: Path, listing: bytes | None = None) -> str:
    if listing is not None:
        repo.files["workflow/package-files.txt"] = listing
    with pytest.raises(WorkflowError) as err:
        module_package(repo.read, root)
    message = str(err.value)
    assert len(message.splitlines()) == 1, message
    assert not root.exists() or list(root.iterdir()) == [], "a refused package leaves nothing"
    return message


@pytest.mark.parametrize(
    ("line", "why"),
    [
        ("{sha}  src/lem/../../escaped.py", "component '..'"),
        ("{sha}  src/lem/./x.py", "component '.'"),
        ("{sha}  /etc/passwd", "outside pyproject.toml"),
        ("{sha}  src/lem/.git/config", ".git folder"),
        ("{sha}  src/lem/a\\b.py", "backslash"),
        ("{sha}  src/lem/bell\x07.py", "control character"),
        ("{sha}  src/lem/x.py  <- ../outside", "component '..'"),
        ("{sha}  src/lem/__init__.py", "repeats 'src/lem/__init__.py'"),
        ("{sha} src/lem/x.py", "is not `<sha256>  <path>`"),
        ("abc  src/lem/x.py", "is not `<sha256>  <path>`"),
        ("{sha}  Snakefile", "outside pyproject.toml, README.md and src/lem/"),
    ],
)
def test_a_list_line_that_could_leave_its_folder_or_is_odd_is_refused(tmp_path, line, why):
    repo = Repository({})
    listing = repo.listing(line.format(sha="0" * 64) + "\n")
    message = refused(repo, tmp_path / "lem-src", listing)
    assert (
        message.startswith("workflow/package-files.txt of the module's repository, line ") and why in message
    )
    assert not list(tmp_path.rglob("escaped.py"))


def test_a_file_that_is_not_the_listed_one_and_a_list_without_the_package_are_refused(tmp_path):
    repo = Repository({"src/lem/mod.py": b"Y = 2\n"})
    listing = repo.listing()
    repo.files["src/lem/mod.py"] = b"Y = 3\n"  # the list is stale: another file at that commit
    message = refused(repo, tmp_path / "a", listing)
    assert (
        message.startswith("src/lem/mod.py of the module's repository is not the file its")
        and "stale" in message
    )
    repo = Repository({})
    no_init = b"\n".join(line for line in repo.listing().splitlines() if b"__init__" not in line)
    assert "lists no sha256 of src/lem/__init__.py" in refused(repo, tmp_path / "b", no_init)
    # a file Snakemake cannot read: one line
    read = SOURCE["module_file_reader"](lambda rel: str(tmp_path / "missing" / rel))
    with pytest.raises(WorkflowError) as err:
        read("src/lem/x.py")
    assert str(err.value).startswith(
        "cannot read src/lem/x.py of the module's repository through workflow.source_path"
    )


def test_a_half_written_package_is_written_again_and_a_complete_one_kept(tmp_path):
    repo = Repository({"src/lem/sub/mod.py": b"Y = 2\n"})
    root = tmp_path / "lem-src"
    digest = SOURCE["files_digest"](SOURCE["parse_package_files"](repo.listing().decode()))
    half = root / digest / "src" / "lem"
    half.mkdir(parents=True)
    (half / "__init__.py").write_text("X = 1\n")  # what an interrupted run left: no marker
    tree, _, _ = module_package(repo.read, root)
    assert "src/lem/sub/mod.py" in folder_files(tree)
    assert sorted(p.name for p in root.iterdir()) == [digest]  # the half folder removed, no temporary left
    (tree / "kept").write_text("")  # a complete folder is used as it is ...
    assert module_package(repo.read, root)[0] == tree and (tree / "kept").exists()
    (tree / "src" / "lem" / "sub" / "mod.py").unlink()  # ... until a file its marker lists is missing
    assert "src/lem/sub/mod.py" in folder_files(module_package(repo.read, root)[0])
    (tree / COMPLETE).write_text("0" * 64 + "\n")  # a marker of another list
    assert not (module_package(repo.read, root)[0] / "kept").exists()


# --- which `lem` planning imports: the workflow's own code, named ----------------------------------------------


def module_code(tmp_path: Path, monkeypatch, version: str = "9.8.7") -> dict:
    """This workflow's code as source.smk reads it for a module from a git repository (no local folder), its
    package read from a `Repository` into tmp_path/.snakemake/lem-src/."""
    monkeypatch.chdir(tmp_path)
    return SOURCE["workflow_code"](
        object(), Repository({"src/lem/sub/mod.py": b"Y = 2\n"}, version=version).read
    )


def test_a_local_workflows_code_is_its_src_and_a_modules_its_package_by_version_and_list(
    tmp_path, monkeypatch
):
    local = SOURCE["workflow_code"](REPO / "workflow" / "rules", None)
    assert local["folder"] == REPO and local["source"] == REPO.as_uri() and local["files"] is None
    assert local["version"] == lem.__version__ and local["digest"] is None
    code = module_code(tmp_path, monkeypatch)
    tree = tmp_path / ".snakemake" / "lem-src" / code["digest"]
    assert code["folder"] == tree and code["source"] == tree.as_uri() and code["commit"] is None
    assert code["version"] == "9.8.7" and "src/lem/sub/mod.py" in code["files"]


def test_another_lem_stops_planning_in_one_line_naming_both_and_the_opt_in_plans_with_it(
    tmp_path, monkeypatch, capsys
):
    """The suite's `lem` (this checkout's src/lem) is not a module's package: one line naming both and the fix;
    LEM_USE_INSTALLED=1 keeps the importable one, said on stderr."""
    code = module_code(tmp_path, monkeypatch)
    monkeypatch.delenv("LEM_USE_INSTALLED", raising=False)
    with pytest.raises(WorkflowError) as err:
        SOURCE["use_workflows_own_package"](code)
    message = str(err.value)
    assert len(message.splitlines()) == 1, message
    own = str(Path(lem.__file__).resolve().parent)
    assert f"found {own}" in message and f"lem-pipeline {lem.__version__}" in message
    assert f"this workflow's is {code['folder'] / 'src' / 'lem'} (the module's package" in message, message
    assert f"(lem-pipeline 9.8.7, files sha256 {code['digest'][:12]})" in message, message
    assert f"install --no-deps {code['folder']}" in message and "LEM_USE_INSTALLED=1" in message
    monkeypatch.setenv("LEM_USE_INSTALLED", "1")
    assert SOURCE["use_workflows_own_package"](code) is None
    warning = capsys.readouterr().err
    assert warning.startswith("warning: LEM_USE_INSTALLED=1: planning and the jobs use the `lem` package at")
    assert own in warning and len(warning.splitlines()) == 1
    # this checkout's own code: nothing said, nothing changed
    assert (
        SOURCE["use_workflows_own_package"](SOURCE["workflow_code"](REPO / "workflow" / "rules", None))
        is None
    )
    assert capsys.readouterr().err == ""


def test_an_install_is_a_modules_own_code_when_it_holds_the_modules_files(tmp_path, monkeypatch):
    """A package holding every listed module with its bytes is the module's code (pip leaves README.md and
    pyproject.toml out); a module edited, missing or of another version is not."""
    code = module_code(tmp_path, monkeypatch)
    site = tmp_path / "site"
    for rel in ("src/lem/__init__.py", "src/lem/core/version.py", "src/lem/sub/mod.py"):
        (site / "lem" / rel[8:]).parent.mkdir(parents=True, exist_ok=True)
        (site / "lem" / rel[8:]).write_bytes((code["folder"] / rel).read_bytes())
    assert SOURCE["is_own"](code, SOURCE["found_package"](site / "lem"))
    (site / "lem" / "sub" / "mod.py").write_text("Y = 3\n")
    assert not SOURCE["is_own"](code, SOURCE["found_package"](site / "lem"))
    (site / "lem" / "sub" / "mod.py").unlink()
    assert not SOURCE["is_own"](code, SOURCE["found_package"](site / "lem"))
    (site / "lem" / "sub" / "mod.py").write_text("Y = 2\n")
    (site / "lem" / "core" / "version.py").write_text('__version__ = "9.8.8"\n')
    assert not SOURCE["is_own"](code, SOURCE["found_package"](site / "lem"))
