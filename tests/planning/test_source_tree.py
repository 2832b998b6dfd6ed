"""workflow/rules/source.smk's extraction of src/lem/ from a module's git repository (what a deployed module
plans with when no `lem` is installed), on crafted commits made with git's plumbing (`hash-object`, a tree's
raw bytes, `commit-tree`): every path stays inside the extraction folder, a link is written as the file it names
or refused, and a half-extracted tree is extracted again. The whole deployment: tests/dag/test_planning_env.py."""

from __future__ import annotations

import os
import runpy
import subprocess
from pathlib import Path

import pytest
from snakemake.exceptions import WorkflowError

REPO = Path(__file__).resolve().parents[2]
SOURCE = runpy.run_path(str(REPO / "workflow" / "rules" / "source.smk"))  # `lem` is installed: defines only
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
