"""The model of a run: which rows, seeds and scopes a config has, where each artifact lives, which jobs it
implies and what settings each job gets, defined once.

`Run(config)` takes the config as the workflow holds it (validated, schema defaults filled, `{data_root}`
expanded: lem.config_check). workflow/rules/common.smk builds one (`RUN`) and its input functions call it;
`lem plan cost` counts its training jobs and `lem.config_check` checks the settings it merges. Everything is
computed from the config when asked (nothing at construction), so a config that is still being checked
reaches only what it asks for.

- rows: `variants` (`base` and the trained ones), the controls (`control_lexical`, `control_random`) and the
  reference encoders (`ref_<name>`); `model_of` maps each variant to the first-listed variant with the same
  masking (lem.masking.collate.variant_aliases), whose model it shares; `trained_models` are those that train.
- seeds: `seeds` (`pretrain.seeds`, else the run's `seed`); `row_seeds(row)` those a row has: every seed for
  a trained variant and a base model trained from scratch, the first for the others.
- scopes: `tri` (one model for all languages) or one per pair (`pretrain.scope`).
- paths: `base_model_dir`, `model_for`, `model_dir`, `nmt_run_dir`, the evaluation and leakage files, ...
- the job grid: `training_jobs`, `embed_jobs`, `reference_jobs`, `mining_outputs`, `sentiment_outputs`, `curation_outputs`,
  `nmt_runs`, `annotation_eval_outputs`, and `jobs()`: rule -> the outputs of every job the config implies
  (tests/test_run_model.py checks it against `snakemake -n`).
- settings: `settings_for(rule, **wildcards)`: the settings a rule passes to its `lem` verb (`--settings`).
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from functools import cached_property
from pathlib import Path
from types import SimpleNamespace
from typing import Any, NamedTuple

STAGES = ("mono", "para")
LEAKAGE_REPORT = "results/corpus/leakage.json"
BASE_MODEL_CHECK = "results/checks/base_model.json"
COVERAGE = "results/annotate/coverage.json"
CONTROLS_GATE = "results/report/controls_passed.json"
REPORT_OUTPUTS = (
    "results/report/summary.tsv",
    "results/report/summary.md",
    "results/report/summary.html",
    "results/report/overview.png",
    "results/report/mining.png",
)
CONTROL_KINDS = ("lexical", "random")
MARGIN_KEYS = ("k", "margin", "neighbourhood")  # what curation takes from mining.settings


# --- small helpers the rules share --------------------------------------------------------------------------


def as_json(obj: Any) -> str:
    """A settings mapping as JSON that the rules put between single quotes (`'{params.settings}'`; params: a
    change reruns the rule). A single quote can only sit inside a JSON string, where `\\u0027` is the same
    character: any free text (a note, a name, a label) passes unchanged, and the argument stays one word."""
    return json.dumps(obj, sort_keys=True).replace("'", "\\u0027")


def metrics_keys(task: str, **keys: Any) -> str:
    """The `--keys` JSON of a metrics writer: what its file measures (task, variant, dataset, pair, seed),
    written into the file for the report to read (docs/contracts.md)."""
    return as_json({"task": task, **{k: str(v) for k, v in keys.items()}})


def src_tgt(pair: str) -> list[str]:
    return pair.split("-")


def source_dep(spec: str) -> str:
    """The file a source spec depends on: `raw:<name>` (a fetched file), `unpacked:<archive>/<path>` (the
    unpacked archive folder), or a plain path."""
    if spec.startswith("raw:"):
        return f"resources/raw/{spec[4:]}"
    if spec.startswith("unpacked:"):
        return f"resources/unpacked/{spec[9:].split('/', 1)[0]}"
    return spec


def source_file(spec: str) -> str:
    """The path a source spec names (inside an unpacked archive where it says so)."""
    if spec.startswith("unpacked:"):
        return f"resources/unpacked/{spec[9:]}"
    return source_dep(spec)


def pair_source(spec: str | dict) -> tuple[list[str], list[str]]:
    """A curation corpus / NMT set spec (a TSV, or {src, tgt} line-aligned files) -> (deps, CLI arguments)."""
    if isinstance(spec, str):
        return [source_dep(spec)], ["--corpus", source_file(spec)]
    deps = [source_dep(spec["src"]), source_dep(spec["tgt"])]
    return deps, ["--src", source_file(spec["src"]), "--tgt", source_file(spec["tgt"])]


def sha256_arg(spec: dict) -> list[str]:
    """`--sha256 X` as a list of arguments (shell-quoted one by one by `{params.sha:q}`)."""
    return ["--sha256", spec["sha256"]] if spec.get("sha256") else []


def curation_mining(mining: dict[str, Any]) -> dict[str, Any]:
    """What curation takes from `mining.settings`: the margin (k, margin, neighbourhood) alone, so that a
    change of mining's retrieval, threshold or index does not rerun curation and NMT; the device only where
    not cpu (the runs made before it existed keep their params)."""
    if not isinstance(mining, dict):
        return {}  # not a mapping: the check of mining.settings says so
    out = {key: mining[key] for key in MARGIN_KEYS if key in mining}
    if mining.get("device", "cpu") != "cpu":
        out["device"] = mining["device"]
    return out


def file_args(input_files: Sequence[str], output_files: Sequence[str], langs: Sequence[str] | None = None):
    """`--sentences S [--lang L] --out E` for every file of an embed job, in order (a list: `:q` quotes each)."""
    out = []
    for i, (s, o) in enumerate(zip(input_files, output_files, strict=True)):
        out += ["--sentences", s] + (["--lang", langs[i]] if langs is not None else []) + ["--out", o]
    return out


def set_suffix(evalset: str) -> str:
    """An embed rule's name after the unit's: `_<set>` (non-word characters as `_`; `_curation` for the
    curation corpora)."""
    return "_" + re.sub(r"\W", "_", evalset)


def by_kind(files: Sequence[tuple[str, str, str]]) -> list[tuple[str, list[tuple[str, str, str]]]]:
    """(set, files) of embedding files (evalset, pair, lang): each mining set's and the curation corpora's
    (evalset `curation`), in the order first seen: one embed job per model and set, so that adding or
    removing a mining set embeds that set alone and leaves every other set's embeddings (and mining)
    untouched."""
    parts: dict[str, list[tuple[str, str, str]]] = {}
    for f in files:
        parts.setdefault(f[0], []).append(f)
    return list(parts.items())


def sentence_files(files: Sequence[tuple[str, str, str]]) -> list[str]:
    """The sentences of embedding files (evalset, pair, lang): a mining set's as `leakage_items` leaves them
    (`clean_dir`), a curation corpus's as prepared."""
    return [
        f"results/eval/prepared/{e}/{p}/{lang}.tsv" if e == "curation" else f"{clean_dir(e, p)}/{lang}.tsv"
        for e, p, lang in files
    ]


def clean_dir(evalset: str, pair: str) -> str:
    """A mining set and pair without its sentences equal to pre-training text (rule `leakage_items`):
    {src,tgt}.tsv, gold.tsv, stats.json, what embedding, mining and the report read."""
    return f"results/eval/clean/{evalset}/{pair}"


def reference_args(files: Sequence[tuple[str, str, str]], input: Any, output: Any) -> list[str]:
    """--sentences S --lang L --out E for every file (evalset, pair, lang) of a reference encoder's job."""
    return file_args(input.sentences, output.emb, [lang for *_, lang in files])


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


class Run:
    """The model of one run of a config (see the module's docstring)."""

    def __init__(self, config: dict[str, Any]):
        self.config = config

    # --- rows, seeds, scopes ---------------------------------------------------------------------------------

    @cached_property
    def langs(self) -> list[str]:
        return list(self.config["languages"])

    @cached_property
    def pairs(self) -> list[str]:
        return list(self.config["pairs"])

    @cached_property
    def variants(self) -> list[str]:
        return list(self.config["variants"])

    @cached_property
    def trained(self) -> list[str]:
        return [v for v in self.variants if v != "base"]

    @cached_property
    def seeds(self) -> list[int]:
        """The pre-training seeds (`pretrain.seeds`, else the run's `seed`): one model per seed and trained
        variant (and base model trained from scratch)."""
        return list((self.config.get("pretrain") or {}).get("seeds") or [self.config["seed"]])

    @cached_property
    def controls(self) -> list[str]:
        """Rows of the mining table besides the variants: the evaluation chain's controls (`embed_control`)."""
        controls = self.config.get("controls") or {}
        return [f"control_{kind}" for kind in CONTROL_KINDS if controls.get(kind)]

    @cached_property
    def references(self) -> dict[str, dict]:
        """`ref_<name>` -> spec of every enabled reference encoder (seedless rows, as the controls)."""
        return {
            f"ref_{name}": spec
            for name, spec in (self.config.get("reference_encoders") or {}).items()
            if (spec or {}).get("enabled", True)
        }

    @cached_property
    def rows(self) -> list[str]:
        """Rows of the mining table: the variants, the controls, the reference encoders."""
        return self.variants + self.controls + list(self.references)

    @cached_property
    def curation_rows(self) -> list[str]:
        """Rows of the curation and NMT tables: the variants and the reference encoders (they embed the
        curation corpora too); curation's controls are its own rankings (`nmt_controls`)."""
        return self.variants + list(self.references)

    @cached_property
    def model_of(self) -> dict[str, str]:
        """Each trained variant -> the first-listed variant with the same masking (lem.masking.collate.MaskingSettings
        .canonical), whose model it shares: evaluated and reported under its own name with that model."""
        from lem.masking.collate import variant_aliases

        return variant_aliases(self.config["pretrain"]["variants"], self.trained)

    @cached_property
    def trained_models(self) -> list[str]:
        return [v for v in self.trained if self.model_of[v] == v]

    @property
    def scratch(self) -> bool:
        return (self.config.get("base_model") or {}).get("source", "scratch") == "scratch"

    @cached_property
    def scopes(self) -> list[str]:
        return ["tri"] if self.config["pretrain"]["scope"] == "tri" else self.pairs

    def scope_of(self, pair: str) -> str:
        return "tri" if self.config["pretrain"]["scope"] == "tri" else pair

    def scope_langs(self, scope: str) -> list[str]:
        return self.langs if scope == "tri" else src_tgt(scope)

    def scope_pairs(self, scope: str) -> list[str]:
        return self.pairs if scope == "tri" else [scope]

    def row_seeds(self, row: str) -> list[int]:
        """The pre-training seeds a row of the tables has: every seed for the trained variants and a base
        model trained from scratch; the first alone for rows with no pre-training (a pretrained base model,
        controls, reference encoders), whose folders carry it so that every row has the same layout. The
        random control has one draw per seed: `controls.random_seeds` of them (default: one per pre-training
        seed; more continue after the largest), tested against chance together (lem.evidence.controls)."""
        if row in self.trained or (row == "base" and self.scratch):
            return self.seeds
        if row == "control_random":
            n = (self.config.get("controls") or {}).get("random_seeds") or len(self.seeds)
            extra = [max(self.seeds) + k for k in range(1, n - len(self.seeds) + 1)]
            return (self.seeds + extra)[:n]
        return self.seeds[:1]

    # --- models ------------------------------------------------------------------------------------------------

    def base_model_dir(self, seed: int | str | None = None) -> str | None:
        """The base model's folder; one per pre-training seed when it is trained from scratch (default: the
        first seed's, e.g. for the NER model). None for a hub model without repo or revision (refused by
        lem.config_check)."""
        bm = self.config.get("base_model") or {}
        source = bm.get("source", "scratch")
        if source == "scratch":
            return f"results/models/base/seed{self.seeds[0] if seed is None else seed}"
        if source == "stand_in":
            size = (bm.get("stand_in") or {}).get("size", "base")
            return f"resources/hf/lem-stand-in/xlm-roberta-{size}/random"
        if "path" in bm:
            return str(bm["path"])
        hub = bm.get("hub") or {}
        if "repo" not in hub or "revision" not in hub:
            return None
        return f"resources/hf/{hub['repo']}/{hub['revision']}"

    @property
    def fetches_base_model(self) -> bool:
        """A hub base model fetched by this run (download.smk: fetch_base_model, check_base_model)."""
        bm = self.config["base_model"]
        return bm["source"] == "pretrained" and "path" not in bm

    def base_model_checked(self) -> list[str]:
        """The check of the settings against a hub base model fetched by this run, an input of the first
        training jobs that read the model; none for other models, whose facts are known at planning."""
        return [BASE_MODEL_CHECK] if self.fetches_base_model else []

    def tokenizer_dir(self) -> str | None:
        if self.config["tokenizer"]["source"] == "train":
            return "results/tokenizer"
        return self.base_model_dir()

    def ner_base_model(self) -> str | None:
        base = self.config["ner_model"].get("base", "base_model")
        return self.base_model_dir() if base == "base_model" else base

    def model_dir(self, variant: str, scope: str, seed: int | str, stage: str) -> str:
        """The folder of a trained model's stage (`mono`, `para`)."""
        return f"results/models/{variant}/{scope}/seed{seed}/{stage}"

    def model_for(self, variant: str, pair: str, seed: int | str) -> str | None:
        """The model folder that represents `variant` for language pair `pair` and pre-training seed `seed`
        (an alias's: the model of the first-listed variant with the same masking)."""
        if variant == "base":
            return self.base_model_dir(seed)
        return self.model_dir(self.model_of[variant], self.scope_of(pair), seed, "para")

    def training_jobs(self) -> list[TrainingJob]:
        """Every pre-training job: the base model per seed when trained from scratch, then each trained model
        per scope, stage and seed."""
        jobs = []
        if self.scratch:
            jobs += [TrainingJob("base", "-", "base", s, self.base_model_dir(s)) for s in self.seeds]
        for v in self.trained_models:
            for scope in self.scopes:
                for stage in STAGES:
                    for s in self.seeds:
                        jobs.append(TrainingJob(v, scope, stage, s, self.model_dir(v, scope, s, stage)))
        return jobs

    def report_models(self) -> list[str]:
        """`variant:stage:label=folder` of every pre-trained model (the report's masking and loss figures)."""

        def order(job: TrainingJob) -> tuple:  # base first, then by model, scope, seed and stage
            if job.stage == "base":
                return (-1, 0, self.seeds.index(job.seed), 0)
            stage = STAGES.index(job.stage)
            return (
                self.trained_models.index(job.variant),
                self.scopes.index(job.scope),
                self.seeds.index(job.seed),
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

    # --- corpus, annotation, evaluation sets --------------------------------------------------------------

    def para_files(self, pair: str, split: str) -> list[str]:
        """The pair files of `corpus.files.para.<pair>.<split>` (a path or a list of paths)."""
        spec = self.config["corpus"]["files"]["para"][pair].get(split, [])
        return [spec] if isinstance(spec, str) else list(spec)

    def para_text(self, pair: str, split: str) -> str:
        """Parallel text as training reads it: the leakage-guarded train split, the valid split as it is."""
        if split == "train":
            return f"results/corpus/guarded/para/{pair}.train.tsv"
        return f"results/corpus/para/{pair}.valid.tsv"

    def annotation_inputs(self, lang: str, settings: dict | None = None) -> list[str]:
        """Every file a language's annotation settings point at (lexicons, tagger models)."""
        found: list[str] = []

        def walk(node: Any) -> None:
            if isinstance(node, dict):
                for key, value in node.items():
                    if key in ("path", "model") and isinstance(value, str) and not value.startswith("hub:"):
                        found.append(value)
                    else:
                        walk(value)
            elif isinstance(node, list):
                for item in node:
                    walk(item)

        walk(self.config["annotation"].get(lang, {}) if settings is None else settings)
        return found

    def annotation_gpu(self, lang: str, settings: dict | None = None) -> int:
        """GPUs of an annotation job: `resources.gpu_annotation` when a backend of the language runs a neural
        model that can use one (hf_ner, stanza, unless its device is cpu), else 0."""
        s = self.config["annotation"].get(lang, {}) if settings is None else settings
        uses_gpu = any(
            isinstance(task, dict)
            and task.get("backend") in ("hf_ner", "stanza")
            and task.get("device", "auto") != "cpu"
            for task in (s.get("pos"), s.get("ner"))
        )
        return self.config["resources"]["gpu_annotation"] if uses_gpu else 0

    def crf_args(self, name: str) -> list[str]:
        """`lem annotate train-crf` options of `crf_models.<name>` (the CLI's defaults for what is not set)."""
        spec = self.config["crf_models"][name]
        args = ["--task", spec["task"], "--lang", spec["lang"], "--format", spec["format"]]
        args += ["--on-error", spec.get("on_error", "raise")]
        if spec.get("tagset"):
            args += ["--tagset", spec["tagset"]]
        for key, value in spec.get("settings", {}).items():
            args += [f"--{key.replace('_', '-')}", str(value)]
        return args

    def annotation_eval_outputs(self) -> list[str]:
        ev = self.config["annotation_eval"]
        return [
            f"results/annotation_eval/{a}/{lang}.json"
            for a in ev["annotators"]
            for lang in self.langs
            if lang in ev["gold"]
        ]

    def masked_types(self) -> list[str]:
        """The entity types the trained variants mask (annotation_coverage requires a share of each)."""
        from lem.annotate.coverage import enabled_entity_types

        variants = self.config["pretrain"]["variants"]
        return list(enabled_entity_types({v: variants[v] for v in self.trained}))

    def evalsets(self) -> list[tuple[str, str]]:
        """Every evaluation set as (kind, name): mining sets, sentiment sets, curation corpora, NMT sets."""
        c = self.config
        return (
            [("mining", name) for name in c["mining"].get("evalsets", {})]
            + [("sentiment", name) for name in c["sentiment"].get("datasets", {})]
            + [("curation", pair) for pair in c["curation"].get("corpora", {})]
            + [("nmt", pair) for pair in c["curation"]["nmt"]["pairs"]]
        )

    def evalset_files(self, kind: str, name: str) -> list[str]:
        """The text of evaluation set `name` of `kind` that the pre-training data must not contain."""
        if kind == "mining":
            return [
                f"results/eval/prepared/{name}/{pair}/{lang}.tsv"
                for pair in self.config["mining"]["evalsets"][name]["pairs"]
                for lang in src_tgt(pair)
            ]
        if kind == "sentiment":
            return [f"results/eval/prepared/sentiment/{name}/{split}.tsv" for split in ("valid", "test")]
        if kind == "curation":
            return [f"results/eval/prepared/curation/{name}/pairs.tsv"]
        return self.nmt_eval_files([name])

    def eval_text_files(self) -> list[str]:
        """Every evaluation text the pre-training data must not contain (of every configured set)."""
        return [f for kind, name in self.evalsets() for f in self.evalset_files(kind, name)]

    def guard_eval_files(self) -> list[str]:
        """The leakage guard's evaluation input: once the guard has run, the files it was built with (its
        report's `evals`, those still on disk or still configured), so that adding or removing an evaluation
        set reruns no pre-training (a set added later is checked by `leakage_check` before it is evaluated);
        before, every configured set. Delete the report to guard the training text against the sets of now.
        """
        configured = self.eval_text_files()
        if not Path(LEAKAGE_REPORT).exists():
            return configured
        from lem.data.leakage import guarded_evals

        return [f for f in guarded_evals(LEAKAGE_REPORT) if Path(f).exists() or f in configured]

    def evalset_langs(self, kind: str, name: str) -> list[str]:
        if kind == "mining":
            pairs = self.config["mining"]["evalsets"][name]["pairs"]
            return sorted({lang for pair in pairs for lang in src_tgt(pair)})
        if kind == "sentiment":
            return src_tgt(self.config["sentiment"]["datasets"][name]["pair"])
        return src_tgt(name)

    def evalset_train(self, kind: str, name: str) -> list[str]:
        """The guarded pre-training text of the set's languages (what `leakage_check` compares it with)."""
        return self.train_text_of(self.evalset_langs(kind, name))

    def train_text_of(self, langs: Sequence[str]) -> list[str]:
        """The guarded pre-training text holding any of `langs` (mono text, parallel pairs with one of them;
        what a mining pair's `leakage_items` compares its sentences with)."""
        mono = [f"results/corpus/guarded/mono/{lang}.txt" for lang in self.langs if lang in langs]
        para = [
            f"results/corpus/guarded/para/{pair}.train.tsv"
            for pair in self.pairs
            if set(src_tgt(pair)) & set(langs)
        ]
        return mono + para

    def leakage_checked(self, kind: str, name: str) -> str:
        """The leakage check of one evaluation set: an input of the jobs that evaluate it."""
        return f"results/eval/checked/{kind}/{name}.json"

    def nmt_eval_files(self, pairs: Sequence[str] | None = None) -> list[str]:
        """The NMT validation and test sets (the curation corpora and the pre-training data must not hold
        them)."""
        pairs = self.config["curation"]["nmt"]["pairs"] if pairs is None else pairs
        return [
            f"results/eval/prepared/nmt/{pair}/{split}.tsv" for pair in pairs for split in ("valid", "test")
        ]

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
        return f"results/embeddings/{row}/seed{seed}/{evalset}/{pair}/{lang}.{ext}"

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
            return {"all": (self.variants, files)}
        units = {"all": (["base"], files)} if "base" in self.variants else {}
        if self.trained:
            for pair in dict.fromkeys(p for _, p, _ in files):
                units[pair] = (self.trained, [f for f in files if f[1] == pair])
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
                    EmbedRule(name + set_suffix(evalset), f"{evalset}/{unit}", variants, part, self.seeds)
                )
        return rules

    def reference_rows(self, backend: str) -> str:
        """The enabled reference rows of a backend, as a wildcard constraint (one that never matches when none)."""
        rows = [r for r, s in self.references.items() if s["settings"].get("backend") == backend]
        return "|".join(re.escape(r) for r in rows) or "(?!)"

    def reference_jobs(self) -> list[tuple[str, str, list[tuple[str, str, str]]]]:
        """(rule name suffix, log name, files) of a reference row's embed jobs: one per mining set, one for the
        curation corpora (as the variants' `embed_jobs`)."""
        return [
            (set_suffix(evalset), f"{evalset}/reference", part)
            for evalset, part in by_kind(self.embedding_files())
        ]

    def reference_paths(self, files: Sequence[tuple[str, str, str]], ext: str) -> list[str]:
        return self.embed_paths(files, ext, self.seeds[0])

    def reference_controls(self) -> dict[str, Any]:
        """Reference rows that are positive controls (`positive_lift` set) -> their lift, for the report."""
        return {
            row: spec["positive_lift"]
            for row, spec in self.references.items()
            if spec.get("positive_lift") is not None
        }

    def control_dictionary(self, pair: str) -> str | None:
        """The positive control's dictionary for a pair: `generated` or the configured file (None: no control)."""
        lexical = self.config["controls"]["lexical"]
        return lexical if isinstance(lexical, str) else (lexical or {}).get(pair)

    def generated_languages_args(self) -> list[str]:
        """`--generated-languages JSON` when the config writes the generated world's languages under codes of
        its own (`corpus.generate.languages`: code -> built-in language); none otherwise."""
        named = ((self.config.get("corpus") or {}).get("generate") or {}).get("languages") or {}
        return ["--generated-languages", json.dumps(named, sort_keys=True)] if named else []

    # --- evaluation jobs -----------------------------------------------------------------------------------

    def mining_outputs(self) -> list[str]:
        """Every row's mining metrics; no control_lexical for a pair without a dictionary ("no dictionary") or
        where the set turns it off (`has_lexical`)."""
        return [
            f"results/mining/{v}/seed{s}/{e}/{p}.metrics.json"
            for e, spec in self.config["mining"].get("evalsets", {}).items()
            for p in spec["pairs"]
            for v in self.rows
            if v != "control_lexical" or self.has_lexical(e, p)
            for s in self.row_seeds(v)
        ]

    def has_lexical(self, evalset: str, pair: str) -> bool:
        """Whether set `evalset` has the lexical control on `pair`: a dictionary for the pair, and not turned
        off by `mining.evalsets.<set>.controls.lexical` (false, or {pair: false})."""
        if self.control_dictionary(pair) is None:
            return False
        spec = self.config["mining"]["evalsets"].get(evalset) or {}
        own = (spec.get("controls") or {}).get("lexical", True)
        return bool(own.get(pair, True) if isinstance(own, dict) else own)

    def sentiment_outputs(self) -> list[str]:
        """One fine-tuning run per pre-training seed of the variant and `sentiment.seeds` entry."""
        return [
            f"results/sentiment/{v}/seed{s}/{d}/finetune{f}/metrics.json"
            for d in self.config["sentiment"].get("datasets", {})
            for v in self.variants
            for s in self.row_seeds(v)
            for f in self.config["sentiment"]["seeds"]
        ]

    def curation_outputs(self) -> list[str]:
        """One ranking per row and pre-training seed (a reference encoder's: the first seed's folder)."""
        return [
            f"results/curation/{v}/seed{s}/{p}/metrics.json"
            for p in self.config["curation"].get("corpora", {})
            for v in self.curation_rows
            for s in self.row_seeds(v)
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
        per pre-training seed, each seed's NMT trained with a seed derived from it (`_nmt_settings`), so that every
        row has one replicate per seed, paired by seed (lem.evidence.compare)."""
        runs = []
        for pair in self.config["curation"]["nmt"]["pairs"]:
            for r in self.curation_rows + [c for c in self.nmt_controls if c != "no_filter"]:
                seeds = self.row_seeds(r) if r in self.curation_rows else self.seeds
                runs += [(r, pair, sh, s) for sh in self.nmt_shares() for s in seeds]
            if "no_filter" in self.nmt_controls:
                runs += [("no_filter", pair, "1", s) for s in self.seeds]
        return runs

    def nmt_run_dir(self, ranking: str, pair: str, share: str, seed: int | str) -> str:
        return f"results/nmt/{ranking}/seed{seed}/{pair}/keep{share}"

    def nmt_outputs(self) -> list[str]:
        return [f"{self.nmt_run_dir(r, p, sh, s)}/metrics.json" for r, p, sh, s in self.nmt_runs()]

    def nmt_hub_model(self) -> str | None:
        """The hub folder of a pretrained NMT model (fetched by `fetch_nmt_model`), None for a local one."""
        s = self.config["curation"]["nmt"]["settings"]
        model = s.get("model") or ""
        if s.get("backend") != "pretrained" or Path(model).is_dir() or model.count("/") != 1:
            return None
        return f"resources/hf/{model}/{s.get('revision') or 'main'}"

    def final_outputs(self) -> list[str]:
        """The report, and the controls' gate (`controls_gate`: fails naming the cells whose control failed)."""
        return [*REPORT_OUTPUTS, CONTROLS_GATE]

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
                for s in self.row_seeds(v):
                    add(job.rule, self.embedding_path(v, s, *job.files[0], "npy"))
        for e, spec in self.config["mining"].get("evalsets", {}).items():
            for p in spec["pairs"]:
                src = src_tgt(p)[0]
                for v in self.controls:
                    if v != "control_lexical" or self.has_lexical(e, p):
                        for s in self.row_seeds(v):
                            add("embed_control", self.embedding_path(v, s, e, p, src, "npy"))
        for row, spec in self.references.items():
            backend = spec["settings"].get("backend")
            rule = "embed_reference_laser" if backend == "laser" else "embed_reference"
            for suffix, _log, files in self.reference_jobs():
                add(rule + suffix, self.embedding_path(row, self.seeds[0], *files[0], "npy"))
        for path in self.mining_outputs():
            add("mine", path)
        for path in self.sentiment_outputs():
            add("sentiment", path)
        for path in self.curation_outputs():
            add("curate", path)
        for r, p, sh, s in self.nmt_runs():
            add("nmt_run", f"{self.nmt_run_dir(r, p, sh, s)}/metrics.json")
            add("nmt_select", f"{self.nmt_run_dir(r, p, sh, s)}.train.tsv")
            if r in ("random", "oracle", "no_filter"):  # no_filter selects from the random ranking
                kind = "random" if r == "no_filter" else r
                add("curate_control", f"results/curation/{kind}/seed{s}/{p}/scores.tsv")
        return out

    # --- settings ------------------------------------------------------------------------------------------

    def stage_training(self, scope: str, stage: str, seed: int | str | None = None) -> dict[str, Any]:
        """The training settings a continual pre-training stage of `scope` receives (`lem pretrain continue`):
        the pre-training seed (default: the first), the stage's `training` and its epochs for that scope."""
        st = self.config["pretrain"]["stages"][stage]
        epochs = st["epochs"].get(scope, st["epochs"]["default"])
        seed = self.seeds[0] if seed is None else int(seed)
        return {"seed": seed, **st.get("training", {}), "epochs": epochs}

    def base_training(self, seed: int | str | None = None) -> dict[str, Any]:
        """The training settings of the base model trained from scratch (`lem pretrain base`) for one seed."""
        seed = self.seeds[0] if seed is None else int(seed)
        return {"seed": seed, **self.config["base_model"].get("training", {})}

    def eval_annotation(self, annotator: str, lang: str) -> dict[str, Any]:
        """Annotation settings of an evaluated annotator: the configured ones with its overrides."""
        return {**self.config["annotation"][lang], **self.config["annotation_eval"]["annotators"][annotator]}

    def settings_for(self, rule: str, **wildcards: Any) -> Any:
        """The settings rule `rule` passes to its `lem` verb (as `--settings`, JSON: `as_json`), for the job of
        `wildcards` (e.g. `settings_for("pretrain_mono", scope="tri", tvariant="lem", seed=1)`). Every section
        read here is checked by lem.config_check (tests/test_config_sections.py reads `makers`)."""
        config, w = self.config, SimpleNamespace(**wildcards)
        ref = str(wildcards.get("variant", "")).removeprefix("ref_")  # a reference encoder's row
        makers = {
            "generate_corpus": lambda: {"seed": config["seed"], **config["corpus"]["generate"]},
            "annotate": lambda: config["annotation"][w.lang],
            "annotation_eval": lambda: self.eval_annotation(w.annotator, w.lang),
            "annotation_coverage": lambda: {lang: config["annotation"][lang] for lang in self.langs},
            "annotation_coverage_check": lambda: {"seed": config["seed"], **config["annotation_coverage"]},
            "train_ner": lambda: {"seed": config["seed"], **config["ner_model"].get("settings", {})},
            "leakage": lambda: config["leakage"],
            "leakage_items": lambda: config["mining"]["evalsets"][w.evalset].get("leakage") or {},
            "madlad": lambda: {
                **config["sources"]["madlad"].get("settings", {}),
                "size": config["sources"]["madlad"]["sizes"][w.lang],
            },
            "multiner_split": lambda: config["sources"]["multiner"].get("settings", {}),
            "prepare_sentiment": lambda: config["sentiment"]["datasets"][w.dataset].get("prepare", {}),
            "check_base_model": lambda: self._base_model_settings(),
            "pretrain_base": lambda: self._base_settings(w.seed),
            "pretrain_mono": lambda: self._stage_settings("mono", w.scope, w.tvariant, w.seed),
            "pretrain_para": lambda: self._stage_settings("para", w.scope, w.tvariant, w.seed),
            "embed": lambda: config["embedding"],
            "embed_reference": lambda: config["reference_encoders"][ref]["settings"],
            "mine": lambda: config["mining"]["settings"],
            "prepare_curation": lambda: config["curation"]["filters"],
            "curate": lambda: {
                **config["curation"]["settings"],
                "mining": curation_mining(config["mining"]["settings"]),
            },
            "nmt_run": lambda: self._nmt_settings(w.seed),
            "sentiment": lambda: config["sentiment"]["training"],
        }
        if rule not in makers:
            raise KeyError(f"no settings for rule {rule!r}; rules with settings: {', '.join(makers)}")
        return makers[rule]()

    def _base_model_settings(self) -> dict[str, Any]:
        """The settings that depend on the base model, and the model itself (lem.config_check.check_base_model):
        a change of another section does not rerun the check."""
        c = self.config
        return {
            "base_model": c["base_model"],
            "pretrain": {"max_length": c["pretrain"]["max_length"]},
            "embedding": c["embedding"],
            "mining": {"settings": c["mining"]["settings"]},
            "sentiment": {"training": c["sentiment"]["training"]},
        }

    def _base_settings(self, seed: int | str) -> dict[str, Any]:
        """The base model trained from scratch: its architecture for pretrain.max_length, its training."""
        model = {
            **self.config["base_model"].get("model", {}),
            "max_length": self.config["pretrain"]["max_length"],
        }
        return {"model": model, "training": self.base_training(seed), "masking": {"strategy": "standard"}}

    def _stage_settings(self, stage: str, scope: str, tvariant: str, seed: int | str) -> dict[str, Any]:
        return {
            "training": self.stage_training(scope, stage, seed),
            "masking": self.config["pretrain"]["variants"][tvariant],
        }

    def _nmt_settings(self, seed: int | str) -> dict[str, Any]:
        """`curation.nmt.settings` for pre-training seed `seed`: a replicate per seed, its model trained with
        a seed derived from it (`lem.nmt.settings.training_seed`: never the rankings' seed itself), a hub model
        replaced by its fetched folder."""
        from lem.nmt.settings import NMTSettings, training_seed

        given = self.config["curation"]["nmt"]["settings"]
        s = {**given, "seed": training_seed(int(seed), given.get("seed", NMTSettings.seed))}
        if self.nmt_hub_model():
            s.update(model=self.nmt_hub_model(), revision=None)
        return s
