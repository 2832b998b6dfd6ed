"""The plan as `lem plan cost` writes it: the fixed-width tables with totals and notes, and the .tsv and .json files."""

from __future__ import annotations

import dataclasses
import textwrap
from typing import Any

from lem.core.files import write_json, write_text
from lem.plan.config import PlanError
from lem.plan.training import Job


def gigabytes(n: float) -> str:
    return f"{n / 1e9:,.1f} GB" if n >= 1e9 else f"{n / 1e6:,.1f} MB"


def hours(h: float) -> str:
    return f"{h:,.1f}" if h >= 10 else f"{h:.2f}"


def human(n: float) -> str:
    for unit, scale in (("T", 1e12), ("G", 1e9), ("M", 1e6), ("k", 1e3)):
        if abs(n) >= scale:
            return f"{n / scale:.2f} {unit}"
    return f"{n:.0f}"


COLUMNS = [  # header, width, cell
    ("job", -22, lambda j: j["name"]),
    ("examples", 10, lambda j: f"{j['examples']:,}"),
    ("sub/ex", 7, lambda j: f"{j['tokens_per_example']:.1f}"),
    ("epochs", 6, lambda j: f"{j['epochs']:g}"),
    ("tokens", 9, lambda j: human(j["tokens"])),
    ("steps", 10, lambda j: f"{j['steps']:,}"),
    ("eval every", 10, lambda j: f"{j['eval_every']:,}"),
    ("evals", 6, lambda j: f"{j['evaluations']:,}"),
    ("ckpts", 5, lambda j: f"{j['kept_checkpoints']}/{j['peak_checkpoints']}"),
    ("peak disk", 9, lambda j: gigabytes(j["peak_disk_bytes"])),
    ("GPU-h", 8, lambda j: hours(j["gpu_hours"])),
    ("counts", -10, lambda j: j["counts"]),
]


TASK_COLUMNS = [  # header, width, cell
    ("other GPU jobs", -22, lambda t: t["name"]),
    ("jobs", 5, lambda t: f"{t['jobs']:,}"),
    ("items/job", 10, lambda t: f"{t['items']:,}"),
    ("unit", -10, lambda t: t["unit"]),
    ("tokens", 9, lambda t: human(t["tokens"])),
    ("tokens/s", 8, lambda t: f"{t['tokens_per_second']:,.0f}"),
    ("basis", -9, lambda t: t["basis"]),
    ("GPU-h", 8, lambda t: hours(t["gpu_hours"])),
    ("disk", 9, lambda t: gigabytes(t["disk_bytes"])),
    ("counts", -10, lambda t: t["counts"]),
]


def fixed_width(columns: list, records: list[dict], total: list[str]) -> list[str]:
    """Header, rule, one line per record, rule, total; the first column as wide as its longest cell."""
    width = max([len(columns[0][2](r)) for r in records] + [len(total[0])])
    columns = [(columns[0][0], -max(width, len(columns[0][0])), columns[0][2]), *columns[1:]]

    def row(cells: list[str]) -> str:
        parts = [c.ljust(-w) if w < 0 else c.rjust(w) for c, (_, w, _) in zip(cells, columns, strict=True)]
        return "  ".join(parts).rstrip()

    rule = row(["-" * abs(w) for _, w, _ in columns])
    lines = [row([h for h, _, _ in columns]), rule]
    lines += [row([cell(r) for _, _, cell in columns]) for r in records]
    return [*lines, rule, row(total)]


def table(plan: dict[str, Any], title: str = "") -> str:
    """The plan as a fixed-width table, totals and notes."""
    t = plan["totals"]
    total_name = f"total ({t['jobs']} jobs)"
    width = max([len(j["name"]) for j in plan["jobs"]] + [len(total_name)])
    columns = [(COLUMNS[0][0], -width, COLUMNS[0][2]), *COLUMNS[1:]]

    def row(cells: list[str]) -> str:
        parts = [c.ljust(-w) if w < 0 else c.rjust(w) for c, (_, w, _) in zip(cells, columns, strict=True)]
        return "  ".join(parts).rstrip()

    def wrap(text: str) -> list[str]:
        return textwrap.wrap(text, width=110, subsequent_indent="  ", break_on_hyphens=False)

    model = plan["model"]
    lines = [title] if title else []
    lines += wrap(
        f"model: {model['name']}, {model['parameters']:,} parameters ({model['source']}); "
        f"throughput {plan['tokens_per_second']:,.0f} tokens/s "
        + (
            "(plan.tokens_per_second)"
            if plan.get("tokens_per_second_basis", "plan.tokens_per_second") == "plan.tokens_per_second"
            else f"({plan['tokens_per_second_basis']})"
        )
    )
    rule = row(["-" * abs(w) for _, w, _ in columns])
    lines += ["", row([h for h, _, _ in columns]), rule]
    lines += [row([cell(job) for _, _, cell in columns]) for job in plan["jobs"]]
    total = [total_name, "", "", "", human(t["tokens"]), f"{t['steps']:,}", "", f"{t['evaluations']:,}", "",
             gigabytes(t["peak_disk_bytes"]), hours(t["gpu_hours"]), ""]  # fmt: skip
    lines += [rule, row(total), ""]
    tasks = plan.get("tasks") or []
    if tasks:
        other = [f"total ({t['other_jobs']:,} jobs)", "", "", "", human(sum(x["tokens"] for x in tasks)), "", "",
                 hours(t["other_gpu_hours"]), gigabytes(t["other_disk_bytes"]), ""]  # fmt: skip
        lines += [*fixed_width(TASK_COLUMNS, tasks, other), ""]
    lines += wrap(
        f"GPU time: {hours(t['gpu_hours'])} GPU-hours of pre-training (evaluation included: "
        f"{human(t['eval_tokens'])} tokens at a third of the cost) + {hours(t['other_gpu_hours'])} of the other "
        f"{t['other_jobs']:,} GPU jobs = {hours(t['all_gpu_hours'])} GPU-hours = {t['all_gpu_hours'] / 24:,.1f} "
        "GPU-days on one GPU, one job at a time"
    )
    lines += wrap(
        f"disk: {gigabytes(t['final_disk_bytes'])} of models at the end; peak "
        f"{gigabytes(t['peak_disk_bytes'])} with one training job at a time (its checkpoints on top); the other "
        f"jobs leave {gigabytes(t['other_disk_bytes'])} (models, embeddings, annotations)"
    )
    lines += wrap(
        "columns: sub/ex = subwords per example; ckpts = checkpoints kept / at most on disk; peak disk = "
        "the job's checkpoints + its model; counts: features (exact), lines (files of the run), madlad "
        "(sources.madlad.sizes), generate (corpus.generate), estimate (plan.estimates); other GPU jobs: "
        "items/job = examples (training), sentences embedded or annotated, or pairs seen (NMT: max_steps x "
        "batch_size); tokens = the work of all its jobs at the training rate (forward passes count a third); "
        "basis of tokens/s: measured, estimate (lem.plan.THROUGHPUT) or plan.throughput.<kind>"
    )
    for note in plan["notes"]:
        lines += wrap(f"note: {note}")
    return "\n".join(lines) + "\n"


TSV_FIELDS = [f.name for f in dataclasses.fields(Job)]


def write_outputs(plan: dict[str, Any], text: str, outs: list[str]) -> None:
    """Each of `outs` by its suffix: .json (everything), .tsv (one row per job), .txt (the table)."""
    for out in outs:
        if out.endswith(".txt"):
            write_text(out, text)
        elif out.endswith(".json"):
            write_json(out, plan)
        elif out.endswith(".tsv"):
            rows = ["\t".join(TSV_FIELDS)]
            for job in plan["jobs"]:
                rows.append("\t".join("" if job[f] is None else str(job[f]) for f in TSV_FIELDS))
            write_text(out, "\n".join(rows) + "\n")
        else:
            raise PlanError(f"--out {out}: give a .txt, .tsv or .json file")
