"""Any language by config (issue 25 item 6), on the DAG: a part of the shared shrunken DAG (tests/support/dag.py)
run again with Sinhala declared as `xx` writes every metric equal to the shared run's. The generator, the news
layout, the lexical control and the config check under the renaming: tests/unit/test_language_rename.py."""

from __future__ import annotations

import atexit
import json
from pathlib import Path

from support.dag import Background, metrics_files, shared_run, small_config, start_dag
from support.renaming import SI, declared_as_xx, files, renamed, to_xx

# the part of the shared DAG (tests/support/dag.py) run again with si declared as xx: what a language code reaches. The
# two mining pairs of si through the LEM variant (the generated world, annotation, tokenizer, base model, both
# training stages, features, embedding, the news layout), the generated lexical control, the configured
# annotators scored on the gold in its tag set, and curation's script filter and ranking
RENAMED_TARGETS = [
    "results/mining/lem/seed1/news_gen/xx-en.metrics.json",
    "results/mining/lem/seed1/news_gen/xx-ta.metrics.json",
    "results/mining/control_lexical/seed1/news_gen/xx-en.metrics.json",
    "results/annotation_eval/configured/xx.json",
    "results/curation/lem/seed1/xx-en/metrics.json",
]


def numbers(path: Path, rename: bool = False) -> object:
    """What a metrics file says, its provenance (versions, commands, times) left out, `si` renamed `xx` with
    `rename`."""
    data = json.loads(path.read_text(encoding="utf-8"))
    data = {k: v for k, v in data.items() if k != "provenance"}
    return renamed(data) if rename else data


STARTED: dict[str, Background] = {}


def start_run(workdir: Path) -> Background:
    """The renamed run to the targets above, in the background below the shared DAG's priority: it reads nothing of
    the shared run, only its config (without the reference encoder row, which none of the targets reads)."""
    return start_dag(
        workdir, declared_as_xx(small_config()), nice=12, targets=tuple(RENAMED_TARGETS), forkserver=True
    )


def start_in_background(tmp_path_factory) -> None:
    """Called by tests/conftest.py at the session's first test when a test here is selected."""
    STARTED["run"] = shared_run("renamed", lambda: start_run(tmp_path_factory.mktemp("renamed") / "xx"))
    atexit.register(STARTED["run"].stop)  # when no test of here waits for it (pytest -x)


def test_a_renamed_language_gives_the_same_metrics(tmp_path, dag_reference):
    """The shared DAG's config with si declared as xx, run to the targets above in a folder of its own: every
    metrics file it writes equals the shared run's file of the same job, si read as xx."""
    run = STARTED.pop("run", None) or start_run(tmp_path / "xx")
    workdir = run.finish()[0]
    xx = {p.relative_to(workdir).as_posix(): p for p in metrics_files(workdir)}
    assert set(RENAMED_TARGETS) == set(xx)  # the targets are the metrics files of the part run
    assert not [p for p in files(workdir / "results") if SI.search(p)]  # no file of the renamed run says si
    si = {to_xx(p.relative_to(dag_reference).as_posix()): p for p in metrics_files(dag_reference)}
    assert set(xx) <= set(si), sorted(set(xx) - set(si))
    different = [p for p in sorted(xx) if numbers(si[p], rename=True) != numbers(xx[p])]
    assert not different, different
