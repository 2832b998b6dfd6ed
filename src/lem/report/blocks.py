"""Every generated block of README.md and docs/ rebuilt from the committed run archives (`lem report blocks`).

`docs/runs/blocks.yaml` lists the documented runs (`archives`: name -> archive file beside the index and a
line on how the run was made) and every generated block (`blocks`: page, block name, the archive it comes
from, the report sections it copies, the note above its tables). A block's text is a pure function of its
archive and its entry: the report is recomputed from the archived metrics (`compute_report`, no figure) and
its sections copied (`lem.report.readme.readme_block`), headed by the note and a line naming the archive,
its seeds, the code and the machines that wrote its metrics. `--check` says which block differs from what
its archive gives; without it the pages are rewritten. A block whose run was never archived is listed with
`archive: null` and a reason, and is left as it is.
"""

from __future__ import annotations

import contextlib
import os
import re
from dataclasses import dataclass
from pathlib import Path

import yaml

from lem.core.inputs import InputError, decode
from lem.report.archive import Archive, read_archive
from lem.report.build import Report, compute_report
from lem.report.readme import block_bounds, readme_block, readme_markers, update_readme
from lem.report.settings import ReportSettings

INDEX = Path("docs/runs/blocks.yaml")


def default_index() -> Path:
    """docs/runs/blocks.yaml of the checkout this `lem` package comes from (src/lem -> the repository); an
    installed wheel has none, and a run then hears that no documented run matches."""
    return Path(__file__).resolve().parents[3] / INDEX


@dataclass(frozen=True)
class ArchiveEntry:
    name: str
    file: str  # relative to the index's folder
    run: str  # how the run was made: command, machine, date, time


@dataclass(frozen=True)
class BlockEntry:
    page: str  # relative to the repository (the index's folder's grandparent)
    block: str
    archive: str | None
    sections: tuple[str, ...] = ()
    note: str = ""
    why: str = ""  # for a block without an archive: why


@dataclass(frozen=True)
class Index:
    path: Path
    archives: dict[str, ArchiveEntry]
    blocks: list[BlockEntry]

    @property
    def root(self) -> Path:
        """The repository: docs/runs/blocks.yaml -> ."""
        return self.path.resolve().parent.parent.parent

    def archive_path(self, name: str) -> Path:
        return self.path.parent / self.archives[name].file


def read_index(path: Path) -> Index:
    """The index, checked: every block names a known archive or says why it has none; no block twice."""
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
    except (OSError, yaml.YAMLError) as err:
        raise InputError(f"{path}: expected the run archives' index (YAML): {err}") from None
    if not isinstance(data, dict) or set(data) != {"archives", "blocks"}:
        raise InputError(f"{path}: expected a mapping with the keys 'archives' and 'blocks'")
    archives = {}
    for name, spec in (data["archives"] or {}).items():
        if not isinstance(spec, dict) or set(spec) != {"file", "run"}:
            raise InputError(f"{path}: archives.{name}: expected the keys 'file' and 'run'")
        archives[name] = ArchiveEntry(name, str(spec["file"]), str(spec["run"]).strip())
    blocks, seen = [], set()
    for i, spec in enumerate(data["blocks"] or []):
        where = f"{path}: blocks[{i}]"
        if not isinstance(spec, dict) or not {"page", "block", "archive"} <= set(spec):
            raise InputError(f"{where}: expected the keys 'page', 'block' and 'archive'")
        extra = set(spec) - {"page", "block", "archive", "sections", "note", "why"}
        if extra:
            raise InputError(f"{where}: unknown keys {sorted(extra)}")
        entry = BlockEntry(
            str(spec["page"]), str(spec["block"]), spec["archive"], tuple(spec.get("sections") or ()),
            str(spec.get("note") or "").strip(), str(spec.get("why") or "").strip(),
        )  # fmt: skip
        if entry.archive is not None and entry.archive not in archives:
            raise InputError(f"{where}: archive {entry.archive!r} is not one of {sorted(archives)}")
        if entry.archive is None and not entry.why:
            raise InputError(f"{where}: a block with no archive must say why ('why')")
        if (entry.page, entry.block) in seen:
            raise InputError(f"{where}: {entry.page} block {entry.block} listed twice")
        seen.add((entry.page, entry.block))
        blocks.append(entry)
    return Index(path, archives, blocks)


def archive_report(archive: Archive) -> Report:
    """The report recomputed from an archive's metrics (`lem.report.build.Report`), with the archive's
    files at the paths the report job read them by (its working folder is the extracted archive)."""
    settings = ReportSettings.from_dict(dict(archive.inputs.settings), "the archive's report settings")
    with archive.extracted() as root, contextlib.chdir(root):
        return compute_report(archive.inputs, settings)


def provenance_line(archive: Archive, shown_as: str) -> str:
    """`Rebuilt by `lem report blocks` from the run archive <file> (...): seeds ...; code ...; machines ...`."""
    seeds = archive.manifest.get("seeds") or []
    numbered = [s["seed"] for s in seeds if str(s.get("seed", "")).isdigit()]
    codes = sorted({c for s in seeds for c in s.get("codes", [])})
    machines = sorted({m for s in seeds for m in s.get("machines", [])})
    created = archive.manifest.get("created")
    parts = [
        f"pre-training seeds {', '.join(numbered)}" if numbered else "no pre-training seed",
        f"metrics written by lem {'; '.join(codes)}" if codes else "code not recorded",
        f"on {'; '.join(machines)}" if machines else "machine not recorded",
    ]
    if created:
        parts.append(f"report job {created}")
    return (
        f"Rebuilt by `lem report blocks` from the run archive `{shown_as}` ({len(archive.files)} files; "
        + "; ".join(parts)
        + ")."
    )


def block_note(entry: BlockEntry, archive: Archive, shown_as: str) -> str:
    """The lines above a block's tables: the entry's note, then the archive's provenance line."""
    line = provenance_line(archive, shown_as)
    return f"{entry.note}\n\n{line}" if entry.note else line


@dataclass(frozen=True)
class Outcome:
    entry: BlockEntry
    status: str  # "identical", "differs", "rewritten", "not archived"
    detail: str = ""


def rebuild_blocks(index_path: Path = INDEX, check: bool = False) -> list[Outcome]:
    """Rebuild (or, with `check`, compare) every archived block of the index's pages."""
    index = read_index(index_path)
    reports: dict[str, tuple[Archive, str]] = {}
    out = []
    for entry in index.blocks:
        if entry.archive is None:
            out.append(Outcome(entry, "not archived", entry.why))
            continue
        if entry.archive not in reports:
            archive = read_archive(index.archive_path(entry.archive))
            reports[entry.archive] = (archive, archive_report(archive).md)
        archive, md = reports[entry.archive]
        page = index.root / entry.page
        shown = os.path.relpath(index.archive_path(entry.archive).resolve(), index.root)
        note = block_note(entry, archive, shown)
        want = readme_block(md, note, entry.block, entry.sections)
        text = decode(page.read_bytes(), page)
        begin, end = readme_markers(entry.block)
        before, after = block_bounds(text, begin, end, str(page), entry.block)
        have = text[len(before) : len(text) - len(after)]
        if have.replace("\r\n", "\n") == want:
            out.append(Outcome(entry, "identical"))
        elif check:
            out.append(Outcome(entry, "differs", _first_difference(have, want)))
        else:
            update_readme(page, md, note, entry.block, entry.sections)
            out.append(Outcome(entry, "rewritten"))
    return out


def _first_difference(have: str, want: str) -> str:
    a, b = have.replace("\r\n", "\n").splitlines(), want.splitlines()
    for i, (x, y) in enumerate(zip(a, b, strict=False)):
        if x != y:
            return f"block line {i + 1}: page has {x[:120]!r}, the archive gives {y[:120]!r}"
    return f"the page's block has {len(a)} lines, the archive gives {len(b)}"


def page_blocks(root: Path) -> set[tuple[str, str]]:
    """Every generated block (page, name) found in README.md and docs/*.md (their begin markers)."""
    found = set()
    marker = re.compile(r"^<!-- (\w+): begin \(generated by `lem report readme", re.M)
    for page in [root / "README.md", *sorted((root / "docs").glob("*.md"))]:
        if page.is_file():
            for m in marker.finditer(page.read_text(encoding="utf-8")):
                found.add((page.relative_to(root).as_posix(), m.group(1)))
    return found
