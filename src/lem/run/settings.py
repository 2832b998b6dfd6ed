"""The settings each rule passes to its `lem` verb (`--settings`, JSON: lem.run.helpers.as_json): one table of
merges, `SETTINGS`, rule -> the config sections it passes and what it merges into them.

Both sides of a run's settings read it: `Run.settings_for(rule, **wildcards)` builds one job's settings from it,
and lem.config_check (`provenance`) walks it to build and check every section as the rules pass it, naming the
config key each merged value came from. Adding a task with settings adds its rule's row here (and its section
to lem.config_check.SECTIONS).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from itertools import product
from typing import Any, NamedTuple

from lem.nmt.settings import NMTSettings, training_seed
from lem.run.grid import Grid
from lem.run.helpers import MARGIN_KEYS
from lem.run.paths import fill


class Add(NamedTuple):
    """A key a rule merges into a section: `key` (`*`: every key of the source mapping), its value the config's
    at `source` (a dotted key; `{wildcard}` fields are the job's), through `code` where named (a `CODE` entry).
    A job's own value where it is not that: at `job_source` when the config has it there (a scope's epochs),
    or made by the `CODE` entry `job` (a pre-training seed); the config check builds with, and names, the
    config's at `source`."""

    key: str
    source: str
    code: str | None = None
    job_source: str | None = None
    job: str | None = None


class Part(NamedTuple):
    """One config section in a rule's settings: `{**before, **<path>, **after}` (the section as it is when
    nothing is merged), at `into` (a dotted key of the settings; empty: the settings themselves).

    `section`: the lem.config_check.SECTIONS path that checks it (None: not a section of its own: a copy of one
    checked elsewhere). `over`: (wildcard, config key) pairs whose keys (or items) the config check builds the
    section for, one build per combination. `optional`: a section the config may leave out or set null ({}).
    `fixed`: a value the rule sets (no config key). `each`: (wildcard, Run attribute): one entry per value, at
    `into` with the wildcard filled. `finish`: the name of a `CODE` entry that makes the job's value from the
    merged one (the config check builds the merged one)."""

    path: str
    section: str | None = None
    into: str = ""
    before: tuple[Add, ...] = ()
    after: tuple[Add, ...] = ()
    over: tuple[tuple[str, str], ...] = ()
    optional: bool = False
    fixed: Any = None
    each: tuple[str, str] | None = None
    finish: str | None = None


def _pretrain_seed(run: Any, w: dict[str, Any], value: Any) -> int:
    """The job's pre-training seed (`{seed}`), else the run's first (`pretrain.seeds`, else `seed`)."""
    return run.seeds[0] if w.get("seed") is None else int(w["seed"])


def _nmt_job(run: Any, w: dict[str, Any], given: dict[str, Any]) -> dict[str, Any]:
    """A replicate per pre-training seed: its NMT model trained with a seed derived from the job's `{seed}`
    and the section's (`lem.nmt.settings.training_seed`: never the rankings' seed itself), a hub model replaced
    by its fetched folder."""
    s = {**given, "seed": training_seed(int(w["seed"]), given.get("seed", NMTSettings.seed))}
    if run.nmt_hub_model():
        s.update(model=run.nmt_hub_model(), revision=None)
    return s


def curation_mining(mining: Any) -> dict[str, Any]:
    """What curation takes from `mining.settings`: the margin (k, margin, neighbourhood) alone, so that a
    change of mining's retrieval, threshold or index does not rerun curation and NMT; the device only where
    not cpu (the runs made before it existed keep their params)."""
    if not isinstance(mining, dict):
        return {}  # not a mapping: the check of mining.settings says so
    out = {key: mining[key] for key in MARGIN_KEYS if key in mining}
    if mining.get("device", "cpu") != "cpu":
        out["device"] = mining["device"]
    return out


def _curation_mining(run: Any, w: dict[str, Any], mining: Any) -> dict[str, Any]:
    """Of `mining.settings`, the margin alone (k, margin, neighbourhood) and the device where not cpu
    (`curation_mining`)."""
    return curation_mining(mining)


def _reference_controls(run: Any, w: dict[str, Any], value: Any) -> dict[str, Any]:
    """`ref_<name>` -> `positive_lift` of every enabled reference encoder that sets one (Run.reference_controls)."""
    return run.reference_controls()


# The code a row names (an Add's `code` or `job`, a Part's `finish`), the table's only code: (run, wildcards,
# the config's value) -> the value passed; `code` runs for the config check too (run None). Every other value of
# a row is the config's at a key, merged (`lem plan settings RULE` prints a rule's row).
CODE: dict[str, Callable[[Any, dict[str, Any], Any], Any]] = {
    "pretrain_seed": _pretrain_seed,
    "curation_mining": _curation_mining,
    "nmt_seed_and_model": _nmt_job,
    "reference_controls": _reference_controls,
}

SEED = Add("seed", "seed")  # the run's seed, before the section's own keys
PRETRAIN_SEED = Add("seed", "seed", job="pretrain_seed")  # the job's pre-training seed (the check: the run's)


def _stage(stage: str) -> tuple[Part, ...]:
    epochs = Add(
        "epochs",
        f"pretrain.stages.{stage}.epochs.default",
        job_source=f"pretrain.stages.{stage}.epochs.{{scope}}",
    )
    training = f"pretrain.stages.{stage}.training"
    return (
        Part(training, "pretrain.stages.<stage>.training", "training", (PRETRAIN_SEED,), (epochs,), optional=True),
        Part("pretrain.variants.{tvariant}", "pretrain.variants.<name>", "masking", over=(("tvariant", "pretrain.variants"),)),
    )  # fmt: skip


# rule -> the sections it passes, in the order the config check builds them
SETTINGS: dict[str, tuple[Part, ...]] = {
    "generate_corpus": (Part("corpus.generate", "corpus.generate", before=(SEED,)),),
    "annotate": (Part("annotation.{lang}", "annotation.<lang>", over=(("lang", "annotation"),)),),
    "annotation_eval": (
        Part(
            "annotation_eval.annotators.{annotator}",
            "annotation_eval.annotators.<name>",
            before=(Add("*", "annotation.{lang}"),),
            over=(("annotator", "annotation_eval.annotators"), ("lang", "languages")),
        ),
    ),
    "annotation_coverage_check": (Part("annotation_coverage", "annotation_coverage", before=(SEED,)),),
    "leakage": (Part("leakage", "leakage"),),
    "train_ner": (Part("ner_model.settings", "ner_model.settings", before=(SEED,), optional=True),),
    "madlad": (
        Part(
            "sources.madlad.settings",
            "sources.madlad.settings",
            after=(Add("size", "sources.madlad.sizes.{lang}"),),
            over=(("lang", "sources.madlad.sizes"),),
            optional=True,
        ),
    ),
    "multiner_split": (Part("sources.multiner.settings", "sources.multiner.settings", optional=True),),
    "pretrain_base": (
        Part(
            "base_model.model",
            "base_model.model",
            "model",
            after=(Add("max_length", "pretrain.max_length"),),
            optional=True,
        ),
        Part("base_model.training", "base_model.training", "training", (PRETRAIN_SEED,), optional=True),
        Part("", into="masking", fixed={"strategy": "standard"}),
    ),  # fmt: skip
    "pretrain_mono": _stage("mono"),
    "pretrain_para": _stage("para"),
    "embed": (Part("embedding", "embedding"),),
    "mine": (Part("mining.settings", "mining.settings"),),
    "leakage_items": (
        Part(
            "mining.evalsets.{evalset}.leakage",
            "mining.evalsets.<name>.leakage",
            over=(("evalset", "mining.evalsets"),),
            optional=True,
        ),
    ),
    "prepare_sentiment": (
        Part(
            "sentiment.datasets.{dataset}.prepare",
            "sentiment.datasets.<name>.prepare",
            over=(("dataset", "sentiment.datasets"),),
            optional=True,
        ),
    ),
    "sentiment": (Part("sentiment.training", "sentiment.training"),),
    "prepare_curation": (Part("curation.filters", "curation.filters"),),
    "curate": (
        Part(
            "curation.settings",
            "curation.settings",
            after=(Add("mining", "mining.settings", code="curation_mining"),),
        ),
    ),
    "nmt_run": (Part("curation.nmt.settings", "curation.nmt.settings", finish="nmt_seed_and_model"),),
    "embed_reference": (
        Part(
            "reference_encoders.{ref}.settings",
            "reference_encoders.<name>.settings",
            over=(("ref", "reference_encoders"),),
        ),
    ),
    # what the report reads of the config (lem.report.settings.ReportSettings); the whole config reaches it only
    # to be written as config.json
    "report": (
        Part("evidence", "evidence", into="evidence", optional=True),
        Part("controls", "controls", into="controls", optional=True),
        Part("mining.evalsets", into="evalsets"),
        Part("reference_encoders", into="references", optional=True, finish="reference_controls"),
    ),
    # every language's annotation settings (checked as `annotate`'s)
    "annotation_coverage": (Part("annotation.{lang}", each=("lang", "langs")),),
    # what depends on the base model, and the model itself (lem.config_check.check_base_model): a change of
    # another section does not rerun the check (each section is checked as its own rule's)
    "check_base_model": (
        Part("base_model", into="base_model"),
        Part("pretrain.max_length", into="pretrain.max_length"),
        Part("embedding", into="embedding"),
        Part("mining.settings", into="mining.settings"),
        Part("sentiment.training", into="sentiment.training"),
    ),
}


# --- reading the config through the table ------------------------------------------------------------------

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


def _put(out: dict[str, Any], dotted: str, value: Any) -> None:
    *parents, last = dotted.split(".")
    for key in parents:
        out = out.setdefault(key, {})
    out[last] = value


def _merged(part: Part, data: Any, before: dict[str, Any], after: dict[str, Any]) -> Any:
    if part.optional and data in (None, _ABSENT):
        data = {}
    if not part.before and not part.after:
        return data
    return {**before, **data, **after}


def part_value(run: Any, part: Part, w: dict[str, Any]) -> Any:
    """The value of one part of a job's settings (strict: a missing key raises, as the rule's job would)."""
    if part.each:
        wildcard, attribute = part.each
        return {
            value: part_value(run, part._replace(each=None), {**w, wildcard: value})
            for value in getattr(run, attribute)
        }
    if not part.path:
        return part.fixed
    data = _get(run.config, part.path, w)
    if data is _ABSENT:
        parent = part.path.rpartition(".")[0]
        if not part.optional:
            lookup(run.config, part.path, w)  # raises, naming the key
        elif parent:
            lookup(run.config, parent, w)  # a section that may be left out, of a parent that must be there

    def value(add: Add) -> Any:
        own = _get(run.config, add.job_source, w) if add.job_source else _ABSENT
        if own is not _ABSENT:
            return own
        v = lookup(run.config, add.source, w)
        name = add.job or add.code
        return CODE[name](run, w, v) if name else v

    before: dict[str, Any] = {}
    for add in part.before:
        before.update(value(add) if add.key == "*" else {add.key: value(add)})
    after = {add.key: value(add) for add in part.after}
    out = _merged(part, data, before, after)
    return CODE[part.finish](run, w, out) if part.finish else out


def section_merges(section: str) -> tuple[dict[str, str], dict[str, str]]:
    """(injected, overridden) of checked section `section` (a lem.config_check.SECTIONS path): the keys its
    rule merges before / after the section's own keys -> the config key each comes from, the job's wildcards
    written as the section's `<...>` (lem.config_check names them in its messages)."""
    for parts in SETTINGS.values():
        for part in parts:
            if part.section != section:
                continue
            named = {p: s for p, s in zip(part.path.split("."), section.split("."), strict=False) if p != s}
            before = {add.key: _named_key(add.source, named) for add in part.before if add.key != "*"}
            return before, {add.key: _named_key(add.source, named) for add in part.after}
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
    """Every checked section the rules pass to a `lem` verb (`SETTINGS`), with the same merges as the rules,
    the merged values the config's own (the run's seed for a pre-training seed, a stage's default epochs),
    each once. A section whose parent is not a mapping is left to the schema."""
    seen = set()
    for parts in SETTINGS.values():
        for part in parts:
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
    for adds, into in ((part.before, before), (part.after, after)):
        for add in adds:
            value = _get(config, add.source, w)
            source = ".".join(fill(s, **w) for s in add.source.split("."))
            if add.key == "*":
                if not isinstance(value, dict):
                    return None  # the merged mapping is not one: the schema says so
                into.update(value)
                sources.update({k: f"{source}.{k}" for k in value})
            elif value is not _ABSENT:
                into[add.key] = CODE[add.code](None, w, value) if add.code else value
                sources[add.key] = source
    path = ".".join(fill(s, **w) for s in part.path.split("."))
    return Use(part.section, path, data, before, after, sources)


class JobSettings(Grid):
    """The settings of every job of a run's config."""

    def settings_for(self, rule: str, **wildcards: Any) -> Any:
        """The settings rule `rule` passes to its `lem` verb (as `--settings`, JSON: `as_json`), for the job of
        `wildcards` (e.g. `settings_for("pretrain_mono", scope="tri", tvariant="lem", seed=1)`): its row of
        `SETTINGS`."""
        if rule not in SETTINGS:
            raise KeyError(f"no settings for rule {rule!r}; rules with settings: {', '.join(SETTINGS)}")
        w = dict(wildcards)
        if "variant" in w:
            w["ref"] = str(w["variant"]).removeprefix("ref_")  # a reference encoder's row
        parts = SETTINGS[rule]
        if len(parts) == 1 and not parts[0].into:
            return part_value(self, parts[0], w)
        out: dict[str, Any] = {}
        for part in parts:
            _put(out, fill(part.into, **w), part_value(self, part, w))
        return out

    def stage_training(self, scope: str, stage: str, seed: int | str | None = None) -> dict[str, Any]:
        """The training settings a continual pre-training stage of `scope` receives (`lem pretrain continue`):
        the pre-training seed (default: the first), the stage's `training` and its epochs for that scope."""
        return part_value(self, SETTINGS[f"pretrain_{stage}"][0], {"scope": scope, "seed": seed})

    def base_training(self, seed: int | str | None = None) -> dict[str, Any]:
        """The training settings of the base model trained from scratch (`lem pretrain base`) for one seed."""
        return part_value(self, SETTINGS["pretrain_base"][1], {"seed": seed})

    def eval_annotation(self, annotator: str, lang: str) -> dict[str, Any]:
        """Annotation settings of an evaluated annotator: the configured ones with its overrides."""
        return self.settings_for("annotation_eval", annotator=annotator, lang=lang)
