"""The config as Snakemake reads it: `{data_root}` expanded, `enabled: false` switching a task off, the schema's
defaults filled and a schema refusal in one line naming the key (`schema_refusal`)."""

from __future__ import annotations

import copy
import json
import math
import os
from collections.abc import Iterator
from importlib import resources
from pathlib import Path
from typing import Any

import yaml

from lem.config_check.errors import ConfigError, _one_line, _short

# Imported inside functions: jsonschema (`lem plan --help` imports this module and needs no validator)

# The config schema, shipped in the package (package data: in the source tree a link to
# workflow/schemas/config.schema.yaml, the workflow's own; in a wheel the file itself), so that `lem plan`
# finds it wherever the package is installed.
SCHEMA = Path(str(resources.files(__package__) / "config.schema.yaml"))
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


# --- the schema, in one line ------------------------------------------------------------------------------


def _key_path(segments: Any) -> str:
    return ".".join(str(s) if not isinstance(s, int) else f"[{s}]" for s in segments).replace(".[", "[")


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
    if inner.validator == "uniqueItems" and isinstance(inner.instance, list):
        items = inner.instance
        twice = next((x for i, x in enumerate(items) if x in items[:i]), None)
        return f"{path or 'config'}: {_short(items)}: {twice!r} is listed twice: expected distinct items"
    if inner.validator == "minProperties" and isinstance(inner.instance, dict):
        given = ", ".join(map(str, inner.instance)) or "none"
        what = (
            "a line-aligned file for each language of the set's pairs"
            if path.endswith(".files")
            else "a mapping"
        )
        return (
            f"{path or 'config'}: {_short(inner.instance)}: expected {what}, at least {inner.validator_value} "
            f"entries; got {len(inner.instance)} ({given})"
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


_VALIDATORS: dict[tuple[str, float], Any] = {}


def _schema_validator(schema_path: str | Path) -> Any:
    """A jsonschema validator of the schema file that fills in defaults as it validates, as Snakemake's
    `validate(..., set_default=True)` does (the jsonschema FAQ's recipe), each default a copy; built once
    per file and version (Snakemake's loads and builds it on every call: 0.26 s)."""
    from jsonschema import Draft202012Validator, validators

    path = Path(schema_path).resolve()
    key = (str(path), path.stat().st_mtime)
    if key not in _VALIDATORS:
        # the repository's own schema: libyaml's parser where PyYAML has it (7x faster, the same constructors)
        loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
        schema = yaml.load(path.read_text(encoding="utf-8"), Loader=loader)
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


def non_finite_value(config: Any, path: str = "") -> tuple[str, float] | None:
    """The first NaN or infinite number of the config (YAML's `.nan`, `.inf`) and its key: the schema's
    ranges let NaN through (every comparison with it is false), and no key takes one."""
    if isinstance(config, float) and not math.isfinite(config):
        return path, config
    if isinstance(config, dict):
        items = [(f"{path}.{k}" if path else str(k), v) for k, v in config.items()]
    elif isinstance(config, list):
        items = [(f"{path}[{i}]", v) for i, v in enumerate(config)]
    else:
        return None
    for key, value in items:
        found = non_finite_value(value, key)
        if found is not None:
            return found
    return None


def _check_finite(config: dict[str, Any]) -> None:
    found = non_finite_value(config)
    if found is not None:
        raise ConfigError(f"{found[0]}: {found[1]}: expected a finite number")


# --- a config file is code: YTE templates, YAML's full loader -----------------------------------------------

YTE_KEY = "__use_yte__"  # Snakemake renders such a config with YTE when it loads it: its values run Python
ALLOW_YTE = "LEM_ALLOW_YTE"  # =1: the user has read the template and runs it (docs/troubleshooting.md)
TAG_PREFIX = "tag:yaml.org,2002:"


def yte_allowed() -> bool:
    return os.environ.get(ALLOW_YTE, "") == "1"


def _asks_for_yte(text: str) -> bool | None:
    """Whether YAML text that plain YAML cannot construct has `__use_yte__` true at its top level (YTE's test),
    read from its node graph (composing builds no object, so a Python tag does not stop it); None when even
    that cannot be read."""
    try:
        node = yaml.compose(text, Loader=yaml.SafeLoader)
    except yaml.YAMLError:
        return None
    if not isinstance(node, yaml.MappingNode):
        return False
    for key, value in node.value:
        if isinstance(key, yaml.ScalarNode) and key.value == YTE_KEY:
            try:
                return bool(yaml.safe_load(yaml.serialize(value)))
            except yaml.YAMLError:
                return True  # a Python object: true to YTE unless it says otherwise
    return False


def read_config_file(path: str | Path) -> tuple[str, Any]:
    """A config file read as Snakemake's loader reads it (snakemake.common.configfile): as JSON when it parses
    as JSON (never rendered), else as YAML, here with YAML's safe loader where Snakemake uses the full one
    (through YTE). Returns ("json" or "yaml", the data). A file this cannot read so (a Python tag such as
    `!!python/tuple`, which the full loader builds an object from; not UTF-8; gone) raises ConfigError in one
    line naming the file and why: the check fails closed, never skipping a file it cannot see into."""
    try:
        text = Path(path).read_text(encoding="utf-8")
    except UnicodeDecodeError as err:
        raise ConfigError(
            f"{path}: expected UTF-8 text, got byte 0x{err.object[err.start]:02x} at offset {err.start}: the "
            "config check cannot read it as Snakemake did, so no job is started"
        ) from None
    except OSError as err:
        raise ConfigError(
            f"{path}: cannot be read ({err.strerror or _one_line(err)}), though Snakemake loaded it: the config "
            "check cannot see what it holds, so no job is started"
        ) from None
    try:
        return "json", json.loads(text)
    except ValueError:
        pass
    try:
        return "yaml", yaml.safe_load(text)
    except yaml.YAMLError as err:
        problem = str(getattr(err, "problem", None) or _one_line(err)).replace(TAG_PREFIX, "!!")
        mark = getattr(err, "problem_mark", None)
        where = f"line {mark.line + 1}: " if mark is not None else ""
        ran = {
            True: f"Snakemake rendered it as a YTE template ({YTE_KEY}: true) when it loaded it, running the Python "
            "in its values, before this workflow could look at it",
            False: "Snakemake loaded it with YAML's full loader, which builds Python objects from such tags",
            None: "Snakemake loaded it with YAML's full loader (and rendered it, were it a YTE template)",
        }[_asks_for_yte(text)]
        raise ConfigError(
            f"{path}: not plain YAML ({where}{problem}): {ran}; the config check reads plain YAML and JSON only, "
            "so no job is started: a config holds plain values (no !!python/... tag; "
            "docs/troubleshooting.md, 'A config file is code')"
        ) from None


def yte_templates(configfiles: Any) -> list[str]:
    """The config files (of those Snakemake loaded) that ask for YTE templating (`__use_yte__` true at the top
    level of a YAML file): Snakemake has rendered them, running their Python, before the workflow could check
    them. A file that cannot be read as Snakemake read it raises ConfigError (`read_config_file`)."""
    found = []
    for path in configfiles or ():
        kind, data = read_config_file(path)
        if kind == "yaml" and isinstance(data, dict) and data.get(YTE_KEY):
            found.append(str(path))
    return found


def refuse_yte(configfiles: Any) -> None:
    """The config files Snakemake loaded, each read as it read them (`read_config_file`): one that cannot be
    read so is refused; a YAML file that is a YTE template stops the run before any job unless
    LEM_ALLOW_YTE=1, saying that Snakemake has run its code already (at load); a JSON file holding the key,
    which Snakemake never renders, is refused saying so. A config received from someone else is code, like a
    Snakefile (docs/troubleshooting.md, "A config file is code")."""
    for path in configfiles or ():
        kind, data = read_config_file(path)
        if not isinstance(data, dict) or YTE_KEY not in data:
            continue
        if kind == "json":
            raise ConfigError(
                f"{path}: {YTE_KEY}: a JSON config, which Snakemake reads as JSON and never renders as a YTE "
                "template (nothing in it ran); no job is started: drop the key (a template is a YAML file)"
            )
        if data[YTE_KEY] and not yte_allowed():
            raise ConfigError(
                f"{path}: {YTE_KEY}: true: a YTE template: Snakemake rendered it when it loaded the file, running "
                "the Python in its values, before this workflow could look at it; no job is started: read it, "
                f"then rerun with {ALLOW_YTE}=1 to accept templates (docs/troubleshooting.md, 'A config file is "
                "code')"
            )


def _check_yte_key(config: dict[str, Any]) -> None:
    """`__use_yte__` in a config read as plain YAML (`lem plan`, which never renders a template)."""
    if YTE_KEY in config:
        raise ConfigError(
            f"{YTE_KEY}: a YTE template (its values run Python when Snakemake loads it); `lem plan` reads "
            "a config as plain YAML and renders none: plan a rendered copy (`yte < in.yaml > out.yaml`, after "
            f"reading it), or run Snakemake with {ALLOW_YTE}=1 (docs/troubleshooting.md)"
        )
