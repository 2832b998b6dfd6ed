"""One way to be a stage: every command is `lem <stage> <verb>`, declared once, and what calls or documents
a command (the workflow's rules, the README and the docs pages) names a declared verb and declared flags."""

from __future__ import annotations

import json
import re
import shlex
from pathlib import Path

import pytest

from lem import cli
from lem.core.stage import Stage, Verb, arg, json_object

REPO = Path(__file__).resolve().parents[2]
SRC = REPO / "src" / "lem"


def declared() -> dict[tuple[str, str], Verb]:
    return {(name, v.name): v for name in cli.STAGES for v in cli.stage(name).verbs}


def test_every_listed_stage_declares_itself_under_its_name():
    for name in cli.STAGES:
        stage = cli.stage(name)
        assert stage.name == name and stage.verbs, name
        assert all(v.help for v in stage.verbs), name
        stage.parser()  # every declaration builds (no clashing flags)


def test_no_second_cli_dispatch_settings_parser_or_logging_setup():
    """argparse parsers, logging set-up and JSON settings parsing live in lem.core.stage alone."""
    offenders = []
    for path in SRC.rglob("*.py"):
        if path.name == "stage.py":
            continue
        text = path.read_text(encoding="utf-8")
        for pattern in (
            "ArgumentParser(",
            "add_subparsers(",
            "basicConfig(",
            "json.loads(args.",
            "json.loads(a.",
        ):
            if pattern in text:
                offenders.append(f"{path.relative_to(REPO)}: {pattern}")
        if re.search(r"^def main\(", text, re.M) and path.name != "cli.py":
            offenders.append(f"{path.relative_to(REPO)}: def main")
    assert not offenders, offenders


def test_contracts_lists_every_command_as_generated():
    text = (REPO / "docs" / "contracts.md").read_text(encoding="utf-8")
    section = text.split("<!-- commands: begin -->\n", 1)[1].split("<!-- commands: end -->", 1)[0]
    assert section == cli.commands_markdown(), (
        "docs/contracts.md is stale: paste the output of `lem --commands`"
    )


def _lem_calls(text: str) -> list[list[str]]:
    """Every `lem <stage> <verb> ...` call in a text, as tokens (Snakemake placeholders kept as words)."""
    calls = []
    for m in re.finditer(r"(?<![\w/.-])lem ([a-z-]+) ([a-z-]+)((?: +(?:--[a-z-]+|[^\s`\"|>]+))*)", text):
        tokens = [m.group(1), m.group(2), *m.group(3).split()]
        if m.group(1) in cli.STAGES:
            calls.append(tokens)
    return calls


def _check_call(tokens: list[str], where: str, verbs: dict[tuple[str, str], Verb]) -> None:
    key = (tokens[0], tokens[1])
    assert key in verbs, f"{where}: `lem {' '.join(key)}` is not a declared command"
    flags = {f for a in verbs[key].all_args() for f in a.flags if f.startswith("--")}
    for token in tokens[2:]:
        if token.startswith("--"):
            assert token in flags, (
                f"{where}: `lem {' '.join(key)}` has no flag {token}; declared: {sorted(flags)}"
            )


def test_every_lem_call_in_the_rules_and_docs_is_a_declared_command_with_declared_flags():
    verbs = declared()
    files = [
        *sorted((REPO / "workflow" / "rules").glob("*.smk")),
        REPO / "README.md",
        *sorted((REPO / "docs").glob("*.md")),
    ]
    seen = set()
    for path in files:
        text = path.read_text(encoding="utf-8").replace('"\n', " ").replace('" "', " ")
        for tokens in _lem_calls(text):
            _check_call(tokens, str(path.relative_to(REPO)), verbs)
            seen.add((tokens[0], tokens[1]))
    rules = {
        (t[0], t[1])
        for p in (REPO / "workflow" / "rules").glob("*.smk")
        for t in _lem_calls(p.read_text(encoding="utf-8").replace('"\n', " "))
    }
    # every stage of the pipeline is reached from a rule (a verb a rule never calls is a tool: listed here)
    tools = {("data", "conll-split"), ("masking", "stats"), ("annotate", "score")} | {
        k for k in verbs if k[0] in {"plan", "stand-in"}
    }
    assert {k[0] for k in verbs} <= {k[0] for k in rules | tools}


def test_settings_become_the_verbs_dataclass_and_errors_are_one_line(tmp_path, capsys):
    from dataclasses import dataclass

    seen = {}

    @dataclass(frozen=True)
    class S:
        k: int = 1

        @classmethod
        def from_dict(cls, d):
            if set(d) - {"k"}:
                raise ValueError(f"unknown key(s) {sorted(set(d) - {'k'})}")
            return cls(**d)

    def run(a):
        seen["settings"], seen["keys"] = a.settings, a.keys
        if a.fail:
            from lem.core.inputs import InputError

            raise InputError(f"{tmp_path}/x.tsv:3: expected 2 fields, got 1")

    stage = Stage(
        "t",
        "a test stage",
        (Verb("go", "run it", run, (arg("--fail", action="store_true"),), settings=S, keys=True),),
    )
    assert stage.main(["go", "--settings", '{"k": 3}', "--keys", '{"pair": "si-en"}']) == 0
    assert seen == {"settings": S(3), "keys": {"pair": "si-en"}}
    assert stage.main(["go"]) == 0 and seen["settings"] == S(1) and seen["keys"] is None
    assert stage.main(["go", "--settings", '{"kk": 3}']) == 2
    assert "lem t go: --settings: unknown key(s) ['kk']" in capsys.readouterr().err
    assert stage.main(["go", "--keys", '{"seed": 1}']) == 2
    assert "--keys must be a JSON object of strings" in capsys.readouterr().err
    assert stage.main(["go", "--fail"]) == 1
    assert capsys.readouterr().err.strip() == f"lem t go: {tmp_path}/x.tsv:3: expected 2 fields, got 1"
    with pytest.raises(SystemExit) as exit_:
        stage.main(["go", "--settings", "[1, 2]"])
    assert exit_.value.code == 2 and "expected a JSON object" in capsys.readouterr().err


def test_json_object_names_what_is_wrong():
    assert json_object('{"a": 1}') == {"a": 1} and json_object("") == {}
    for bad in ("{", "[]", '"x"'):
        with pytest.raises(Exception, match="JSON"):
            json_object(bad)


def test_top_level_help_lists_every_stage(capsys):
    assert cli.main([]) == 0
    out = capsys.readouterr().out
    assert all(f"  {name}" in out for name in cli.STAGES)
    assert cli.main(["nope"]) == 2


def test_version(capsys):
    import lem

    assert cli.main(["--version"]) == 0
    assert capsys.readouterr().out == f"lem {lem.__version__} (lem-pipeline)\n"


def test_a_rule_command_parses_with_its_real_arguments():
    """A rule's shell string, with placeholders filled, parses under the declared verb."""
    smk = (REPO / "workflow" / "rules" / "mine.smk").read_text(encoding="utf-8")
    shell = re.search(r'"(lem mine run .*?)> \{log:q\}', smk.replace('"\n        "', ""), re.S).group(1)
    filled = re.sub(r"\{[a-z_.]+:q\}", "x", shell).replace("'{params.settings}'", "'{}'")
    filled = filled.replace("'{params.keys_json}'", "'" + json.dumps({"pair": "si-en"}) + "'")
    argv = shlex.split(filled)[1:]
    args = cli.stage("mine").parser().parse_args(argv[1:])
    assert args.verb == "run" and args.keys == {"pair": "si-en"} and args.settings == {}


def test_layout_table_names_every_tracked_entry_and_module():
    import subprocess

    text = (REPO / "docs" / "development.md").read_text(encoding="utf-8")
    table = text.split("## Layout\n", 1)[1].split("\n## ", 1)[0]
    tracked = subprocess.run(["git", "ls-files"], cwd=REPO, capture_output=True, text=True, check=True).stdout
    if not tracked:
        pytest.skip("not a git checkout: nothing to compare the layout table with")
    top = {line.split("/")[0] for line in tracked.splitlines()} - {".gitignore"}
    missing = [t for t in sorted(top) if f"`{t}" not in table]
    for path in sorted(SRC.iterdir()):
        if path.name.startswith("__") or path.suffix not in {".py", ""}:
            continue
        name = f"src/lem/{path.name}" + ("/" if path.is_dir() else "")
        if f"`{name}`" not in table:
            missing.append(name)
    for package in ("core", "evidence", "masking", "mine", "nmt"):  # each of their modules named by file name
        for path in sorted((SRC / package).glob("*.py")):
            if not path.name.startswith("__") and f"`{path.name}`" not in table:
                missing.append(f"src/lem/{package}/{path.name}")
    assert not missing, f"docs/development.md's layout table does not name {missing}"
