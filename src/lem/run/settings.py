"""The settings each rule passes to its `lem` verb (`--settings`, JSON: lem.run.helpers.as_json): one plain
function per rule, `<rule>(run, **wildcards) -> settings`, which the rule files call by name
(`rule_settings.pretrain_mono(RUN, scope=..., tvariant=..., seed=...)`), and `SETTINGS`, rule -> that function
with an account of it as data (`Part`, `Merge`): which config sections it passes and what it merges into them.

The account is what the two other readers read: lem.config_check builds and checks every section with the same
merges, naming the config key each merged value came from (`provenance`, `section_merges`), and
`lem plan settings RULE` prints it (lem.plan.settings). tests/planning/test_config_sections.py checks, for every
shipped config, that each section built from the account is what the rule's function passes. Adding a task
with settings adds its function and its `SETTINGS` entry here (and its section to lem.config_check.SECTIONS).

`evidence.margin` from the schema to the report's verdict sentence, 8 files, each naming it: 1
workflow/schemas/config.schema.yaml (`evidence.margin`, its defaults), 2 workflow/rules/report.smk (rule
`report`, `--settings`: `rule_settings.report(RUN)`), 3 src/lem/run/settings.py (`report`: the config's `evidence`),
4 src/lem/report/settings.py (`ReportSettings.evidence`, built from `--settings` by `lem report build`), 5
src/lem/evidence/compare.py (`EvidenceSettings.margin`, `margin_of`), 6 src/lem/report/build.py (`compute_report`:
`compare(..., evidence=settings.evidence)`), 7 src/lem/report/comparisons.py (`compare`: `ev.margin_of(task)`, the
TOST against it, each row's `margin`), 8 src/lem/report/verdicts.py (`verdict_sentence`: "`a` is equivalent to
`b` within ±margin"). Between 2 and 4 the value passes, with the rest of `--settings`, through `lem report build`
(src/lem/report/cli.py `cmd_build`, and lem.core.stage, which builds every verb's settings dataclass).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from itertools import product
from typing import TYPE_CHECKING, Any, NamedTuple

from lem.nmt.settings import NMTSettings, training_seed
from lem.run.helpers import MARGIN_KEYS
from lem.run.paths import fill

if TYPE_CHECKING:
    from lem.run.model import Run


# --- what a rule's function reads --------------------------------------------------------------------------


def optional_section(config: dict[str, Any], *keys: str) -> Any:
    """The config's section at `keys`, {} where the config leaves it out or sets it null; the sections above
    it must be there (KeyError naming the first one missing)."""
    *parents, last = keys
    node = config
    for key in parents:
        node = node[key]
    value = node.get(last) if isinstance(node, dict) else None
    return {} if value is None else value


def pretrain_seed(run: Run, seed: int | str | None = None) -> int:
    """The job's pre-training seed (`{seed}`), else the run's first (`pretrain.seeds`, else `seed`)."""
    return run.seeds[0] if seed is None else int(seed)


def curation_mining(mining: Any) -> dict[str, Any]:
    """Of `mining.settings`, the margin alone (k, margin, neighbourhood) and the device where not cpu
    (`curation_mining`).

    So a change of mining's retrieval, threshold or index does not rerun curation and NMT; the device only
    where not cpu (the runs made before it existed keep their params)."""
    if not isinstance(mining, dict):
        return {}  # not a mapping: the check of mining.settings says so
    out = {key: mining[key] for key in MARGIN_KEYS if key in mining}
    if mining.get("device", "cpu") != "cpu":
        out["device"] = mining["device"]
    return out


def nmt_seed_and_model(run: Run, seed: int | str, given: dict[str, Any]) -> dict[str, Any]:
    """A replicate per pre-training seed: its NMT model trained with a seed derived from the job's `{seed}`
    and the section's (`lem.nmt.settings.training_seed`: never the rankings' seed itself), a hub model replaced
    by its fetched folder."""
    out = {**given, "seed": training_seed(int(seed), given.get("seed", NMTSettings.seed))}
    if run.grid.nmt_hub_model():
        out.update(model=run.grid.nmt_hub_model(), revision=None)
    return out


def reference_controls(run: Run) -> dict[str, Any]:
    """`ref_<name>` -> `positive_lift` of every enabled reference encoder that sets one (Run.reference_controls)."""
    return run.reference_controls()


def base_training(run: Run, seed: int | str | None = None) -> dict[str, Any]:
    """The training settings of the base model trained from scratch (`lem pretrain base`) for one seed:
    `base_model.training` after the pre-training seed."""
    training = optional_section(run.config, "base_model", "training")
    return {"seed": pretrain_seed(run, seed), **training}


def stage_training(
    run: Run, stage: str, scope: str | None = None, seed: int | str | None = None
) -> dict[str, Any]:
    """The training settings a continual pre-training stage (`mono`, `para`) of `scope` receives (`lem pretrain
    continue`): `pretrain.stages.<stage>.training` after the pre-training seed (default: the first), and the
    stage's epochs for that scope (else its default)."""
    training = optional_section(run.config, "pretrain", "stages", stage, "training")
    epochs = run.config["pretrain"]["stages"][stage]["epochs"]
    own = str(scope) if scope is not None else None
    return {
        "seed": pretrain_seed(run, seed),
        **training,
        "epochs": epochs[own] if isinstance(epochs, dict) and own in epochs else epochs["default"],
    }


# --- one function per rule, each followed by its account (`Part`s: what lem.config_check and lem plan read) --


class Merge(NamedTuple):
    """A key a rule merges into a section: `key` (`*`: every key of the mapping at `source`), its value the
    config's at `source` (a dotted key; `{wildcard}` fields are the job's), through `code` where given (the
    config check runs it too). Where a job's own value is not that: the config's at `job_source` where the
    config has it (a scope's epochs), or what `job` makes (a pre-training seed); the config check builds with,
    and names, the config's at `source`."""

    key: str
    source: str
    code: Callable[[Any], Any] | None = None
    job_source: str | None = None
    job: Callable[..., Any] | None = None


class Part(NamedTuple):
    """One config section in a rule's settings, as its function passes it: `{**before, **<path>, **after}`
    (the section as it is when nothing is merged), at `into` (a dotted key of the settings; empty: the
    settings themselves).

    `section`: the lem.config_check.SECTIONS path that checks it (None: a copy of one checked elsewhere).
    `over`: (wildcard, config key) pairs whose keys the config check builds the section for, one build per
    combination. `optional`: a section the config may leave out or set null ({}). `fixed`: a value the rule
    sets (no config key). `each`: (wildcard, Run attribute): one entry per value, the wildcard filled.
    `finish`: the function that makes the job's value from the merged one (the config check builds the merged
    one)."""

    path: str
    section: str | None = None
    into: str = ""
    before: tuple[Merge, ...] = ()
    after: tuple[Merge, ...] = ()
    over: tuple[tuple[str, str], ...] = ()
    optional: bool = False
    fixed: Any = None
    each: tuple[str, str] | None = None
    finish: Callable[..., Any] | None = None


SEED = Merge("seed", "seed")  # the run's seed, before the section's own keys
PRETRAIN_SEED = Merge("seed", "seed", job=pretrain_seed)  # the job's pre-training seed (the check: the run's)


def generate_corpus(run: Run) -> dict[str, Any]:
    """`corpus.generate` after the run's seed."""
    generate = run.config["corpus"]["generate"]
    return {"seed": run.config["seed"], **generate}


GENERATE_CORPUS = (Part("corpus.generate", "corpus.generate", before=(SEED,)),)


def annotate(run: Run, lang: str) -> Any:
    """A language's annotation settings, `annotation.<lang>`."""
    return run.config["annotation"][lang]


ANNOTATE = (Part("annotation.{lang}", "annotation.<lang>", over=(("lang", "annotation"),)),)


def annotation_eval(run: Run, annotator: str, lang: str) -> dict[str, Any]:
    """An evaluated annotator's settings for a language: the language's annotation settings with the
    annotator's (`annotation_eval.annotators.<name>`) over them."""
    own = run.config["annotation_eval"]["annotators"][annotator]
    return {**run.config["annotation"][lang], **own}


ANNOTATION_EVAL = (
    Part(
        "annotation_eval.annotators.{annotator}",
        "annotation_eval.annotators.<name>",
        before=(Merge("*", "annotation.{lang}"),),
        over=(("annotator", "annotation_eval.annotators"), ("lang", "languages")),
    ),
)


def annotation_coverage_check(run: Run) -> dict[str, Any]:
    """`annotation_coverage` after the run's seed."""
    coverage = run.config["annotation_coverage"]
    return {"seed": run.config["seed"], **coverage}


ANNOTATION_COVERAGE_CHECK = (Part("annotation_coverage", "annotation_coverage", before=(SEED,)),)


def leakage(run: Run) -> Any:
    """The leakage guard's settings, `leakage`."""
    return run.config["leakage"]


LEAKAGE = (Part("leakage", "leakage"),)


def train_ner(run: Run) -> dict[str, Any]:
    """`ner_model.settings` (may be left out) after the run's seed."""
    settings = optional_section(run.config, "ner_model", "settings")
    return {"seed": run.config["seed"], **settings}


TRAIN_NER = (Part("ner_model.settings", "ner_model.settings", before=(SEED,), optional=True),)


def madlad(run: Run, lang: str) -> dict[str, Any]:
    """`sources.madlad.settings` (may be left out) with the language's size, `sources.madlad.sizes.<lang>`."""
    settings = optional_section(run.config, "sources", "madlad", "settings")
    return {**settings, "size": run.config["sources"]["madlad"]["sizes"][lang]}


MADLAD = (
    Part(
        "sources.madlad.settings",
        "sources.madlad.settings",
        after=(Merge("size", "sources.madlad.sizes.{lang}"),),
        over=(("lang", "sources.madlad.sizes"),),
        optional=True,
    ),
)


def multiner_split(run: Run) -> Any:
    """`sources.multiner.settings` (may be left out)."""
    return optional_section(run.config, "sources", "multiner", "settings")


MULTINER_SPLIT = (Part("sources.multiner.settings", "sources.multiner.settings", optional=True),)


def pretrain_base(run: Run, seed: int | str | None = None) -> dict[str, Any]:
    """The base model trained from scratch for one pre-training seed: its architecture (`base_model.model`,
    built for `pretrain.max_length`), its training (`base_training`) and standard masking."""
    model = optional_section(run.config, "base_model", "model")
    return {
        "model": {**model, "max_length": run.config["pretrain"]["max_length"]},
        "training": base_training(run, seed),
        "masking": {"strategy": "standard"},
    }


PRETRAIN_BASE = (
    Part(
        "base_model.model",
        "base_model.model",
        "model",
        after=(Merge("max_length", "pretrain.max_length"),),
        optional=True,
    ),
    Part("base_model.training", "base_model.training", "training", (PRETRAIN_SEED,), optional=True),
    Part("", into="masking", fixed={"strategy": "standard"}),
)


def pretrain_mono(
    run: Run, tvariant: str, scope: str | None = None, seed: int | str | None = None
) -> dict[str, Any]:
    """A trained variant's first continual pre-training stage: its training (`stage_training`) and its
    masking, `pretrain.variants.<tvariant>`."""
    return {
        "training": stage_training(run, "mono", scope, seed),
        "masking": run.config["pretrain"]["variants"][tvariant],
    }


def pretrain_para(
    run: Run, tvariant: str, scope: str | None = None, seed: int | str | None = None
) -> dict[str, Any]:
    """A trained variant's second continual pre-training stage, on the parallel text: as `pretrain_mono`."""
    return {
        "training": stage_training(run, "para", scope, seed),
        "masking": run.config["pretrain"]["variants"][tvariant],
    }


def _stage(stage: str) -> tuple[Part, ...]:
    """The account of `pretrain_mono` and `pretrain_para` (`stage_training`)."""
    epochs = Merge(
        "epochs",
        f"pretrain.stages.{stage}.epochs.default",
        job_source=f"pretrain.stages.{stage}.epochs.{{scope}}",
    )
    training = f"pretrain.stages.{stage}.training"
    return (
        Part(training, "pretrain.stages.<stage>.training", "training", (PRETRAIN_SEED,), (epochs,), optional=True),
        Part("pretrain.variants.{tvariant}", "pretrain.variants.<name>", "masking", over=(("tvariant", "pretrain.variants"),)),
    )  # fmt: skip


def embed(run: Run) -> Any:
    """The embedding settings, `embedding`."""
    return run.config["embedding"]


EMBED = (Part("embedding", "embedding"),)


def mine(run: Run) -> Any:
    """The mining settings, `mining.settings`."""
    return run.config["mining"]["settings"]


MINE = (Part("mining.settings", "mining.settings"),)


def leakage_items(run: Run, evalset: str) -> Any:
    """A mining set's leakage settings, `mining.evalsets.<evalset>.leakage` (may be left out)."""
    return optional_section(run.config, "mining", "evalsets", evalset, "leakage")


LEAKAGE_ITEMS = (
    Part(
        "mining.evalsets.{evalset}.leakage",
        "mining.evalsets.<name>.leakage",
        over=(("evalset", "mining.evalsets"),),
        optional=True,
    ),
)


def prepare_sentiment(run: Run, dataset: str) -> Any:
    """A sentiment dataset's preparation, `sentiment.datasets.<dataset>.prepare` (may be left out)."""
    return optional_section(run.config, "sentiment", "datasets", dataset, "prepare")


PREPARE_SENTIMENT = (
    Part(
        "sentiment.datasets.{dataset}.prepare",
        "sentiment.datasets.<name>.prepare",
        over=(("dataset", "sentiment.datasets"),),
        optional=True,
    ),
)


def sentiment(run: Run) -> Any:
    """Sentiment fine-tuning's settings, `sentiment.training`."""
    return run.config["sentiment"]["training"]


SENTIMENT = (Part("sentiment.training", "sentiment.training"),)


def prepare_curation(run: Run) -> Any:
    """The curation corpora's filters, `curation.filters`."""
    return run.config["curation"]["filters"]


PREPARE_CURATION = (Part("curation.filters", "curation.filters"),)


def curate(run: Run) -> dict[str, Any]:
    """`curation.settings` with mining's margin (`curation_mining` of `mining.settings`)."""
    settings = run.config["curation"]["settings"]
    return {**settings, "mining": curation_mining(run.config["mining"]["settings"])}


CURATE = (
    Part(
        "curation.settings",
        "curation.settings",
        after=(Merge("mining", "mining.settings", code=curation_mining),),
    ),
)


def nmt_run(run: Run, seed: int | str) -> dict[str, Any]:
    """One NMT run of a pre-training seed: `curation.nmt.settings` through `nmt_seed_and_model`."""
    return nmt_seed_and_model(run, seed, run.config["curation"]["nmt"]["settings"])


NMT_RUN = (Part("curation.nmt.settings", "curation.nmt.settings", finish=nmt_seed_and_model),)


def embed_reference(run: Run, variant: str) -> Any:
    """A reference encoder's settings, `reference_encoders.<name>.settings`, for its row `ref_<name>`."""
    return run.config["reference_encoders"][str(variant).removeprefix("ref_")]["settings"]


EMBED_REFERENCE = (
    Part(
        "reference_encoders.{ref}.settings",
        "reference_encoders.<name>.settings",
        over=(("ref", "reference_encoders"),),
    ),
)


def report(run: Run) -> dict[str, Any]:
    """What the report reads of the config (lem.report.settings.ReportSettings): `evidence` and `controls` (each
    may be left out), the mining sets and the reference encoders that are positive controls; the whole config
    reaches it only to be written as config.json."""
    return {
        "evidence": optional_section(run.config, "evidence"),
        "controls": optional_section(run.config, "controls"),
        "evalsets": run.config["mining"]["evalsets"],
        "references": reference_controls(run),
    }


REPORT = (
    Part("evidence", "evidence", into="evidence", optional=True),
    Part("controls", "controls", into="controls", optional=True),
    Part("mining.evalsets", into="evalsets"),
    Part("reference_encoders", into="references", optional=True, finish=reference_controls),
)


def annotation_coverage(run: Run) -> dict[str, Any]:
    """Every language's annotation settings (checked as `annotate`'s)."""
    return {lang: run.config["annotation"][lang] for lang in run.langs}


ANNOTATION_COVERAGE = (Part("annotation.{lang}", each=("lang", "langs")),)


def check_base_model(run: Run) -> dict[str, Any]:
    """What depends on the base model, and the model itself (lem.config_check.check_base_model): a change of
    another section does not rerun the check (each section is checked as its own rule's)."""
    c = run.config
    return {
        "base_model": c["base_model"],
        "pretrain": {"max_length": c["pretrain"]["max_length"]},
        "embedding": c["embedding"],
        "mining": {"settings": c["mining"]["settings"]},
        "sentiment": {"training": c["sentiment"]["training"]},
    }


CHECK_BASE_MODEL = (
    Part("base_model", into="base_model"),
    Part("pretrain.max_length", into="pretrain.max_length"),
    Part("embedding", into="embedding"),
    Part("mining.settings", into="mining.settings"),
    Part("sentiment.training", into="sentiment.training"),
)


class RuleSettings(NamedTuple):
    """A rule's settings: the function that builds them for a job, and its account (the sections it passes,
    in the order the config check builds them)."""

    build: Callable[..., Any]
    parts: tuple[Part, ...]


# rule -> its settings
SETTINGS: dict[str, RuleSettings] = {
    "generate_corpus": RuleSettings(generate_corpus, GENERATE_CORPUS),
    "annotate": RuleSettings(annotate, ANNOTATE),
    "annotation_eval": RuleSettings(annotation_eval, ANNOTATION_EVAL),
    "annotation_coverage_check": RuleSettings(annotation_coverage_check, ANNOTATION_COVERAGE_CHECK),
    "leakage": RuleSettings(leakage, LEAKAGE),
    "train_ner": RuleSettings(train_ner, TRAIN_NER),
    "madlad": RuleSettings(madlad, MADLAD),
    "multiner_split": RuleSettings(multiner_split, MULTINER_SPLIT),
    "pretrain_base": RuleSettings(pretrain_base, PRETRAIN_BASE),
    "pretrain_mono": RuleSettings(pretrain_mono, _stage("mono")),
    "pretrain_para": RuleSettings(pretrain_para, _stage("para")),
    "embed": RuleSettings(embed, EMBED),
    "mine": RuleSettings(mine, MINE),
    "leakage_items": RuleSettings(leakage_items, LEAKAGE_ITEMS),
    "prepare_sentiment": RuleSettings(prepare_sentiment, PREPARE_SENTIMENT),
    "sentiment": RuleSettings(sentiment, SENTIMENT),
    "prepare_curation": RuleSettings(prepare_curation, PREPARE_CURATION),
    "curate": RuleSettings(curate, CURATE),
    "nmt_run": RuleSettings(nmt_run, NMT_RUN),
    "embed_reference": RuleSettings(embed_reference, EMBED_REFERENCE),
    "report": RuleSettings(report, REPORT),
    "annotation_coverage": RuleSettings(annotation_coverage, ANNOTATION_COVERAGE),
    "check_base_model": RuleSettings(check_base_model, CHECK_BASE_MODEL),
}


def settings_for(run: Run, rule: str, **wildcards: Any) -> Any:
    """The settings rule `rule` passes to its `lem` verb for the job of `wildcards`, by rule name (`lem plan
    settings`): its function's (e.g. `settings_for(run, "pretrain_mono", scope="tri", tvariant="lem", seed=1)`
    is `pretrain_mono(run, scope="tri", tvariant="lem", seed=1)`); a reference encoder's row may be given as
    `ref=<name>`."""
    if rule not in SETTINGS:
        raise KeyError(f"no settings for rule {rule!r}; rules with settings: {', '.join(SETTINGS)}")
    w = dict(wildcards)
    ref = w.pop("ref", None)
    if ref is not None and "variant" not in w:
        w["variant"] = f"ref_{ref}"
    return SETTINGS[rule].build(run, **w)


# --- the config check's reading of the accounts ------------------------------------------------------------

_ABSENT = object()


def lookup(config: Any, template: str, wildcards: dict[str, Any]) -> Any:
    """The config's value at dotted key `template` with its `{wildcard}` fields filled (a wildcard's value may
    hold dots); KeyError when it is not there (a field left unfilled is not there)."""
    node = config
    for segment in template.split("."):
        key = fill(segment, **wildcards)
        if "{" in key or not isinstance(node, dict) or key not in node:
            raise KeyError(key)
        node = node[key]
    return node


def _get(config: Any, template: str, wildcards: dict[str, Any]) -> Any:
    try:
        return lookup(config, template, wildcards)
    except KeyError:
        return _ABSENT


def section_merges(section: str) -> tuple[dict[str, str], dict[str, str]]:
    """(injected, overridden) of checked section `section` (a lem.config_check.SECTIONS path): the keys its
    rule merges before / after the section's own keys -> the config key each comes from, the job's wildcards
    written as the section's `<...>` (lem.config_check names them in its messages)."""
    for rule in SETTINGS.values():
        for part in rule.parts:
            if part.section != section:
                continue
            named = {p: s for p, s in zip(part.path.split("."), section.split("."), strict=False) if p != s}
            before = {m.key: _named_key(m.source, named) for m in part.before if m.key != "*"}
            return before, {m.key: _named_key(m.source, named) for m in part.after}
    return {}, {}


def _named_key(source: str, named: dict[str, str]) -> str:
    """Config key `source` as a section names it: a segment its path fixes (a stage) or a `{wildcard}` as
    `<...>`."""
    return ".".join(named.get(s, re.sub(r"\{(\w+)\}", r"<\1>", s)) for s in source.split("."))


class Use(NamedTuple):
    """One section as a rule passes it to its `lem` verb: `{**before, **data, **after}`, `sources` naming
    the config key of each value of `before` / `after`."""

    section: str  # a lem.config_check.SECTIONS path
    path: str  # where `data` sits in this config
    data: Any
    before: dict[str, Any] = {}
    after: dict[str, Any] = {}
    sources: dict[str, str] = {}


def _domain(config: dict[str, Any], path: str) -> list[str]:
    node = _get(config, path, {})
    if isinstance(node, dict):
        return list(node)
    return list(node) if isinstance(node, list) else []


def _instances(config: dict[str, Any], part: Part) -> Iterator[dict[str, Any]]:
    """The wildcards of every build of `part`: each combination of its `over` keys; a wildcard only the merges
    read (not the section's path) with no keys is left unfilled (those merges are left out)."""
    domains = []
    for wildcard, path in part.over:
        keys = _domain(config, path)
        if not keys and "{" + wildcard + "}" not in part.path:
            keys = [None]
        domains.append([(wildcard, k) for k in keys])
    for combo in product(*domains):
        yield {w: k for w, k in combo if k is not None}


def provenance(config: dict[str, Any]) -> Iterator[Use]:
    """Every checked section the rules pass to a `lem` verb (the `SETTINGS` accounts), with the same merges as
    the rules, the merged values the config's own (the run's seed for a pre-training seed, a stage's default
    epochs), each once. A section whose parent is not a mapping is left to the schema."""
    seen = set()
    for rule in SETTINGS.values():
        for part in rule.parts:
            if part.section is None:
                continue
            for w in _instances(config, part):
                parent, _, key = part.path.rpartition(".")
                holder = _get(config, parent, w) if parent else config
                if not isinstance(holder, dict) or "{" in fill(key, **w):
                    continue
                use = _use(config, part, w, holder.get(fill(key, **w)))
                if use is not None and repr(use) not in seen:
                    seen.add(repr(use))
                    yield use


def _use(config: dict[str, Any], part: Part, w: dict[str, Any], data: Any) -> Use | None:
    before: dict[str, Any] = {}
    after: dict[str, Any] = {}
    sources: dict[str, str] = {}
    for merges, into in ((part.before, before), (part.after, after)):
        for merge in merges:
            value = _get(config, merge.source, w)
            source = ".".join(fill(s, **w) for s in merge.source.split("."))
            if merge.key == "*":
                if not isinstance(value, dict):
                    return None  # the merged mapping is not one: the schema says so
                into.update(value)
                sources.update({k: f"{source}.{k}" for k in value})
            elif value is not _ABSENT:
                into[merge.key] = merge.code(value) if merge.code else value
                sources[merge.key] = source
    path = ".".join(fill(s, **w) for s in part.path.split("."))
    return Use(part.section, path, data, before, after, sources)
