"""The job grid of a run: every training, embedding, mining, sentiment, curation and NMT job the config implies
(variants x seeds x scopes or pairs; `run.grid` of a lem.run.Run). tests/planning/test_run_model.py checks `jobs()`
against `snakemake -n`."""

from __future__ import annotations

import re
from collections.abc import Sequence
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, NamedTuple

from lem.run import paths
from lem.run.helpers import by_kind, set_suffix, src_tgt

if TYPE_CHECKING:
    from lem.run.rows import Rows

STAGES = ("mono", "para")


class EmbedRule(NamedTuple):
    """An embed rule: one job per model (`variants` x `seeds`) writing `files` (evalset, pair, lang)."""

    rule: str
    unit: str  # its log's name: the unit (`all`, a pair), under `curation/` for the curation corpora
    variants: list[str]
    files: list[tuple[str, str, str]]
    seeds: list[int]


class TrainingJob(NamedTuple):
    """One pre-training job: the base model from scratch (`stage` base, `scope` -) or a variant's stage."""

    variant: str
    scope: str
    stage: str
    seed: int
    output: str  # the model folder

    @property
    def name(self) -> str:
        if self.stage == "base":
            return f"base/seed{self.seed}"
        return f"{self.variant}/{self.scope}/seed{self.seed}/{self.stage}"

    @property
    def rule(self) -> str:
        return f"pretrain_{self.stage}"


class Grid:
    """The jobs of a run's config (`run.grid`), over the run's rows, seeds and scopes."""

    def __init__(self, run: Rows):
        self.run = run
        self.config = run.config

    def training_jobs(self) -> list[TrainingJob]:
        """Every pre-training job: the base model per seed when trained from scratch, then each trained model
        per scope, stage and seed."""
        jobs = []
        if self.run.scratch:
            jobs += [TrainingJob("base", "-", "base", s, self.run.base_model_dir(s)) for s in self.run.seeds]
        for v in self.run.trained_models:
            for scope in self.run.scopes:
                for stage in STAGES:
                    for s in self.run.seeds:
                        jobs.append(TrainingJob(v, scope, stage, s, self.run.model_dir(v, scope, s, stage)))
        return jobs

    def report_models(self) -> list[str]:
        """`variant:stage:label=folder` of every pre-trained model (the report's masking and loss figures)."""

        def order(job: TrainingJob) -> tuple:  # base first, then by model, scope, seed and stage
            if job.stage == "base":
                return (-1, 0, self.run.seeds.index(job.seed), 0)
            stage = STAGES.index(job.stage)
            return (
                self.run.trained_models.index(job.variant),
                self.run.scopes.index(job.scope),
                self.run.seeds.index(job.seed),
                stage,
            )

        specs = []
        for job in sorted(self.training_jobs(), key=order):
            if job.stage == "base":
                specs.append(f"base:base:{job.seed}={job.output}")
            else:
                label = "" if job.scope == "tri" else f"{job.scope}-"
                specs.append(f"{job.variant}:{job.stage}:{label}{job.seed}={job.output}")
        return specs

    # --- embeddings ----------------------------------------------------------------------------------------

    def embedding_files(self) -> list[tuple[str, str, str]]:
        """Every text a model embeds, as (evalset, pair, lang): the embed jobs of the variants and of any other
        row (controls, reference encoders) write results/embeddings/{row}/seed{seed}/{evalset}/{pair}/{lang}.*
        for each of them."""
        c = self.config
        return [
            (e, pair, lang)
            for e, spec in c["mining"].get("evalsets", {}).items()
            for pair in spec["pairs"]
            for lang in src_tgt(pair)
        ] + [("curation", pair, lang) for pair in c["curation"].get("corpora", {}) for lang in src_tgt(pair)]

    def embedding_path(self, row: str, seed: int | str, evalset: str, pair: str, lang: str, ext: str) -> str:
        return paths.embedding_path(row, seed, evalset, pair, lang, ext)

    def embed_paths(
        self, files: Sequence[tuple[str, str, str]], ext: str, seed: int | str = "{seed}"
    ) -> list[str]:
        """The embedding files of `files` as output patterns of a row (`{variant}`) and seed."""
        return [self.embedding_path("{variant}", seed, e, p, lang, ext) for e, p, lang in files]

    def embed_units(self) -> dict[str, tuple[list[str], list[tuple[str, str, str]]]]:
        """Unit -> (variants, [(evalset, pair, lang), ...]): which files each model writes. A unit `all` is a
        model that serves every pair (the base model; any variant's trilingual model); in the per-pair scope a
        trained variant has one unit per pair."""
        files = self.embedding_files()
        if not files:
            return {}
        if self.config["pretrain"]["scope"] == "tri":
            return {"all": (self.run.variants, files)}
        units = {"all": (["base"], files)} if "base" in self.run.variants else {}
        if self.run.trained:
            for pair in dict.fromkeys(p for _, p, _ in files):
                units[pair] = (self.run.trained, [f for f in files if f[1] == pair])
        return units

    def embed_jobs(self) -> list[EmbedRule]:
        """Every embed rule: per unit, one per mining set and one for the curation corpora (`by_kind`: a
        mining set added later embeds alone and reruns no curation), each serving every pre-training seed;
        rule `embed[_<pair>]_<set>`, log `<set>/<unit>`."""
        rules = []
        for unit, (variants, files) in self.embed_units().items():
            name = "embed" if unit == "all" else f"embed_{unit.replace('-', '_')}"
            for evalset, part in by_kind(files):
                rules.append(
                    EmbedRule(name + set_suffix(evalset), f"{evalset}/{unit}", variants, part, self.run.seeds)
                )
        return rules

    def reference_rows(self, backend: str) -> str:
        """The enabled reference rows of a backend, as a wildcard constraint (one that never matches when none)."""
        rows = [r for r, s in self.run.references.items() if s["settings"].get("backend") == backend]
        return "|".join(re.escape(r) for r in rows) or "(?!)"

    def reference_jobs(self) -> list[tuple[str, str, list[tuple[str, str, str]]]]:
        """(rule name suffix, log name, files) of a reference row's embed jobs: one per mining set, one for the
        curation corpora (as the variants' `embed_jobs`)."""
        return [
            (set_suffix(evalset), f"{evalset}/reference", part)
            for evalset, part in by_kind(self.embedding_files())
        ]

    def reference_paths(self, files: Sequence[tuple[str, str, str]], ext: str) -> list[str]:
        return self.embed_paths(files, ext, self.run.seeds[0])

    # --- evaluation jobs -----------------------------------------------------------------------------------

    def mining_outputs(self) -> list[str]:
        """Every row's mining metrics; no control_lexical for a pair without a dictionary ("no dictionary") or
        where the set turns it off (`has_lexical`)."""
        return [
            paths.fill(paths.MINING, variant=v, seed=s, evalset=e, pair=p, ext="metrics.json")
            for e, spec in self.config["mining"].get("evalsets", {}).items()
            for p in spec["pairs"]
            for v in self.run.rows
            if v != "control_lexical" or self.run.has_lexical(e, p)
            for s in self.run.row_seeds(v)
        ]

    def sentiment_outputs(self) -> list[str]:
        """One fine-tuning run per pre-training seed of the variant and `sentiment.seeds` entry."""
        return [
            paths.fill(paths.SENTIMENT, variant=v, seed=s, dataset=d, fseed=f)
            for d in self.config["sentiment"].get("datasets", {})
            for v in self.run.variants
            for s in self.run.row_seeds(v)
            for f in self.config["sentiment"]["seeds"]
        ]

    def curation_outputs(self) -> list[str]:
        """One ranking per row and pre-training seed (a reference encoder's: the first seed's folder)."""
        return [
            paths.fill(paths.CURATION, variant=v, seed=s, pair=p, name="metrics.json")
            for p in self.config["curation"].get("corpora", {})
            for v in self.run.curation_rows
            for s in self.run.row_seeds(v)
        ]

    @cached_property
    def nmt_controls(self) -> list[str]:
        """Rankings no model made: random (the floor), no_filter (every pair; `curation.nmt.no_filter`) and, for
        a labelled corpus, the oracle."""
        nmt = self.config["curation"]["nmt"]
        return (
            ["random"]
            + (["no_filter"] if nmt.get("no_filter", True) else [])
            + (["oracle"] if nmt["oracle"] else [])
        )

    def nmt_shares(self) -> list[str]:
        return [f"{f:g}" for f in self.config["curation"]["settings"].get("keep_fractions", [0.25, 0.5])]

    def nmt_runs(self) -> list[tuple[str, str, str, int]]:
        """(ranking, pair, share, seed) of every NMT run: each row's ranking per pre-training seed it has, the
        random (and oracle) ranking at each kept share and the no_filter control (every pair: share 1) once
        per pre-training seed, each seed's NMT trained with a seed derived from it (lem.run.settings.nmt_seed_and_model), so that every
        row has one replicate per seed, paired by seed (lem.evidence.compare)."""
        runs = []
        for pair in self.config["curation"]["nmt"]["pairs"]:
            for r in self.run.curation_rows + [c for c in self.nmt_controls if c != "no_filter"]:
                seeds = self.run.row_seeds(r) if r in self.run.curation_rows else self.run.seeds
                runs += [(r, pair, sh, s) for sh in self.nmt_shares() for s in seeds]
            if "no_filter" in self.nmt_controls:
                runs += [("no_filter", pair, "1", s) for s in self.run.seeds]
        return runs

    def nmt_run_dir(self, ranking: str, pair: str, share: str, seed: int | str) -> str:
        return paths.fill(paths.NMT_RUN, ranking=ranking, seed=seed, pair=pair, share=share)

    def nmt_outputs(self) -> list[str]:
        return [self.nmt_file(r, p, sh, s, "metrics.json") for r, p, sh, s in self.nmt_runs()]

    def nmt_file(self, ranking: str, pair: str, share: str, seed: int | str, name: str) -> str:
        return paths.fill(paths.NMT_FILE, ranking=ranking, seed=seed, pair=pair, share=share, name=name)

    def nmt_hub_model(self) -> str | None:
        """The hub folder of a pretrained NMT model (fetched by `fetch_nmt_model`), None for a local one."""
        s = self.config["curation"]["nmt"]["settings"]
        model = s.get("model") or ""
        if s.get("backend") != "pretrained" or Path(model).is_dir() or model.count("/") != 1:
            return None
        return paths.fill(paths.HUB_MODEL, repo=model, revision=s.get("revision") or "main")

    def final_outputs(self) -> list[str]:
        """The report, the controls' gate (`controls_gate`: fails naming the cells whose control failed) and the
        comparison with the documented run of the same configuration (`documented`)."""
        return [*paths.REPORT_OUTPUTS, paths.CONTROLS_GATE, paths.DOCUMENTED]

    # --- the job grid --------------------------------------------------------------------------------------

    def jobs(self) -> dict[str, set[str]]:
        """Rule -> the output files (one per job) of every job of the grid the config implies: pre-training,
        embedding, mining, sentiment, curation and NMT (the per-file preparation jobs are left to the DAG)."""
        out: dict[str, set[str]] = {}

        def add(rule: str, path: str) -> None:
            out.setdefault(rule, set()).add(path)

        for job in self.training_jobs():
            add(job.rule, job.output)
        for job in self.embed_jobs():
            for v in job.variants:
                for s in self.run.row_seeds(v):
                    add(job.rule, self.embedding_path(v, s, *job.files[0], "npy"))
        for e, spec in self.config["mining"].get("evalsets", {}).items():
            for p in spec["pairs"]:
                src = src_tgt(p)[0]
                for v in self.run.controls:
                    if v != "control_lexical" or self.run.has_lexical(e, p):
                        for s in self.run.row_seeds(v):
                            add("embed_control", self.embedding_path(v, s, e, p, src, "npy"))
        for row, spec in self.run.references.items():
            backend = spec["settings"].get("backend")
            rule = "embed_reference_laser" if backend == "laser" else "embed_reference"
            for suffix, _log, files in self.reference_jobs():
                add(rule + suffix, self.embedding_path(row, self.run.seeds[0], *files[0], "npy"))
        for path in self.mining_outputs():
            add("mine", path)
        for path in self.sentiment_outputs():
            add("sentiment", path)
        for path in self.curation_outputs():
            add("curate", path)
        for r, p, sh, s in self.nmt_runs():
            add("nmt_run", self.nmt_file(r, p, sh, s, "metrics.json"))
            add("nmt_select", paths.fill(paths.NMT_TRAIN, ranking=r, seed=s, pair=p, share=sh))
            if r in ("random", "oracle", "no_filter"):  # no_filter selects from the random ranking
                kind = "random" if r == "no_filter" else r
                add(
                    "curate_control",
                    paths.fill(paths.CURATION, variant=kind, seed=s, pair=p, name="scores.tsv"),
                )
        return out
