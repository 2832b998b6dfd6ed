"""Small helpers the rules share: settings as a shell word, metrics keys, source specs as CLI arguments, the
files of an embed job as CLI arguments, embed jobs by evaluation set."""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from typing import Any

from lem.run.paths import source_dep, source_file

MARGIN_KEYS = ("k", "margin", "neighbourhood")  # what curation takes from mining.settings


def as_json(obj: Any) -> str:
    """A settings mapping as JSON that the rules put between single quotes (`'{params.settings}'`; params: a
    change reruns the rule). A single quote can only sit inside a JSON string, where `\\u0027` is the same
    character: any free text (a note, a name, a label) passes unchanged, and the argument stays one word."""
    return json.dumps(obj, sort_keys=True).replace("'", "\\u0027")


def metrics_keys(task: str, **keys: Any) -> str:
    """The `--keys` JSON of a metrics writer: what its file measures (task, variant, dataset, pair, seed),
    written into the file for the report to read (docs/contracts.md)."""
    return as_json({"task": task, **{k: str(v) for k, v in keys.items()}})


def names_regex(names: Sequence[str]) -> str:
    """A wildcard constraint matching exactly `names` (each escaped); none matches nothing (`(?!)`), so that a
    rule for a kind of set the config has none of never claims a file."""
    return "|".join(re.escape(n) for n in names) if names else "(?!)"


def src_tgt(pair: str) -> list[str]:
    return pair.split("-")


def pair_source(spec: str | dict) -> tuple[list[str], list[str]]:
    """A curation corpus / NMT set spec (a TSV, or {src, tgt} line-aligned files) -> (deps, CLI arguments)."""
    if isinstance(spec, str):
        return [source_dep(spec)], ["--corpus", source_file(spec)]
    deps = [source_dep(spec["src"]), source_dep(spec["tgt"])]
    return deps, ["--src", source_file(spec["src"]), "--tgt", source_file(spec["tgt"])]


def sha256_arg(spec: dict) -> list[str]:
    """`--sha256 X` as a list of arguments (shell-quoted one by one by `{params.sha:q}`)."""
    return ["--sha256", spec["sha256"]] if spec.get("sha256") else []


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


def reference_args(files: Sequence[tuple[str, str, str]], input: Any, output: Any) -> list[str]:
    """--sentences S --lang L --out E for every file (evalset, pair, lang) of a reference encoder's job."""
    return file_args(input.sentences, output.emb, [lang for *_, lang in files])
