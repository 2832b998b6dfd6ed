"""config/README.md documents every key of config/config.yaml and config/paper.yaml with the values the files
hold, and the defaults the settings dataclasses and the schema fill in.

The README's key tables have the columns `key | default | config.yaml | paper.yaml | meaning`:
- `key`: one dotted key path in backticks; `<name>` stands for any one key (an entry: a variant, a language,
  a file name with dots in it). A row documents its key and everything below it (a row for a mapping,
  e.g. `pretrain.stages.mono.epochs`, shows the whole mapping).
- `config.yaml`, `paper.yaml`: `–` when the file does not set the key; a value in backticks (YAML flow:
  `64`, `[ne, noun]`, `{default: 1}`) that the file holds at that key (at every entry that sets it, for a
  `<name>` row); or, in a `<name>` row only, words (entries differ).
- `default`: a value in backticks is what applies when the key is not set: the field default of the
  key's settings dataclass (lem.config_check.SECTIONS) or else the schema's `default`; words where the
  value comes from elsewhere (the run's `seed`), `–` where there is none.
"""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path
from typing import Any

import pytest
import yaml

from lem.config_check import SECTIONS

REPO = Path(__file__).resolve().parents[2]
README = REPO / "config" / "README.md"
SCHEMA = yaml.safe_load((REPO / "workflow" / "schemas" / "config.schema.yaml").read_text(encoding="utf-8"))
FILES = {"config.yaml": REPO / "config" / "config.yaml", "paper.yaml": REPO / "config" / "paper.yaml"}
COLUMNS = ["key", "default", "config.yaml", "paper.yaml", "meaning"]
ABSENT = "–"
NO_DEFAULT = object()
NO_SECTION = object()


@dataclasses.dataclass
class Row:
    key: tuple[str, ...]
    cells: dict[str, str]
    line: int

    @property
    def name(self) -> str:
        return ".".join(self.key)

    @property
    def pattern(self) -> bool:
        return any(is_placeholder(s) for s in self.key)


def is_placeholder(segment: str) -> bool:
    return segment.startswith("<") and segment.endswith(">")


def split_row(line: str) -> list[str]:
    """The cells of a table line (`\\|` is a literal bar inside a cell)."""
    cells = re.split(r"(?<!\\)\|", line.strip().strip("|"))
    return [c.strip().replace("\\|", "|") for c in cells]


def one_code_span(cell: str) -> str | None:
    """The content of a cell that is exactly one backticked span, else None."""
    m = re.fullmatch(r"`([^`]*)`", cell)
    return m.group(1) if m else None


def parse_tables(text: str) -> tuple[list[Row], list[str]]:
    """Rows of every key table (a table whose first header cell is `key`), and the problems found."""
    rows, problems = [], []
    lines = text.splitlines()
    i = 0
    while i < len(lines):
        if not lines[i].lstrip().startswith("|"):
            i += 1
            continue
        header = split_row(lines[i])
        start = i
        i += 2  # the header and its |---| line
        body = []
        while i < len(lines) and lines[i].lstrip().startswith("|"):
            body.append((i + 1, split_row(lines[i])))
            i += 1
        if header[0] != "key":
            continue
        if header != COLUMNS:
            problems.append(f"line {start + 1}: a key table needs the columns {COLUMNS}, found {header}")
            continue
        for lineno, cells in body:
            if len(cells) != len(COLUMNS):
                problems.append(f"line {lineno}: {len(cells)} cells, expected {len(COLUMNS)}")
                continue
            key = one_code_span(cells[0])
            if not key or not re.fullmatch(r"[A-Za-z0-9_<>-]+(\.[A-Za-z0-9_<>-]+)*", key):
                problems.append(
                    f"line {lineno}: the key cell must be one dotted key in backticks: {cells[0]!r}"
                )
                continue
            rows.append(Row(tuple(key.split(".")), dict(zip(COLUMNS, cells, strict=True)), lineno))
    return rows, problems


ROWS, PARSE_PROBLEMS = parse_tables(README.read_text(encoding="utf-8"))
CONFIGS = {name: yaml.safe_load(path.read_text(encoding="utf-8")) for name, path in FILES.items()}


def leaves(node: Any, path: tuple[str, ...] = ()) -> list[tuple[tuple[str, ...], Any]]:
    """(key path, value) of every leaf: a value that is not a mapping, or an empty mapping."""
    if isinstance(node, dict) and node:
        return [leaf for k, v in node.items() for leaf in leaves(v, (*path, str(k)))]
    return [(path, node)]


def matches(pattern: tuple[str, ...], path: tuple[str, ...]) -> bool:
    return len(pattern) == len(path) and all(
        is_placeholder(p) or p == s for p, s in zip(pattern, path, strict=True)
    )


def at(config: dict, pattern: tuple[str, ...]) -> list[tuple[tuple[str, ...], Any]]:
    """Every (path, value) of `config` that `pattern` names."""
    found = [((), config)]
    for seg in pattern:
        found = [
            ((*p, str(k)), v[k])
            for p, v in found
            if isinstance(v, dict)
            for k in (v if is_placeholder(seg) else [seg] if seg in v else [])
        ]
    return found


def normal(value: Any) -> Any:
    """A default as YAML would show it (tuples as lists, dataclasses as mappings)."""
    if dataclasses.is_dataclass(value):
        return normal(dataclasses.asdict(value))
    if isinstance(value, (list, tuple)):
        return [normal(v) for v in value]
    if isinstance(value, dict):
        return {k: normal(v) for k, v in value.items()}
    return value


def general(key: tuple[str, ...]) -> tuple[str, ...]:
    return tuple("<>" if is_placeholder(s) else s for s in key)


def dataclass_default(key: tuple[str, ...]) -> Any:
    """The field default of `key`'s settings dataclass (NO_DEFAULT where the rule sets the key or the
    key is no field of a checked section); NO_SECTION when no checked section holds the key."""
    for section in SECTIONS:
        if general(tuple(section.path.split("."))) == general(key[:-1]):
            fields = {f.name: f for f in dataclasses.fields(section.cls)}
            name = key[-1]
            if name in section.injected or name in section.overridden or name not in fields:
                return NO_DEFAULT
            f = fields[name]
            if f.default is not dataclasses.MISSING:
                return normal(f.default)
            return normal(f.default_factory())
    return NO_SECTION


def schema_node(key: tuple[str, ...]) -> dict | None:
    node = SCHEMA
    for seg in key:
        while "$ref" in node:
            node = SCHEMA["definitions"][node["$ref"].rsplit("/", 1)[1]]
        props = node.get("properties", {})
        if seg in props and not is_placeholder(seg):
            node = props[seg]
        elif isinstance(node.get("additionalProperties"), dict):
            node = node["additionalProperties"]
        elif is_placeholder(seg) and props:  # `pretrain.stages.<stage>`: every entry has the same schema
            node = next(iter(props.values()))
        else:
            return None
    while "$ref" in node:
        node = SCHEMA["definitions"][node["$ref"].rsplit("/", 1)[1]]
    return node


def known_default(key: tuple[str, ...]) -> Any:
    found = dataclass_default(key)
    if found is not NO_SECTION:
        return found
    node = schema_node(key)
    if node is not None and "default" in node:
        return node["default"]
    return NO_DEFAULT


def test_the_readme_tables_parse():
    assert not PARSE_PROBLEMS, "\n".join(PARSE_PROBLEMS)
    assert len(ROWS) > 100
    dup = sorted({r.name for r in ROWS if [s.name for s in ROWS].count(r.name) > 1})
    assert not dup, f"keys documented twice: {dup}"


@pytest.mark.parametrize("name", FILES)
def test_every_key_of_the_file_is_documented(name):
    undocumented = []
    for path, value in leaves(CONFIGS[name]):
        covered = any(len(r.key) <= len(path) and matches(r.key, path[: len(r.key)]) for r in ROWS)
        if not covered and value == {}:  # an empty mapping: documented by the rows of its entries
            covered = any(len(r.key) > len(path) and matches(r.key[: len(path)], path) for r in ROWS)
        if not covered:
            undocumented.append(".".join(path))
    assert not undocumented, f"keys of config/{name} without a row in config/README.md: {undocumented}"


@pytest.mark.parametrize("name", FILES)
def test_the_values_shown_are_the_files_values(name):
    wrong = []
    for row in ROWS:
        cell = row.cells[name]
        found = at(CONFIGS[name], row.key)
        if cell == ABSENT:
            if found:
                wrong.append(
                    f"line {row.line}: {row.name} shows {ABSENT} but config/{name} sets {found[0][1]!r}"
                )
            continue
        code = one_code_span(cell)
        if code is None:
            if not row.pattern:
                wrong.append(
                    f"line {row.line}: {row.name}: show the value in backticks (or {ABSENT}), not {cell!r}"
                )
            elif not found:
                wrong.append(f"line {row.line}: {row.name}: config/{name} sets no such key; show {ABSENT}")
            continue
        shown = yaml.safe_load(code)
        if not found:
            wrong.append(f"line {row.line}: {row.name} shows {code!r} but config/{name} does not set it")
        for path, value in found:
            if value != shown:
                wrong.append(
                    f"line {row.line}: {'.'.join(path)} is {value!r} in config/{name}, the README shows {code!r}"
                )
    assert not wrong, "\n".join(wrong)


def test_the_defaults_shown_are_the_dataclass_and_schema_defaults():
    wrong = []
    for row in ROWS:
        code = one_code_span(row.cells["default"])
        if code is None:
            continue
        want = known_default(row.key)
        if want is NO_DEFAULT:
            wrong.append(
                f"line {row.line}: {row.name}: default {code!r} is not the default of a settings field or of the "
                f"schema; write where the value comes from in words, or {ABSENT}"
            )
        elif yaml.safe_load(code) != want:
            wrong.append(f"line {row.line}: {row.name}: the default is {want!r}, the README shows {code!r}")
    assert not wrong, "\n".join(wrong)


@pytest.mark.parametrize("section", SECTIONS, ids=lambda s: s.path)
def test_every_field_of_a_settings_dataclass_is_documented(section):
    """Every key a checked section may hold has a row (the README says every key): a field of its
    dataclass, unless the rule sets it or the schema closes the section without it; a row under another
    section read by the same dataclass counts (`base_model.training` and a stage's `training`)."""
    key = tuple(section.path.split("."))
    node = schema_node(key) or {}
    closed = node.get("additionalProperties") is False
    settable = [
        f.name
        for f in dataclasses.fields(section.cls)
        if f.name not in section.overridden and not (closed and f.name not in node.get("properties", {}))
    ]
    same = [general(tuple(s.path.split("."))) for s in SECTIONS if s.settings == section.settings]
    # a row of the field itself, or of its entries (`evidence.margin.mining` for nested settings)
    names = {
        r.key[len(p)] for r in ROWS for p in same if len(r.key) > len(p) and general(r.key[: len(p)]) == p
    }
    missing = [n for n in settable if n not in names]
    assert not missing, f"fields of {section.settings} without a row `{section.path}.<field>`: {missing}"


@pytest.mark.parametrize("section", SECTIONS, ids=lambda s: s.path)
def test_the_schema_defaults_agree_with_the_dataclasses(section):
    """Where the schema fills in a default for a key of a checked section, it is the dataclass's own."""
    node = schema_node(tuple(section.path.split("."))) or {}
    fields = {f.name: f for f in dataclasses.fields(section.cls)}
    for key, prop in node.get("properties", {}).items():
        if "default" in prop and key in fields:
            want = dataclass_default((*section.path.split("."), key))
            default = prop["default"]
            if default == {} and prop.get(
                "properties"
            ):  # nested: each key's own default (the schema fills it)
                default = {k: p["default"] for k, p in prop["properties"].items() if "default" in p}
            assert default == want, f"{section.path}.{key}: schema {prop['default']!r}, dataclass {want!r}"
