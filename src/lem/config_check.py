"""Every config section checked against the settings dataclass of the `lem` verb that reads it.

The settings dataclasses (`lem.mine.MineSettings`, `lem.pretrain.TrainSettings`, ...) are the single
source of truth for what a section may hold; the schema types the other sections (and repeats a few of
these). `check_config` builds every section's dataclass from the config exactly as the workflow's rules
pass it (the same merges: the run's `seed`, a stage's `epochs`, a MADLAD language's `size`, ...), so an
unknown key, a value of the wrong type or a value the dataclass refuses fails when the workflow is loaded
(workflow/rules/common.smk, right after the schema), before any job runs, in one line naming the key:

    mining.settings.kk: unknown key; known: block_size, candidate_k, ... (lem.mine.MineSettings, ...)
    mining.settings.k: mining settings k, candidate_k and block_size must be >= 1 (lem.mine...)
    mining.settings.threshold: expected a number or null, got '0.5' (lem.mine.MineSettings, `lem mine run`)

Types come from the dataclass's annotations (checked on the built object, so what `from_dict` converts,
e.g. a list into a tuple, passes); values from the dataclass's own `from_dict` checks. A key that the rule
sets itself (a stage's `training.epochs`, MADLAD's `settings.size`, curation's `settings.mining`) is refused
rather than silently replaced. `SECTIONS` lists every checked section; config/README.md documents them.

Then what joins the sections (`_check_*`), each failure one line naming the key, the value and what is
allowed: names that become paths match `[A-Za-z0-9_.-]+`; pairs join two different configured languages;
every language has its annotation and (`corpus.source: files`) its text, every pair its files; evaluation
sets, sentiment datasets and curation corpora name configured pairs; every listed variant has its masking;
sentiment seeds are distinct; a reference encoder's row is no variant's name, a laser one has a LASER code per
language, a hub model is pinned; `embedding.max_length` and `pretrain.max_length` fit the base model's
positions (read from its `config.json` once the folder exists; a scratch model is built for
`pretrain.max_length`), as does a `sentiment.training.max_length` that is set; what the base model's
architecture fixes (`embedding.layer` one of its hidden states, heads that divide the hidden size,
`mining.settings.pq_m` a divisor of the embedding dimension: `model_shape`); seeds in numpy's range; at least one
curation share; a pretrained base model names its folder; `raw:` / `unpacked:` specs name a source of
`sources.files`, with no `..`:

    curation.corpora: 'en-ta' is not a configured pair; configured: si-en, si-ta, ta-en (`pairs`)
    embedding.max_length: 128 exceeds the base model's 64 tokens (...); at most 64
    embedding.layer: 99: the base model has 2 layers (base_model.model), so hidden states 0..2 (...)
"""

from __future__ import annotations

import copy
import dataclasses
import importlib
import json
import re
import sys
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NamedTuple

from lem.core.settings import describe, field_hints, misfit, type_ok
from lem.run import Run, curation_mining


class ConfigError(ValueError):
    """A config value that the dataclass of its section refuses; the message names the key."""


@dataclass(frozen=True)
class Section:
    """A config section (a key path; `<name>` stands for any entry) read by one settings dataclass.

    `injected`: keys the rule adds before the section's own keys (the section may override them) ->
    where their value comes from; `overridden`: keys the rule sets after them (so the section must not set
    them) -> where their value comes from."""

    path: str
    settings: str  # "module:Class", the public import path
    verb: str
    injected: dict[str, str] = field(default_factory=dict)
    overridden: dict[str, str] = field(default_factory=dict)

    @property
    def cls(self) -> type:
        module, name = self.settings.split(":")
        return getattr(importlib.import_module(module), name)

    @property
    def label(self) -> str:
        return f"{self.settings.replace(':', '.')}, `{self.verb}`"


TRAINING = "lem.pretrain:TrainSettings"
ANNOTATE = "lem.annotate.settings:AnnotateSettings"

SECTIONS: tuple[Section, ...] = (
    Section(
        "corpus.generate", "lem.corpus.generate:GenerateSettings", "lem corpus generate", {"seed": "seed"}
    ),
    Section("annotation.<lang>", ANNOTATE, "lem annotate run"),
    Section("annotation_eval.annotators.<name>", ANNOTATE, "lem annotate run"),
    Section(
        "annotation_coverage",
        "lem.annotate.coverage:CoverageSettings",
        "lem annotate coverage",
        {"seed": "seed"},
    ),
    Section("leakage", "lem.data.leakage:LeakageSettings", "lem data leakage"),
    Section(
        "mining.evalsets.<name>.leakage", "lem.data.leakage:EvalLeakageSettings", "lem data leakage-items"
    ),
    Section(
        "ner_model.settings",
        "lem.annotate.hf_ner:TrainNERSettings",
        "lem annotate train-ner",
        {"seed": "seed"},
    ),
    Section(
        "sources.madlad.settings",
        "lem.data.madlad:MadladSettings",
        "lem data madlad",
        overridden={"size": "sources.madlad.sizes.<lang>"},
    ),
    Section("sources.multiner.settings", "lem.data.ner:MultinerSettings", "lem data multiner"),
    Section(
        "base_model.model",
        "lem.pretrain:ModelSettings",
        "lem pretrain base",
        overridden={"max_length": "pretrain.max_length"},
    ),
    Section("base_model.training", TRAINING, "lem pretrain base", {"seed": "seed"}),
    Section(
        "pretrain.stages.<stage>.training",
        TRAINING,
        "lem pretrain continue",
        {"seed": "seed"},
        {"epochs": "pretrain.stages.<stage>.epochs"},
    ),
    Section("pretrain.variants.<name>", "lem.masking.collate:MaskingSettings", "lem pretrain continue"),
    Section("embedding", "lem.embed:EmbedSettings", "lem embed encode"),
    Section("mining.settings", "lem.mine:MineSettings", "lem mine run"),
    Section(
        "sentiment.datasets.<name>.prepare", "lem.data.sentiment:SentimentSettings", "lem data sentiment"
    ),
    Section("sentiment.training", "lem.sentiment:SentimentSettings", "lem sentiment finetune"),
    Section("curation.filters", "lem.data.webmined:FilterSettings", "lem curate prepare"),
    Section(
        "curation.settings",
        "lem.curate:CurationSettings",
        "lem curate rank",
        overridden={"mining": "mining.settings"},
    ),
    Section("reference_encoders.<name>.settings", "lem.reference:RefEncoderSettings", "lem reference encode"),
    Section("curation.nmt.settings", "lem.nmt.settings:NMTSettings", "lem nmt run"),
)
SECTION = {s.path: s for s in SECTIONS}

# Keys that the rule replaces but that a config may still carry (config/config.yaml, with the same value):
# a warning on stderr when they differ, not an error (the settings of rule pretrain_base, lem.run, build the base
# model for pretrain.max_length).
WARN_ONLY = {("base_model.model", "max_length")}


# --- types from the dataclass annotations (lem.core.settings: type_ok, describe) ----------------------------


def type_problems(obj: Any, where: dict[str, str]) -> list[str]:
    """'path: expected ..., got ...' for every field of dataclass `obj` whose value does not fit its
    annotation; `where` maps a field to the config key it came from (fields not in it are defaults)."""
    out = []
    hints = field_hints(type(obj))
    for f in dataclasses.fields(obj):
        value = getattr(obj, f.name)
        if f.name not in where or f.name not in hints:
            continue
        if dataclasses.is_dataclass(hints[f.name]) and dataclasses.is_dataclass(value):
            sub = {g.name: f"{where[f.name]}.{g.name}" for g in dataclasses.fields(value)}
            out += type_problems(value, sub)
        elif not type_ok(value, hints[f.name]):
            out.append(f"{where[f.name]}: expected {describe(hints[f.name])}, got {value!r}")
    return out


# --- building one section --------------------------------------------------------------------------------


def _one_line(err: BaseException) -> str:
    return " ".join(str(err).split()) or type(err).__name__


def _unknown_task_keys(path: str, data: dict) -> None:
    """annotation: `pos` / `ner` keys the chosen backend does not take (lem.annotate.settings.BACKENDS)."""
    from lem.annotate.settings import BACKENDS

    for task in ("pos", "ner"):
        spec = data.get(task)
        backend = spec.get("backend", "none") if isinstance(spec, dict) else None
        if backend not in BACKENDS or task not in BACKENDS[backend][0]:
            continue  # not a mapping, an unknown backend or one that does not do the task: from_dict says so
        known = sorted(BACKENDS[backend][1] | {"backend"})
        for key in spec:
            if key not in known:
                raise ConfigError(
                    f"{path}.{task}.{key}: unknown key for backend {backend!r}; known: {', '.join(known)} "
                    f"({SECTION['annotation.<lang>'].label})"
                )


def build(
    section: Section,
    path: str,
    data: Any,
    before: dict[str, Any] | None = None,
    after: dict[str, Any] | None = None,
    sources: dict[str, str] | None = None,
) -> Any:
    """The dataclass of `section` built from `{**before, **data, **after}`, as the rule passes it to its
    `lem` verb; `path` is where `data` sits in the config, `sources` names the config key of each value of
    `before` / `after`. Raises ConfigError naming the key."""
    cls, label = section.cls, section.label
    if data is None:
        data = {}
    if not isinstance(data, dict):
        raise ConfigError(f"{path}: expected a mapping, got {data!r} ({label})")
    before, after, sources = dict(before or {}), dict(after or {}), dict(sources or {})
    names = [f.name for f in dataclasses.fields(cls)]
    known = [n for n in sorted(names) if n not in section.overridden]
    for key in data:
        if key in section.overridden:
            if (section.path, key) in WARN_ONLY:
                if data[key] != after.get(key, data[key]):
                    print(
                        f"warning: {path}.{key}: {data[key]!r} is ignored: the rule sets it from "
                        f"{sources.get(key, section.overridden[key])} ({after.get(key)!r})",
                        file=sys.stderr,
                    )
                continue
            source = sources.get(key, section.overridden[key])
            raise ConfigError(
                f"{path}.{key}: not read from here: the rule sets it from {source}; drop it ({label})"
            )
        if key not in names:
            raise ConfigError(f"{path}.{key}: unknown key; known: {', '.join(known)} ({label})")
    if section.settings == ANNOTATE:
        _unknown_task_keys(path, data)
    merged = {**before, **data, **after}
    where = {k: sources.get(k, k) for k in {**before, **after}}
    where.update({k: f"{path}.{k}" for k in data})
    try:
        obj = cls.from_dict(copy.deepcopy(merged))
    except (ValueError, TypeError, KeyError, AttributeError) as err:
        entry = _entry_message(err, cls, data, path)
        if entry:
            raise ConfigError(f"{entry} ({label})") from err
        hints = field_hints(cls)
        for key, value in merged.items():
            bad = misfit(value, hints[key]) if key in hints else None
            if bad:
                suffix, got, expected = bad
                raise ConfigError(
                    f"{where[key]}{suffix}: expected {expected}, got {got!r} ({label})"
                ) from err
        raise ConfigError(
            f"{_culprits(cls, data, before, after, path, err)}: {_one_line(err)} ({label})"
        ) from err
    problems = type_problems(obj, where)
    if problems:
        raise ConfigError(f"{problems[0]} ({label})")
    return obj


def _entry_message(err: BaseException, cls: type, data: dict, path: str) -> str | None:
    """A settings class's own message about one entry of a key the config wrote (`<section>: key.entry: ...`,
    e.g. corpus settings' `noisy_extra_pairs.si-en: expected an integer count ...`), under the config's path."""
    section = f"{getattr(cls, 'SECTION', '')}: "
    text = _one_line(err)
    rest = text[len(section) :] if text.startswith(section) else None
    for key in data if rest else ():
        if isinstance(key, str) and rest.startswith((f"{key}.", f"{key}:")):
            return f"{path}.{rest}"
    return None


def _culprits(cls: type, data: dict, before: dict, after: dict, path: str, err: BaseException) -> str:
    """The keys of `data` that the dataclass refuses on their own (the others at their defaults), or the
    section's path when none does alone (a combination is refused)."""
    message = _one_line(err).removeprefix(f"{getattr(cls, 'SECTION', '')}: ")
    named = [k for k in data if isinstance(k, str) and message.startswith(f"{k}=")]
    if named:  # the dataclass names the key (`other_share=0.1: not used by strategy 'standard'`)
        return f"{path}.{named[0]}"
    base = {**before, **after}
    try:
        cls.from_dict(copy.deepcopy(base))
    except Exception:  # the defaults alone fail: no single key to blame
        return path
    bad = []
    for key, value in data.items():
        try:
            cls.from_dict(copy.deepcopy({**before, key: value, **after}))
        except Exception:  # any failure blames the key
            bad.append(f"{path}.{key}")
    return ", ".join(bad) or path


# --- the whole config -------------------------------------------------------------------------------------


class Use(NamedTuple):
    """One section as a rule passes it to its `lem` verb: `{**before, **data, **after}`, `sources` naming
    the config key of each value of `before` / `after`."""

    section: str  # a SECTIONS path
    path: str  # where `data` sits in this config
    data: Any
    before: dict[str, Any] = {}
    after: dict[str, Any] = {}
    sources: dict[str, str] = {}


def _uses(config: dict[str, Any]) -> Iterator[Use]:
    """Every section the rules pass to a `lem` verb, with the same merges as the rules (lem.run.Run.settings_for:
    the run's seed, a stage's epochs, eval_annotation, curation_mining)."""
    seed = {"seed": config.get("seed", 13)}
    run_seed = {"seed": "seed"}
    yield Use(
        "corpus.generate", "corpus.generate", config.get("corpus", {}).get("generate"), seed, {}, run_seed
    )

    annotation = config.get("annotation", {})
    for lang, spec in annotation.items():
        yield Use("annotation.<lang>", f"annotation.{lang}", spec)
    for name, override in (config.get("annotation_eval", {}).get("annotators") or {}).items():
        for lang in config.get("languages") or []:
            if isinstance(annotation.get(lang), dict):  # eval_annotation: the language's, overridden
                src = {k: f"annotation.{lang}.{k}" for k in annotation[lang]}
                path = f"annotation_eval.annotators.{name}"
                yield Use(
                    "annotation_eval.annotators.<name>", path, override, dict(annotation[lang]), {}, src
                )
    if "annotation_coverage" in config:
        yield Use(
            "annotation_coverage", "annotation_coverage", config["annotation_coverage"], seed, {}, run_seed
        )
    if "leakage" in config:
        yield Use("leakage", "leakage", config["leakage"])
    if isinstance(config.get("ner_model"), dict):
        settings = config["ner_model"].get("settings")
        yield Use("ner_model.settings", "ner_model.settings", settings, seed, {}, run_seed)

    sources = config.get("sources") or {}
    madlad = sources.get("madlad")
    if isinstance(madlad, dict):
        settings = madlad.get("settings")
        for lang, size in (madlad.get("sizes") or {}).items():
            src = {"size": f"sources.madlad.sizes.{lang}"}
            yield Use("sources.madlad.settings", "sources.madlad.settings", settings, {}, {"size": size}, src)
        if not madlad.get("sizes"):
            yield Use("sources.madlad.settings", "sources.madlad.settings", settings)
    if isinstance(sources.get("multiner"), dict):
        yield Use(
            "sources.multiner.settings", "sources.multiner.settings", sources["multiner"].get("settings")
        )

    bm = config.get("base_model", {})
    pretrain = config.get("pretrain", {})
    length = {"max_length": pretrain["max_length"]} if "max_length" in pretrain else {}
    src = {"max_length": "pretrain.max_length"}
    yield Use("base_model.model", "base_model.model", bm.get("model"), {}, length, src)
    yield Use("base_model.training", "base_model.training", bm.get("training"), seed, {}, run_seed)
    for stage, st in (pretrain.get("stages") or {}).items():
        epochs = (st.get("epochs") or {}).get("default")
        after = {} if epochs is None else {"epochs": epochs}
        src = {**run_seed, "epochs": f"pretrain.stages.{stage}.epochs.default"}
        path = f"pretrain.stages.{stage}.training"
        yield Use("pretrain.stages.<stage>.training", path, st.get("training"), seed, after, src)
    for name, masking in (pretrain.get("variants") or {}).items():
        yield Use("pretrain.variants.<name>", f"pretrain.variants.{name}", masking)

    if "embedding" in config:
        yield Use("embedding", "embedding", config["embedding"])
    yield Use("mining.settings", "mining.settings", (config.get("mining") or {}).get("settings"))
    for name, spec in ((config.get("mining") or {}).get("evalsets") or {}).items():
        path = f"mining.evalsets.{name}.leakage"
        yield Use("mining.evalsets.<name>.leakage", path, (spec or {}).get("leakage"))
    sentiment = config.get("sentiment") or {}
    for name, spec in (sentiment.get("datasets") or {}).items():
        path = f"sentiment.datasets.{name}.prepare"
        yield Use("sentiment.datasets.<name>.prepare", path, spec.get("prepare"))
    yield Use("sentiment.training", "sentiment.training", sentiment.get("training"))
    mining = {"mining": curation_mining((config.get("mining") or {}).get("settings") or {})}
    curation = config.get("curation") or {}
    yield Use("curation.filters", "curation.filters", curation.get("filters"))
    settings = curation.get("settings")
    yield Use("curation.settings", "curation.settings", settings, {}, mining, {"mining": "mining.settings"})
    yield Use("curation.nmt.settings", "curation.nmt.settings", (curation.get("nmt") or {}).get("settings"))
    for name, spec in (config.get("reference_encoders") or {}).items():
        path = f"reference_encoders.{name}.settings"
        yield Use("reference_encoders.<name>.settings", path, (spec or {}).get("settings"))


def _check_epochs(config: dict[str, Any]) -> None:
    """pretrain.stages.<stage>.epochs: `default` and scope names only (a misspelt pair would be ignored)."""
    pairs = config.get("pairs", [])
    langs = {*(config.get("languages") or []), *(config.get("annotation") or {})}
    for stage, st in (config.get("pretrain", {}).get("stages") or {}).items():
        for key in st.get("epochs") or {}:
            if key in ("default", "tri") or key in pairs:
                continue
            src, _, tgt = key.partition("-")
            if src in langs and tgt in langs and src != tgt and f"{tgt}-{src}" not in pairs:
                continue  # a pair of another run of the same config (`pairs` narrowed on the command line)
            known = ", ".join(["default", "tri", *pairs])
            raise ConfigError(
                f"pretrain.stages.{stage}.epochs.{key}: unknown scope; known: {known} (epochs per scope of "
                "`lem pretrain continue`)"
            )


def _check_annotation_langs(config: dict[str, Any]) -> None:
    annotation = config.get("annotation", {})
    for lang in config.get("languages", []):
        if lang not in annotation:
            raise ConfigError(
                f"annotation.{lang}: missing: every language of `languages` needs its annotation settings "
                f"(configured: {', '.join(annotation) or 'none'})"
            )


def _check_crf_models(config: dict[str, Any]) -> None:
    """crf_models.<name>: what `lem annotate train-crf` refuses, and the task and language of every
    annotation that names the model's file (lem.annotate.run checks them only after training)."""
    models = config.get("crf_models") or {}
    for name, spec in models.items():
        path = f"crf_models.{name}"
        if spec.get("tagset") and spec.get("task") != "pos":
            raise ConfigError(f"{path}.tagset: a tag set is for task pos only (`lem annotate train-crf`)")
        if (
            spec.get("task") == "pos"
            and spec.get("format") == "conllu"
            and spec.get("tagset", "upos") != "upos"
        ):
            raise ConfigError(
                f"{path}.tagset: CoNLL-U training tags are UPOS (column 4), not {spec['tagset']!r} "
                "(`lem annotate train-crf`)"
            )
    by_file = {f"results/crf/{name}.crf": (name, spec) for name, spec in models.items()}
    annotation = config.get("annotation", {})
    uses = [(f"annotation.{lang}", lang, spec) for lang, spec in annotation.items()]
    for ann, override in (config.get("annotation_eval", {}).get("annotators") or {}).items():
        for lang, spec in annotation.items():
            uses.append((f"annotation_eval.annotators.{ann}", lang, {**spec, **override}))
    for where, lang, spec in uses:
        for task in ("pos", "ner"):
            t = spec.get(task) if isinstance(spec, dict) else None
            if not isinstance(t, dict) or t.get("backend") != "crf" or t.get("path") not in by_file:
                continue
            name, model = by_file[t["path"]]
            if (model.get("task"), model.get("lang")) != (task, lang):
                raise ConfigError(
                    f"{where}.{task}.path: crf_models.{name} tags {model.get('task')}/{model.get('lang')}, "
                    f"not {task}/{lang}"
                )


# --- checks across sections ------------------------------------------------------------------------------

NAME_RE = re.compile(r"[A-Za-z0-9_.-]+")


def _named(config: dict[str, Any]) -> Iterator[tuple[str, Any]]:
    """(config key, name) of every name that becomes part of a file path or a wildcard value."""
    for key in ("languages", "pairs", "variants"):
        for name in config.get(key) or []:
            yield key, name
    mapping_keys = (
        ("mining", "evalsets"),
        ("sentiment", "datasets"),
        ("curation", "corpora"),
        ("crf_models",),
        ("sources", "files"),
        ("sources", "line_aligned"),
        ("annotation_eval", "annotators"),
        ("pretrain", "variants"),
        ("reference_encoders",),
    )
    for path in mapping_keys:
        node: Any = config
        for seg in path:
            node = node.get(seg) if isinstance(node, dict) else None
        for name in node or {}:
            yield ".".join(path), name


NAME_MAX = 64  # characters of a name: file names embed it with prefixes and suffixes (255 bytes at most)
# Snakemake's PeriodicityDetector (snakemake.io): a wildcard value ending in a substring repeated 20 times or
# more is taken for an infinite recursion (PeriodicWildcardError) when its job is planned
PERIODIC = re.compile(r"((?P<value>.+)(?P=value){19,99})$")


def _check_names(config: dict[str, Any]) -> None:
    for key, name in _named(config):
        if not isinstance(name, str) or not NAME_RE.fullmatch(name) or name in (".", ".."):
            raise ConfigError(
                f"{key}: name {_short(name)} is used in file paths: expected letters, digits, '_', '.' and '-' "
                "only ([A-Za-z0-9_.-]+, not '.' or '..')"
            )
        if len(name) > NAME_MAX:
            raise ConfigError(
                f"{key}: name {_short(name, 40)} has {len(name)} characters: expected at most {NAME_MAX} (it "
                "becomes part of file names and wildcards); choose a shorter name"
            )
        periodic = PERIODIC.search(name)
        if periodic:
            raise ConfigError(
                f"{key}: name {_short(name, 40)} ends in {periodic.group('value')!r} repeated "
                f"{len(periodic.group(1)) // len(periodic.group('value'))} times, which Snakemake reads as an "
                "endless recursion (PeriodicWildcardError): expected fewer than 20 repeats; choose another name"
            )
    reserved = {"sentiment": "the sentiment datasets", "curation": "the curation corpora"}
    for name in (config.get("mining") or {}).get("evalsets") or {}:
        if name in reserved:
            raise ConfigError(
                f"mining.evalsets: name {name!r} is reserved: results/eval/prepared/{name}/ holds "
                f"{reserved[name]}; choose another name"
            )


def _check_pairs(config: dict[str, Any]) -> None:
    langs = list(config.get("languages") or [])
    pairs = list(config.get("pairs") or [])
    for pair in pairs:
        src, _, tgt = str(pair).partition("-")
        if src not in langs or tgt not in langs or src == tgt:
            raise ConfigError(
                f"pairs: {pair!r}: expected 'src-tgt' joining two different languages of `languages` "
                f"({', '.join(langs)})"
            )
    repeated = sorted({p for p in pairs if pairs.count(p) > 1})
    if repeated:
        raise ConfigError(f"pairs: {repeated[0]!r} is listed twice: expected distinct pairs")
    for pair in pairs:
        src, _, tgt = str(pair).partition("-")
        if f"{tgt}-{src}" in pairs[: pairs.index(pair)]:
            raise ConfigError(
                f"pairs: {pair!r} and {tgt}-{src!s} join the same two languages: expected each pair once (its "
                "data, models and scores are the same in both directions; the direction of NMT is "
                "curation.nmt.settings.reverse)"
            )


def _check_pair_uses(config: dict[str, Any]) -> None:
    """Every pair an evaluation set, a sentiment dataset or a curation corpus names is a configured pair (a
    job for another pair would wait for a model or a file that no rule makes)."""
    pairs = list(config.get("pairs") or [])
    configured = f"configured: {', '.join(pairs)} (`pairs`)"
    for name, spec in ((config.get("mining") or {}).get("evalsets") or {}).items():
        listed = list((spec or {}).get("pairs") or [])
        for pair in listed:
            if pair not in pairs:
                raise ConfigError(
                    f"mining.evalsets.{name}.pairs: {pair!r} is not a configured pair; {configured}"
                )
            if listed.count(pair) > 1:
                raise ConfigError(
                    f"mining.evalsets.{name}.pairs: {pair!r} is listed twice: expected distinct pairs"
                )
    for name, spec in ((config.get("sentiment") or {}).get("datasets") or {}).items():
        pair = (spec or {}).get("pair")
        if pair not in pairs:
            raise ConfigError(
                f"sentiment.datasets.{name}.pair: {pair!r} is not a configured pair; {configured}"
            )
    for pair in (config.get("curation") or {}).get("corpora") or {}:
        if pair not in pairs:
            raise ConfigError(f"curation.corpora: {pair!r} is not a configured pair; {configured}")
    nmt = (config.get("curation") or {}).get("nmt") or {}
    for pair in nmt.get("pairs") or []:
        if pair not in ((config.get("curation") or {}).get("corpora") or {}):
            raise ConfigError(f"curation.nmt.pairs: {pair!r} has no curation corpus (`curation.corpora`)")
        for split in ("valid", "test"):
            if pair not in (nmt.get(split) or {}):
                raise ConfigError(f"curation.nmt.{split}: no {split} set for NMT pair {pair!r}")


def _check_corpus_files(config: dict[str, Any]) -> None:
    """`corpus.source: files`: a text file for every language and pair files for every pair."""
    corpus = config.get("corpus") or {}
    if corpus.get("source") != "files":
        _check_generated_languages(config)
        return
    files = corpus.get("files") or {}
    mono, para = files.get("mono") or {}, files.get("para") or {}
    for lang in config.get("languages") or []:
        if lang not in mono:
            raise ConfigError(
                f"corpus.files.mono.{lang}: missing: `corpus.source: files` needs a text file for every "
                f"language of `languages` (given: {', '.join(mono) or 'none'})"
            )
    for pair in config.get("pairs") or []:
        if pair not in para:
            raise ConfigError(
                f"corpus.files.para.{pair}: missing: `corpus.source: files` needs pair files for every pair "
                f"of `pairs` (given: {', '.join(para) or 'none'})"
            )
        spec = para[pair] or {}
        if ("valid" in spec) == ("valid_size" in spec):
            got = "both" if "valid" in spec else "neither"
            raise ConfigError(
                f"corpus.files.para.{pair}: expected either `valid` (validation files) or `valid_size` (pairs "
                f"held out of train), got {got}"
            )


def _check_generated_languages(config: dict[str, Any]) -> None:
    """`corpus.source: generate`: every configured language is one of the generated world's (en, si, ta, or
    a code `corpus.generate.languages` names one of them by), every pair one of its pairs."""
    from lem.corpus.generate import PAIRS, GenerateSettings

    named = ((config.get("corpus") or {}).get("generate") or {}).get("languages") or {}
    try:
        settings = GenerateSettings.from_dict({"languages": named})
    except ValueError as err:
        text = _one_line(err).removeprefix(f"{GenerateSettings.SECTION}: ")
        raise ConfigError(
            f"corpus.generate.{text}"
            if text.startswith("languages")
            else f"corpus.generate.languages: {text}"
        ) from None
    world = ", ".join(settings.codes.values())
    for lang in config.get("languages") or []:
        if lang not in settings.codes.values():
            raise ConfigError(
                f"languages: {lang!r} is not a language of the generated world ({world}; `corpus.source: "
                f"generate`): name the built-in language (en, si, ta) it stands for in "
                f"corpus.generate.languages, e.g. {{{lang}: si}}"
            )
    generated = [settings.pair_code(p) for p in PAIRS]
    for pair in config.get("pairs") or []:
        if pair not in generated:
            raise ConfigError(
                f"pairs: {pair!r} is not a pair of the generated world ({', '.join(generated)}; source first)"
            )


def _generated_builtins(config: dict[str, Any]) -> dict[str, str]:
    """`corpus.source: generate`: configured code -> the built-in language (en, si, ta) written under it
    ({} for another source, or when `corpus.generate.languages` is refused: its own check says so)."""
    from lem.corpus.generate import GenerateSettings

    corpus = config.get("corpus") or {}
    if corpus.get("source", "generate") != "generate":
        return {}
    try:
        settings = GenerateSettings.from_dict(
            {"languages": (corpus.get("generate") or {}).get("languages") or {}}
        )
    except ValueError:
        return {}
    return {code: builtin for builtin, code in settings.codes.items()}


def _annotation_specs(config: dict[str, Any]) -> Iterator[tuple[str, str, dict[str, Any]]]:
    """(config key, language, settings) of every annotation the rules run: `annotation.<lang>` and each
    `annotation_eval.annotators.<name>` over it."""
    annotation = config.get("annotation") or {}
    for lang, spec in annotation.items():
        if isinstance(spec, dict):
            yield f"annotation.{lang}", lang, spec
    for name, override in ((config.get("annotation_eval") or {}).get("annotators") or {}).items():
        for lang, spec in annotation.items():
            if isinstance(spec, dict) and isinstance(override, dict):
                yield f"annotation_eval.annotators.{name}", lang, {**spec, **override}


def _check_tagsets(config: dict[str, Any]) -> None:
    """The POS tag set every annotation reads its tags in is known at planning: a language without a
    default set (en Penn, si UCSC, ta UPOS) names one (a renamed language without it failed in `lem annotate
    run` with a traceback), and a generated lexicon is read in the set of the built-in language written
    under the code (`{si: ta, ta: si}` read Tamil's UPOS lexicon as UCSC)."""
    from lem.core.entities import NATIVE_TAGSET

    builtins = _generated_builtins(config)
    for where, lang, spec in _annotation_specs(config):
        pos = spec.get("pos")
        pos = pos if isinstance(pos, dict) else {}
        backend, fmt, given = pos.get("backend", "none"), pos.get("format", ""), pos.get("tagset") or None
        if backend not in ("none", "lexicon") or (backend == "lexicon" and fmt not in ("tsv", "tnt")):
            continue  # the file or model records its tag set (conllu: UPOS; a CRF sidecar, stanza, ...)
        effective = given or NATIVE_TAGSET.get(lang)
        builtin = builtins.get(lang)
        generated = backend == "lexicon" and pos.get("path") == f"results/corpus/lexicon/{lang}.pos.tsv"
        expected = NATIVE_TAGSET.get(builtin) if generated and builtin else None
        renamed = (
            f" ({lang} is the generated {builtin}: corpus.generate.languages)" if builtin != lang else ""
        )
        if effective is None:
            if backend == "none":
                raise ConfigError(
                    f"{where}.pos: {lang!r} has no default POS tag set (en, si and ta have one), so its tags "
                    "cannot be read without a POS backend that names its set: expected a `lexicon` with "
                    "`tagset` (penn, ucsc or upos), or a `crf` / `stanza` model"
                )
            hint = (
                f"{expected}{renamed}"
                if expected
                else "penn, ucsc or upos: the set its lexicon's tags are in"
            )
            raise ConfigError(
                f"{where}.pos.tagset: missing: {lang!r} has no default POS tag set (en, si and ta have one); "
                f"expected {hint}"
            )
        if expected and effective != expected:
            how = f"pos.tagset is {given}" if given else f"it would be read as {effective}, {lang}'s default"
            raise ConfigError(
                f"{where}.pos.tagset: the generated lexicon {pos['path']} holds {builtin}'s {expected} tags"
                f"{renamed}, but {how}: expected tagset: {expected}"
            )


def _check_scripts(config: dict[str, Any]) -> None:
    """What script each configured language's text is in, where planning can know it: in the generated
    world the script of the built-in language written under each code must be the one
    `curation.filters.scripts` expects of that code (swapped codes `{si: ta, ta: si}` had every curation
    pair dropped as "another script" at job time); a renamed language needs its script named when the
    script filter is on. With `corpus.source: files`, the first lines of each language's text file (when it
    exists) are in the script expected of its code."""
    from lem.data.webmined import SCRIPTS

    curation = config.get("curation") or {}
    filters = curation.get("filters") or {}
    scripts = filters.get("scripts") if isinstance(filters.get("scripts"), dict) else SCRIPTS
    share = filters.get("script_share", 0.5)
    on = isinstance(share, (int, float)) and share > 0 and bool(curation.get("corpora"))
    curated = {lg for pair in (curation.get("corpora") or {}) for lg in str(pair).split("-")}
    builtins = _generated_builtins(config)
    for code in config.get("languages") or []:
        builtin = builtins.get(code)
        if builtin is None:
            continue
        expected, actual = scripts.get(code), SCRIPTS[builtin]
        if expected and expected != actual and on:
            raise ConfigError(
                f"corpus.generate.languages: code {code!r} holds the generated {builtin} ({actual} script), but "
                f"curation.filters.scripts expects {expected} of {code}: every curation pair would be dropped "
                f"as another script; expected curation.filters.scripts.{code}: {actual} (or swap the codes back)"
            )
        if expected is None and on and code in curated and builtin != code:
            raise ConfigError(
                f"curation.filters.scripts.{code}: missing: {code} is the generated {builtin} "
                f"(corpus.generate.languages) and the script filter is on (script_share {share}); expected "
                f"{code}: {actual}"
            )
    corpus = config.get("corpus") or {}
    if corpus.get("source") == "files":
        for code, path in ((corpus.get("files") or {}).get("mono") or {}).items():
            expected = scripts.get(code)
            if expected and isinstance(path, str):
                _check_file_script(f"corpus.files.mono.{code}", Path(path), code, expected)


SCRIPT_SAMPLE_LINES = 200  # lines of a language's text file read at planning to tell its script
# below this share of its code's script a text file is another language's (code-mixed text keeps far more:
# multiNER's Sinhala and Tamil CoNLL files, tags included, have 51 % and 54 %; a swapped file has 0 %)
SCRIPT_MIN_SHARE = 0.2


def _check_file_script(key: str, path: Path, code: str, expected: str) -> None:
    """The first lines of text file `path` are mostly in `expected`'s script (a file of another language
    named for `code` was found only at a later job, or never)."""
    import unicodedata
    from collections import Counter

    if not path.is_file():
        return
    counts: Counter[str] = Counter()
    try:
        with open(path, encoding="utf-8", errors="replace") as fh:
            for _, line in zip(range(SCRIPT_SAMPLE_LINES), fh, strict=False):
                # a letter's script: the first word of its Unicode name, as lem.data.webmined reads it
                counts.update(unicodedata.name(c, "?").split(" ", 1)[0] for c in line if c.isalpha())
    except OSError:
        return
    total = sum(counts.values())
    if total < 100:
        return
    share = counts[expected] / total
    if share < SCRIPT_MIN_SHARE:
        top, n = counts.most_common(1)[0]
        raise ConfigError(
            f"{key}: {path}: {share:.0%} of the letters of its first {SCRIPT_SAMPLE_LINES} lines are {expected} "
            f"(expected of {code}, curation.filters.scripts), {n / total:.0%} {top}: is it another language's "
            "file? name each language's own file"
        )


ORACLE_LABEL = "clean"  # lem.curate: a pair labelled exactly `clean` is clean; any other label is noisy


def _check_curation_labels(config: dict[str, Any]) -> None:
    """Labelled curation corpora, where planning can read them (a file that exists): the oracle control
    (`curation.nmt.oracle`) needs a label column in every NMT pair's corpus, and a label column needs pairs
    labelled exactly `clean` (lem.curate compares with it: good/bad labels ranked at the base rate, and NMT's
    oracle logged clean_share_kept 0.0, without a word). A corpus the run makes (results/...) is checked by
    its job."""
    curation = config.get("curation") or {}
    nmt = curation.get("nmt") or {}
    oracle_pairs = set(nmt.get("pairs") or []) if nmt.get("oracle") else set()
    for pair, spec in (curation.get("corpora") or {}).items():
        key = f"curation.corpora.{pair}"
        if isinstance(spec, dict):
            if pair in oracle_pairs:
                raise ConfigError(
                    f"curation.nmt.oracle: true needs labels, but {key} is two line-aligned files without a "
                    "label column; expected a TSV src<TAB>tgt<TAB>label with clean pairs labelled `clean`, or "
                    "oracle: false"
                )
            continue
        if not isinstance(spec, str) or ":" in spec.split("/")[0]:
            continue  # raw:/unpacked: sources are fetched by the run
        labels = _noisy_labels(Path(spec))
        if labels is None:
            continue
        if labels == () and pair in oracle_pairs:
            raise ConfigError(
                f"curation.nmt.oracle: true needs labels, but {key}: {spec} has no label column (header "
                "src<TAB>tgt); expected src<TAB>tgt<TAB>label with clean pairs labelled `clean`, or oracle: false"
            )
        if labels and ORACLE_LABEL not in labels:
            near = [lbl for lbl in labels if lbl.strip().lower() == ORACLE_LABEL]
            hint = f" ({near[0]!r} differs from it in case or spaces)" if near else ""
            raise ConfigError(
                f"{key}: {spec}: no pair is labelled exactly {ORACLE_LABEL!r}{hint}; labels: "
                f"{', '.join(map(repr, sorted(labels)[:6]))}: expected `clean` for the clean pairs (any other "
                "label counts as noisy), or no label column"
            )


def _noisy_labels(path: Path) -> tuple[str, ...] | None:
    """The labels of noisy corpus `path` (src<TAB>tgt[<TAB>label] with a header), read until `clean` is
    seen: () without a label column; None when the file is not there or not of that layout (its job says
    so)."""
    if not path.is_file():
        return None
    seen: set[str] = set()
    try:
        with open(path, encoding="utf-8", errors="replace") as fh:
            header = fh.readline().lstrip("\ufeff").rstrip("\r\n").split("\t")
            if header == ["src", "tgt"]:
                return ()
            if header != ["src", "tgt", "label"]:
                return None
            for line in fh:
                label = line.rstrip("\r\n").split("\t")[-1]
                seen.add(label)
                if label == ORACLE_LABEL:
                    break
    except OSError:
        return None
    return tuple(sorted(seen))


def _check_variants(config: dict[str, Any]) -> None:
    defined = (config.get("pretrain") or {}).get("variants") or {}
    if "base" in defined:
        raise ConfigError(
            "pretrain.variants.base: `base` is the base model without continual pre-training and takes no "
            "masking; drop it"
        )
    for name in config.get("variants") or []:
        if name != "base" and name not in defined:
            raise ConfigError(
                f"variants: {name!r} has no masking in pretrain.variants (defined: {', '.join(defined) or 'none'}; "
                "`base` needs none)"
            )


def _check_seeds(config: dict[str, Any]) -> None:
    seeds = (config.get("sentiment") or {}).get("seeds")
    if seeds is None:
        return
    ok = isinstance(seeds, list) and all(
        isinstance(x, int) and not isinstance(x, bool) and x >= 0 for x in seeds
    )
    if not ok or not seeds or len(set(seeds)) != len(seeds):
        raise ConfigError(
            f"sentiment.seeds: {seeds!r}: expected a non-empty list of distinct integers >= 0 (one fine-tuning "
            "run per seed; the report gives their mean and spread)"
        )


def base_model_folder(config: dict[str, Any]) -> str | None:
    """The folder of a base model that is not trained in the run (lem.run.Run.base_model_dir); None for a
    model trained from scratch (its facts are the config's)."""
    run = Run(config)
    return None if run.scratch else run.base_model_dir()


def _stand_in_architecture(config: dict[str, Any]) -> dict[str, Any] | None:
    """A stand-in base model's architecture before it is built (lem.stand_in.SIZES: known at planning), with
    `where` naming it; None for any other source."""
    bm = config.get("base_model") or {}
    if bm.get("source") != "stand_in":
        return None
    from lem.stand_in import SIZES

    size = (bm.get("stand_in") or {}).get("size", "base")
    if size not in SIZES:
        return None
    return {**SIZES[size], "where": f"base_model.stand_in.size {size} (lem.stand_in.SIZES)"}


def model_positions(config: dict[str, Any]) -> tuple[int, str] | None:
    """Tokens per sequence the base model takes (its positions less the two XLM-R reserves) and where that
    comes from; None when unknown here (a pretrained or stand-in model not fetched or built yet)."""
    pretrain = config.get("pretrain") or {}
    folder = base_model_folder(config)
    if folder is None:
        n = pretrain.get("max_length", 100)
        return n, f"the scratch base model is built for pretrain.max_length = {n}"
    path = Path(folder) / "config.json"
    try:
        positions = json.loads(path.read_text(encoding="utf-8"))["max_position_embeddings"]
    except (OSError, ValueError, KeyError, TypeError):
        arch = _stand_in_architecture(config)
        if arch is None:
            return None  # not there yet (or not a model config): the training job reports it
        positions, path = arch["max_position_embeddings"], arch["where"]
    if isinstance(positions, bool) or not isinstance(positions, int):
        return None
    return positions - 2, f"{path}: max_position_embeddings {positions} - 2"


class ModelShape(NamedTuple):
    """What the base model's architecture fixes for the settings of later stages."""

    layers: int  # transformer layers (hidden states: layers + 1, the embeddings first)
    hidden: int  # hidden size: the dimension of a sentence embedding (mean or CLS pooling)
    heads: int
    where: str  # where these come from, for a message


def model_shape(config: dict[str, Any]) -> ModelShape | None:
    """The base model's layers, hidden size and heads: `base_model.model` (over lem.pretrain.ModelSettings'
    defaults) for a scratch model, its `config.json` once a pretrained or stand-in model's folder exists;
    None before that (or when the section itself is refused: its own check says so)."""
    folder = base_model_folder(config)
    if folder is None:
        model = (config.get("base_model") or {}).get("model") or {}
        defaults = {f.name: f.default for f in dataclasses.fields(SECTION["base_model.model"].cls)}
        values = [
            model.get(k, defaults[k]) for k in ("num_hidden_layers", "hidden_size", "num_attention_heads")
        ]
        if not all(isinstance(v, int) and not isinstance(v, bool) and v >= 1 for v in values):
            return None
        return ModelShape(*values, "base_model.model")
    path: Path | str = Path(folder) / "config.json"
    try:
        cfg = json.loads(Path(path).read_text(encoding="utf-8"))
        values = [cfg[k] for k in ("num_hidden_layers", "hidden_size", "num_attention_heads")]
    except (OSError, ValueError, KeyError, TypeError):
        cfg = _stand_in_architecture(config)
        if cfg is None:
            return None  # not there yet (or not a model config): the job that loads it reports it
        values, path = (
            [cfg[k] for k in ("num_hidden_layers", "hidden_size", "num_attention_heads")],
            cfg["where"],
        )
    if not all(isinstance(v, int) and not isinstance(v, bool) and v >= 1 for v in values):
        return None
    return ModelShape(*values, str(path))


def _check_model_shape(config: dict[str, Any]) -> None:
    """What the base model's architecture allows: heads divide the hidden size (scratch model),
    `embedding.layer` is one of its hidden states, `mining.settings.pq_m` (index ivfpq) divides the
    embedding dimension. Before, each failed only at its job, after the training before it (a traceback
    from transformers or a FAISS assertion)."""
    shape = model_shape(config)
    if shape is None:
        return
    if shape.where == "base_model.model" and shape.hidden % shape.heads:
        raise ConfigError(
            f"base_model.model.num_attention_heads: {shape.heads} does not divide hidden_size {shape.hidden}; "
            "expected a divisor of it (each head takes hidden_size / num_attention_heads)"
        )
    layer = (config.get("embedding") or {}).get("layer")
    n_hidden = shape.layers + 1
    if isinstance(layer, int) and not isinstance(layer, bool) and not -n_hidden <= layer < n_hidden:
        raise ConfigError(
            f"embedding.layer: {layer}: the base model has {shape.layers} layers ({shape.where}), so hidden "
            f"states 0..{n_hidden - 1} (0: the embeddings; -1: the last, down to -{n_hidden})"
        )


LASER_DIM = 1024  # LASER3's sentence embeddings (lem.reference, backend laser)


def _check_pq_m(config: dict[str, Any]) -> None:
    """`mining.settings.pq_m` (index ivfpq) divides the dimension of every row that is mined: the base model's
    hidden size (when known), `controls.dim` (a control row), LASER's 1024 (a laser reference encoder)."""
    mining = (config.get("mining") or {}).get("settings") or {}
    pq_m = mining.get("pq_m", 64)
    if mining.get("index") != "ivfpq" or not isinstance(pq_m, int) or isinstance(pq_m, bool) or pq_m < 1:
        return
    dims: list[tuple[int, str]] = []
    shape = model_shape(config)
    if shape is not None:
        dims.append((shape.hidden, f"the hidden size, {shape.where}"))
    controls = config.get("controls") or {}
    if controls.get("lexical") or controls.get("random"):
        dims.append((controls.get("dim", 256), "controls.dim, the control rows"))
    for name, spec in (config.get("reference_encoders") or {}).items():
        settings = (spec or {}).get("settings") or {}
        if (spec or {}).get("enabled", True) and settings.get("backend") == "laser":
            dims.append((LASER_DIM, f"LASER3's, reference_encoders.{name}"))
    for dim, where in dims:
        if isinstance(dim, int) and dim % pq_m:
            raise ConfigError(
                f"mining.settings.pq_m: {pq_m} does not divide the embedding dimension {dim} ({where}); expected a "
                "divisor of it (index ivfpq splits each vector into pq_m parts)"
            )


SEED_MAX = 2**32 - 1  # numpy's seeds (np.random.default_rng, RandomState) and torch's manual_seed


def _check_seed_range(config: dict[str, Any]) -> None:
    """Every seed fits numpy's range 0..2**32-1 (`seed: -5` failed in `split_gold` with a numpy traceback):
    the run's `seed`, every key named `seed` or `*_seed` in any section, every item of a `seeds` list."""
    seeds: list[tuple[str, Any]] = []

    def walk(node: Any, path: str) -> None:
        if not isinstance(node, dict):
            return
        for key, value in node.items():
            where = f"{path}.{key}" if path else str(key)
            if key == "seed" or (isinstance(key, str) and key.endswith("_seed")):
                seeds.append((where, value))
            elif key == "seeds" and isinstance(value, list):
                seeds.extend((where, v) for v in value)
            else:
                walk(value, where)

    walk(config, "")
    for key, value in seeds:
        if value is None:
            continue
        if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= SEED_MAX:
            raise ConfigError(f"{key}: {value!r}: expected an integer seed in 0..{SEED_MAX} (numpy's range)")


def _check_keep_fractions(config: dict[str, Any]) -> None:
    """curation.settings.keep_fractions: at least one share (an empty list planned the no_filter NMT run
    alone, without a word)."""
    settings = (config.get("curation") or {}).get("settings") or {}
    if settings.get("keep_fractions", None) == []:
        raise ConfigError(
            "curation.settings.keep_fractions: []: expected at least one share in (0, 1] (the top share of "
            "each ranking scored and used to train NMT); leave the key out for the default [0.25, 0.5]"
        )


def _check_base_model(config: dict[str, Any]) -> None:
    """`base_model.source: pretrained` names its model: a local `path` or a pinned `hub` model."""
    bm = config.get("base_model") or {}
    if bm.get("source") == "pretrained" and "path" not in bm and "hub" not in bm:
        raise ConfigError(
            "base_model: `source: pretrained` needs `path` (a local model folder) or `hub` ({repo, revision}); "
            "got neither"
        )


SOURCE_PREFIXES = (
    "raw:",
    "unpacked:",
)  # lem.data.download: resources/raw/<name>, resources/unpacked/<name>/...
FREE_TEXT = ("note", "description")
NER_MODEL = (
    "results/ner/model"  # rule train_ner's output  # keys whose values are prose, never read as a path
)


def _strings(node: Any, path: str) -> Iterator[tuple[str, str]]:
    """(config key, value) of every string value under `node`, free text excepted."""
    if isinstance(node, dict):
        for key, value in node.items():
            if key not in FREE_TEXT:
                yield from _strings(value, f"{path}.{key}" if path else str(key))
    elif isinstance(node, list):
        for i, value in enumerate(node):
            yield from _strings(value, f"{path}[{i}]")
    elif isinstance(node, str):
        yield path, node


def _check_source_refs(config: dict[str, Any]) -> None:
    """`raw:<name>` and `unpacked:<name>/<path>` name a source of `sources.files` (before: a KeyError in an
    input function, and `raw:../../etc/passwd` read that file), with a relative path inside the archive; a
    file under results/ner/model needs the NER model trained in the pipeline (`ner_model`)."""
    files = ((config.get("sources") or {}).get("files")) or {}
    for key, value in _strings(config, ""):
        if key.startswith("sources.files."):
            continue
        ner = value == NER_MODEL or value.startswith(f"{NER_MODEL}/")
        if ner and not isinstance(config.get("ner_model"), dict):
            raise ConfigError(
                f"{key}: {value!r} is the NER model trained in the pipeline, but `ner_model` is not configured"
            )
        prefix = next((p for p in SOURCE_PREFIXES if value.startswith(p)), None)
        if prefix is None:
            continue
        name, _, inner = value[len(prefix) :].partition("/")
        if prefix == "raw:" and inner:
            name = value[len(prefix) :]
        parts = inner.split("/") if inner else []
        if not NAME_RE.fullmatch(name) or name in (".", "..") or any(p in ("", ".", "..") for p in parts):
            raise ConfigError(
                f"{key}: {value!r}: expected {prefix}<name>{'/<path inside the archive>' if prefix == 'unpacked:' else ''} "
                "with <name> a source of sources.files and no '..', '.' or empty segment"
            )
        if name not in files:
            known = ", ".join(files) or "none"
            raise ConfigError(f"{key}: {value!r}: no source {name!r} in sources.files (configured: {known})")


def _check_controls(config: dict[str, Any]) -> None:
    """`controls.lexical`: `generated` (the generated corpus only) or {pair: dictionary file} naming mined
    pairs only (a mined pair without one is marked "no dictionary", lem.evidence.controls.lexical_dictionaries);
    `controls.positive_lift` as a mapping names evaluation sets only; control rows must not share a name
    with a variant."""
    controls = config.get("controls") or {}
    lexical = controls.get("lexical")
    mined = sorted(
        {
            p
            for spec in ((config.get("mining") or {}).get("evalsets") or {}).values()
            for p in spec.get("pairs", [])
        }
    )
    if isinstance(lexical, str) and lexical != "generated":
        raise ConfigError(
            f"controls.lexical: {lexical!r}: expected `generated`, a mapping pair -> dictionary file, or null"
        )
    if isinstance(lexical, dict):
        unknown = [p for p in lexical if p not in mined]
        if unknown:
            raise ConfigError(
                f"controls.lexical: {', '.join(map(repr, unknown))} is no mined pair (mining.evalsets mine "
                f"{', '.join(mined) or 'none'}); key each src<TAB>tgt dictionary file by its pair as mined"
            )
    lift = controls.get("positive_lift")
    evalsets = (config.get("mining") or {}).get("evalsets") or {}
    if isinstance(lift, dict) and [e for e in lift if e not in evalsets]:
        raise ConfigError(
            f"controls.positive_lift: {[e for e in lift if e not in evalsets]} are no evaluation set of "
            f"mining.evalsets ({', '.join(evalsets) or 'none'})"
        )
    for name, spec in evalsets.items():  # a set's own controls: {pair: value} names the set's pairs only
        for key, value in ((spec or {}).get("controls") or {}).items():
            unknown = [p for p in value if p not in spec.get("pairs", [])] if isinstance(value, dict) else []
            if unknown:
                raise ConfigError(
                    f"mining.evalsets.{name}.controls.{key}: {unknown} are no pair of the set "
                    f"({', '.join(spec.get('pairs', []))}); key a per-pair value by one of its pairs"
                )
    clash = [v for v in config.get("variants") or [] if v in ("control_lexical", "control_random")]
    if clash:
        raise ConfigError(
            f"variants: {clash[0]!r} is the name of a control row (controls); rename the variant"
        )


def _check_references(config: dict[str, Any]) -> None:
    """reference_encoders.<name>: its row `ref_<name>` is no variant's name; a laser encoder has a LASER code
    for every configured language; a sentence-transformers hub model is pinned (lem.reference refuses it at
    run time otherwise, after the jobs before it)."""
    from lem.reference import RefEncoderSettings, hub_model

    for name, spec in (config.get("reference_encoders") or {}).items():
        row, path = f"ref_{name}", f"reference_encoders.{name}"
        if row in (config.get("variants") or []):
            raise ConfigError(f"variants: {row!r} is the row of {path}; rename the variant or the encoder")
        s = RefEncoderSettings.from_dict((spec or {}).get("settings"))
        if s.backend == "laser":
            missing = [lang for lang in config.get("languages") or [] if lang not in s.languages]
            if missing:
                raise ConfigError(
                    f"{path}.settings.languages: no FLORES-200 code for {', '.join(missing)} (a language of "
                    f"`languages`); add e.g. {{en: eng_Latn, si: sin_Sinh, ta: tam_Taml}}"
                )
        elif hub_model(s.model) and s.revision is None and not s.allow_unpinned:
            raise ConfigError(
                f"{path}.settings.revision: missing for the hub model {s.model}: pin its 40-hex commit "
                f"(`git ls-remote https://huggingface.co/{s.model}` lists them), or set allow_unpinned: true"
            )


def _folder_positions(folder: str) -> tuple[int, str] | None:
    """Tokens per sequence of the model in `folder` (its positions less XLM-R's two reserves), when its
    config.json is there."""
    path = Path(folder) / "config.json"
    try:
        positions = json.loads(path.read_text(encoding="utf-8"))["max_position_embeddings"]
    except (OSError, ValueError, KeyError, TypeError):
        return None
    if isinstance(positions, bool) or not isinstance(positions, int):
        return None
    return positions - 2, f"{path}: max_position_embeddings {positions} - 2"


def _written(written: dict[str, Any] | None, path: str) -> bool:
    """Whether the config as the user wrote it (before the schema's defaults) sets dotted key `path`; True
    when that config is not known."""
    if written is None:
        return True
    node: Any = written
    for seg in path.split("."):
        if not isinstance(node, dict) or seg not in node:
            return False
        node = node[seg]
    return True


def _check_lengths(config: dict[str, Any], written: dict[str, Any] | None = None) -> None:
    """embedding.max_length, pretrain.max_length, (when set) sentiment.training.max_length and the NER
    model's max_length fit the positions of the model they are used with (a set sentiment length beyond
    them was capped without a word; a NER length beyond them failed in `train_ner` with an index error).
    A value the config does not set is named as the default it is."""
    known = model_positions(config)
    embed_default = {f.name: f.default for f in dataclasses.fields(SECTION["embedding"].cls)}["max_length"]
    embedding = config.get("embedding") or {}
    lengths: list[tuple[str, Any, bool, tuple[int, str] | None]] = [
        ("pretrain.max_length", (config.get("pretrain") or {}).get("max_length", 100), True, known),
        (
            "embedding.max_length",
            embedding.get("max_length", embed_default),
            "max_length" in embedding and _written(written, "embedding.max_length"),
            known,
        ),
        (
            "sentiment.training.max_length",
            ((config.get("sentiment") or {}).get("training") or {}).get("max_length"),
            True,
            known,
        ),
    ]
    ner = config.get("ner_model")
    if isinstance(ner, dict):
        settings = ner.get("settings") or {}
        ner_default = {f.name: f.default for f in dataclasses.fields(SECTION["ner_model.settings"].cls)}
        base = ner.get("base", "base_model")
        limit = known if base == "base_model" else _folder_positions(str(base))
        value = settings.get("max_length", ner_default["max_length"])
        lengths.append(("ner_model.settings.max_length", value, "max_length" in settings, limit))
    lengths = [(k, v, w and _written(written, k), lim) for k, v, w, lim in lengths]
    for key, value, written, limit_why in lengths:
        if limit_why is None or isinstance(value, bool) or not isinstance(value, int):
            continue
        limit, why = limit_why
        if value > limit:
            given = f"{value}" if written else f"not set, so its default {value},"
            raise ConfigError(
                f"{key}: {given} exceeds the base model's {limit} tokens ({why}); at most {limit}"
                + ("" if written else f": set {key}: {limit}")
            )


DATA_ROOT = "{data_root}"
DATA_ROOT_FORBIDDEN = set("{}")  # Snakemake reads braces in an input or output path as a wildcard


def expand_data_root(config: dict[str, Any]) -> dict[str, Any]:
    """Every string of `config` holding `{data_root}`, with the value of the key `data_root` in its place
    (in place; returned): a config of local files names their folder once. A config that uses the
    placeholder without setting `data_root` raises ConfigError naming the first key that does."""
    root = config.get("data_root") or ""
    if not isinstance(root, str):
        raise ConfigError(f"data_root: {_short(root)}: expected a folder path (a string)")
    bad = sorted({c for c in root if c in DATA_ROOT_FORBIDDEN or not c.isprintable()})
    if bad:
        raise ConfigError(
            f"data_root: {_short(root)}: expected a folder path without {' '.join(map(repr, bad))} (Snakemake "
            "reads braces in a path as wildcards; a control character is no file name's): move or link the "
            "folder to a plain path"
        )

    def walk(node: Any, path: str) -> Any:
        if isinstance(node, dict):
            return {k: walk(v, f"{path}.{k}" if path else str(k)) for k, v in node.items()}
        if isinstance(node, list):
            return [walk(v, f"{path}[{i}]") for i, v in enumerate(node)]
        if isinstance(node, str) and DATA_ROOT in node:
            if not root:
                raise ConfigError(f"{path}: {node!r} uses {DATA_ROOT} but data_root is not set")
            return node.replace(DATA_ROOT, str(root).rstrip("/"))
        return node

    expanded = walk({k: v for k, v in config.items() if k != "data_root"}, "")
    config.update(expanded)
    return config


def check_config(config: dict[str, Any], written: dict[str, Any] | None = None) -> None:
    """Build every section's settings dataclass from `config` (validated, schema defaults filled) as the
    rules pass it, and check what joins the sections (names, pairs, languages, lengths); raise ConfigError
    in one line naming the config key on the first problem. `written`: the config before the schema's
    defaults, so that a message says when a value is a default the user never wrote."""
    _check_names(config)
    _check_pairs(config)
    _check_annotation_langs(config)
    _check_variants(config)
    _check_pair_uses(config)
    _check_corpus_files(config)
    _check_seeds(config)
    _check_seed_range(config)
    _check_keep_fractions(config)
    _check_base_model(config)
    _check_source_refs(config)
    _check_epochs(config)
    for use in _uses(config):
        build(SECTION[use.section], use.path, use.data, use.before, use.after, use.sources)
    _check_crf_models(config)
    _check_tagsets(config)
    _check_scripts(config)
    _check_curation_labels(config)
    _check_lengths(config, written)
    _check_model_shape(config)
    _check_pq_m(config)
    _check_controls(config)
    _check_references(config)
    _check_evidence(config)


def _check_evidence(config: dict[str, Any]) -> None:
    """The declared comparison families (`evidence`, lem.evidence.compare): their settings, and no comparison
    in two families (it would sit in two corrections)."""
    from lem.evidence.compare import declared, evidence_settings

    try:
        ev = evidence_settings(config.get("evidence"))
        declared(list(config.get("variants") or []), ev["families"])
    except ValueError as err:
        raise ConfigError(str(err)) from None


def check_base_model(config: dict[str, Any]) -> dict[str, Any]:
    """The checks of the settings that depend on the base model (`_check_lengths`, `_check_model_shape`),
    for a model fetched after planning (a hub model: `lem data check-model`, the job between its fetch and
    any training). Returns what was read; raises ConfigError naming the key, or the model's config.json
    when it cannot be read."""
    folder = base_model_folder(config)
    shape, positions = model_shape(config), model_positions(config)
    if shape is None or positions is None:
        raise ConfigError(
            f"base_model: {folder}/config.json: expected a model config with num_hidden_layers, hidden_size, "
            "num_attention_heads and max_position_embeddings (integers >= 1)"
        )
    _check_lengths(config)
    _check_model_shape(config)
    _check_pq_m(config)
    return {"model": folder, **shape._asdict(), "tokens": positions[0]}


# --- the schema, in one line ------------------------------------------------------------------------------


def _key_path(segments: Any) -> str:
    return ".".join(str(s) if not isinstance(s, int) else f"[{s}]" for s in segments).replace(".[", "[")


def _short(value: Any, n: int = 60) -> str:
    text = repr(value)
    return text if len(text) <= n else f"{text[:n]}... ({type(value).__name__})"


# the schema's patterns in words (workflow/schemas/config.schema.yaml)
PATTERN_WORDS = {
    "^[a-z]{2,3}$": "a language code of 2-3 lower-case letters (en, si, ta, or any code of the config's own)",
    "^[a-z]{2,3}-[a-z]{2,3}$": "a pair 'src-tgt' of two language codes of 2-3 lower-case letters (si-en)",
    "^[0-9a-f]{64}$": "a sha256: 64 lower-case hex digits",
    "^(https?|file)://": "a URL starting with https://, http:// or file://",
    "^(auto|cpu|cuda(:[0-9]+)?)$": "auto, cpu, cuda or cuda:N",
}


def _expected(schema: Any) -> str:
    """What a schema node asks for, in a few words."""
    if not isinstance(schema, dict):
        return "a valid value"
    if "enum" in schema:
        return f"one of {', '.join(map(str, schema['enum']))}"
    kinds = schema.get("type")
    words = {
        "integer": "an integer",
        "number": "a number",
        "string": "a string",
        "boolean": "true or false",
        "array": "a list",
        "object": "a mapping",
        "null": "null",
    }
    text = (
        " or ".join(words.get(k, k) for k in (kinds if isinstance(kinds, list) else [kinds])) if kinds else ""
    )
    bounds = [
        f"{op} {schema[key]}"
        for key, op in (
            ("minimum", ">="),
            ("exclusiveMinimum", ">"),
            ("maximum", "<="),
            ("exclusiveMaximum", "<"),
        )
        if key in schema
    ]
    if "pattern" in schema:
        words_for = PATTERN_WORDS.get(schema["pattern"])
        if words_for:
            return words_for
        bounds.append(f"matching {schema['pattern']}")
    if "minItems" in schema:
        bounds.append(f"of at least {schema['minItems']} item(s)")
    if "minLength" in schema:
        bounds.append(f"of at least {schema['minLength']} character(s)")
    return " ".join([text or "a value", *bounds]).strip()


def schema_refusal(err: BaseException) -> str:
    """One line for a refusal of the JSON schema (a jsonschema ValidationError, or Snakemake's WorkflowError
    around one): the key as the user wrote it, what was expected and the fix, never the schema or the
    config that Snakemake's message prints (1,500 lines for a top-level typo)."""
    from jsonschema.exceptions import ValidationError

    chain = (err, err.__cause__, err.__context__, *getattr(err, "args", ()))  # Snakemake's wraps it
    inner = next((a for a in chain if isinstance(a, ValidationError)), None)
    if inner is None:
        return _one_line(err)[:300]
    path = _key_path(inner.absolute_path)
    at = f"{path}." if path else ""
    node = inner.schema if isinstance(inner.schema, dict) else {}
    if inner.validator == "additionalProperties":
        known = sorted(node.get("properties") or {})
        given = inner.instance if isinstance(inner.instance, dict) else {}
        extra = sorted((str(k) for k in given if k not in known), key=str)
        hint = f"known: {', '.join(known)}" if known else "this mapping takes no other keys"
        return f"{at}{extra[0] if extra else '?'}: unknown key; {hint} (a typo? config/README.md lists every key)"
    if inner.validator == "required":
        given = inner.instance if isinstance(inner.instance, dict) else {}
        missing = [k for k in inner.validator_value if k not in given]
        where = f"section {path}" if path else "the config"
        return (
            f"{at}{missing[0] if missing else '?'}: missing: {where} requires it (config/README.md; "
            "config/config.yaml has an example)"
        )
    if inner.validator in ("oneOf", "anyOf"):
        options = " or ".join(_expected(s) for s in inner.validator_value)
        return f"{path or 'config'}: {_short(inner.instance)}: expected {options}"
    return f"{path or 'config'}: {_short(inner.instance)}: expected {_expected(node)}"


SWITCHED = ("sentiment", "curation")  # the task sections an `enabled: false` switches off


def switch_off(config: dict[str, Any]) -> dict[str, Any]:
    """Each task section of SWITCHED whose `enabled` is false replaced by nothing (its schema defaults: no job),
    and `enabled` taken out of the others. An overlay (`--configfile config/config.yaml config/ablation.yaml`)
    switches a task off this way: Snakemake's merge of config files cannot remove what the file it overlays
    sets. Called before the schema check; `config` is changed in place and returned."""
    for section in SWITCHED:
        spec = config.get(section)
        if isinstance(spec, dict) and "enabled" in spec:
            enabled = spec.pop("enabled")
            if enabled is False:
                config[section] = {}
            elif enabled is not True:
                raise ConfigError(f"{section}.enabled: {_short(enabled)}: expected true or false")
    return config


def written_config(config: dict[str, Any]) -> dict[str, Any]:
    """A copy of the config as the user wrote it, before the schema fills its defaults in (`check_config`'s
    `written`: a message then says when a value is a default)."""
    return copy.deepcopy(config)


def check_workflow_config(config: dict[str, Any], schema_path: str | Path) -> dict[str, Any]:
    """Everything the workflow checks before its DAG is built, in order, as workflow/rules/common.smk and
    `lem plan cost` call it: the sections an overlay switched off (`switch_off`), the schema (its defaults
    filled in), `{data_root}` expanded, `check_config`.
    `config` is changed in place and returned; ConfigError in one line naming the key."""
    switch_off(config)
    written = written_config(config)
    validate_config(config, schema_path)
    expand_data_root(config)
    check_config(config, written)
    return config


_VALIDATORS: dict[tuple[str, float], Any] = {}


def _schema_validator(schema_path: str | Path) -> Any:
    """A jsonschema validator of the schema file that fills in defaults as it validates, as Snakemake's
    `validate(..., set_default=True)` does (the jsonschema FAQ's recipe), each default a copy; built once
    per file and version (Snakemake's loads and builds it on every call: 0.26 s)."""
    import yaml
    from jsonschema import Draft202012Validator, validators

    path = Path(schema_path).resolve()
    key = (str(path), path.stat().st_mtime)
    if key not in _VALIDATORS:
        schema = yaml.safe_load(path.read_text(encoding="utf-8"))
        properties = Draft202012Validator.VALIDATORS["properties"]

        def set_defaults(validator: Any, props: dict, instance: Any, node: dict) -> Iterator[Any]:
            if isinstance(instance, dict):
                for name, sub in props.items():
                    if isinstance(sub, dict) and "default" in sub:
                        instance.setdefault(name, copy.deepcopy(sub["default"]))
            yield from properties(validator, props, instance, node)

        cls = validators.extend(Draft202012Validator, {"properties": set_defaults})
        _VALIDATORS[key] = cls(schema)
    return _VALIDATORS[key]


def validate_config(config: dict[str, Any], schema_path: str | Path) -> dict[str, Any]:
    """The schema check of `lem plan cost` and `check_workflow_config`: `config` validated against the
    schema with its defaults filled in (in place; returned), as workflow/rules/common.smk does with
    Snakemake's `validate`; the first refusal one line naming the key (`schema_refusal`) instead of
    Snakemake's dump of the schema and the config."""
    for err in _schema_validator(schema_path).iter_errors(config):
        raise ConfigError(schema_refusal(err))
    return config
