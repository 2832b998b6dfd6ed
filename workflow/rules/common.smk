import importlib.util
import os
import re
import sys
import time
from pathlib import Path

from snakemake.exceptions import WorkflowError

# the one package planning adds to Snakemake's own (the config check's settings modules import it)
if importlib.util.find_spec("numpy") is None:
    raise WorkflowError(
        "planning needs numpy besides Snakemake: pip install numpy==2.4.6 (pyproject.toml's pin)"
    )

from lem.config_check import ConfigError, check_workflow_config

# The config checked before any job (lem.config_check.check_workflow_config): a YTE template refused unless
# LEM_ALLOW_YTE=1; an overlay's `enabled: false` switching a task off; the schema, its defaults filled in;
# `{data_root}` in any path; every section built into the settings dataclass of the `lem` verb that reads it,
# merged as the rules pass it, and what joins the sections; every fetched source pinned. A problem stops here
# in one line naming the key.
try:
    check_workflow_config(
        config,
        workflow.source_path("../schemas/config.schema.yaml"),
        workflow.configfiles,
    )
except ConfigError as _err:
    raise WorkflowError(f"config: {_err}") from None

from lem.core.forkserver import start_for_run
from lem.run.job_env import set_job_environment

# What every job inherits from this process (lem.run.job_env): the CPU kernels' mode (`resources.cpu_numerics`),
# the rules' `lem` running the package that planned them (source.smk: its Python's bin folder first on PATH, or
# its folder first on PYTHONPATH when that Python has no `lem`); with LEM_FORWARD_INTERRUPT=1, a SIGINT sent to
# this process alone passed on to the running jobs (no handler of ours otherwise).
set_job_environment(config["resources"]["cpu_numerics"], LEM_SOURCE_PATH)


from lem.run.envs import ENV_DIR, PackageCode, code_edits, write_env

# What the rules' environments install (lem.run.envs): this workflow's code (source.smk, WORKFLOW_CODE), named by
# its version and commit (a module's package: its file list's digest), and a checkout's uncommitted edits to its
# code (docstrings and comments aside).
_ENV_CODE = PackageCode(
    source=WORKFLOW_CODE["source"],
    version=WORKFLOW_CODE["version"],
    commit=WORKFLOW_CODE["commit"],
    edits=(
        code_edits(WORKFLOW_CODE["folder"], WORKFLOW_CODE["commit"])
        if WORKFLOW_CODE["files"] is None
        else None
    ),
    files_sha256=WORKFLOW_CODE["digest"],
)


def lem_env(name):
    """The `conda:` of the rules that run the `lem` command: envs/<name>.yaml written under .snakemake/lem-envs/
    with the package's source filled in and its version, commit and edits on top (lem.run.envs). Snakemake names
    an environment by its file's bytes: new package code (a commit, a version, an edited function) gets a new
    environment, never the one holding the old code; an edited comment or docstring keeps it.
    """
    return str(
        write_env(workflow.source_path(f"../../envs/{name}.yaml"), ENV_DIR, _ENV_CODE)
    )


def workflow_script(name, rules_dir=workflow.current_basedir):
    """workflow/scripts/<name> of this workflow: its own path when the workflow is a local folder (so the
    command is the same from run to run), Snakemake's copy of it when the workflow comes from a git repository.
    """
    folder = local_folder(rules_dir)  # source.smk
    if folder is not None:
        return str(folder.parent / "scripts" / name)
    return workflow.source_path(f"../scripts/{name}")


from lem.run import (
    BASE_MODEL_CHECK,
    COVERAGE,
    LEAKAGE_REPORT,
    Run,
    as_json,
    file_args,
    metrics_keys,
    multiner_inputs,
    names_regex,
    news_inputs,
    pair_source,
    reference_args,
    sentence_files,
    sha256_arg,
    source_dep,
    source_file,
    src_tgt,
    training_code,
)
from lem.run import paths
from lem.run import settings as rule_settings

# The model of this run (lem.run): its rows, seeds and scopes, its sets (RUN.sets) and job grid (RUN.grid), every
# artifact path; each rule's settings are rule_settings.<rule>(RUN, **wildcards). The rule files call them.
RUN = Run(config)
LANGS = RUN.langs
PAIRS = RUN.pairs


# A --configfile merged over a deploying workflow's own `configfile:` (Snakemake does so unless
# --replace-workflow-config is given): said in one line when the merge changes the job grid.
if (
    not workflow.remote_exec
    and workflow.overwrite_configfiles
    and len(workflow.configfiles) > len(workflow.overwrite_configfiles)
):
    from lem.config_check.merge import merge_note

    _note = merge_note(
        config,
        list(workflow.overwrite_configfiles),
        list(workflow.configfiles),
        workflow.source_path("../schemas/config.schema.yaml"),
        workflow.config_settings.replace_workflow_config,
    )
    if _note:
        print(f"warning: {_note}", file=sys.stderr)


wildcard_constraints:
    lang="|".join(LANGS),
    src="|".join(LANGS),
    tgt="|".join(LANGS),
    pair="|".join(PAIRS),
    split="train|valid",
    variant="|".join(RUN.rows) if RUN.rows else "base",
    tvariant="|".join(RUN.trained_models) if RUN.trained_models else "none",
    scope="|".join(RUN.scopes),
    stage="mono|para",
    evalset="|".join(config["mining"].get("evalsets", {})) or "none",
    dataset="|".join(config["sentiment"].get("datasets", {})) or "none",
    annotator="|".join(config["annotation_eval"]["annotators"]) or "none",
    seed=r"\d+",
    fseed=r"\d+",
    source=r"[A-Za-z0-9_.-]+",
    name=r"[A-Za-z0-9_.-]+",


def all_cores():
    """The cores given to Snakemake; 1 when none were given, as for `snakemake --unlock`, which plans no
    job (`workflow.cores` raises there)."""
    try:
        return workflow.cores
    except WorkflowError:
        return 1


def training_threads():
    """A training job's threads: `resources.threads_training`, at most the cores given to Snakemake; null
    takes them all (one training job at a time). Small models train faster as several 1-thread jobs side
    by side than as one job on every core, and a fixed count keeps the floats independent of `--cores`.
    """
    wanted = config["resources"].get("threads_training")
    cores = all_cores()
    return cores if wanted is None else min(int(wanted), cores)


def base_model_checked():
    """The check of the settings against a hub base model fetched by this run (download.smk,
    check_base_model), an input of the first training jobs that read the model (ancient: rerunning the
    check retrains nothing)."""
    return [ancient(path) for path in RUN.base_model_checked()]


def final_outputs():
    return RUN.grid.final_outputs()


def artifact(template, **values):
    """An artifact's path from lem.run.paths, the one place each path is written: `template` with the fields
    of `values` set (a value, or a wildcard of another name, e.g. `pair="{src}-{tgt}"`) and the others left
    as wildcards."""
    return paths.fill(template, **values)


# Not in dry runs nor cluster jobs (--no-hooks): LEM_FORKSERVER=1 forks the jobs from processes that imported their
# stack (lem.core.forkserver); the run ends with one summary that never fails it (lem.report.run_summary).
_RUN_STARTED = time.time()


onstart:
    start_for_run(log=Path(".snakemake/log/lem-forkserver.log"))


onsuccess:
    from lem.report.run_summary import print_run_summary

    print_run_summary(paths.REPORT_DIR, started=_RUN_STARTED)
