"""Shared fixtures and the test tiers. A test's tier is the folder of its file (tests/unit, tests/planning,
tests/dag, tests/realdata, tests/slurm, tests/gpu); the helpers every tier shares are tests/support/'s. Real
public data lives in ../shared/data beside the repository (never copied in).

The tests assume the CPU (its float32 numbers; no autocast, no CUDA nondeterminism): on a GPU node they see
no GPU unless `LEM_TEST_DEVICE=cuda` asks for it. Every package of `pyproject.toml`'s dependencies is
required: a missing one stops the session at set-up, by name, instead of failing (or skipping) tests one by one.
"""

from __future__ import annotations

import os
import re
import resource
import shutil
import sys
import tempfile
import tomllib
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path

import pytest

if os.environ.get("LEM_TEST_DEVICE", "cpu") == "cpu":
    os.environ["CUDA_VISIBLE_DEVICES"] = ""  # before anything imports torch

TESTS = Path(__file__).resolve().parent
if str(TESTS) not in sys.path:
    sys.path.insert(0, str(TESTS))  # the suite's helpers, tests/support/: `from support.dag import snakemake`

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
    session_folder(config)
    if getattr(config.option, "numprocesses", None) and config.option.dist == "load":
        # pytest-xdist (`-n 2`): whole modules to a worker (their module fixtures made once), in the tiers' order
        config.option.dist, config.option.loadscopereorder = "loadscope", False
    # the training-code digests (lem.run.training_code) of this session's planning runs, kept in a folder of its
    # own: no entry of the user's cache is read, and every Snakemake the session starts shares it
    cache = Path(tempfile.mkdtemp(prefix="lem-test-cache-"))
    os.environ["LEM_CACHE_DIR"] = str(cache)
    config.add_cleanup(lambda: shutil.rmtree(cache, ignore_errors=True))
    if config.getoption("lem_cpu_top", 0):
        config.pluginmanager.register(CpuPerTest(config, config.getoption("lem_cpu_top")), "lem-cpu")
    missing = missing_required_packages()
    if missing:
        raise pytest.UsageError(
            f"required packages are not installed: {', '.join(missing)} "
            "(run `bash scripts/setup.sh`, or install them from wheels: see README, 'On a GPU node')"
        )


def session_folder(config) -> None:
    """The folder the session's processes share (support.dag.SESSION: its long runs, started once): made by its
    first process (the only one, or pytest-xdist's controller) and inherited by the workers through
    LEM_TEST_SESSION; as that process ends, every long run that still runs is stopped and the folder removed (and
    should it be killed, each run's waiter sees it gone and ends the run: LEM_TEST_SESSION_OWNER)."""
    from support import dag

    worker = hasattr(config, "workerinput")
    if worker:
        folder, owner = os.environ["LEM_TEST_SESSION"], int(os.environ["LEM_TEST_SESSION_OWNER"])
    else:
        folder, owner = tempfile.mkdtemp(prefix="lem-test-session-"), os.getpid()
        # for the workers pytest-xdist starts after this; a long run ends when this process has (waiter.py)
        os.environ.update(LEM_TEST_SESSION=folder, LEM_TEST_SESSION_OWNER=str(owner))

        def end() -> None:
            dag.stop_session_runs()
            shutil.rmtree(folder, ignore_errors=True)

        config.add_cleanup(end)
    dag.SESSION.update(dir=folder, workers=worker, owner=owner)


@pytest.fixture(scope="session")
def dag_config(tiny_sentence_transformer) -> dict:
    """The shrunken embedded default of every DAG-level test (tests/support/dag.py), with a tiny local
    sentence-transformers model as reference encoder row `ref_tiny`."""
    from support.dag import small_config

    return small_config(tiny_sentence_transformer)


@pytest.fixture(scope="session")
def dag_reference_run(tmp_path_factory, dag_config):
    """The whole shrunken DAG, started once per session at its first test when a selected test reads it
    (`long_runs_in_background`, below), at a lower CPU priority."""
    from support.dag import shared_run, start_dag

    run = shared_run(
        "shared-dag", lambda: start_dag(tmp_path_factory.mktemp("dag"), dag_config, nice=10, forkserver=True)
    )
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
    the tests that read the paper DAG's jobs and commands (tests/planning/test_pins.py,
    tests/planning/test_refenc_plan.py)."""
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
    from support.dag import shared_value

    # one folder for the session's processes: the shared DAG's config names it, and every worker writes that config
    return Path(
        shared_value(
            "tiny-st", lambda: str(builders.tiny_sentence_transformer(tmp_path_factory.mktemp("st")))
        )
    )


@pytest.fixture(scope="session")
def shared_data() -> Path:
    """The folder of real public datasets; tests that need it skip, saying why, when it is absent."""
    if not SHARED_DATA.is_dir():
        pytest.skip(f"real data folder {SHARED_DATA} is absent (set LEM_SHARED_DATA to point at it)")
    return SHARED_DATA


# --- test tiers ---------------------------------------------------------------------------------------------
# A test's tier is the folder its file is in, tests/<tier>/, whatever the file or the test is named (nothing to
# mark in the test files: a tier marker there fails the test). `unit` and `planning` are the fast tiers: `pytest`
# alone runs them. `dag`, `slurm`, `gpu` and `realdata` are the slow ones: `pytest --all` runs every tier (the
# fast ones first), `pytest -m dag` (etc.) one of them, and naming a test file or a tier's folder runs all its
# tests. `slow` is the slow tiers' alias: `-m "not slow"` selects the fast tiers, `-m slow` the slow ones.
FAST_TIERS = ("unit", "planning")
SLOW_TIERS = ("dag", "slurm", "gpu", "realdata")
TIERS = FAST_TIERS + SLOW_TIERS
# The fixtures that only the tests of one tier may use (`paper_plan`: planning or a slow tier): a test of another
# tier's folder that uses one, directly or through another fixture, fails naming the folder it belongs in. So do
# a test file outside a tier's folder, a tier marker in a test file, and a test of a fast tier that runs
# Snakemake jobs (tests/support/dag.py's `snakemake`).
FIXTURE_TIERS = {
    "dag_reference_run": ("dag", "the shared whole DAG"),
    "dag_reference": ("dag", "the shared whole DAG"),
    "bare_python": ("dag", "a fresh virtual environment, built by pip"),
    "shared_data": ("realdata", "the real data of ../shared/data"),
    "paper_plan": ("planning", "a dry run of the paper config"),
}
TIER_KEY = pytest.StashKey[str]()
MISPLACED_KEY = pytest.StashKey[str]()
DESELECTED_KEY = pytest.StashKey[int]()


def pytest_addoption(parser):
    parser.addoption(
        "--all",
        action="store_true",
        dest="lem_all_tiers",
        help="run every tier (unit, planning, dag, slurm, gpu, realdata), the fast ones first; `pytest` alone "
        "(no -m, no test file or folder named) runs the fast tiers: unit and planning",
    )
    parser.addoption(
        "--cpu-top",
        type=int,
        default=0,
        metavar="N",
        dest="lem_cpu_top",
        help="print the N tests that cost the most CPU (the session's own and its children's, setup to teardown) "
        "and the total: what CI's time is made of on 2 cores, less sensitive to a busy machine than --durations",
    )


def folder_tier(path: Path) -> str | None:
    """The tier of a test file: the folder below tests/ it is in (None: no tier's folder)."""
    try:
        parts = Path(path).resolve().relative_to(TESTS).parts
    except ValueError:
        return None
    return parts[0] if len(parts) > 1 and parts[0] in TIERS else None


def misplaced(item, tier: str | None) -> str | None:
    """Why the test cannot be in its file's folder (None: it can)."""
    where = item.nodeid
    if tier is None:
        return f"{where}: a test file belongs in the folder of its tier, tests/<{'|'.join(TIERS)}>/"
    marked = sorted({m.name for m in item.iter_markers()} & {*TIERS, "slow"})  # before ours are added
    if marked:
        return (
            f"{where} is marked `{marked[0]}` in its file: the folder gives the tier (tests/{tier}/ here); move "
            "the file (or the test) into its tier's folder and drop the marker"
        )
    for fixture in getattr(item, "fixturenames", ()):
        need, what = FIXTURE_TIERS.get(fixture, (tier, ""))
        if need != tier and not (need == "planning" and tier in SLOW_TIERS):
            return f"{where} uses the fixture `{fixture}` ({what}): it belongs in tests/{need}/, not tests/{tier}/"
    return None


def item_tier(item) -> str:
    return item.stash.get(TIER_KEY, "unit")


def is_slow(item) -> bool:
    return item_tier(item) in SLOW_TIERS


@pytest.hookimpl(tryfirst=True)  # before -m selects by marker
def pytest_collection_modifyitems(config, items):
    for item in items:
        tier = folder_tier(item.path)
        problem = misplaced(item, tier)
        if problem:
            item.stash[MISPLACED_KEY] = problem
        if tier is None:
            continue
        item.stash[TIER_KEY] = tier
        for marker in (tier, "slow") if tier in SLOW_TIERS else (tier,):
            item.add_marker(marker)


def fast_only(config) -> bool:
    """`pytest` alone runs the fast tiers: unless --all, a -m expression (even `-m ""`), a test file (or a
    test's node id) or a folder below tests/ is given."""
    if config.getoption("lem_all_tiers"):
        return False
    args = [*map(str, config.invocation_params.args), *os.environ.get("PYTEST_ADDOPTS", "").split()]
    if any(a.startswith("-m") for a in args):
        return False
    for arg in config.args:
        path = (config.invocation_params.dir / arg.split("::")[0]).resolve()
        if ".py" in arg or TESTS in path.parents:
            return False
    return True


def tier_rank(item) -> int:
    """The order of a run of several tiers: the fast tiers first, unit then planning (their failures show
    early), then the slow tests that wait for no run, those that wait for their module's run started in the
    background (`start_in_background`, below), those that read the shared DAG (made in the background
    meanwhile), SLURM's last (their run, started in the background at the first test, is long over by then).
    Under pytest-xdist (`-n auto`) the workers take whole modules in this order, a module as its first test
    ranks (pytest_configure: `--dist loadscope`, not reordered)."""
    tier = item_tier(item)
    if tier not in SLOW_TIERS:
        return FAST_TIERS.index(tier) if tier in FAST_TIERS else 0
    if tier == "slurm":
        return 5
    if "dag_reference_run" in getattr(item, "fixturenames", ()):
        return 4
    return 3 if hasattr(getattr(item, "module", None), "start_in_background") else 2


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

    def pytest_sessionfinish(self, session):
        if hasattr(session.config, "workeroutput"):  # a pytest-xdist worker: the count to the controller
            session.config.workeroutput["lem_deselected"] = session.config.stash.get(DESELECTED_KEY, 0)

    @pytest.hookimpl(optionalhook=True)
    def pytest_testnodedown(self, node, error):
        """pytest-xdist's controller, as a worker ends: what it deselected (every worker deselects the same)."""
        deselected = (getattr(node, "workeroutput", None) or {}).get("lem_deselected", 0)
        node.config.stash[DESELECTED_KEY] = max(deselected, node.config.stash.get(DESELECTED_KEY, 0))

    def pytest_terminal_summary(self, terminalreporter, config):
        n = config.stash.get(DESELECTED_KEY, 0)
        if n:
            terminalreporter.write_line(
                f"tiers: the fast ones (unit, planning) selected; {n} tests of the slow tiers (dag, slurm, gpu, "
                "realdata) were deselected: `pytest --all` runs every tier"
            )


class CpuPerTest:
    """`--cpu-top N`: the CPU seconds of each test (user + system of its process and of the children it waited
    for, from its setup to its teardown), and of each of the session's long runs apart (the shared DAG, the
    real-data, GPU smoke and renamed DAGs: by their waiters' own count, tests/support/waiter.py; never in a
    test's). The SLURM run's jobs run under slurmd and are in no count. Under pytest-xdist each worker measures
    its tests and the controller prints them all."""

    def __init__(self, config, top: int):
        self.config, self.top, self.cpu, self.start = config, top, {}, cpu_seconds()
        self.sessions: list[float] = []  # under pytest-xdist: each worker's whole session

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_protocol(self, item, nextitem):
        from support.dag import REAPED

        before, reaped = cpu_seconds(), REAPED["cpu_s"]
        try:
            return (yield)
        finally:  # a long run reaped here (its waiter ended) is counted apart, not in this test
            self.cpu[item.nodeid] = cpu_seconds() - before - (REAPED["cpu_s"] - reaped)

    def pytest_sessionfinish(self, session):
        if hasattr(self.config, "workeroutput"):  # a pytest-xdist worker: its figures to the controller
            self.config.workeroutput["lem_cpu"] = self.cpu
            self.config.workeroutput["lem_cpu_session"] = cpu_seconds() - self.start

    @pytest.hookimpl(optionalhook=True)
    def pytest_testnodedown(self, node, error):
        out = getattr(node, "workeroutput", None) or {}
        self.cpu.update(out.get("lem_cpu", {}))
        self.sessions.append(out.get("lem_cpu_session", 0.0))

    def pytest_terminal_summary(self, terminalreporter):
        from support.dag import session_runs

        own = cpu_seconds() - self.start
        terminalreporter.section(f"CPU per test: the {self.top} largest (seconds)")
        for nodeid, seconds in sorted(self.cpu.items(), key=lambda kv: -kv[1])[: self.top]:
            terminalreporter.write_line(f"{seconds:8.1f}  {nodeid}")
        runs = [
            (name, status["cpu_s"]) for name, run in session_runs() if (status := run.ended()) is not None
        ]
        for name, seconds in runs:
            terminalreporter.write_line(f"{seconds:8.1f}  the session's long run `{name}`, by its own count")
        workers = (
            f"; by their own count, its {len(self.sessions)} workers {sum(self.sessions):.1f}"
            if self.sessions
            else ""
        )
        terminalreporter.write_line(
            f"{sum(self.cpu.values()):8.1f}  in tests; {sum(s for _, s in runs):.1f} in the long runs; {own:.1f} in "
            f"the session's process and the processes it has waited for (collection, the long runs it reaped, its "
            f"workers once ended){workers}"
        )


def cpu_seconds() -> float:
    """User + system CPU of this process and of the children it has waited for."""
    own, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + kids.ru_utime + kids.ru_stime


def pytest_runtest_setup(item):
    from support import dag

    problem = item.stash.get(MISPLACED_KEY, None)
    if problem:
        pytest.fail(problem, pytrace=False)
    tier = item_tier(item)
    dag.RUNNING.update(test=item.nodeid, tiers=frozenset({tier}))
    if tier == "gpu" and os.environ.get("LEM_TEST_DEVICE", "cpu") == "cpu":
        pytest.skip("needs a GPU: LEM_TEST_DEVICE=cuda on a GPU node")


@pytest.fixture(scope="session", autouse=True)
def long_runs_in_background(request, tmp_path_factory):
    """At the first test, the session's long runs start in the background when a selected test needs them:
    the shared DAG (`dag_reference_run`, at a lower CPU priority: it takes the CPU the fast tests leave idle)
    and what a selected test module's `start_in_background(tmp_path_factory)` starts (tests/slurm/test_slurm.py:
    the SLURM run, which mostly waits for the scheduler; tests/dag/test_language_rename_dag.py (a part of the
    shared DAG under a renamed language), tests/dag/test_gpu_smoke.py and
    tests/realdata/test_local_data.py: their whole DAGs, at a still lower priority than the shared DAG's). The
    tests that read a run wait for it to end; a test that cannot be in its folder (`misplaced`) starts none.
    Under pytest-xdist each run starts once, in the first worker that asks (support.dag.shared_run), and a test
    reads it in whichever worker it runs."""
    items = [item for item in request.session.items if MISPLACED_KEY not in item.stash]
    if any("dag_reference_run" in getattr(item, "fixturenames", ()) for item in items):
        request.getfixturevalue("dag_reference_run")
    modules = {item.module for item in items if hasattr(getattr(item, "module", None), "start_in_background")}
    for module in sorted(modules, key=lambda m: m.__name__):
        module.start_in_background(tmp_path_factory)
