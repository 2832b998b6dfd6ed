"""workflow/rules/source.smk's extraction of src/lem/ from a module's git repository (what a deployed module
plans with when no `lem` is installed), on crafted commits made with git's plumbing (`hash-object`, a tree's
raw bytes, `commit-tree`): every path stays inside the extraction folder, a link is written as the file it names
or refused, and a half-extracted tree is extracted again; which `lem` planning imports (the workflow's own code:
its folder's src/lem, or a module's version and commit), and the opt-in to another. The whole deployment:
tests/dag/test_planning_env.py."""

from __future__ import annotations

import json
import os
import runpy
import subprocess
from pathlib import Path
from types import SimpleNamespace

import pytest
from snakemake.exceptions import WorkflowError

import lem

REPO = Path(__file__).resolve().parents[2]
# source.smk run as a workflow in this folder does: the suite's `lem` is the workflow's own, so nothing is changed
SOURCE = runpy.run_path(
    str(REPO / "workflow" / "rules" / "source.smk"),
    init_globals={"workflow": SimpleNamespace(current_basedir=REPO / "workflow" / "rules")},
)
extracted_tree, COMPLETE = SOURCE["extracted_tree"], SOURCE["COMPLETE"]
FILE, EXE, LINK, TREE, GITLINK = "100644", "100755", "120000", "40000", "160000"


class Git:
    """A bare repository whose objects a test writes one by one."""

    def __init__(self, path: Path):
        self.dir = path
        env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
        self.env = {**env, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t", "GIT_COMMITTER_NAME": "t",
                    "GIT_COMMITTER_EMAIL": "t@t"}  # fmt: skip
        self.run("init", "-q", "--bare", str(path), git_dir=False)

    def run(self, *args: str, stdin: bytes | None = None, git_dir: bool = True) -> str:
        where = ["--git-dir", str(self.dir)] if git_dir else []
        proc = subprocess.run(
            ["git", *where, *args], input=stdin, capture_output=True, env=self.env, check=True
        )
        return proc.stdout.decode().strip()

    def blob(self, data: bytes | str) -> str:
        return self.run(
            "hash-object", "-w", "--stdin", stdin=data.encode() if isinstance(data, str) else data
        )

    def tree(self, entries: dict[str | bytes, tuple[str, str]] | list[tuple[str | bytes, str, str]]) -> str:
        """A tree of `entries` (name -> (mode, object id), or (name, mode, object id) rows, a name twice)
        written as raw bytes, whatever git itself would refuse."""
        rows = [(n, *e) for n, e in entries.items()] if isinstance(entries, dict) else entries
        raw = b""
        for name, mode, oid in sorted((n if isinstance(n, bytes) else n.encode(), m, o) for n, m, o in rows):
            raw += mode.encode() + b" " + name + b"\0" + bytes.fromhex(oid)
        return self.run("hash-object", "-t", "tree", "-w", "--literally", "--stdin", stdin=raw)

    def commit(self, lem: dict, top: dict | None = None) -> str:
        """A commit whose src/lem/ is the tree `lem` (nested dicts are folders), beside `top`'s entries."""
        src = self.tree({"lem": (TREE, self.nested(lem))})
        root = self.tree({"src": (TREE, src), **{k: v for k, v in (top or {}).items()}})
        return self.run("commit-tree", root, "-m", "crafted")

    def nested(self, entries: dict) -> str:
        return self.tree(
            {n: (TREE, self.nested(e)) if isinstance(e, dict) else e for n, e in entries.items()}
        )


@pytest.fixture
def git(tmp_path) -> Git:
    return Git(tmp_path / "repo.git")


def package(git: Git, **extra) -> dict:
    """A small well-formed package: two modules, one in a sub-package, and an executable file."""
    return {"__init__.py": (FILE, git.blob("X = 1\n")), "sub": {"mod.py": (FILE, git.blob("Y = 2\n"))},
            "tool.sh": (EXE, git.blob("#!/bin/sh\n")), **extra}  # fmt: skip


def files(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def refused(git: Git, commit: str, root: Path) -> str:
    with pytest.raises(WorkflowError) as err:
        extracted_tree(git.dir, commit, root)
    message = str(err.value)
    assert len(message.splitlines()) == 1 and message.startswith("refused to extract src/lem/"), message
    assert not root.exists() or list(root.iterdir()) == [], "a refused commit leaves nothing"
    return message


def test_a_package_is_extracted_with_its_links_written_as_the_files_they_name(git, tmp_path):
    schema = git.blob("type: object\n")
    top = {"workflow": (TREE, git.tree({"schema.yaml": (FILE, schema)})),
           "shortcut": (LINK, git.blob("src/lem/sub"))}  # a link to a folder, outside the package  # fmt: skip
    commit = git.commit(
        package(git, **{
            "schema.yaml": (LINK, git.blob("../../workflow/schema.yaml")),  # to a file outside src/lem
            "again.yaml": (LINK, git.blob("schema.yaml")),  # to a link: the file the chain ends at
            "through.py": (LINK, git.blob("../../shortcut/./mod.py")),  # through a link to a folder
        }),
        top,
    )  # fmt: skip
    tree = extracted_tree(git.dir, commit, tmp_path / "lem-src")
    assert tree == tmp_path / "lem-src" / commit
    got = files(tree)
    marker = got.pop(COMPLETE).decode().splitlines()
    assert got == {
        "lem/__init__.py": b"X = 1\n", "lem/sub/mod.py": b"Y = 2\n", "lem/tool.sh": b"#!/bin/sh\n",
        "lem/schema.yaml": b"type: object\n", "lem/again.yaml": b"type: object\n", "lem/through.py": b"Y = 2\n",
    }  # fmt: skip
    assert marker == [commit, *sorted(got)]
    assert not any(p.is_symlink() for p in tree.rglob("*"))
    assert [p.name for p in (tmp_path / "lem-src").iterdir()] == [commit]  # no temporary folder left


@pytest.mark.parametrize(
    ("name", "why"),
    [
        ("..", "component '..'"),
        (".", "component '.'"),
        ("../../../escaped", "component '..'"),  # one entry's name holding slashes
        ("/abs", "component ''"),  # an absolute path
        ("", "empty filename"),  # git itself refuses it
        (".git", ".git folder"),
        (".GIT", ".git folder"),
        ("a\\b", "backslash"),
        ("bell\x07", "control character"),
        (b"bad\xff", "not UTF-8"),
    ],
)
def test_an_entry_that_could_leave_its_folder_or_is_odd_is_refused(git, tmp_path, name, why):
    evil = git.blob("print('outside')\n")
    entry = (
        (TREE, git.tree({"evil.py": (FILE, evil)})) if name in ("..", ".", ".git", ".GIT") else (FILE, evil)
    )
    message = refused(git, git.commit({**package(git), name: entry}), tmp_path / "deploy" / "lem-src")
    assert why in message, message
    assert not [p for p in tmp_path.rglob("evil.py")] and not [p for p in tmp_path.rglob("escaped")]


def test_a_submodule_and_a_repeated_entry_are_refused(git, tmp_path):
    message = refused(git, git.commit(package(git, vendored=(GITLINK, "1" * 40))), tmp_path / "a")
    assert "mode 160000" in message
    # a folder listing the same name twice
    lem = git.tree([("dup.py", FILE, git.blob("a\n")), ("dup.py", FILE, git.blob("b\n"))])
    src = git.tree({"lem": (TREE, lem)})
    commit = git.run("commit-tree", git.tree({"src": (TREE, src)}), "-m", "twice")
    assert "is repeated" in refused(git, commit, tmp_path / "b")


@pytest.mark.parametrize(
    ("target", "why"),
    [
        ("sub", "a link to the folder 'src/lem/sub'"),
        ("/etc/passwd", "absolute path"),
        ("../../../../etc/passwd", "leaves the repository"),
        ("missing.py", "does not hold"),
        ("loop", "more than 40 links"),
        ("__init__.py/x", "which is a file, not a folder"),
        ("", "empty link"),
    ],
)
def test_a_link_that_names_no_file_of_the_commit_is_refused(git, tmp_path, target, why):
    lem = package(git, link=(LINK, git.blob(target)), loop=(LINK, git.blob("loop2")),
                  loop2=(LINK, git.blob("loop")))  # fmt: skip
    message = refused(git, git.commit(lem), tmp_path / "lem-src")
    assert "'src/lem/link'" in message and why in message, message


def test_a_half_extracted_tree_is_extracted_again_and_a_complete_one_kept(git, tmp_path):
    commit = git.commit(package(git))
    root = tmp_path / "lem-src"
    half = root / commit / "lem"
    half.mkdir(parents=True)
    (half / "__init__.py").write_text("X = 1\n")  # what an interrupted extraction left: no marker
    tree = extracted_tree(git.dir, commit, root)
    assert set(files(tree)) == {COMPLETE, "lem/__init__.py", "lem/sub/mod.py", "lem/tool.sh"}
    assert sorted(p.name for p in root.iterdir()) == [commit]  # the half tree removed, no temporary left
    (tree / "lem" / "kept").write_text("")  # a complete tree is used as it is ...
    assert extracted_tree(git.dir, commit, root) == tree and (tree / "lem" / "kept").exists()
    (tree / "lem" / "sub" / "mod.py").unlink()  # ... until a file its marker lists is missing
    assert "lem/sub/mod.py" in files(extracted_tree(git.dir, commit, root))
    (tree / COMPLETE).write_text("0" * 40 + "\n")  # a marker of another commit
    assert not (extracted_tree(git.dir, commit, root) / "lem" / "kept").exists()


# --- which `lem` planning imports: the workflow's own code, named ----------------------------------------------


def module_code(git: Git, version: str = "9.8.7") -> tuple[dict, str]:
    """This workflow's code as source.smk reads it for a module from a git repository (`git+file://`, a bare
    repository whose branch main holds a package of `version`), and the commit."""
    core = {"version.py": (FILE, git.blob(f'"""Doc."""\n\n__version__ = "{version}"\n'))}
    commit = git.commit(package(git, core=core))
    git.run("update-ref", "refs/heads/main", commit)
    rules = SimpleNamespace(
        repo_path=str(git.dir), ref="main"
    )  # what Snakemake's git+file:// rules folder holds
    return SOURCE["workflow_code"](rules), commit


def test_a_local_workflows_code_is_its_src_and_a_modules_the_commit_its_ref_names(git):
    local = SOURCE["workflow_code"](REPO / "workflow" / "rules")
    head = subprocess.run(["git", "-C", str(REPO), "rev-parse", "HEAD"], capture_output=True, text=True)
    assert local["folder"] == REPO and local["source"] == REPO.as_uri() and local["git"] is None
    assert local["commit"] == head.stdout.strip() and local["version"] == lem.__version__
    code, commit = module_code(git)
    assert code["commit"] == commit and code["version"] == "9.8.7" and code["folder"] is None
    assert code["git"] == (git.dir, commit) and code["source"] == f"git+{git.dir.as_uri()}@{commit}"


def test_another_lem_stops_planning_in_one_line_naming_both_and_the_opt_in_plans_with_it(
    git, monkeypatch, capsys
):
    """The suite's `lem` (this checkout's src/lem) is not a module's code at another commit: one line naming
    both and the fix; LEM_USE_INSTALLED=1 keeps the importable one, said on stderr."""
    code, commit = module_code(git)
    monkeypatch.delenv("LEM_USE_INSTALLED", raising=False)
    with pytest.raises(WorkflowError) as err:
        SOURCE["use_workflows_own_package"](code)
    message = str(err.value)
    assert len(message.splitlines()) == 1, message
    own = str(Path(lem.__file__).resolve().parent)
    assert f"found {own}" in message and f"lem-pipeline {lem.__version__}" in message
    assert f"src/lem/ of {git.dir.as_uri()} at {commit} (lem-pipeline 9.8.7 at {commit[:12]})" in message
    assert f"lem-pipeline @ git+{git.dir.as_uri()}@{commit}" in message and "LEM_USE_INSTALLED=1" in message
    monkeypatch.setenv("LEM_USE_INSTALLED", "1")
    assert SOURCE["use_workflows_own_package"](code) is None
    warning = capsys.readouterr().err
    assert warning.startswith("warning: LEM_USE_INSTALLED=1: planning and the jobs use the `lem` package at")
    assert own in warning and len(warning.splitlines()) == 1
    # this checkout's own code: nothing said, nothing changed
    assert SOURCE["use_workflows_own_package"](SOURCE["workflow_code"](REPO / "workflow" / "rules")) is None
    assert capsys.readouterr().err == ""


def test_an_install_is_a_modules_own_code_at_its_version_and_commit(git, tmp_path):
    """A package installed from a git URL (pip's direct_url.json names the commit) of the module's version and
    commit is its code; another commit, another version, or none known is not."""
    code, commit = module_code(git)
    site = tmp_path / "site"
    (site / "lem" / "core").mkdir(parents=True)
    (site / "lem" / "__init__.py").write_text("from lem.core.version import __version__\n")
    version = site / "lem" / "core" / "version.py"
    version.write_text('__version__ = "9.8.7"\n')
    found = SOURCE["found_package"](site / "lem")
    assert found["commit"] is None and not SOURCE["is_own"](code, found)  # no commit known
    record = site / "lem_pipeline-9.8.7.dist-info" / "direct_url.json"
    record.parent.mkdir()
    record.write_text(json.dumps({"url": git.dir.as_uri(), "vcs_info": {"vcs": "git", "commit_id": commit}}))
    assert SOURCE["is_own"](code, SOURCE["found_package"](site / "lem"))
    version.write_text('__version__ = "9.8.8"\n')
    assert not SOURCE["is_own"](code, SOURCE["found_package"](site / "lem"))
    version.write_text('__version__ = "9.8.7"\n')
    record.write_text(json.dumps({"vcs_info": {"vcs": "git", "commit_id": "0" * 40}}))
    assert not SOURCE["is_own"](code, SOURCE["found_package"](site / "lem"))
