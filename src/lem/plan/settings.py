"""`lem plan settings RULE`: which config keys feed a rule's `--settings`, read from the settings table
(lem.run.settings.SETTINGS) as data; with --configfile, each key's value in that config and the settings the
rule passes (`Run.settings_for`, with the wildcards given as NAME=VALUE)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

from lem.run import Run
from lem.run.settings import CODE, SETTINGS, Add, Part, lookup


class SettingsTableError(ValueError):
    """An unknown rule, or a config key a rule reads that the config lacks."""


def _code(name: str) -> str:
    doc = (CODE[name].__doc__ or "").strip().split("\n\n")[0]
    return f"code `{name}`: {' '.join(doc.split())}"


def _add_lines(add: Add, where: str) -> Iterator[str]:
    key = "every key" if add.key == "*" else f"`{add.key}`"
    line = f"  {where} {key} <- config `{add.source}`"
    if add.code:
        line += f" through {_code(add.code)}"
    yield line
    if add.job_source:
        yield f"    a job's own value: config `{add.job_source}` where the config has it"
    if add.job:
        yield f"    a job's own value: {_code(add.job)}"


def part_lines(part: Part) -> Iterator[str]:
    """A part of a rule's settings in words, one fact a line."""
    into = f"`{part.into}`" if part.into else "the settings themselves"
    if part.each:
        wildcard, attribute = part.each
        yield f"{into} (one entry per `{{{wildcard}}}` in Run.{attribute}): config `{part.path}`"
    elif not part.path:
        yield f"{into}: fixed {json.dumps(part.fixed)} (no config key)"
    else:
        checked = f"checked as section `{part.section}`" if part.section else "checked elsewhere"
        optional = ", may be left out" if part.optional else ""
        yield f"{into}: config `{part.path}` ({checked}{optional})"
    for add in part.before:
        yield from _add_lines(add, "before its keys:")
    for add in part.after:
        yield from _add_lines(add, "after its keys (the section may not set it):")
    for wildcard, key in part.over:
        yield f"  checked once per `{{{wildcard}}}` in the keys of config `{key}`"
    if part.finish:
        yield f"  then {_code(part.finish)}"


def rule_lines(
    rule: str, config: dict[str, Any] | None = None, wildcards: dict[str, str] | None = None
) -> list[str]:
    """The row of `rule` in words; with `config`, each key's value there (the wildcards filled where given) and
    the settings the rule passes."""
    if rule not in SETTINGS:
        raise SettingsTableError(f"no settings for rule {rule!r}; rules with settings: {', '.join(SETTINGS)}")
    w = dict(wildcards or {})
    lines = [f"rule {rule}: --settings"]
    for part in SETTINGS[rule]:
        lines += part_lines(part)
        if config is None:
            continue
        keys = [part.path] if part.path and not part.each else []
        keys += [a.source for a in (*part.before, *part.after)]
        for key in keys:
            try:
                value = json.dumps(lookup(config, key, w), sort_keys=True)
            except KeyError:
                value = "(not in this config, or a wildcard not given)"
            lines.append(f"    = `{key}`: {value}")
    if config is not None:
        try:
            passed = json.dumps(Run(config).settings_for(rule, **w), sort_keys=True)
        except (KeyError, TypeError, ValueError) as err:
            passed = f"(needs the job's wildcards: {err})"
        lines.append(f"passed: {passed}")
    return lines
