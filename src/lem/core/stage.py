"""One way to be a stage: every `lem` command is `lem <stage> <verb> [--flags]`, declared with `Stage`/`Verb`.

A stage module exposes `STAGE = Stage(...)`; `lem.cli` lists the stage modules and imports only the one a
command names (so `lem --help` stays fast). What every command shares lives here, once:

- arguments: `arg("--out", required=True)` is `add_argument`'s call, kept as data so `docs/contracts.md`
  and the workflow's shell commands can be checked against the declared flags (tests/unit/test_cli.py);
- settings: a verb with `settings=SomeSettings` gets `--settings '<json object>'`, parsed by `json_object`
  and built with `SomeSettings.from_dict` before `run` sees it (`args.settings` is the dataclass); other
  JSON arguments use `type=json_object`; a bad value exits 2 naming the flag;
- metrics keys: `keys=True` adds `--keys '<json object>'` (`lem.core.files.metrics_keys`), `args.keys` a dict
  or None, written as the metrics file's `keys`;
- threads: `threads=True` adds `--threads N` and applies it (`lem.core.training.set_threads`) before `run`;
- logging: `setup_logging`, one format, to stderr (the rules send it to the job's log);
- errors: bad input (`input_errors`: a bad or missing input file, an impossible argument combination, a
  refused setting) and the exception types a verb declares become one line `lem <stage> <verb>: <message>`
  and exit status 1, as does a full disk (ENOSPC, EDQUOT) or a read-only output folder, in one line naming
  the folder (`lem.core.files.output_problem`); anything else is a bug and keeps its traceback,
  so a verb declares error classes of its own, never a builtin such as ValueError;
- interrupts: an interrupt is never a success. The whole command, from its arguments parsed to its verb's
  end, runs inside `lem.core.interrupt.stop_on_interrupt`: SIGINT or SIGTERM at any point makes it exit 130
  ("interrupted"), even when library code swallowed the KeyboardInterrupt where the signal landed (a flag,
  checked as the verb ends), and removes what the job created or rewrote of its declared outputs (`--out`,
  `--out-dir`, `--out-*`: `output_paths`), never what was there before it nor an input (the other path
  arguments, `--checkpoints` among them: a training run resumes from its checkpoint).
"""

from __future__ import annotations

import argparse
import errno
import importlib
import json
import logging
import os
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from lem.core.interrupt import restore_default as restore_default_sigint
from lem.core.interrupt import stop_on_interrupt

# Imported inside functions: lem.core.entities, .inputs, .settings, .files and .training (`lem --help` imports
# this module, through lem.cli, and needs none)

LOG_FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"


def setup_logging(level: int = logging.INFO) -> None:
    """The one logging set-up of every `lem` command (idempotent: a second call changes nothing)."""
    root = logging.getLogger()
    if not any(getattr(h, "_lem", False) for h in root.handlers):
        handler = logging.StreamHandler(sys.stderr)
        handler.setFormatter(logging.Formatter(LOG_FORMAT, datefmt="%H:%M:%S"))
        handler._lem = True  # type: ignore[attr-defined]
        root.addHandler(handler)
    root.setLevel(level)


def lang_code(text: str) -> str:
    """argparse `type=` of a language code: 2 or 3 lower-case letters (any language the config declares)."""
    from lem.core.entities import LANG_CODE

    if not LANG_CODE.fullmatch(text):
        raise argparse.ArgumentTypeError(f"not a language code (2 or 3 lower-case letters): {text!r}")
    return text


def json_object(text: str) -> dict[str, Any]:
    """argparse `type=` of every JSON argument: one JSON object, or a clear usage error."""
    try:
        data = json.loads(text) if text else {}
    except json.JSONDecodeError as err:
        raise argparse.ArgumentTypeError(f"not valid JSON ({err}): {text[:200]!r}") from err
    if not isinstance(data, dict):
        raise argparse.ArgumentTypeError(f"expected a JSON object, got {type(data).__name__}: {text[:200]!r}")
    return data


@dataclass(frozen=True)
class Arg:
    """One `add_argument(*flags, **options)` call."""

    flags: tuple[str, ...]
    options: dict[str, Any]

    @property
    def dest(self) -> str:
        return self.options.get("dest") or self.flags[0].lstrip("-").replace("-", "_")


def arg(*flags: str, **options: Any) -> Arg:
    return Arg(tuple(flags), dict(options))


def resolve(obj: Any) -> Any:
    """`obj`, or the object a "module:attribute" string names (imported now: stages stay light to load)."""
    if isinstance(obj, str):
        module, _, attr = obj.partition(":")
        return getattr(importlib.import_module(module), attr)
    return obj


def input_errors() -> tuple[type[BaseException], ...]:
    from lem.core.inputs import InputError
    from lem.core.settings import SettingsError

    return (InputError, FileNotFoundError, UsageError, SettingsError)


@dataclass(frozen=True)
class Verb:
    """A command `lem <stage> <name>`: its arguments and the function that runs it (`run(args) -> int|None`).

    `run` and `settings` may be "module:attribute" strings, imported only when the verb runs;
    `errors`: exception types (or "module:Class") reported as one line with exit status 1, besides
    `input_errors()` (bad or missing input files, impossible argument combinations, refused settings);
    `argv_run`: `run` also receives the command's argv (a verb that relaunches itself under torchrun)."""

    name: str
    help: str
    run: Callable[..., int | None] | str
    args: tuple[Arg, ...] = ()
    settings: type | str | None = None
    settings_required: bool = False
    keys: bool = False
    threads: bool = False
    errors: tuple[type[BaseException] | str, ...] = ()
    epilog: str | None = None
    argv_run: bool = False

    @property
    def settings_name(self) -> str:
        s = self.settings
        return s.replace(":", ".") if isinstance(s, str) else f"{s.__module__}.{s.__name__}"

    def all_args(self) -> tuple[Arg, ...]:
        extra: list[Arg] = []
        if self.settings is not None:
            extra.append(
                arg(
                    "--settings",
                    type=json_object,
                    required=self.settings_required,
                    default=None if self.settings_required else {},
                    help=f"JSON object of {self.settings_name} fields",
                )
            )
        if self.keys:
            extra.append(
                arg(
                    "--keys",
                    type=json_object,
                    default=None,
                    help="JSON object written as the metrics' `keys`",
                )
            )
        if self.threads:
            extra.append(arg("--threads", type=int, default=None, help="CPU threads of the job"))
        return (*self.args, *extra)


@dataclass(frozen=True)
class Stage:
    name: str
    help: str
    verbs: tuple[Verb, ...] = field(default_factory=tuple)

    def verb(self, name: str) -> Verb:
        for v in self.verbs:
            if v.name == name:
                return v
        raise KeyError(name)

    def parser(self) -> argparse.ArgumentParser:
        p = argparse.ArgumentParser(prog=f"lem {self.name}", description=self.help)
        sub = p.add_subparsers(dest="verb", required=True, metavar="<verb>")
        for v in self.verbs:
            vp = sub.add_parser(v.name, help=v.help, description=v.help, epilog=v.epilog)
            for a in v.all_args():
                vp.add_argument(*a.flags, **a.options)
        return p

    def main(self, argv: Sequence[str]) -> int:
        """Parse `argv` (after `lem <stage>`), build the settings, run the verb, report declared errors; an
        interrupt anywhere after the parsing exits 130 (`lem.core.interrupt.stop_on_interrupt`)."""
        argv = list(argv)
        parser = self.parser()
        args = parser.parse_args(argv)
        verb = self.verb(args.verb)
        prog = f"lem {self.name} {verb.name}"
        try:
            restore_default_sigint()  # Ctrl-C stops the command even when started with SIGINT ignored
            outputs = output_paths(args)
            with stop_on_interrupt(outputs, only_new=True, keep=other_paths(args)):
                return self._run(verb, prog, args, argv)
        except KeyboardInterrupt:
            # SIGINT or SIGTERM (lem.core.interrupt): what the job made of its outputs is removed, outputs are
            # atomic, a training run saved a checkpoint to resume from
            print(f"{prog}: interrupted", file=sys.stderr)
            return 130

    def _run(self, verb: Verb, prog: str, args: argparse.Namespace, argv: list[str]) -> int:
        from lem.core.settings import argument_problem

        problem = argument_problem(prog, args)  # finite numbers, levels in (0, 1), seeds, counts
        if problem:
            print(f"{prog}: {problem}", file=sys.stderr)
            return 2
        setup_logging()
        if verb.settings is not None and args.settings is not None:
            try:
                args.settings = resolve(verb.settings).from_dict(args.settings)
            except (TypeError, ValueError) as err:
                print(f"{prog}: --settings: {err}", file=sys.stderr)
                return 2
        if verb.keys:
            from lem.core.files import metrics_keys, record_job_settings

            try:
                args.keys = metrics_keys(args.keys)
            except ValueError as err:
                print(f"{prog}: --keys: {err}", file=sys.stderr)
                return 2
            record_job_settings(prog, argv)  # its metrics file records the sha256 of what it received
        if verb.threads:
            from lem.core.training import set_threads

            set_threads(args.threads)
        errors = input_errors() + tuple(resolve(e) for e in verb.errors)
        try:
            run = resolve(verb.run)
            status = run(args, argv) if verb.argv_run else run(args)
        except errors as err:
            from lem.core.files import os_error_line, output_problem

            problem = output_problem(err)  # a declared error may wrap a full disk
            message = problem or (os_error_line(err) if isinstance(err, OSError) else str(err))
            print(f"{prog}: {message}", file=sys.stderr)
            return 1
        except Exception as err:
            # a full disk (or quota) or a read-only folder is no bug: one line naming the folder and what to
            # free (lem.core.files.output_problem); the job's outputs are atomic, so a rerun starts clean
            from lem.core.files import output_problem

            problem = output_problem(err, output_paths(args))
            if problem is None:
                raise
            print(f"{prog}: {problem}", file=sys.stderr)
            return 1
        return int(status or 0)


def is_output(dest: str) -> bool:
    """An output argument: `--out`, `--out-dir`, `--out-<anything>` (dest `out`, `out_*`)."""
    return dest == "out" or dest.startswith("out_")


def _strings(value: Any) -> list[str]:
    values = value if isinstance(value, list | tuple) else [value]
    return [os.fspath(v) for v in values if isinstance(v, str | os.PathLike)]


def output_paths(args: argparse.Namespace) -> list[str]:
    """The command's declared outputs: the values of its output arguments (`is_output`)."""
    return [o for dest, value in vars(args).items() if is_output(dest) for o in _strings(value)]


def other_paths(args: argparse.Namespace) -> list[str]:
    """Every other string argument of the command, any of which may name an input (`--train`, `--model`,
    `--checkpoints`): never removed when the command is interrupted."""
    return [v for dest, value in vars(args).items() if not is_output(dest) for v in _strings(value)]


FULL_DISK = (errno.ENOSPC, errno.EDQUOT)


class UsageError(ValueError):
    """A combination of arguments that argparse cannot express; reported as one line, exit status 1."""
