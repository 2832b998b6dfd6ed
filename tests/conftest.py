"""Shared fixtures. Real public data lives in ../shared/data beside the repository (never copied in).

The tests assume the CPU (its float32 numbers; no autocast, no CUDA nondeterminism): on a GPU node they see
no GPU unless `LEM_TEST_DEVICE=cuda` asks for it. Every package of `pyproject.toml`'s dependencies is
required: a missing one stops the session at set-up, by name, instead of failing (or skipping) tests one by one.
"""

from __future__ import annotations

import os
import re
import tomllib
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path

import pytest

if os.environ.get("LEM_TEST_DEVICE", "cpu") == "cpu":
    os.environ["CUDA_VISIBLE_DEVICES"] = ""  # before anything imports torch

from support import REPO, SHARED_DATA  # noqa: E402 (after the device is pinned)


def missing_required_packages(pyproject: Path = REPO / "pyproject.toml") -> list[str]:
    """The requirements of `[project].dependencies` and its extras that are not installed (name only: versions may differ
    on a machine with its own preinstalled stack, e.g. a GPU image)."""
    project = tomllib.loads(pyproject.read_text(encoding="utf-8"))["project"]
    # the light base and every extra (the training stack, Snakemake, the tools): what the suite runs
    extras = project.get("optional-dependencies", {}).values()
    deps = project["dependencies"] + [req for extra in extras for req in extra]
    missing = []
    for req in deps:
        name = re.split(r"[\s<>=!~;\[]", req, maxsplit=1)[0]
        try:
            version(name)
        except PackageNotFoundError:
            missing.append(req)
    return missing


def pytest_configure(config):
    config.pluginmanager.register(TierSelection(), "lem-tiers")
    missing = missing_required_packages()
    if missing:
        raise pytest.UsageError(
            f"required packages are not installed: {', '.join(missing)} "
            "(run `bash scripts/setup.sh`, or install them from wheels: see README, 'On a GPU node')"
        )


@pytest.fixture(scope="session")
def dag_config(tiny_sentence_transformer) -> dict:
    """The shrunken embedded default of every DAG-level test (tests/dag.py), with a tiny local
    sentence-transformers model as reference encoder row `ref_tiny`."""
    from support.dag import small_config

    return small_config(tiny_sentence_transformer)


@pytest.fixture(scope="session")
def dag_reference_run(tmp_path_factory, dag_config):
    """The whole shrunken DAG, started once per session at its first test when a selected test reads it
    (`long_runs_in_background`, below), at a lower CPU priority."""
    from support.dag import start_dag

    run = start_dag(tmp_path_factory.mktemp("dag"), dag_config, nice=10)
    yield run
    run.stop()


@pytest.fixture(scope="session")
def dag_reference(dag_reference_run) -> Path:
    """The whole shrunken DAG, run once per session, uninterrupted: the one whole-DAG run of the suite, read
    by the workflow, curation, interruption, reproducibility and renamed-language tests (they rerun parts of
    it, never all). The first test that reads it waits for it to end."""
    return dag_reference_run.finish()[0]


@pytest.fixture(scope="session")
def paper_plan(tmp_path_factory) -> str:
    """What `snakemake -n -p` prints for config/paper.yaml in an empty folder: planned once per session for
    the tests that read the paper DAG's jobs and commands (tests/test_pins.py, tests/test_refenc.py)."""
    from support.dag import snakemake

    proc = snakemake(tmp_path_factory.mktemp("paper-plan"), "-n", "-p", config=REPO / "config" / "paper.yaml")
    assert proc.returncode == 0, (proc.stdout + proc.stderr)[-4000:]
    return proc.stdout + proc.stderr


@pytest.fixture(scope="session")
def tiny_sentence_transformer(tmp_path_factory) -> Path:
    """A tiny random sentence-transformers model (BERT, 1 layer, width 16, mean pooling) in a local folder:
    the `sentence_transformers` reference-encoder backend run for real, offline."""
    pytest.importorskip("sentence_transformers")
    from support import builders

    return builders.tiny_sentence_transformer(tmp_path_factory.mktemp("st"))


@pytest.fixture(scope="session")
def shared_data() -> Path:
    """The folder of real public datasets; tests that need it skip, saying why, when it is absent."""
    if not SHARED_DATA.is_dir():
        pytest.skip(f"real data folder {SHARED_DATA} is absent (set LEM_SHARED_DATA to point at it)")
    return SHARED_DATA


# --- test tiers ---------------------------------------------------------------------------------------------
# Every test gets its tier markers here, centrally (nothing to add in the test files). `unit` and `planning` are
# the fast tiers: `pytest` alone runs them. `dag`, `slurm`, `gpu` and `realdata` are the slow ones: `pytest
# --all` runs every tier (the fast ones first), `pytest -m dag` (etc.) one of them, and naming a test file runs
# all its tests. `slow` is the slow tiers' alias: `-m "not slow"` selects the fast tiers, `-m slow` the slow ones.
FAST_TIERS = ("unit", "planning")
SLOW_TIERS = ("dag", "slurm", "gpu", "realdata")
# Files whose tests plan (dry runs, config and schema checks): the `planning` tier; any other test is `unit`.
PLANNING_FILES = {
    "test_annotation_dag.py",
    "test_config_cross.py",
    "test_config_readme.py",
    "test_config_sections.py",
    "test_configs.py",
    "test_envs.py",
    "test_gpu_share.py",
    "test_module.py",
    "test_pins.py",
    "test_plan.py",
    "test_planning_env.py",
    "test_refusals.py",
    "test_run_model.py",
}
PLANNING_FIXTURES = {"paper_plan"}
# Tests that execute Snakemake jobs besides those that read the shared DAG (fixture `dag_reference`): the
# `dag` tier. tests/dag.py's snakemake() fails a test of a fast tier that runs jobs, naming this list.
DAG_TESTS = {
    "test_gpu_share.py::test_two_training_jobs_side_by_side_write_the_files_they_write_in_turn",
    "test_gpu_smoke.py::test_plan_of_the_finished_run_matches_training",
    "test_gpu_smoke.py::test_the_dag_runs_on_a_stand_in",
    "test_inputs.py::test_files_corpus_with_an_empty_language_stops_the_workflow",
    "test_local_data.py::test_local_config_runs_on_the_real_data_and_reports_every_table",
    "test_module.py::test_a_module_runs_a_small_target_in_its_rules_environment",
    "test_plan.py::test_plan_rule_runs_alone",
    "test_refenc.py::test_enabled_without_models_the_run_stops_at_the_first_reference_job_with_its_message",
}
# Whole training processes (killed and resumed, torchrun, a subprocess per kernel level) and the evaluation
# chain end to end: 15-30 s each, so they are in the `dag` tier and the fast tiers stay under 5 minutes; under
# `--all` they run among the fast tiers (`tier_rank`), while the shared DAG is made in the background.
PROCESS_TESTS = {
    "test_controls.py::test_positive_verdict_proves_the_chain",
    "test_pretrain.py::test_checkpoints_of_an_upstream_model_that_changed_are_not_resumed",
    "test_pretrain.py::test_killed_run_resumes_to_the_uninterrupted_result",
    "test_pretrain.py::test_sigint_saves_a_checkpoint_stops_promptly_and_resumes_to_the_same_result",
    "test_pretrain.py::test_weights_and_metrics_do_not_depend_on_the_callers_kernel_dispatch",
    "test_training.py::test_torchrun_two_processes_train_as_one",
}
DAG_TESTS |= PROCESS_TESTS
DAG_FIXTURES = {"dag_reference"}
# Fixtures that build an environment of their own (a fresh venv, pip from its cache: about a minute, once per
# session; tests/test_planning_env.py): the `dag` tier.
ENV_FIXTURES = {"bare_python"}
SLURM_FILES = {"test_slurm.py"}
REALDATA_FIXTURES = {"shared_data"}
TIERS_KEY = pytest.StashKey[frozenset]()
DESELECTED_KEY = pytest.StashKey[int]()


def pytest_addoption(parser):
    parser.addoption(
        "--all",
        action="store_true",
        dest="lem_all_tiers",
        help="run every tier (unit, planning, dag, slurm, gpu, realdata), the fast ones first; `pytest` alone "
        "(no -m, no test file named) runs the fast tiers: unit and planning",
    )


def _name(item) -> str:
    return f"{item.path.name}::{getattr(item, 'originalname', item.name)}"


def item_tiers(item) -> frozenset[str]:
    """A test's tiers, from its file, its name, its fixtures and the markers its file gives it."""
    file = item.path.name
    name = _name(item)
    fixtures = set(getattr(item, "fixturenames", ()))
    tiers = {m.name for m in item.iter_markers() if m.name in FAST_TIERS + SLOW_TIERS}
    if fixtures & (DAG_FIXTURES | ENV_FIXTURES) or name in DAG_TESTS:
        tiers.add("dag")
    if file in SLURM_FILES:
        tiers.add("slurm")
    # the real data read by a fixture, or planned for config/local.yaml (tests/test_run_model.py)
    if fixtures & REALDATA_FIXTURES or (file == "test_run_model.py" and "local.yaml" in item.name):
        tiers.add("realdata")
    if item.get_closest_marker("slow") and not tiers & set(SLOW_TIERS):
        tiers.add("dag")  # marked slow in its file, in no slow tier above: the catch-all slow tier
    if not tiers:
        tiers.add("planning" if file in PLANNING_FILES or fixtures & PLANNING_FIXTURES else "unit")
    return frozenset(tiers)


def is_slow(item) -> bool:
    return bool(item.stash[TIERS_KEY] & set(SLOW_TIERS))


@pytest.hookimpl(tryfirst=True)  # before -m selects by marker
def pytest_collection_modifyitems(config, items):
    for item in items:
        tiers = item.stash[TIERS_KEY] = item_tiers(item)
        for tier in sorted(tiers | ({"slow"} if tiers & set(SLOW_TIERS) else set())):
            if not item.get_closest_marker(tier):
                item.add_marker(tier)


def fast_only(config) -> bool:
    """`pytest` alone runs the fast tiers: unless --all, a -m expression (even `-m ""`) or a test file (or a
    test's node id) is given."""
    if config.getoption("lem_all_tiers"):
        return False
    args = [*map(str, config.invocation_params.args), *os.environ.get("PYTEST_ADDOPTS", "").split()]
    if any(a.startswith("-m") for a in args):
        return False
    return not any(".py" in a for a in config.args)


def tier_rank(item) -> int:
    """The order of a run of several tiers: the fast tiers first (their failures show early), then the slow
    tests that do not read the shared DAG (it is made in the background meanwhile), then those that read it,
    SLURM's last (their run, started in the background at the first test, is long over by then)."""
    tiers = item.stash[TIERS_KEY]
    if not tiers & set(SLOW_TIERS) or _name(item) in PROCESS_TESTS:
        return 0  # the whole training processes too: they need no DAG, so they run while it is made
    if "slurm" in tiers:
        return 3
    return 2 if set(getattr(item, "fixturenames", ())) & DAG_FIXTURES else 1


class TierSelection:
    @pytest.hookimpl(trylast=True)  # after -m and -k, and after pytest's own ordering by fixtures
    def pytest_collection_modifyitems(self, config, items):
        if fast_only(config):
            slow = [item for item in items if is_slow(item)]
            if slow:
                config.hook.pytest_deselected(items=slow)
                items[:] = [item for item in items if not is_slow(item)]
                config.stash[DESELECTED_KEY] = len(slow)
        items.sort(key=tier_rank)  # stable: each file's order kept within a rank

    def pytest_terminal_summary(self, terminalreporter, config):
        n = config.stash.get(DESELECTED_KEY, 0)
        if n:
            terminalreporter.write_line(
                f"tiers: the fast ones (unit, planning) selected; {n} tests of the slow tiers (dag, slurm, gpu, "
                "realdata) were deselected: `pytest --all` runs every tier"
            )


def pytest_runtest_setup(item):
    from support import dag

    tiers = item.stash.get(TIERS_KEY, frozenset())
    dag.RUNNING.update(test=item.nodeid, tiers=tiers)
    if "gpu" in tiers and os.environ.get("LEM_TEST_DEVICE", "cpu") == "cpu":
        pytest.skip("needs a GPU: LEM_TEST_DEVICE=cuda on a GPU node")


@pytest.fixture(scope="session", autouse=True)
def long_runs_in_background(request, tmp_path_factory):
    """At the first test, the session's long runs start in the background when a selected test needs them:
    the shared DAG (`dag_reference_run`, at a lower CPU priority: it takes the CPU the fast tests leave idle)
    and what a selected test module's `start_in_background(tmp_path_factory)` starts (tests/test_slurm.py:
    the SLURM run, which mostly waits for the scheduler; tests/test_gpu_smoke.py and tests/test_local_data.py:
    their whole DAGs, at a still lower priority than the shared DAG's). The tests that read a run wait for it
    to end."""
    items = request.session.items
    if any(set(getattr(item, "fixturenames", ())) & DAG_FIXTURES for item in items):
        request.getfixturevalue("dag_reference_run")
    modules = {item.module for item in items if hasattr(getattr(item, "module", None), "start_in_background")}
    for module in sorted(modules, key=lambda m: m.__name__):
        module.start_in_background(tmp_path_factory)
