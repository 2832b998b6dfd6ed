# Which `lem` package planning imports and the jobs run: the workflow's own, named (docs/troubleshooting.md).
# Included first, before any `lem` import. Its code is here, not in src/lem, because it decides which src/lem
# is imported. It reads Snakemake's documented `workflow.current_basedir` and `workflow.source_path` only.
#
# - This workflow's code (`workflow_code`): a local folder's src/ (a clone, a local module), named by its version
#   and commit; or, for a module from a git repository (`github(...)`, `git+file://`), its package read file by
#   file through `workflow.source_path` as the repository's workflow/package-files.txt lists it (each file checked
#   against its sha256) into .snakemake/lem-src/<digest>/ (`module_package`), named by its version and that
#   list's digest (Snakemake documents no way to learn the commit a module's ref stands at).
# - No `lem` importable (Snakemake and numpy alone): that code is imported (its src/ goes first on sys.path).
# - A `lem` importable that is not that code (another clone's, another version, other files): planning stops in
#   one line naming both and how to fix it, unless LEM_USE_INSTALLED=1 (`use_workflows_own_package`).
# The jobs run the same package (lem.run.job_env, called by common.smk); the rules' environments install this
# code from its folder, named by its version and commit or digest (lem.run.envs).
import hashlib
import importlib.util
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from snakemake.exceptions import WorkflowError

PACKAGE = "src/lem"  # the package's folder, relative to the repository's root
PACKAGE_FILES = "workflow/package-files.txt"  # the package's files and their sha256 (lem.run.envs writes it)
COMPLETE = ".lem-src-complete"  # written last in a module's package folder: its digest and every file; checked first
OPT_IN = "LEM_USE_INSTALLED"  # =1: plan and run with whatever `lem` is importable
# a module's package per digest of its file list, in the working directory
EXTRACTED = Path(".snakemake", "lem-src")
# where lem/ writes its `__version__` (the first that holds it)
VERSION_FILES = ("core/version.py", "__init__.py")
SHA256 = re.compile(r"[0-9a-f]{64}")


def local_folder(basedir):
    """The folder `basedir` (`workflow.current_basedir`) is on this machine, resolved; None for a module read
    from a git repository, which is no path (`os.fspath` refuses it)."""
    try:
        return Path(os.fspath(basedir)).resolve()
    except TypeError:
        return None


def workflow_code(basedir, read_module_file):
    """This workflow's code, for its rules' folder `basedir` (`workflow.current_basedir`), as a dict: `folder`
    (the folder holding pyproject.toml and src/: a clone's, or a module's package read into
    .snakemake/lem-src/<digest>/), `source` (what its environments install: `file://` of that folder), `version`
    (the package's `__version__`, `version_of`), `commit` (a local folder's; None outside git and for a module),
    `files` (a module's package files: path -> sha256; None for a local folder), `digest` (a module's: the
    sha256 of its file list) and `where` (its package, as a message names it). `read_module_file(path)` reads a
    file of a module's repository (`module_file_reader`)."""
    folder = local_folder(basedir)
    if folder is not None:
        root = folder.parents[1]
        commit, _ = checkout_commit(root, dirty=False)
        return {
            "source": root.as_uri(),
            "folder": root,
            "version": version_of(folder_reader(root / PACKAGE)),
            "commit": commit,
            "files": None,
            "digest": None,
            "where": str(root / PACKAGE),
        }
    tree, files, digest = module_package(read_module_file, EXTRACTED)
    return {
        "source": tree.as_uri(),
        "folder": tree,
        "version": version_of(folder_reader(tree / PACKAGE)),
        "commit": None,
        "files": files,
        "digest": digest,
        "where": f"{tree / PACKAGE} (the module's package, read through workflow.source_path)",
    }


def module_file_reader(source_path):
    """`read(path)` for `workflow_code`: the bytes of a file of this workflow's repository, `path` relative to
    its root, through Snakemake's documented `workflow.source_path` (given as `source_path`; relative to this
    file, workflow/rules/). A file Snakemake cannot read is said in one line."""

    def read(rel):
        try:
            with open(source_path(f"../../{rel}"), "rb") as f:
                return f.read()
        except (OSError, WorkflowError) as err:
            reason = " ".join(str(err).split())[:300]
            raise WorkflowError(
                f"cannot read {rel} of the module's repository through workflow.source_path: {reason}"
            ) from None

    return read


def parse_package_files(text):
    """{path: (sha256 or None: read as it is, build metadata; the repository's path to read it from)} from
    PACKAGE_FILES's text (`<sha256>  <path>`, `<sha256>  <path>  <- <from>` for a link, `-  <path>`). A line
    of another form, a path that could leave its folder, repeated, or outside pyproject.toml, README.md and
    src/lem/, and a list without pyproject.toml and src/lem/__init__.py, are refused in one line naming the
    line."""
    files = {}
    for number, line in enumerate(text.splitlines(), 1):
        if not line.strip() or line.startswith("#"):
            continue
        digest, sep, rest = line.partition("  ")
        rel, arrow, source = rest.partition("  <- ")
        source = source if arrow else rel
        problem = None
        if not sep or not (digest == "-" or SHA256.fullmatch(digest)):
            problem = "is not `<sha256>  <path>`, `<sha256>  <path>  <- <path>` or `-  <path>`"
        elif rel not in ("pyproject.toml", "README.md") and not rel.startswith(
            f"{PACKAGE}/"
        ):
            problem = f"names {rel!r}, outside pyproject.toml, README.md and {PACKAGE}/"
        elif rel in files:
            problem = f"repeats {rel!r}"
        else:
            problem = odd_path(rel) or odd_path(source)
        if problem:
            raise WorkflowError(
                f"{PACKAGE_FILES} of the module's repository, line {number}: {problem}"
            )
        files[rel] = (None if digest == "-" else digest, source)
    for needed in ("pyproject.toml", f"{PACKAGE}/__init__.py"):
        if files.get(needed, (None,))[0] is None:
            raise WorkflowError(
                f"{PACKAGE_FILES} of the module's repository lists no sha256 of {needed}"
            )
    return files


def files_digest(files):
    """The sha256 naming a package's file list (`parse_package_files`), whatever the list's comments."""
    text = "".join(
        f"{files[rel][0] or '-'}  {rel}  <- {files[rel][1]}\n" for rel in sorted(files)
    )
    return hashlib.sha256(text.encode()).hexdigest()


def checked_bytes(rel, data, want):
    """`data`, the bytes of `rel` as Snakemake read them, when their sha256 is `want` (None: any). Snakemake
    reads a file of a git host through GitPython, which drops the file's last newline: bytes whose sha256 is
    `want` once a newline is added are given with it. Anything else is refused in one line.
    """
    if want is None or hashlib.sha256(data).hexdigest() == want:
        return data
    if hashlib.sha256(data + b"\n").hexdigest() == want:
        return data + b"\n"
    raise WorkflowError(
        f"{rel} of the module's repository is not the file its {PACKAGE_FILES} lists (sha256 "
        f"{hashlib.sha256(data).hexdigest()}, listed {want}): the list is stale at that commit "
        "(python scripts/package_files.py writes it)"
    )


def module_package(read, root):
    """(the folder `root`/<digest>/ holding a module's package, its files, the digest): the repository's
    PACKAGE_FILES read with `read(path)`, then, unless a complete folder of that digest is there, every file it
    lists, checked (`checked_bytes`), written to a temporary folder and renamed into place (a half-written folder
    is moved away and written again; a process that loses the race to another uses the other's folder).
    """
    files = parse_package_files(read(PACKAGE_FILES).decode("utf-8", "replace"))
    digest = files_digest(files)
    root = Path(root).absolute()
    tree = root / digest
    if is_complete(tree, digest):
        return tree, files, digest
    root.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(dir=root, prefix=f".{digest}."))
    try:
        for rel in sorted(files):
            out = tmp / rel
            out.parent.mkdir(parents=True, exist_ok=True)
            want, source = files[rel]
            out.write_bytes(checked_bytes(source, read(source), want))
        (tmp / COMPLETE).write_text(
            "\n".join([digest, *sorted(files)]) + "\n", encoding="utf-8"
        )
        if os.path.lexists(tree) and not is_complete(tree, digest):
            stale = Path(tempfile.mkdtemp(dir=root, prefix=f".{digest}.stale."))
            try:
                os.rename(tree, stale / "tree")
            except OSError:
                pass  # another process moved it meanwhile
            shutil.rmtree(stale, ignore_errors=True)
        try:
            os.rename(tmp, tree)
        except OSError:  # another Snakemake process wrote the same package meanwhile
            if not is_complete(tree, digest):
                raise
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return tree, files, digest


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
    """The `lem` package in `folder` as a dict: `folder`, `version`, and `commit` and `dirty` when it is a git
    checkout's src/lem (else None)."""
    found = {"folder": folder, "version": version_of(folder_reader(folder))}
    found["commit"], found["dirty"] = checkout_commit(folder)
    return found


def describe(version, commit, dirty=None, digest=None):
    """`lem-pipeline 0.1.0 at 1a2b3c4d5e6f` (`with uncommitted edits`), `lem-pipeline 0.1.0, files sha256
    1a2b3c4d5e6f` (a module's package, by its file list's digest), or `..., no commit known`.
    """
    text = f"lem-pipeline {version or '(no version)'}"
    if commit:
        text += f" at {commit[:12]}"
    elif digest:
        text += f", files sha256 {digest[:12]}"
    else:
        text += ", no commit known"
    return text + (" with uncommitted edits" if dirty else "")


def same_files(files, folder):
    """Whether the package folder `folder` (a `lem/`) holds a module's package `files` (`parse_package_files`):
    every listed module and data file there with the listed bytes (a file pip does not install, not a module
    and absent, aside)."""
    for rel, (want, _) in files.items():
        if want is None or not rel.startswith(f"{PACKAGE}/"):
            continue
        path = Path(folder) / rel[len(PACKAGE) + 1 :]
        if not path.is_file():
            if rel.endswith(".py"):
                return False
            continue
        if hashlib.sha256(path.read_bytes()).hexdigest() != want:
            return False
    return True


def is_own(code, found):
    """Whether the package `found` is this workflow's code `code`: its src/lem itself for a local folder; for
    a module, a package holding the module's files (`same_files`: an install of them, or a checkout of them).
    """
    if code["files"] is None:
        return found["folder"] == (code["folder"] / PACKAGE).resolve()
    return same_files(code["files"], found["folder"])


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
        f"{code['where']} ({describe(code['version'], code['commit'], digest=code['digest'])}). "
    )
    if on_pythonpath:
        fix = "Take it off PYTHONPATH"
    else:
        fix = (
            f"Install this workflow's package into the Python that runs Snakemake ({sys.executable} -m pip "
            + ("install -e " if code["files"] is None else "install --no-deps ")
            + f"{code['folder']})"
        )
        venv = code["folder"] / ".venv" / "bin"
        if (
            code["files"] is None
            and (venv / "snakemake").is_file()
            and Path(sys.executable).parent.absolute() != venv
        ):
            fix += f" or run the clone's own environment's Snakemake ({venv / 'snakemake'})"
        if code["files"] is not None:
            fix += " or uninstall the one found (the workflow then imports its own package)"
    return (
        text
        + fix
        + f"; {OPT_IN}=1 plans and runs with the one found (docs/troubleshooting.md)"
    )


def use_workflows_own_package(code):
    """Make `lem` import this workflow's code `code` (`workflow_code`): when no `lem` is importable, the src/
    folder that holds it goes first on sys.path (its path returned, for the jobs: lem.run.job_env); an
    importable one that is not it stops planning in one line (`not_own`), unless LEM_USE_INSTALLED=1 (then it
    is said on stderr, and planning and the jobs use it)."""
    spec = importlib.util.find_spec("lem")
    if spec is None:
        folder = code["folder"] / "src"
        sys.path.insert(0, str(folder))
        return str(folder)
    folder = found_folder(spec)
    if folder == (code["folder"] / PACKAGE).resolve():
        return None  # this workflow's own src/lem (for a module: its package folder, a SLURM job's PYTHONPATH)
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


def is_complete(tree, digest):
    """Whether `tree` holds a finished package folder of `digest`: its marker's first line is the digest, and
    every file the marker lists is there."""
    try:
        lines = (Path(tree) / COMPLETE).read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError):
        return False
    return (
        bool(lines)
        and lines[0] == digest
        and all((Path(tree) / rel).is_file() for rel in lines[1:])
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


# This workflow's code, and the folder `lem` is imported from when none was importable (for the jobs: common.smk)
WORKFLOW_CODE = workflow_code(
    workflow.current_basedir, module_file_reader(workflow.source_path)
)
LEM_SOURCE_PATH = use_workflows_own_package(WORKFLOW_CODE)
