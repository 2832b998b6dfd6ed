"""Checks of what the config's files and annotation hold, where planning can read them: corpus files, the
generated world's languages and scripts, POS tag sets, CRF models, labelled curation corpora."""

from __future__ import annotations

import os
import unicodedata
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from lem.config_check.errors import ConfigError, _one_line
from lem.config_check.names import RUN_FOLDERS, SOURCE_PREFIXES
from lem.core.entities import NATIVE_TAGSET
from lem.corpus.generate import PAIRS, GenerateSettings
from lem.data.webmined import SCRIPTS


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


# the keys of a mining evaluation set that one format alone reads (lem.data.news, lem.data.retrieval), with the
# schema's default of each (a default filled in is no key the user gave)
NEWS_KEYS = {"root": None, "site": None, "doc_pairs": "gold", "gold_repairs": []}
PARALLEL_KEYS = {"files": None}


def _given(spec: dict[str, Any], written: dict[str, Any] | None, key: str, default: Any) -> bool:
    """Whether the user gave `key` of an evaluation set: in the config as written where known, else a value
    other than the schema's default."""
    if written is not None:
        return key in written
    return key in spec and (default is None or spec[key] != default)


def _check_retrieval_sets(config: dict[str, Any], written: dict[str, Any] | None = None) -> None:
    """Mining evaluation sets: no key of the other format (a parallel set's `root`, `site`, `doc_pairs`,
    `gold_repairs`, a news set's `files`: read by nothing, they planned without a word); a parallel set's files
    (`format: parallel`, lem.data.retrieval): a different file for each language, a file and not a folder (the job
    died with a traceback), one that exists unless the run writes it (results/, resources/, a `raw:` or
    `unpacked:` source: before, Snakemake's MissingInputException), its first lines in the script expected of
    its language (curation.filters.scripts, as corpus.files.mono). `written`: the config before the schema's
    defaults."""
    sets = (config.get("mining") or {}).get("evalsets") or {}
    written_sets = (
        ((written or {}).get("mining") or {}).get("evalsets") or {} if written is not None else None
    )
    filters = (config.get("curation") or {}).get("filters") or {}
    scripts = filters.get("scripts") if isinstance(filters.get("scripts"), dict) else SCRIPTS
    for name, spec in sets.items():
        if not isinstance(spec, dict):
            continue
        key = f"mining.evalsets.{name}"
        fmt = spec.get("format", "news")
        given = None if written_sets is None else written_sets.get(name) or {}
        other = NEWS_KEYS if fmt == "parallel" else PARALLEL_KEYS
        for k, default in other.items():
            if _given(spec, given, k, default):
                reader = (
                    "a news set's key (lem.data.news), which a `format: parallel` set does not read"
                    if fmt == "parallel"
                    else "a parallel set's key (lem.data.retrieval), which a news set (`format: news`, the "
                    "default) does not read"
                )
                raise ConfigError(
                    f"{key}.{k}: {reader}: drop it{'' if fmt == 'parallel' else ', or set format: parallel'}"
                )
        if fmt != "parallel":
            continue
        files = {lang: path for lang, path in (spec.get("files") or {}).items() if isinstance(path, str)}
        seen: dict[str, str] = {}
        for lang, path in files.items():
            source = path.startswith(SOURCE_PREFIXES)
            same = path if source or not Path(path).exists() else str(Path(path).resolve())
            same = same if source else os.path.normpath(os.path.abspath(same))
            if same in seen:
                raise ConfigError(
                    f"{key}.files.{lang}: {path!r} is also the file of {seen[same]}: expected each language's own "
                    "file (line k of each the same sentence, in its language)"
                )
            seen[same] = lang
        for lang, path in files.items():
            where = f"{key}.files.{lang}"
            if path.startswith(SOURCE_PREFIXES):
                continue
            if Path(path).is_dir():
                raise ConfigError(f"{where}: {path!r} is a folder: expected a file of line-aligned sentences")
            if not Path(path).exists():
                if path.startswith(RUN_FOLDERS):
                    continue  # the run writes it (a download, an extraction)
                raise ConfigError(
                    f"{where}: {path!r}: no such file; expected a file of line-aligned sentences that exists (or one "
                    "the run writes, under results/ or resources/, or a raw: / unpacked: source)"
                )
            expected = scripts.get(lang)
            if expected:
                _check_file_script(where, Path(path), lang, expected)


SCRIPT_SAMPLE_LINES = 200  # lines of a language's text file read at planning to tell its script
# below this share of its code's script a text file is another language's (code-mixed text keeps far more:
# multiNER's Sinhala and Tamil CoNLL files, tags included, have 51 % and 54 %; a swapped file has 0 %)
SCRIPT_MIN_SHARE = 0.2


def _check_file_script(key: str, path: Path, code: str, expected: str) -> None:
    """The first lines of text file `path` are mostly in `expected`'s script (a file of another language
    named for `code` was found only at a later job, or never)."""
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
