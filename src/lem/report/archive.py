"""Run archives: every file a report job read, in one deterministic `.tar.gz` with a manifest, so that a
documented result can be recomputed from committed data (`lem report rebuild`, `lem report blocks`) and a
rerun compared with it (`lem report compare`).

An archive holds, under the paths the report job read them by: the metrics files (with their per-item
values, the two-level test's input), the evaluation sets' gold statistics, the annotation coverage, and of
every pre-trained model the small files the figures read (`MODEL_FILES`: never weights). Its `MANIFEST.json`
says how to rebuild the report: the report's arguments (variants, settings, files by role, models), the run's
whole configuration and its digest, and what each metrics file's provenance says of the code (version,
commit) and machine that wrote it, grouped per pre-training seed (`seeds`).

The archive is byte-identical for identical inputs: members sorted, times, owners and modes fixed, gzip's
own header time zero. Reading one refuses a member outside the archive's folder (an absolute path, `..`,
a link or a device) before anything is extracted.
"""

from __future__ import annotations

import contextlib
import gzip
import hashlib
import io
import json
import os
import tarfile
import tempfile
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field, fields
from pathlib import Path, PurePosixPath
from typing import Any

from lem.core.code_identity import code_identity
from lem.core.files import atomic_path
from lem.core.inputs import InputError

FORMAT = 1
MANIFEST = "MANIFEST.json"
ARCHIVE_FILE = "archive.tar.gz"
MODEL_FILES = ("masking_stats.json", "train_log.jsonl", "selection.json")  # what the figures read
ROLES = ("mining", "sentiment", "curation", "nmt", "annotation", "news_stats", "para_stats")


@dataclass(frozen=True)
class ReportInputs:
    """What `lem report build` read: the row order, its settings (the `--settings` JSON object), the files
    of each role (`ROLES`), the coverage file and the models (`variant:stage:seed=folder`)."""

    variants: tuple[str, ...]
    settings: Mapping[str, Any] = field(default_factory=dict)
    mining: tuple[str, ...] = ()
    sentiment: tuple[str, ...] = ()
    curation: tuple[str, ...] = ()
    nmt: tuple[str, ...] = ()
    annotation: tuple[str, ...] = ()
    news_stats: tuple[str, ...] = ()
    para_stats: tuple[str, ...] = ()
    coverage: str | None = None
    models: tuple[str, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        return {f.name: _plain(getattr(self, f.name)) for f in fields(self)}

    @classmethod
    def of_manifest(cls, data: Mapping[str, Any], where: str) -> ReportInputs:
        known = {f.name for f in fields(cls)}
        unknown = sorted(set(data) - known)
        if unknown or "variants" not in data:
            what = f"unknown keys {unknown}" if unknown else "no 'variants'"
            raise InputError(
                f"{where}: the manifest's 'report' has {what} (expected the keys {sorted(known)})"
            )
        args = {k: tuple(v) if isinstance(v, list) else v for k, v in data.items()}
        return cls(**args)

    def metric_files(self) -> list[str]:
        """Every metrics or statistics file, in role order, then the coverage file."""
        out = [p for role in ROLES for p in getattr(self, role)]
        return out + ([self.coverage] if self.coverage else [])

    def model_files(self) -> list[str]:
        """The figures' files of every model folder that holds them (a model without one is drawn without)."""
        out = []
        for spec in self.models:
            folder = spec.partition("=")[2]
            out += [f"{folder.rstrip('/')}/{name}" for name in MODEL_FILES if Path(folder, name).is_file()]
        return out

    def rooted(self, root: Path) -> ReportInputs:
        """The same inputs with every path under `root` (an extracted archive)."""

        def at(p: str) -> str:
            return str(root / p)

        models = tuple(f"{s.partition('=')[0]}={at(s.partition('=')[2])}" for s in self.models)
        roles = {role: tuple(map(at, getattr(self, role))) for role in ROLES}
        cov = at(self.coverage) if self.coverage else None
        return ReportInputs(self.variants, self.settings, **roles, coverage=cov, models=models)


def _plain(value: Any) -> Any:
    if isinstance(value, tuple):
        return list(value)
    if isinstance(value, Mapping):
        return {k: _plain(v) for k, v in value.items()}
    return value


def canonical(value: Any) -> str:
    """The JSON text a digest is taken of: sorted keys, no spaces."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def config_digest(config: Mapping[str, Any] | None) -> str | None:
    """sha256 of the run's configuration (canonical JSON); None without one."""
    return None if config is None else hashlib.sha256(canonical(config).encode("utf-8")).hexdigest()


def member_name(path: str) -> str:
    """A report input's path as an archive member: relative, POSIX, inside the run's folder."""
    p = Path(path)
    if p.is_absolute():
        try:
            p = p.resolve().relative_to(Path.cwd().resolve())
        except ValueError:
            raise InputError(
                f"{path}: outside the run's folder ({Path.cwd()}): a run archive holds only the run's own files"
            ) from None
    name = PurePosixPath(p.as_posix())
    if ".." in name.parts or not name.parts:
        raise InputError(f"{path}: expected a path inside the run's folder, got one that leaves it")
    return str(name)


def seed_provenance(files: Mapping[str, bytes]) -> list[dict[str, Any]]:
    """Per pre-training seed (`keys.seed`; files without one under seed None): the codes (version, commit)
    and machines (CPU model and SIMD flags' digest, numerics mode) that wrote its metrics files."""
    by_seed: dict[str, dict[str, set[str]]] = {}
    for name, raw in files.items():
        if not name.endswith(".json"):
            continue
        try:
            data = json.loads(raw)
        except (ValueError, UnicodeDecodeError):
            continue
        if not isinstance(data, dict) or not isinstance(data.get("provenance"), dict):
            continue
        keys = data.get("keys") if isinstance(data.get("keys"), dict) else {}
        seed = str(keys.get("seed", "none"))
        prov = data["provenance"]
        code = prov.get("code") if isinstance(prov.get("code"), dict) else {}
        hw = prov.get("hardware") if isinstance(prov.get("hardware"), dict) else {}
        entry = by_seed.setdefault(seed, {"codes": set(), "machines": set()})
        commit = code.get("commit")
        version = code.get("version") or (prov.get("versions") or {}).get("lem")
        files = code.get("files_sha256")
        label = f"{version or '?'}" + (
            f" at {commit[:7]}" if commit
            else f" (a module's files, sha256 {files[:7]})" if isinstance(files, str)
            else " (commit not recorded)"
        )  # fmt: skip
        label += " + uncommitted edits" if code.get("dirty") else ""
        entry["codes"].add(label)
        entry["machines"].add(f"{hw.get('cpu') or '?'} ({hw.get('cpu_numerics') or '?'})")
    order = sorted(by_seed, key=lambda s: (not s.isdigit(), int(s) if s.isdigit() else 0, s))
    return [{"seed": s, "codes": sorted(by_seed[s]["codes"]), "machines": sorted(by_seed[s]["machines"])}
            for s in order]  # fmt: skip


def write_archive(
    out: Path,
    inputs: ReportInputs,
    config: Mapping[str, Any] | None,
    created: str | None = None,
    training_code: str | None = None,
) -> dict[str, Any]:
    """Write the archive of a report's inputs to `out` (atomically) and return its manifest. `created`: a
    date for the manifest (None: none written, the archive then depends on the inputs alone);
    `training_code`: the digest of the code that pre-trained every model of the run (lem.run.training_code,
    the pre-training rules' parameter: Snakemake retrains a model whose code differs, so one digest holds for
    all of them), None when not given."""
    names = [member_name(p) for p in inputs.metric_files() + inputs.model_files()]
    seen: set[str] = set()
    files: dict[str, bytes] = {}
    for path, name in zip(inputs.metric_files() + inputs.model_files(), names, strict=True):
        if name in seen:
            continue
        seen.add(name)
        try:
            files[name] = Path(path).read_bytes()
        except OSError as err:
            raise InputError(
                f"{path}: a report input to archive could not be read ({err.strerror})"
            ) from None
    rel = ReportInputs.of_manifest(
        {**inputs.to_dict(), **_relative(inputs)}, "the report's arguments"
    )  # the manifest names members, not this machine's paths
    manifest = {
        "format": FORMAT,
        "command": "lem report build (the report rule); rebuild: lem report rebuild ARCHIVE --out-dir DIR",
        "report": rel.to_dict(),
        "config": config,
        "config_sha256": config_digest(config),
        "created": created,
        "report_code": code_identity(),
        "training_code": training_code,
        "seeds": seed_provenance(files),
        "files": {n: hashlib.sha256(b).hexdigest() for n, b in sorted(files.items())},
    }
    files[MANIFEST] = (json.dumps(manifest, indent=1, sort_keys=True, ensure_ascii=False) + "\n").encode()
    out.parent.mkdir(parents=True, exist_ok=True)
    with atomic_path(out) as tmp:
        tmp.write_bytes(_tar_gz(files))
    return manifest


def _relative(inputs: ReportInputs) -> dict[str, Any]:
    out: dict[str, Any] = {role: [member_name(p) for p in getattr(inputs, role)] for role in ROLES}
    out["coverage"] = member_name(inputs.coverage) if inputs.coverage else None
    out["models"] = [f"{s.partition('=')[0]}={member_name(s.partition('=')[2])}" for s in inputs.models]
    return out


def _tar_gz(files: Mapping[str, bytes]) -> bytes:
    """A .tar.gz of `files` that depends on their names and bytes alone (manifest first)."""
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w", format=tarfile.PAX_FORMAT) as tar:
        for name in sorted(files, key=lambda n: (n != MANIFEST, n)):
            info = tarfile.TarInfo(name)
            info.size, info.mtime, info.mode = len(files[name]), 0, 0o644
            info.uid = info.gid = 0
            info.uname = info.gname = ""
            tar.addfile(info, io.BytesIO(files[name]))
    zipped = io.BytesIO()
    with gzip.GzipFile(filename="", mode="wb", fileobj=zipped, mtime=0, compresslevel=9) as gz:
        gz.write(buf.getvalue())
    return zipped.getvalue()


@dataclass(frozen=True)
class Archive:
    """A read archive: its path, manifest, the report's inputs (member names) and the members' bytes."""

    path: Path
    manifest: dict[str, Any]
    inputs: ReportInputs
    files: dict[str, bytes]

    @contextlib.contextmanager
    def extracted(self) -> Iterator[Path]:
        """The members written under a temporary folder (removed after)."""
        with tempfile.TemporaryDirectory(prefix="lem-archive-") as tmp:
            root = Path(tmp)
            for name, data in self.files.items():
                target = root / name
                target.parent.mkdir(parents=True, exist_ok=True)
                target.write_bytes(data)
            yield root


def read_archive(path: str | os.PathLike) -> Archive:
    """Read and check an archive: every member a plain file inside it, the manifest present and of this
    format, every file it lists present with its sha256; InputError naming the archive otherwise."""
    path = Path(path)
    try:
        raw = path.read_bytes()
        tar = tarfile.open(fileobj=io.BytesIO(raw), mode="r:gz")
    except (OSError, tarfile.TarError, EOFError) as err:
        raise InputError(
            f"{path}: expected a run archive (.tar.gz written by lem report build): {err}"
        ) from None
    files: dict[str, bytes] = {}
    with tar:
        for info in tar.getmembers():
            name = PurePosixPath(info.name)
            if not info.isfile() or name.is_absolute() or ".." in name.parts:
                raise InputError(
                    f"{path}: member {info.name!r} is not a plain file inside the archive: refused"
                )
            fh = tar.extractfile(info)
            files[str(name)] = fh.read() if fh else b""
    if MANIFEST not in files:
        raise InputError(f"{path}: no {MANIFEST} (not a run archive)")
    try:
        manifest = json.loads(files.pop(MANIFEST))
    except ValueError as err:
        raise InputError(f"{path}: {MANIFEST} is not JSON ({err})") from None
    if manifest.get("format") != FORMAT:
        raise InputError(f"{path}: archive format {manifest.get('format')!r}, expected {FORMAT}")
    for name, digest in manifest.get("files", {}).items():
        if name not in files:
            raise InputError(f"{path}: {name} is listed in {MANIFEST} but missing")
        if hashlib.sha256(files[name]).hexdigest() != digest:
            raise InputError(f"{path}: {name} does not match its sha256 in {MANIFEST} (a changed archive)")
    inputs = ReportInputs.of_manifest(manifest.get("report") or {}, f"{path}:{MANIFEST}")
    return Archive(path, manifest, inputs, files)
