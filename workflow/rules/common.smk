import json
import re
import shutil
import sys
from pathlib import Path

from snakemake.exceptions import WorkflowError
from snakemake.utils import validate

validate(config, schema="../schemas/config.schema.yaml", set_default=True)

from lem.config_check import (
    ConfigError,
    base_training,
    check_config,
    expand_data_root,
    pretrain_seeds,
    stage_training,
)

# `{data_root}` in any path: the config's `data_root` (config/local.yaml names its folder once)
try:
    expand_data_root(config)
except ConfigError as _err:
    raise WorkflowError(f"config: {_err}") from None

# Every section is built into the settings dataclass of the `lem` verb that reads it, merged as the rules
# pass it: an unknown key, a wrong type or a value the dataclass refuses stops here, naming the key (in one
# line: the traceback of a refusal would only show lem.config_check's code).
try:
    check_config(config)
except ConfigError as _err:
    raise WorkflowError(f"config: {_err}") from None

from lem.numerics import export_mode

# Every `lem` job pins the CPU's kernels (portable) or leaves them (native) as its environment says
# (lem.numerics): set here for the jobs of this run, and again by each SLURM job, which reads this file too.
export_mode(config["resources"]["cpu_numerics"])

from lem.interrupt import forward_to_jobs

# Ctrl-C, or a SIGINT sent to Snakemake alone, reaches the running jobs too: the local executor only waits
# for them, and a training job saves a checkpoint and stops (lem.interrupt).
forward_to_jobs()

from lem.data.download import unpinned_hub_sources, unpinned_url_sources

# Hub sources must name a commit and URL files a sha256 (or say allow_unpinned): refused here, before any job.
for _problem in unpinned_hub_sources(config) + unpinned_url_sources(config):
    raise ValueError(_problem)

# Rules call the `lem` CLI; when Snakemake runs from a virtual environment that is not activated,
# put that environment's bin folder first so its `lem` is found (locally and inside SLURM jobs).
if shutil.which("lem") is None:
    shell.prefix(f'export PATH="{Path(sys.executable).parent}:$PATH"; ')

LANGS = config["languages"]
PAIRS = config["pairs"]
VARIANTS = config["variants"]
TRAINED = [v for v in VARIANTS if v != "base"]
# Pre-training seeds: each trained variant (and a base model trained from scratch) is trained once per seed.
PSEEDS = pretrain_seeds(config)
# Rows of the mining table besides the variants: the evaluation chain's controls (embed.smk, `embed_control`)
CONTROLS = [
    f"control_{kind}"
    for kind in ("lexical", "random")
    if config.get("controls", {}).get(kind)
]
# Rows of the reference encoders (config `reference_encoders`, reference.smk): `ref_<name>`, seedless as the controls
REFERENCES = {
    f"ref_{name}": spec
    for name, spec in config.get("reference_encoders", {}).items()
    if spec.get("enabled", True)
}
ROWS = VARIANTS + CONTROLS + list(REFERENCES)
# Rows of the curation and NMT tables: the variants and the reference encoders (they embed the curation
# corpora too); the controls of curation are its own rankings (random, no_filter: NMT_CONTROLS)
CURATION_ROWS = VARIANTS + list(REFERENCES)
for _v in TRAINED:
    if _v not in config["pretrain"]["variants"]:
        raise ValueError(
            f"variant {_v!r} is listed in `variants` but has no masking in pretrain.variants"
        )

from lem.masking import variant_aliases

# Variants with the same masking (lem.masking.MaskingSettings.canonical: entity types in any order,
# defaults filled in) share one model: the first listed is trained, the others are its aliases,
# evaluated and reported under their own names with that model (model_for).
MODEL_OF = variant_aliases(config["pretrain"]["variants"], TRAINED)
TRAINED_MODELS = [v for v in TRAINED if MODEL_OF[v] == v]
for _p in PAIRS:
    _s, _t = _p.split("-")
    if _s == _t or _s not in LANGS or _t not in LANGS:
        raise ValueError(
            f"pair {_p!r} must join two different configured languages {LANGS}"
        )
SCOPES = ["tri"] if config["pretrain"]["scope"] == "tri" else PAIRS


wildcard_constraints:
    lang="|".join(LANGS),
    src="|".join(LANGS),
    tgt="|".join(LANGS),
    pair="|".join(PAIRS),
    split="train|valid",
    variant="|".join(ROWS) if ROWS else "base",
    tvariant="|".join(TRAINED_MODELS) if TRAINED_MODELS else "none",
    scope="|".join(SCOPES),
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
    by side than as one job on every core, and a fixed count keeps the floats independent of `--cores`."""
    wanted = config["resources"].get("threads_training")
    cores = all_cores()
    return cores if wanted is None else min(int(wanted), cores)


def as_json(obj):
    """A config section as JSON that the rules put between single quotes (`'{params.settings}'`; params: a
    change reruns the rule). A single quote can only sit inside a JSON string, where `\\u0027` is the same
    character: any free text (a note, a name, a label) passes unchanged, and the argument stays one word.
    """
    return json.dumps(obj, sort_keys=True).replace("'", "\\u0027")


def metrics_keys(task, **keys):
    """The `--keys` JSON of a metrics writer: what its file measures (task, variant, dataset, pair, seed),
    written into the file for the report to read (docs/contracts.md)."""
    return as_json({"task": task, **{k: str(v) for k, v in keys.items()}})


def mining_margin():
    """What curation takes from mining.settings: the margin (k, margin, neighbourhood) alone, so that a
    change of mining's retrieval, threshold or index does not rerun curation and NMT."""
    settings = config["mining"]["settings"]
    return {
        key: settings[key]
        for key in ("k", "margin", "neighbourhood")
        if key in settings
    }


def src_tgt(pair):
    return pair.split("-")


def scope_of(pair):
    return "tri" if config["pretrain"]["scope"] == "tri" else pair


def scope_langs(scope):
    if scope == "tri":
        return LANGS
    return src_tgt(scope)


def scope_pairs(scope):
    return PAIRS if scope == "tri" else [scope]


def para_files(pair, split):
    """The pair files of `corpus.files.para.<pair>.<split>` (a path or a list of paths)."""
    spec = config["corpus"]["files"]["para"][pair].get(split, [])
    return [spec] if isinstance(spec, str) else list(spec)


def source_dep(spec):
    """The file a source spec depends on: `raw:<name>` (a fetched file), `unpacked:<archive>/<path>`
    (the unpacked archive folder), or a plain path."""
    if spec.startswith("raw:"):
        return f"resources/raw/{spec[4:]}"
    if spec.startswith("unpacked:"):
        return f"resources/unpacked/{spec[9:].split('/', 1)[0]}"
    return spec


def source_file(spec):
    """The path a source spec names (inside an unpacked archive where it says so)."""
    if spec.startswith("unpacked:"):
        return f"resources/unpacked/{spec[9:]}"
    return source_dep(spec)


def sha256_arg(spec):
    """`--sha256 X` as a list of arguments (shell-quoted one by one by `{params.sha:q}`)."""
    return ["--sha256", spec["sha256"]] if spec.get("sha256") else []


def ner_base_model():
    base = config["ner_model"].get("base", "base_model")
    return base_model_dir() if base == "base_model" else base


def tokenizer_dir():
    if config["tokenizer"]["source"] == "train":
        return "results/tokenizer"
    return base_model_dir()


def base_model_dir(seed=None):
    """The base model's folder; one per pre-training seed when it is trained from scratch (default: the
    first seed's, e.g. for the NER model)."""
    bm = config["base_model"]
    if bm["source"] == "scratch":
        return f"results/models/base/seed{PSEEDS[0] if seed is None else seed}"
    if bm["source"] == "stand_in":
        return f"resources/hf/lem-stand-in/xlm-roberta-{bm['stand_in']['size']}/random"
    if "path" in bm:
        return bm["path"]
    return f"resources/hf/{bm['hub']['repo']}/{bm['hub']['revision']}"


BASE_MODEL_CHECK = "results/checks/base_model.json"


def base_model_checked():
    """The check of the settings against a hub base model fetched by this run (download.smk,
    check_base_model), an input of the first training jobs that read the model (ancient: rerunning the
    check retrains nothing); none for other models, whose facts are known at planning.
    """
    bm = config["base_model"]
    if bm["source"] == "pretrained" and "path" not in bm:
        return [ancient(BASE_MODEL_CHECK)]
    return []


def base_model_settings():
    """The settings that depend on the base model, and the model itself (lem.config_check.check_base_model):
    a change of another section does not rerun the check.
    """
    return {
        "base_model": config["base_model"],
        "pretrain": {"max_length": config["pretrain"]["max_length"]},
        "embedding": config["embedding"],
        "mining": {"settings": config["mining"]["settings"]},
        "sentiment": {"training": config["sentiment"]["training"]},
    }


def model_for(variant, pair, seed):
    """The model folder that represents `variant` for language pair `pair` and pre-training seed `seed` (an
    alias's: the model of the first-listed variant with the same masking)."""
    if variant == "base":
        return base_model_dir(seed)
    return f"results/models/{MODEL_OF[variant]}/{scope_of(pair)}/seed{seed}/para"


def row_seeds(row):
    """The pre-training seeds a row of the tables has: every seed for the trained variants and a base model
    trained from scratch; the first alone for rows with no pre-training (a pretrained base model, controls),
    whose folders carry it so that every row has the same layout."""
    if row in TRAINED or (
        row == "base" and config["base_model"]["source"] == "scratch"
    ):
        return PSEEDS
    return PSEEDS[:1]


def annotation_inputs(lang, settings=None):
    """Every file a language's annotation settings point at (lexicons, tagger models)."""
    found = []

    def walk(node):
        if isinstance(node, dict):
            for key, value in node.items():
                if (
                    key in ("path", "model")
                    and isinstance(value, str)
                    and not value.startswith("hub:")
                ):
                    found.append(value)
                else:
                    walk(value)
        elif isinstance(node, list):
            for item in node:
                walk(item)

    walk(config["annotation"].get(lang, {}) if settings is None else settings)
    return found


def annotation_gpu(lang, settings=None):
    """GPUs of an annotation job: `resources.gpu_annotation` when a backend of the language runs a neural
    model that can use one (hf_ner, stanza, unless its device is cpu), else 0."""
    s = config["annotation"].get(lang, {}) if settings is None else settings
    uses_gpu = any(
        isinstance(task, dict)
        and task.get("backend") in ("hf_ner", "stanza")
        and task.get("device", "auto") != "cpu"
        for task in (s.get("pos"), s.get("ner"))
    )
    return config["resources"]["gpu_annotation"] if uses_gpu else 0


def crf_args(name):
    """`lem annotate train-crf` options of `crf_models.<name>` (the CLI's defaults for what is not set)."""
    spec = config["crf_models"][name]
    args = ["--task", spec["task"], "--lang", spec["lang"], "--format", spec["format"]]
    args += ["--on-error", spec.get("on_error", "raise")]
    if spec.get("tagset"):
        args += ["--tagset", spec["tagset"]]
    for key, value in spec.get("settings", {}).items():
        args += [f"--{key.replace('_', '-')}", str(value)]
    return args  # a list: `{params.args:q}` quotes each argument


def eval_annotation(annotator, lang):
    """Annotation settings of an evaluated annotator: the configured ones with its overrides."""
    return {
        **config["annotation"][lang],
        **config["annotation_eval"]["annotators"][annotator],
    }


def annotation_eval_outputs():
    ev = config["annotation_eval"]
    return [
        f"results/annotation_eval/{a}/{lang}.json"
        for a in ev["annotators"]
        for lang in LANGS
        if lang in ev["gold"]
    ]


def stage_settings(scope, variant, stage, seed):
    return as_json(
        {
            "training": stage_training(config, scope, stage, int(seed)),
            "masking": config["pretrain"]["variants"][variant],
        }
    )


def base_settings(seed):
    model = {
        **config["base_model"].get("model", {}),
        "max_length": config["pretrain"]["max_length"],
    }
    return as_json(
        {
            "model": model,
            "training": base_training(config, int(seed)),
            "masking": {"strategy": "standard"},
        }
    )


def para_text(pair, split):
    """Parallel text as training reads it: the leakage-guarded train split, the valid split as it is."""
    if split == "train":
        return f"results/corpus/guarded/para/{pair}.train.tsv"
    return f"results/corpus/para/{pair}.valid.tsv"


def evalsets():
    """Every evaluation set as (kind, name): mining sets, sentiment sets, curation corpora, NMT sets."""
    return (
        [("mining", name) for name in config["mining"].get("evalsets", {})]
        + [("sentiment", name) for name in config["sentiment"].get("datasets", {})]
        + [("curation", pair) for pair in config["curation"].get("corpora", {})]
        + [("nmt", pair) for pair in config["curation"]["nmt"]["pairs"]]
    )


def evalset_files(kind, name):
    """The text of evaluation set `name` of `kind` that the pre-training data must not contain."""
    if kind == "mining":
        return [
            f"results/eval/prepared/{name}/{pair}/{lang}.tsv"
            for pair in config["mining"]["evalsets"][name]["pairs"]
            for lang in src_tgt(pair)
        ]
    if kind == "sentiment":
        return [
            f"results/eval/prepared/sentiment/{name}/{split}.tsv"
            for split in ("valid", "test")
        ]
    if kind == "curation":
        return [f"results/eval/prepared/curation/{name}/pairs.tsv"]
    return [
        f"results/eval/prepared/nmt/{name}/{split}.tsv" for split in ("valid", "test")
    ]


def eval_text_files():
    """Every evaluation text the pre-training data must not contain (of every configured set)."""
    return [f for kind, name in evalsets() for f in evalset_files(kind, name)]


LEAKAGE_REPORT = "results/corpus/leakage.json"


def guard_eval_files():
    """The leakage guard's evaluation input: once the guard has run, the files it was built with (its
    report's `evals`, those still on disk or still configured), so that adding or removing an evaluation
    set reruns no pre-training (a set added later is checked by `leakage_check` before it is evaluated);
    before, every configured set. Delete the report to guard the training text against the sets of now.
    """
    configured = eval_text_files()
    if not Path(LEAKAGE_REPORT).exists():
        return configured
    from lem.data.leakage import guarded_evals

    return [
        f for f in guarded_evals(LEAKAGE_REPORT) if Path(f).exists() or f in configured
    ]


def evalset_langs(kind, name):
    if kind == "mining":
        pairs = config["mining"]["evalsets"][name]["pairs"]
        return sorted({lang for pair in pairs for lang in src_tgt(pair)})
    if kind == "sentiment":
        return src_tgt(config["sentiment"]["datasets"][name]["pair"])
    return src_tgt(name)


def evalset_train(kind, name):
    """The guarded pre-training text of the set's languages (what `leakage_check` compares it with)."""
    langs = evalset_langs(kind, name)
    mono = [
        f"results/corpus/guarded/mono/{lang}.txt" for lang in LANGS if lang in langs
    ]
    para = [
        f"results/corpus/guarded/para/{pair}.train.tsv"
        for pair in PAIRS
        if set(src_tgt(pair)) & set(langs)
    ]
    return mono + para


def masked_types():
    """The entity types the trained variants mask (annotation_coverage requires a share of each)."""
    from lem.annotate.coverage import enabled_entity_types

    return list(
        enabled_entity_types({v: config["pretrain"]["variants"][v] for v in TRAINED})
    )


def leakage_checked(kind, name):
    """The leakage check of one evaluation set: an input of the jobs that evaluate it."""
    return f"results/eval/checked/{kind}/{name}.json"


def nmt_eval_files():
    """The NMT validation and test sets (the curation corpora and the pre-training data must not hold them)."""
    return [
        f"results/eval/prepared/nmt/{pair}/{split}.tsv"
        for pair in config["curation"]["nmt"]["pairs"]
        for split in ("valid", "test")
    ]


def embedding_files():
    """Every text a model embeds, as (evalset, pair, lang): the embed jobs of the variants (embed.smk) and of
    any other row (controls, reference encoders) write results/embeddings/{row}/seed{seed}/{evalset}/{pair}/{lang}.*
    for each of them."""
    return [
        (e, pair, lang)
        for e, spec in config["mining"].get("evalsets", {}).items()
        for pair in spec["pairs"]
        for lang in src_tgt(pair)
    ] + [
        ("curation", pair, lang)
        for pair in config["curation"].get("corpora", {})
        for lang in src_tgt(pair)
    ]


def reference_rows(backend):
    """The enabled reference rows of a backend, as a wildcard constraint (one that never matches when none)."""
    rows = [r for r, s in REFERENCES.items() if s["settings"].get("backend") == backend]
    return "|".join(re.escape(r) for r in rows) or "(?!)"


def reference_settings(row):
    """The `--settings` of reference row `ref_<name>`: reference_encoders.<name>.settings."""
    name = row.removeprefix("ref_")
    return as_json(config["reference_encoders"][name]["settings"])


def reference_paths(ext):
    return [
        f"results/embeddings/{{variant}}/seed{PSEEDS[0]}/{e}/{p}/{lang}.{ext}"
        for e, p, lang in embedding_files()
    ]


def reference_args(input, output):
    """--sentences S --lang L --out E for every file of the job (a list: `:q` quotes each)."""
    langs = [lang for _, _, lang in embedding_files()]
    return [
        arg
        for s, lang, o in zip(input.sentences, langs, output.emb, strict=True)
        for arg in ("--sentences", s, "--lang", lang, "--out", o)
    ]


def reference_controls():
    """Reference rows that are positive controls (`positive_lift` set) -> their lift, for the report."""
    return {
        row: spec["positive_lift"]
        for row, spec in REFERENCES.items()
        if spec.get("positive_lift") is not None
    }


REFERENCE_SENTENCES = [
    f"results/eval/prepared/{e}/{p}/{lang}.tsv" for e, p, lang in embedding_files()
]


def mining_outputs():
    """Every row's mining metrics; no control_lexical for a pair without a dictionary ("no dictionary")."""
    return [
        f"results/mining/{v}/seed{s}/{e}/{p}.metrics.json"
        for e, spec in config["mining"].get("evalsets", {}).items()
        for p in spec["pairs"]
        for v in ROWS
        if v != "control_lexical" or control_dictionary(p) is not None
        for s in row_seeds(v)
    ]


def sentiment_outputs():
    """One fine-tuning run per pre-training seed of the variant and `sentiment.seeds` entry."""
    return [
        f"results/sentiment/{v}/seed{s}/{d}/finetune{f}/metrics.json"
        for d in config["sentiment"].get("datasets", {})
        for v in VARIANTS
        for s in row_seeds(v)
        for f in config["sentiment"]["seeds"]
    ]


def curation_outputs():
    """One ranking per row and pre-training seed (a reference encoder's: the first seed's folder)."""
    return [
        f"results/curation/{v}/seed{s}/{p}/metrics.json"
        for p in config["curation"].get("corpora", {})
        for v in CURATION_ROWS
        for s in row_seeds(v)
    ]


def report_models():
    """`variant:stage:label=folder` of every pre-trained model (the report's masking and loss figures): the
    base model per seed when trained from scratch, each trained model per scope, seed and stage.
    """
    specs = []
    if config["base_model"]["source"] == "scratch":
        specs += [f"base:base:{s}={base_model_dir(s)}" for s in PSEEDS]
    for v in TRAINED_MODELS:
        for scope in SCOPES:
            label = "" if scope == "tri" else f"{scope}-"
            for s in PSEEDS:
                for stage in ("mono", "para"):
                    folder = f"results/models/{v}/{scope}/seed{s}/{stage}"
                    specs.append(f"{v}:{stage}:{label}{s}={folder}")
    return specs


def pair_source(spec):
    """A curation corpus / NMT set spec (a TSV, or {src, tgt} line-aligned files) -> (deps, CLI arguments)."""
    if isinstance(spec, str):
        return [source_dep(spec)], ["--corpus", source_file(spec)]
    return [source_dep(spec["src"]), source_dep(spec["tgt"])], [
        "--src",
        source_file(spec["src"]),
        "--tgt",
        source_file(spec["tgt"]),
    ]


def share_name(share):
    return f"{share:g}"


# rankings no model made: random (the floor), no_filter (every pair) and, for a labelled corpus, the oracle
NMT_CONTROLS = ["random", "no_filter"] + (
    ["oracle"] if config["curation"]["nmt"]["oracle"] else []
)


def nmt_shares():
    return [
        share_name(f)
        for f in config["curation"]["settings"].get("keep_fractions", [0.25, 0.5])
    ]


def nmt_runs():
    """(ranking, pair, share, seed) of every NMT run: each variant's ranking per pre-training seed, each
    reference encoder's, and the random (and oracle) ranking at each kept share, and the no_filter control
    (every pair: share 1); the controls once per pre-training seed too, each seed's NMT trained with that
    seed, so that every row has one replicate per seed, paired by seed (lem.evidence)."""
    runs = []
    for pair in config["curation"]["nmt"]["pairs"]:
        for r in CURATION_ROWS + [c for c in NMT_CONTROLS if c != "no_filter"]:
            seeds = row_seeds(r) if r in CURATION_ROWS else PSEEDS
            runs += [(r, pair, sh, s) for sh in nmt_shares() for s in seeds]
        runs += [("no_filter", pair, "1", s) for s in PSEEDS]
    return runs


def nmt_outputs():
    return [f"{nmt_run_dir(r, p, sh, s)}/metrics.json" for r, p, sh, s in nmt_runs()]


def nmt_hub_model():
    """The hub folder of a pretrained NMT model (fetched by `fetch_nmt_model`), None for a local one."""
    s = config["curation"]["nmt"]["settings"]
    model = s.get("model") or ""
    if (
        s.get("backend") != "pretrained"
        or Path(model).is_dir()
        or model.count("/") != 1
    ):
        return None
    return f"resources/hf/{model}/{s.get('revision') or 'main'}"


def nmt_settings(seed):
    """`curation.nmt.settings` as `lem nmt run` gets it for pre-training seed `seed`: trained with that seed
    (a replicate per seed), a hub model replaced by its fetched folder."""
    s = {**config["curation"]["nmt"]["settings"], "seed": int(seed)}
    if nmt_hub_model():
        s.update(model=nmt_hub_model(), revision=None)
    return as_json(s)


def nmt_run_dir(ranking, pair, share, seed):
    return f"results/nmt/{ranking}/seed{seed}/{pair}/keep{share}"


def curation_side(pair, i):
    return src_tgt(pair)[i]


def control_dictionary(pair):
    """The positive control's dictionary for a pair: `generated` or the configured file (None: no control)."""
    lexical = config["controls"]["lexical"]
    return lexical if isinstance(lexical, str) else (lexical or {}).get(pair)


def final_outputs():
    return [
        "results/report/summary.tsv",
        "results/report/summary.md",
        "results/report/summary.html",
        "results/report/overview.png",
        "results/report/mining.png",
    ]


def embed_units():
    """Unit -> (variants, [(evalset, pair, lang), ...]): which files each model writes."""
    files = embedding_files()
    if not files:
        return {}
    if config["pretrain"]["scope"] == "tri":
        return {"all": (VARIANTS, files)}
    units = {"all": (["base"], files)} if "base" in VARIANTS else {}
    if TRAINED:
        for pair in dict.fromkeys(p for _, p, _ in files):
            units[pair] = (TRAINED, [f for f in files if f[1] == pair])
    return units


def embed_paths(files, ext):
    return [
        f"results/embeddings/{{variant}}/seed{{seed}}/{e}/{p}/{lang}.{ext}"
        for e, p, lang in files
    ]


def embed_args(input, output):
    """--sentences S --out E for every file of the job, in the same order (a list: `:q` quotes each)."""
    return [
        arg
        for s, o in zip(input.sentences, output.emb, strict=True)
        for arg in ("--sentences", s, "--out", o)
    ]


def embed_jobs():
    """(name, unit, variants, files, seeds) of every embed job (embed.smk): one per unit, serving every
    pre-training seed (the curation corpora included: curation ranks with every seed's models)."""
    return [
        ("embed" if unit == "all" else f"embed_{unit.replace('-', '_')}", unit, variants, files, PSEEDS)
        for unit, (variants, files) in embed_units().items()
    ]
