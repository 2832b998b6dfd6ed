# Which `lem` package planning imports and the jobs run: the workflow's own, named (docs/troubleshooting.md).
# Included first, before any `lem` import. Its code is here, not in src/lem, because it decides which src/lem
# is imported; it reads Snakemake's documented `workflow.current_basedir` (and, for a module from a git
# repository, Snakemake's clone of it in one function, `module_repository`).
#
# - This workflow's code (`workflow_code`): a local folder's src/ (a clone, a local module), or a module's git
#   repository at the commit its ref names (`github(...)`, `git+file://`), with its version.
# - No `lem` importable (Snakemake and numpy alone): that code is imported, src/ of the folder or src/lem/
#   extracted at the module's commit into .snakemake/lem-src/<commit>/ (`extracted_tree`).
# - A `lem` importable that is not that code (another clone's, another version or commit): planning stops in
#   one line naming both and how to fix it, unless LEM_USE_INSTALLED=1 (`use_workflows_own_package`).
# The jobs run the same package (lem.run.job_env, called by common.smk); the rules' environments install this
# code, named by its version and commit (lem.run.envs).
import importlib.util
import json
import os
import posixpath
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from snakemake.exceptions import WorkflowError

PACKAGE = "src/lem"  # the package's folder, relative to the repository's root
COMPLETE = ".lem-src-complete"  # written last in an extracted tree: its commit and every file; checked first
FILE_MODES = ("100644", "100755")
LINK_MODE, TREE_MODE = "120000", "040000"
MAX_LINKS = 40  # links followed to reach one file (a loop of links is refused), as the kernel's ELOOP
OPT_IN = "LEM_USE_INSTALLED"  # =1: plan and run with whatever `lem` is importable
# a module's src/lem/ per commit, in the working directory
EXTRACTED = Path(".snakemake", "lem-src")
# where lem/ writes its `__version__` (the first that holds it)
VERSION_FILES = ("core/version.py", "__init__.py")


def local_folder(basedir):
    """The folder `basedir` (`workflow.current_basedir`) is on this machine, resolved; None for a module read
    from a git repository, which is no path (`os.fspath` refuses it)."""
    try:
        return Path(os.fspath(basedir)).resolve()
    except TypeError:
        return None


def workflow_code(basedir):
    """This workflow's own code, for its rules' folder `basedir` (`workflow.current_basedir`), as a dict:
    `source` (what its environments install: `file://` of its folder, or `git+<URL>@<commit>`), `folder` (the
    local folder holding src/, or None), `git` ((git folder, commit) of a module's repository, or None),
    `version` (the package's `__version__`, `version_of`), `commit` (None: a folder outside git) and `where` (its
    package, as a message names it)."""
    folder = local_folder(basedir)
    if folder is not None:
        root = folder.parents[1]
        commit, _ = checkout_commit(root, dirty=False)
        return {
            "source": root.as_uri(),
            "folder": root,
            "git": None,
            "version": version_of(folder_reader(root / PACKAGE)),
            "commit": commit,
            "where": str(root / PACKAGE),
        }
    git_dir, ref, url = module_repository(basedir)
    out = git(
        git_dir, ref, "rev-parse", "--verify", "--end-of-options", f"{ref}^{{commit}}"
    )
    commit = out.decode("ascii").strip()
    return {
        "source": f"git+{url}@{commit}",
        "folder": None,
        "git": (git_dir, commit),
        "version": version_of(commit_reader(git_dir, commit)),
        "commit": commit,
        "where": f"{PACKAGE}/ of {url} at {commit}",
    }


def module_repository(basedir):
    """(the git folder, the ref, the repository's URL) of a module read from a git repository: `github(...)`
    or `gitlab(...)` (Snakemake's bare clone, fetched when the ref is not in it) or `git+file://`.

    The one use of Snakemake's internals in this workflow (checked at snakemake 9.27.1): Snakemake documents no
    call that gives a module's repository or the commit its ref stands at; `workflow.source_path` gives single
    files, no folder's listing and no commit, and the package is a folder. Everything else is git's plumbing on
    that folder. A Snakemake whose internals differ is said in one line with what to do instead.
    """
    try:
        if hasattr(basedir, "hosted_repo"):  # github(...), gitlab(...)
            basedir.fetch_if_required()
            return (
                Path(basedir.hosted_repo.repo.git_dir),
                basedir.ref,
                f"https://{basedir.host}/{basedir.repo}",
            )
        if hasattr(basedir, "repo_path"):  # git+file://<repository>/<path>@<ref>
            repo = Path(basedir.repo_path).absolute()
            dot_git = repo / ".git"
            return dot_git if dot_git.is_dir() else repo, basedir.ref, repo.as_uri()
    except AttributeError:
        pass
    raise WorkflowError(
        f"cannot read the `lem` package of the module {basedir}: install it at the module's commit, "
        "pip install --no-deps 'lem-pipeline @ git+<repository URL>@<commit>', and plan with "
        f"{OPT_IN}=1 (docs/troubleshooting.md)"
    )


def version_of(read):
    """The package's `__version__`, from the first of VERSION_FILES that `read(path inside lem/)` (bytes, or
    None when missing) holds it in, or None."""
    for rel in VERSION_FILES:
        text = read(rel)
        found = text and re.search(
            rb"""^__version__\s*=\s*["']([^"']+)["']""", text, re.M
        )
        if found:
            return found.group(1).decode("utf-8", "replace")
    return None


def folder_reader(folder):
    """`read` for `version_of`: a file of the package folder `folder`."""
    return lambda rel: (folder / rel).read_bytes() if (folder / rel).is_file() else None


def commit_reader(git_dir, commit):
    """`read` for `version_of`: a file of src/lem/ at `commit` (None: not in the commit)."""

    def read(rel):
        out = git(
            git_dir,
            commit,
            "cat-file",
            "--batch",
            stdin=f"{commit}:{PACKAGE}/{rel}\n".encode(),
        )
        header, _, rest = out.partition(b"\n")
        parts = header.split(b" ")
        if len(parts) != 3 or parts[1] != b"blob":
            return None
        return rest[: int(parts[2])]

    return read


def checkout_commit(folder, dirty=True):
    """(the commit, whether files under `folder` differ from it: with `dirty`, else None) when `folder` is the
    root of a git checkout or its `src/lem`, else (None, None)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}

    def run(*args):
        try:
            proc = subprocess.run(
                ["git", "-C", str(folder), *args], capture_output=True, env=env
            )
        except OSError:
            return None
        return (
            proc.stdout.decode("utf-8", "surrogateescape")
            if proc.returncode == 0
            else None
        )

    out = run("rev-parse", "--show-toplevel", "--verify", "HEAD")
    if out is None or len(out.splitlines()) != 2:
        return None, None
    top, commit = out.splitlines()
    top = Path(top).resolve()
    if Path(folder).resolve() not in (top, (top / PACKAGE).resolve()):
        # a folder inside another repository (an environment in a clone's .venv)
        return None, None
    status = (
        run("status", "--porcelain", "--untracked-files=no", "--", ".")
        if dirty
        else None
    )
    return commit, None if status is None else bool(status.strip())


def found_folder(spec):
    """The folder of the importable `lem` package (its import spec), resolved."""
    if spec.origin:
        return Path(spec.origin).parent.resolve()
    # a namespace package (a folder without __init__.py)
    return Path(list(spec.submodule_search_locations)[0]).resolve()


def found_package(folder):
    """The `lem` package in `folder` as a dict: `folder`, `version`, `commit` and `dirty` (a checkout's, or an
    install's from a git URL as pip records it in direct_url.json; None when unknown).
    """
    found = {"folder": folder, "version": version_of(folder_reader(folder))}
    found["commit"], found["dirty"] = checkout_commit(folder)
    if found["commit"] is None:  # an install: a git URL's commit, as pip recorded it
        for record in sorted(
            folder.parent.glob("lem_pipeline-*.dist-info/direct_url.json")
        ):
            try:
                vcs = json.loads(record.read_text(encoding="utf-8")).get("vcs_info", {})
            except (OSError, ValueError, AttributeError):
                continue
            found["commit"] = vcs.get("commit_id") if isinstance(vcs, dict) else None
    return found


def describe(version, commit, dirty=None):
    """`lem-pipeline 0.1.0 at 1a2b3c4d5e6f` (`with uncommitted edits`; `, no commit known`)."""
    text = f"lem-pipeline {version or '(no version)'}"
    text += f" at {commit[:12]}" if commit else ", no commit known"
    return text + (" with uncommitted edits" if dirty else "")


def is_own(code, found):
    """Whether the package `found` is this workflow's code `code`: its src/lem itself for a local folder; for
    a module, a package of the same version at the same commit, with no uncommitted edits.
    """
    if code["folder"] is not None:
        return found["folder"] == (code["folder"] / PACKAGE).resolve()
    return (
        found["version"] == code["version"]
        and found["commit"] == code["commit"]
        and not found["dirty"]
    )


def not_own(code, found):
    """The one line that says the importable `lem` is not this workflow's, and how to fix it."""
    pythonpath = os.environ.get("PYTHONPATH", "").split(os.pathsep)
    on_pythonpath = any(
        p and Path(p).resolve() == found["folder"].parent for p in pythonpath
    )
    text = (
        f"the importable `lem` package is not this workflow's own: found {found['folder']}"
        f"{' (on PYTHONPATH)' if on_pythonpath else ''} "
        f"({describe(found['version'], found['commit'], found['dirty'])}); this workflow's is "
        f"{code['where']} ({describe(code['version'], code['commit'])}). "
    )
    if on_pythonpath and code["folder"] is not None:
        fix = "Take it off PYTHONPATH"
    elif code["folder"] is not None:
        fix = (
            f"Install this clone into the Python that runs Snakemake ({sys.executable} -m pip install -e "
            f"{code['folder']})"
        )
        venv = code["folder"] / ".venv" / "bin"
        if (venv / "snakemake").is_file() and Path(
            sys.executable
        ).parent.absolute() != venv:
            fix += f" or run the clone's own environment's Snakemake ({venv / 'snakemake'})"
    else:
        fix = (
            f"Install the module's commit ({sys.executable} -m pip install --no-deps 'lem-pipeline @ "
            f"{code['source']}') or "
            + (
                "take the one found off PYTHONPATH"
                if on_pythonpath
                else "uninstall the one found"
            )
            + " (the workflow then imports its own source)"
        )
    return (
        text
        + fix
        + f"; {OPT_IN}=1 plans and runs with the one found (docs/troubleshooting.md)"
    )


def use_workflows_own_package(code):
    """Make `lem` import this workflow's code `code` (`workflow_code`): when no `lem` is importable, the
    folder that holds it goes first on sys.path (its path returned, for the jobs: lem.run.job_env); an
    importable one that is not it stops planning in one line (`not_own`), unless LEM_USE_INSTALLED=1 (then it
    is said on stderr, and planning and the jobs use it)."""
    spec = importlib.util.find_spec("lem")
    if spec is None:
        if code["folder"] is not None:
            folder = code["folder"] / "src"
        else:
            folder = extracted_tree(*code["git"], EXTRACTED).absolute()
        sys.path.insert(0, str(folder))
        return str(folder)
    folder = found_folder(spec)
    if code["folder"] is not None and folder == (code["folder"] / PACKAGE).resolve():
        return None  # this folder's src/lem
    if (
        code["git"] is not None
        and folder == (EXTRACTED / code["commit"] / "lem").resolve()
    ):
        return None  # the module's own, extracted by an earlier load (a SLURM job's PYTHONPATH)
    found = found_package(folder)
    if is_own(code, found):
        return None
    message = not_own(code, found)
    if os.environ.get(OPT_IN) != "1":
        raise WorkflowError(message)
    print(
        f"warning: {OPT_IN}=1: planning and the jobs use the `lem` package at {found['folder']} "
        f"({describe(found['version'], found['commit'], found['dirty'])}), not this workflow's own "
        f"{code['where']}",
        file=sys.stderr,
    )
    return None


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


# This workflow's code, and the folder `lem` is imported from when none was importable (for the jobs: common.smk)
WORKFLOW_CODE = workflow_code(workflow.current_basedir)
LEM_SOURCE_PATH = use_workflows_own_package(WORKFLOW_CODE)
