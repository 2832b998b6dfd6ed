"""`lem plan settings RULE`: which config keys feed a rule's `--settings`, read from the account of its
function (lem.run.settings.SETTINGS) as data; with --configfile, each key's value in that config and the
settings the rule passes (its function, `settings_for`, with the wildcards given as NAME=VALUE)."""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterator
from typing import Any

from lem.run import Run
from lem.run.settings import (
    SETTINGS,
    Merge,
    Part,
    curation_mining,
    lookup,
    nmt_seed_and_model,
    pretrain_seed,
    reference_controls,
    settings_for,
)


class SettingsTableError(ValueError):
    """An unknown rule, an unknown wildcard or a wildcard's value the rule cannot have."""


# the wildcards each function an account of lem.run.settings names reads (tests/unit/test_plan_power.py: one
# entry per function named)
CODE_WILDCARDS: dict[Callable[..., Any], tuple[str, ...]] = {
    pretrain_seed: ("seed",),
    curation_mining: (),
    nmt_seed_and_model: ("seed",),
    reference_controls: (),
}
DIGITS = ("seed", "fseed")  # workflow/rules/common.smk's wildcard_constraints: digits only
FIELD = re.compile(r"\{(\w+)\}")


def rule_wildcards(rule: str) -> dict[str, str | None]:
    """The wildcards of `rule`'s settings: every `{field}` of its account's config keys, the wildcards its `over`
    and `each` name and those its functions read; each -> the config key whose entries are its values (None: any
    value). `variant` stands for `ref` as the rule reads it (`ref_<name>`)."""
    out: dict[str, str | None] = {}
    for part in SETTINGS[rule].parts:
        adds = (*part.before, *part.after)
        templates = [part.path, *(a.source for a in adds), *(a.job_source or "" for a in adds)]
        for name in (n for t in templates for n in FIELD.findall(t)):
            out.setdefault(name, None)
        for name, key in part.over:
            out[name] = key
        if part.each:
            out.setdefault(part.each[0], None)
        for code in (part.finish, *(a.code for a in adds), *(a.job for a in adds)):
            for name in CODE_WILDCARDS.get(code, ()) if code else ():
                out.setdefault(name, None)
    if "ref" in out:
        out["variant"] = None
    return out


def check_wildcards(rule: str, wildcards: dict[str, str], config: dict[str, Any] | None) -> None:
    """Each wildcard given is one of `rule`'s (`rule_wildcards`) with a value the rule can have: digits for a
    seed, an entry of its config key where `config` is given. SettingsTableError in one line naming it."""
    known = rule_wildcards(rule)
    names = ", ".join(f"{{{n}}}" for n in known) or "none"
    for name, value in wildcards.items():
        item = f"{name}={value}"
        if name not in known:
            raise SettingsTableError(
                f"{item}: rule {rule} has no wildcard {{{name}}} in its settings; its wildcards: {names}"
            )
        if name in DIGITS and not value.isdigit():
            raise SettingsTableError(f"{item}: expected an integer >= 0 (the rule's {{{name}}} is digits)")
        key = known[name]
        if config is None or key is None:
            continue
        try:
            entries = [str(e) for e in lookup(config, key, {}) or ()]
        except KeyError:
            entries = []
        if value not in entries:
            raise SettingsTableError(
                f"{item}: not an entry of config `{key}` (entries: {', '.join(entries) or 'none'})"
            )
    if "variant" in wildcards and config is not None:
        refs = [f"ref_{n}" for n in config.get("reference_encoders") or {}]
        if wildcards["variant"] not in refs:
            raise SettingsTableError(
                f"variant={wildcards['variant']}: expected a reference encoder's row (rows: {', '.join(refs) or 'none'})"
            )


def _code(code: Callable[..., Any]) -> str:
    doc = (code.__doc__ or "").strip().split("\n\n")[0]
    return f"code `{code.__name__}`: {' '.join(doc.split())}"


def _add_lines(add: Merge, where: str) -> Iterator[str]:
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
    """A part of a rule's settings (its account) in words, one fact a line."""
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
    """The account of `rule`'s settings in words; with `config`, each key's value there (the wildcards filled
    where given) and the settings the rule passes."""
    if rule not in SETTINGS:
        raise SettingsTableError(f"no settings for rule {rule!r}; rules with settings: {', '.join(SETTINGS)}")
    w = dict(wildcards or {})
    check_wildcards(rule, w, config)
    lines = [f"rule {rule}: --settings"]
    for part in SETTINGS[rule].parts:
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
        missing = [
            f"{{{n}}}" for n in rule_wildcards(rule) if n not in w and not (n == "variant" and "ref" in w)
        ]
        try:
            passed = json.dumps(settings_for(Run(config), rule, **w), sort_keys=True)
        except (KeyError, TypeError, ValueError) as err:
            if not missing:
                raise SettingsTableError(f"rule {rule}: {' '.join(str(err).split())}") from None
            passed = f"(needs the job's wildcards: {', '.join(missing)})"
        lines.append(f"passed: {passed}")
    return lines
