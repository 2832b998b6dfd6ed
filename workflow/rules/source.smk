# Planning needs Snakemake and numpy only: with no `lem` package installed, the workflow imports its own
# source tree (included first, before any `lem` import). Its code is here, not in src/lem, because it is what
# makes src/lem importable.
import importlib.util
import os
import shutil
import sys
import tempfile
from pathlib import Path

from snakemake.exceptions import WorkflowError
from snakemake.sourcecache import HostingProviderFile, LocalSourceFile


def package_source_tree(basedir):
    """The folder to import the `lem` package from when none is installed (planning needs Snakemake and numpy
    only): src/ beside workflow/ for a local folder (a clone, a local module); for a module from a git
    host (snakedeploy's `github(...)`), src/lem/ of Snakemake's own clone of the repository at the deployed
    ref, extracted once per commit into .snakemake/lem-src/<commit>/ of the working directory (written to a
    temporary folder and renamed into place; a link in the tree is written as the file it points to).
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
    commit = basedir.hosted_repo.repo.commit(basedir.ref)
    tree = Path(".snakemake", "lem-src", commit.hexsha)
    if not (tree / "lem").is_dir():
        tree.parent.mkdir(parents=True, exist_ok=True)
        tmp = Path(tempfile.mkdtemp(dir=tree.parent, prefix=f".{commit.hexsha}."))
        for blob in (commit.tree / "src" / "lem").traverse():
            if blob.type != "blob":
                continue
            data = blob.data_stream.read()
            # a symbolic link: the file it points to, from the same commit
            if blob.mode == 0o120000:
                target = os.path.normpath(
                    os.path.join(os.path.dirname(blob.path), data.decode())
                )
                data = (commit.tree / target).data_stream.read()
            out = tmp / os.path.relpath(blob.path, "src")
            out.parent.mkdir(parents=True, exist_ok=True)
            out.write_bytes(data)
        try:
            os.rename(tmp, tree)
        except OSError:  # another Snakemake process extracted the same commit meanwhile
            if not (tree / "lem").is_dir():
                raise
            shutil.rmtree(tmp, ignore_errors=True)
    return tree


if importlib.util.find_spec("lem") is None:
    sys.path.insert(0, str(package_source_tree(workflow.current_basedir)))
