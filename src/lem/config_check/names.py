"""Checks of names, pairs, languages, variants, seeds and sources across config sections: each failure one line
naming the key, the value and what is allowed."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from lem.config_check.errors import ConfigError, _short
from lem.reference import RefEncoderSettings, hub_model


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
        if (spec or {}).get("format") == "parallel":
            files = (spec or {}).get("files") or {}
            for pair in listed:
                missing = [lang for lang in str(pair).split("-") if lang not in files]
                if missing:
                    raise ConfigError(
                        f"mining.evalsets.{name}.files: no file for {', '.join(missing)} (pair {pair}): expected "
                        f"a line-aligned sentence file for each language of the set's pairs, got "
                        f"{', '.join(files) or 'none'}"
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
    if ok and len(set(seeds)) != len(seeds):
        twice = next(x for i, x in enumerate(seeds) if x in seeds[:i])
        raise ConfigError(
            f"sentiment.seeds: {seeds!r}: {twice} is listed twice: expected distinct seeds (one fine-tuning run "
            "per seed)"
        )
    if not ok or not seeds:
        raise ConfigError(
            f"sentiment.seeds: {seeds!r}: expected a non-empty list of distinct integers >= 0 (one fine-tuning "
            "run per seed; the report gives their mean and spread)"
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


RUN_FOLDERS = ("results/", "resources/")  # what the workflow's own rules write (downloads, pairs, corpora)


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
        for pair, path in lexical.items():  # a user's file: there now (the run makes results/, resources/)
            if isinstance(path, str) and not path.startswith(RUN_FOLDERS) and not Path(path).exists():
                raise ConfigError(
                    f"controls.lexical.{pair}: {path!r}: no such file; expected a src<TAB>tgt dictionary file "
                    "that exists (or one the run writes under results/ or resources/)"
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
