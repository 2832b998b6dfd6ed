"""Every metrics file names the code it ran: lem's version and the commit of the checkout it came from."""

import subprocess
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
