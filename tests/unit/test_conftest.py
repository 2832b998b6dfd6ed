"""The test session's own set-up: required packages are checked by name, the device is pinned, and a test's
tier is the folder of its file: a test that cannot be in its folder fails, naming the folder it belongs in
(run here on a small suite of its own, laid out beside a copy of tests/conftest.py and tests/support/)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from collections import Counter
from pathlib import Path

from conftest import TESTS, folder_tier, missing_required_packages


def test_a_missing_required_package_is_named(tmp_path):
    (tmp_path / "pyproject.toml").write_text(
        '[project]\nname = "x"\ndependencies = ["numpy==2.4.6", "no-such-package-lem==1.0", "pyyaml>=6"]\n',
        encoding="utf-8",
    )
    assert missing_required_packages(tmp_path / "pyproject.toml") == ["no-such-package-lem==1.0"]


def test_the_project_requirements_are_installed():
    assert missing_required_packages() == []


def test_tests_see_no_gpu_unless_asked():
    import torch

    if os.environ.get("LEM_TEST_DEVICE", "cpu") == "cpu":
        assert os.environ["CUDA_VISIBLE_DEVICES"] == "" and not torch.cuda.is_available()


def test_every_test_file_is_in_the_folder_of_its_tier_and_named_once():
    files = sorted(TESTS.rglob("test_*.py"))
    assert files and [f for f in files if folder_tier(f) is None] == []
    twice = [name for name, n in Counter(f.name for f in files).items() if n > 1]
    assert twice == [], "a test file's name is its module's: one per suite"  # pytest's rootdir imports


# A small suite laid out as this one: one test in its right folder, and one of each kind of misplaced test.
SMALL_SUITE = {
    "dag/test_right.py": "def test_right():\n    pass\n",
    "unit/test_reads_the_shared_dag.py": "def test_reads_the_shared_dag(dag_reference):\n    pass\n",
    "planning/test_reads_real_data.py": "def test_reads_real_data(shared_data):\n    pass\n",
    "unit/test_marked.py": "import pytest\n\n\n@pytest.mark.slow\ndef test_marked():\n    pass\n",
    "test_in_no_folder.py": "def test_in_no_folder():\n    pass\n",
    "unit/test_runs_jobs.py": (
        "from support.dag import snakemake\n\n\ndef test_runs_jobs(tmp_path):\n"
        "    snakemake(tmp_path, '--cores', '1', config=None)\n"
    ),
}


def run_small_suite(root: Path, *args: str) -> str:
    tests = root / "tests"
    if not (tests / "conftest.py").exists():
        shutil.copytree(
            TESTS / "support",
            tests / "support",
            ignore=shutil.ignore_patterns("__pycache__"),
            dirs_exist_ok=True,
        )
        shutil.copy(TESTS / "conftest.py", tests / "conftest.py")
        shutil.copy(TESTS.parent / "pyproject.toml", root / "pyproject.toml")
        for name, text in SMALL_SUITE.items():
            (tests / name).parent.mkdir(parents=True, exist_ok=True)
            (tests / name).write_text(text, encoding="utf-8")
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q", "-rA", *args],
        capture_output=True, text=True, cwd=root, timeout=300,
    )  # fmt: skip
    return proc.stdout + proc.stderr


def test_a_test_that_cannot_be_in_its_folder_fails_naming_the_folder_it_belongs_in(tmp_path):
    out = run_small_suite(tmp_path, "--all")
    assert "PASSED tests/dag/test_right.py::test_right" in out, out
    for line in (
        "uses the fixture `dag_reference` (the shared whole DAG): it belongs in tests/dag/, not tests/unit/",
        "uses the fixture `shared_data` (the real data of ../shared/data): it belongs in tests/realdata/, not "
        "tests/planning/",
        "test_marked.py::test_marked is marked `slow` in its file: the folder gives the tier (tests/unit/ here)",
        "test_in_no_folder.py::test_in_no_folder: a test file belongs in the folder of its tier, tests/<",
        "runs Snakemake jobs (no -n) but is in a fast tier (tests/unit/): move it into tests/dag/",
    ):
        assert line in out, (line, out)
    assert "1 failed, 1 passed, 4 errors" in out, out  # at set-up (errors), or as it runs jobs (failed)


def test_the_folder_selects_the_tier(tmp_path):
    fast = run_small_suite(tmp_path)  # the fast tiers: the slow test deselected, said at the end
    assert "1 tests of the slow tiers" in fast and "1 failed, 1 deselected, 4 errors" in fast, fast
    assert "1 passed in" in run_small_suite(tmp_path, "tests/dag")  # a tier's folder named: all its tests
    assert "1 passed, 5 deselected" in run_small_suite(tmp_path, "-m", "dag")


# Two modules of the slow tiers that read one long run of the session (tests/support/dag.py, shared_run): started
# once, whichever worker of pytest-xdist asks first, and read by both.
SHARED_RUN_MODULE = """import sys
from pathlib import Path

from support.dag import Background, shared_run

STARTED = {}
STARTS = Path(__file__).resolve().parents[2] / "starts.txt"


def start(folder: Path) -> Background:
    with STARTS.open("a") as out:
        out.write("started\\n")
    code = "import time; time.sleep(1); print('made'); raise SystemExit(3)"
    return Background(folder, [sys.executable, "-c", code])


def start_in_background(tmp_path_factory):
    STARTED["run"] = shared_run("made", lambda: start(tmp_path_factory.mktemp("made")))


def test_reads_the_run():
    run = STARTED["run"]
    assert run.wait() == 3 and "made" in run.log.read_text()
"""


def test_a_long_run_starts_once_for_the_sessions_workers_and_is_counted_apart(tmp_path):
    for name in ("test_reads_a.py", "test_reads_b.py"):
        (tmp_path / "tests" / "dag" / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / "tests" / "dag" / name).write_text(SHARED_RUN_MODULE, encoding="utf-8")
    out = run_small_suite(tmp_path, "tests/dag/test_reads_a.py", "tests/dag/test_reads_b.py", "-n", "2",
                          "--cpu-top", "5")  # fmt: skip
    assert "2 passed" in out and "2 workers" in out, out
    assert (tmp_path / "starts.txt").read_text() == "started\n", out  # one run for both workers
    assert "the session's long run `made`, by its own count" in out, out
    assert "by their own count, its 2 workers" in out, out
