# Planning needs Snakemake and numpy only: with no `lem` package installed, the workflow imports its own
# source tree (included first, before any `lem` import). Its code is here, not in src/lem, because it is what
# makes src/lem importable.
import importlib.util
import os
import posixpath
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from snakemake.exceptions import WorkflowError
from snakemake.sourcecache import HostingProviderFile, LocalSourceFile

PACKAGE = "src/lem"  # the folder extracted, relative to the repository's root
COMPLETE = ".lem-src-complete"  # written last in an extracted tree: its commit and every file; checked first
FILE_MODES = ("100644", "100755")
LINK_MODE, TREE_MODE = "120000", "040000"
MAX_LINKS = 40  # links followed to reach one file (a loop of links is refused), as the kernel's ELOOP


def package_source_tree(basedir):
    """The folder to import the `lem` package from when none is installed (planning needs Snakemake and numpy
    only): src/ beside workflow/ for a local folder (a clone, a local module); for a module from a git
    host (snakedeploy's `github(...)`), src/lem/ of Snakemake's own clone of the repository at the deployed
    ref, extracted once per commit into .snakemake/lem-src/<commit>/ of the working directory
    (`extracted_tree`).
    """
    if isinstance(basedir, LocalSourceFile):
        return (
            Path(basedir.get_path_or_uri(secret_free=True)).resolve().parents[1] / "src"
        )
    if not isinstance(basedir, HostingProviderFile):
        raise WorkflowError(
            f"no `lem` package installed and no source tree for a module from {basedir}: install it, "
            "pip install --no-deps 'lem-pipeline @ git+<repository URL>@<ref>' (docs/configuration.md)"
        )
    basedir.fetch_if_required()
    repo = basedir.hosted_repo.repo
    commit = repo.commit(basedir.ref).hexsha
    return extracted_tree(repo.git_dir, commit, Path(".snakemake", "lem-src"))


def extracted_tree(git_dir, commit, root):
    """`root`/<commit>/, holding src/lem/ of `commit` in the repository `git_dir` as lem/ (`extract_package`).
    A tree is trusted only when its completion marker, written last, names the commit and its files are all
    there; anything else there (a half-extracted tree) is moved away and extracted again. The extraction is
    written to a temporary folder and renamed into place; a process that loses the race to another uses the
    other's tree."""
    root = Path(root)
    tree = root / commit
    if is_complete(tree, commit):
        return tree
    root.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(dir=root, prefix=f".{commit}."))
    try:
        extract_package(git_dir, commit, tmp)
        # what is there, a half-extracted tree, is set aside and removed
        if os.path.lexists(tree) and not is_complete(tree, commit):
            stale = Path(tempfile.mkdtemp(dir=root, prefix=f".{commit}.stale."))
            try:
                os.rename(tree, stale / "tree")
            except OSError:
                pass  # another process moved it meanwhile
            shutil.rmtree(stale, ignore_errors=True)
        try:
            os.rename(tmp, tree)
        except OSError:  # another Snakemake process extracted the same commit meanwhile
            if not is_complete(tree, commit):
                raise
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return tree


def is_complete(tree, commit):
    """Whether `tree` holds a finished extraction of `commit`: its marker's first line is the commit, and
    every file the marker lists is there."""
    try:
        lines = (Path(tree) / COMPLETE).read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError):
        return False
    return (
        bool(lines)
        and lines[0] == commit
        and all((Path(tree) / rel).is_file() for rel in lines[1:])
    )


def extract_package(git_dir, commit, dest):
    """Write src/lem/ of `commit` into `dest`/lem/, read with git's plumbing (`ls-tree`, `cat-file`), then
    the completion marker. Every entry's path stays inside `dest`: an entry named `..`, `.`, `.git`, empty,
    holding a `\\`, a control character or bytes that are not UTF-8, repeated, or of an odd mode (a
    submodule) is refused, as is a link that is absolute, leaves the repository, names nothing, a folder, or
    loops; a link is written as the file it names (followed through other links), from the same commit.
    Refusals are one line (WorkflowError) naming the commit, the repository and the entry.
    """
    entries, repeated = tree_entries(git_dir, commit)
    prefix = f"{PACKAGE}/"

    def refuse(path, why):
        raise WorkflowError(f"{refusal(git_dir, commit)}: entry {path!r} {why}")

    package = {p: e for p, e in entries.items() if p.startswith(prefix)}
    if entries.get(PACKAGE, ("", "", ""))[0] != TREE_MODE or not package:
        refuse(PACKAGE, "is not a folder of the commit")
    for path in sorted(p for p in repeated if p.startswith(prefix)):
        refuse(path, "is repeated in its folder")
    kinds = {(m, "blob") for m in (*FILE_MODES, LINK_MODE)} | {(TREE_MODE, "tree")}
    for path, (mode, kind, _) in sorted(package.items()):
        problem = odd_path(path[len(prefix) :])
        if problem is None and (mode, kind) not in kinds:
            problem = f"has mode {mode} ({kind}): neither a file, a link nor a folder"
        if problem:
            refuse(path, problem)
    blobs = BlobReader(git_dir, commit)
    blobs.read(
        o for m, _, o in entries.values() if m == LINK_MODE
    )  # every link's target, in one call
    files = {}  # path inside `dest` -> the object id of the file written there
    for path, (mode, kind, oid) in sorted(package.items()):
        if kind == "tree":
            continue
        if mode == LINK_MODE:
            target, problem = follow_link(entries, repeated, blobs, path)
            if problem:
                refuse(path, problem)
            oid = entries[target][2]
        files[f"lem/{path[len(prefix) :]}"] = oid
    dest = Path(dest).absolute()
    data = blobs.read(files.values())
    for rel, oid in sorted(files.items()):
        out = dest / rel
        if os.path.commonpath([dest, out]) != str(dest):
            refuse(rel, "leaves the extraction folder")
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_bytes(data[oid])
    (dest / COMPLETE).write_text(
        "\n".join([commit, *sorted(files)]) + "\n", encoding="utf-8"
    )


def odd_path(rel):
    """Why a path inside the package cannot be written as it is, or None."""
    for part in rel.split("/"):
        if part in ("", ".", ".."):
            return f"has a component {part!r} (a path must stay inside its folder)"
        if part.lower() == ".git":
            return "names a .git folder"
        if any(
            c == "\\" or ord(c) < 32 or ord(c) == 127 or 0xDC80 <= ord(c) <= 0xDCFF
            for c in part
        ):
            return "holds a backslash, a control character or bytes that are not UTF-8"
    return None


def follow_link(entries, repeated, blobs, path):
    """(the repository path of the file that the link at `path` names, through any links on the way, None),
    or (None, why not). A link's target is read relative to the link's folder, as the file system does.
    """
    parts = path.split("/")[:-1]
    todo, problem = link_target(entries, blobs, path)
    hops = 1
    while todo and problem is None:
        part = todo.pop(0)
        if part in ("", "."):
            continue
        if part == "..":
            if not parts:
                return None, "is a link that leaves the repository"
            parts.pop()
            continue
        here = "/".join([*parts, part])
        if here not in entries or here in repeated:
            return None, f"is a link to {here!r}, which the commit does not hold once"
        mode, kind, _ = entries[here]
        if mode == LINK_MODE:
            hops += 1
            if hops > MAX_LINKS:
                return (
                    None,
                    f"is a link that goes through more than {MAX_LINKS} links (a loop)",
                )
            more, problem = link_target(entries, blobs, here)
            todo = more + todo
            continue
        parts.append(part)
        if kind == "tree":
            continue
        if mode not in FILE_MODES:
            return None, f"is a link to {here!r}, of mode {mode}: not a file"
        if todo:
            return None, f"is a link through {here!r}, which is a file, not a folder"
        return here, None
    folder = posixpath.join(*parts) if parts else "."
    return None, problem or f"is a link to the folder {folder!r}, not to a file"


def link_target(entries, blobs, path):
    """(a link's target as path components, None), or ([], why it cannot be followed)."""
    oid = entries[path][2]
    text = blobs.read([oid])[oid].decode("utf-8", "surrogateescape")
    if not text:
        return [], "is an empty link"
    if text.startswith("/"):
        return [], f"is a link to the absolute path {text!r}"
    return text.split("/"), None


def refusal(git_dir, commit):
    """How every refusal of an extraction starts."""
    return f"refused to extract {PACKAGE}/ of commit {commit} from {git_dir}"


def git(git_dir, commit, *args, stdin=None):
    """A git plumbing command in the repository `git_dir` (no GIT_* variable of the caller's); a failure (git
    itself refuses some crafted trees) is a refusal of `commit`."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    try:
        proc = subprocess.run(
            ["git", "--git-dir", str(git_dir), *args],
            input=stdin,
            capture_output=True,
            env=env,
        )
    except OSError as err:
        raise WorkflowError(
            f"{refusal(git_dir, commit)}: git is needed ({err})"
        ) from None
    if proc.returncode != 0:
        message = proc.stderr.decode("utf-8", "replace").strip().splitlines()
        raise WorkflowError(
            f"{refusal(git_dir, commit)}: git {args[0]} failed: "
            f"{message[-1] if message else proc.returncode}"
        )
    return proc.stdout


def tree_entries(git_dir, commit):
    """Every entry of `commit`'s tree, folders too: repository path -> (mode, kind, object id); and the paths
    that a crafted tree holds more than once."""
    out = git(git_dir, commit, "ls-tree", "-r", "-t", "-z", "--full-tree", commit)
    entries, repeated = {}, set()
    for record in out.split(b"\0"):
        if not record:
            continue
        meta, _, name = record.partition(b"\t")
        mode, kind, oid = meta.decode("ascii").split(" ")
        path = name.decode("utf-8", "surrogateescape")
        if path in entries:
            repeated.add(path)
        entries.setdefault(path, (mode.rjust(6, "0"), kind, oid))
    return entries, repeated


class BlobReader:
    """Blobs of a repository read with `git cat-file --batch`, each once."""

    def __init__(self, git_dir, commit):
        self.git_dir, self.commit = git_dir, commit
        self.cache = {}

    def read(self, oids):
        oids = list(oids)
        wanted = sorted(set(oids) - set(self.cache))
        if wanted:
            stdin = "".join(f"{o}\n" for o in wanted).encode()
            out = git(self.git_dir, self.commit, "cat-file", "--batch", stdin=stdin)
            at = 0
            for oid in wanted:
                end = out.index(b"\n", at)
                header = out[at:end].decode("ascii").split(" ")
                if len(header) != 3 or header[1] != "blob":
                    raise WorkflowError(
                        f"{refusal(self.git_dir, self.commit)}: object {oid} is not a blob "
                        f"({' '.join(header)})"
                    )
                size = int(header[2])
                self.cache[oid] = out[end + 1 : end + 1 + size]
                at = end + 1 + size + 1
        return {o: self.cache[o] for o in oids}


if importlib.util.find_spec("lem") is None:
    sys.path.insert(0, str(package_source_tree(workflow.current_basedir)))
