"""lem.run.Run on config/local.yaml, the real data of ../shared/data: the jobs it and `lem plan cost` count are
the jobs Snakemake plans, as for every other shipped config (tests/planning/test_run_model.py)."""

from __future__ import annotations

import pytest
from support.run_model import job_grid_is_the_dags, planned_config, plans_jobs_are_the_dags


@pytest.fixture(scope="module", params=["local.yaml"])
def planned(request, shared_data, tmp_path_factory) -> tuple[str, dict, dict[str, list[set[str]]]]:
    """(name, the config as the workflow holds it, the DAG's jobs) of config/local.yaml on the real data."""
    return planned_config(request.param, tmp_path_factory.mktemp("local"), data_root=shared_data.resolve())


def test_the_run_models_job_grid_is_the_dags(planned):
    """Every job of lem.run.grid.Grid.jobs() is one job of the DAG, of the same rule, and every DAG job of those
    rules is one of them (tests/planning/test_run_model.py)."""
    job_grid_is_the_dags(planned)


def test_the_plans_jobs_are_the_dags(planned, tmp_path):
    """`lem plan cost` counts the DAG's jobs (tests/planning/test_run_model.py)."""
    plans_jobs_are_the_dags(planned, tmp_path)
