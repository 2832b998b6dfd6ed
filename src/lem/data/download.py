"""Pinned, checksummed, resumable downloads into `resources/`.

A source is fetched once: a file by URL (pinned to a commit in the URL, verified by sha256), a Hugging
Face hub repository by revision. Interrupted transfers resume with an HTTP Range request; transient
failures are retried with exponential backoff. With no network the error names what could not be
fetched and where to put it by hand.
"""

from __future__ import annotations

import datetime
import hashlib
import http.client
import json
import logging
import os
import re
import shutil
import tarfile
import time
import urllib.error
import urllib.request
import zipfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from lem.core.files import atomic_path, write_json
from lem.core.settings import Settings

# Imported inside functions: huggingface_hub (planning imports this module, for the fetched sources' pins, and
# needs no huggingface_hub)

log = logging.getLogger(__name__)

FETCH_MARKER = ".lem-fetch.json"


class FetchError(RuntimeError):
    """A source could not be fetched; the message says how to place it by hand."""


class ChecksumError(FetchError):
    """The fetched bytes do not match the pinned sha256."""


@dataclass
class DownloadSettings(Settings):
    SECTION = "download settings"

    retries: int = 5  # attempts after the first one
    backoff_s: float = 1.0  # first wait; doubled after each failure
    backoff_max_s: float = 60.0
    timeout_s: float = 60.0  # socket timeout per request
    chunk_bytes: int = 1 << 20


def sha256_file(path: str | os.PathLike, chunk_bytes: int = 1 << 20) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        while block := f.read(chunk_bytes):
            h.update(block)
    return h.hexdigest()


def _by_hand(url: str, out: Path, sha256: str | None) -> str:
    check = f" and check `sha256sum {out}` = {sha256}" if sha256 else ""
    return f"With no network, download {url} elsewhere and place it at {out}{check}; it is then checked and used."


def _transfer(url: str, part: Path, settings: DownloadSettings) -> None:
    """One attempt: continue `part` from its current size (Range) or restart it when the server ignores Range."""
    have = part.stat().st_size if part.exists() else 0
    request = urllib.request.Request(url, headers={"User-Agent": "lem-pipeline"})
    if have:
        request.add_header("Range", f"bytes={have}-")
    try:
        response = urllib.request.urlopen(request, timeout=settings.timeout_s)
    except urllib.error.HTTPError as err:
        if err.code == 416 and have:  # nothing left to send: the part file is already whole
            return
        raise
    with response:
        mode = "ab" if have and response.status == 206 else "wb"
        expected = response.headers.get("Content-Length")
        written = 0
        with open(part, mode) as f:
            while block := response.read(settings.chunk_bytes):
                f.write(block)
                written += len(block)
        if expected is not None and written < int(expected):
            raise http.client.IncompleteRead(b"", int(expected) - written)


def _permanent(err: BaseException) -> bool:
    """Errors that a retry cannot fix (404, 403 ...); 408/429/5xx and network errors are retried."""
    return isinstance(err, urllib.error.HTTPError) and err.code < 500 and err.code not in (408, 429)


def url_provenance(
    url: str, path: Path, pinned: str | None, allow_unpinned: bool, obtained: str
) -> dict[str, Any]:
    """The provenance record of a URL source: the pin asked for, the sha256 observed, how the file came."""
    return {
        "source": "url",
        "url": url,
        "pinned_sha256": pinned,
        "sha256": sha256_file(path),
        "bytes": path.stat().st_size,
        "pinned": pinned is not None,
        "allow_unpinned": allow_unpinned,
        "obtained": obtained,
        "recorded_at": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
    }


def fetch_url(
    url: str,
    out: str | os.PathLike,
    sha256: str | None = None,
    settings: DownloadSettings | None = None,
    allow_unpinned: bool = False,
    download: str | os.PathLike | None = None,
    provenance: str | os.PathLike | None = None,
) -> Path:
    """Download `url` to `out`, checked by `sha256`; return `out`.

    With no `sha256` the download is refused unless `allow_unpinned` (then the sha256 observed is logged and
    recorded). `download` is where the bytes are fetched to (resumable `.part` beside it) and where a copy
    placed by hand is looked for (default: `out` itself); a file found there is checked exactly like a
    download, never used silently, then linked (or copied) to `out`. `provenance` gets the record of
    `url_provenance` (pin, observed sha256, bytes, downloaded or found)."""
    settings = settings or DownloadSettings()
    out = Path(out)
    fetched = Path(download) if download is not None else out
    if sha256 is not None and not re.fullmatch(r"[0-9a-f]{64}", sha256.lower()):
        raise ValueError(f"sha256 for {url} must be 64 hex digits, got {sha256!r}")
    sha256 = sha256.lower() if sha256 else None
    if sha256 is None and not allow_unpinned:
        raise UnpinnedError(
            f"{url} has no sha256 pin: add `sha256:` to its entry under sources.files (from a copy you trust: "
            "`sha256sum FILE`), or set `allow_unpinned: true` there to accept whatever the URL serves "
            "(the sha256 observed is then recorded in its provenance)"
        )
    if fetched.exists():
        obtained = "present before this job (placed by hand or fetched earlier), checked"
        got = sha256_file(fetched)
        if sha256 is not None and got != sha256:
            raise ChecksumError(
                f"{fetched} exists but its sha256 is {got}, expected {sha256} (source {url}); "
                "delete it to download again"
            )
        if sha256 is None:
            log.warning(
                "fetch-url: %s already present with no sha256 pinned (allow_unpinned): using it, sha256 %s",
                fetched,
                got,
            )
        else:
            log.info("fetch-url: %s already present, checksum ok", fetched)
    else:
        obtained = "downloaded"
        _download(url, fetched, sha256, settings)
        if sha256 is None:
            log.warning(
                "fetch-url: %s has no sha256 pinned (allow_unpinned): observed sha256 %s; pin it in the config",
                url,
                sha256_file(fetched),
            )
    if fetched != out:
        with atomic_path(out) as tmp:
            try:
                os.link(fetched, tmp)
            except OSError:  # another file system, or links not allowed
                shutil.copyfile(fetched, tmp)
    if provenance is not None:
        write_json(provenance, url_provenance(url, out, sha256, allow_unpinned, obtained))
    return out


def _download(url: str, out: Path, sha256: str | None, settings: DownloadSettings) -> None:
    """Fetch `url` to `out` through `out.part` (resumed, retried), checked against `sha256` when given."""
    out.parent.mkdir(parents=True, exist_ok=True)
    part = out.with_name(out.name + ".part")
    started = time.monotonic()
    wait = settings.backoff_s
    for attempt in range(settings.retries + 1):
        try:
            _transfer(url, part, settings)
            break
        except (urllib.error.URLError, http.client.HTTPException, OSError) as err:
            if _permanent(err) or attempt == settings.retries:
                raise FetchError(
                    f"could not fetch {url} -> {out}: {err}. {_by_hand(url, out, sha256)}"
                ) from err
            kept = part.stat().st_size if part.exists() else 0
            log.warning(
                "fetch-url: attempt %d/%d for %s failed (%s); %d bytes kept, retrying in %.1fs",
                attempt + 1,
                settings.retries + 1,
                url,
                err,
                kept,
                wait,
            )
            time.sleep(wait)
            wait = min(wait * 2, settings.backoff_max_s)
    if sha256 is not None:
        got = sha256_file(part)
        if got != sha256:
            part.unlink()
            raise ChecksumError(
                f"sha256 of {url} is {got}, expected {sha256}; the partial file was deleted. "
                "The source changed or the pin is wrong."
            )
    os.replace(part, out)
    log.info(
        "fetch-url: %s -> %s, %d bytes in %.1fs", url, out, out.stat().st_size, time.monotonic() - started
    )


def write_fetch_marker(out: Path, record: dict[str, Any]) -> None:
    (out / FETCH_MARKER).write_text(json.dumps(record, indent=2) + "\n", encoding="utf-8")


# --- hub pins and provenance --------------------------------------------------------------------------------

PROVENANCE = "provenance.json"
COMMIT_RE = re.compile(r"[0-9a-f]{40}")


class UnpinnedError(ValueError):
    """A hub source names a branch, a tag or nothing instead of a commit, and the config does not allow it."""


def is_commit(revision: str | None) -> bool:
    """True for a full 40-hex commit hash; a branch or tag name (`main`, `v1.0`) or nothing is not a pin."""
    return bool(revision) and COMMIT_RE.fullmatch(str(revision)) is not None


def _ls_remote(repo: str, kind: str) -> str:
    prefix = "datasets/" if kind == "dataset" else ""
    return f"`git ls-remote https://huggingface.co/{prefix}{repo}`"


def unpinned_hub_sources(config: dict[str, Any]) -> list[str]:
    """One line per hub source of a (schema-validated) config whose revision is not a commit and that the
    config does not allow unpinned: the key, what it holds, and what to do. Empty when every source is pinned.
    Called where the config is loaded (workflow/rules/common.smk), before any job runs."""
    problems = []
    bm = config.get("base_model") or {}
    hub = bm.get("hub")
    if bm.get("source") == "pretrained" and "path" not in bm and hub:
        rev = hub.get("revision")
        if not is_commit(rev) and not hub.get("allow_unpinned", False):
            problems.append(
                f"base_model.hub.revision is {rev!r}, a branch or tag of {hub['repo']}, not a 40-hex commit: "
                f"replace it by the commit to reproduce ({_ls_remote(hub['repo'], 'model')} lists them), "
                "or set base_model.hub.allow_unpinned: true to accept whatever the branch holds today"
            )
    madlad = (config.get("sources") or {}).get("madlad")
    if madlad:
        settings = madlad.get("settings") or {}
        rev = settings.get("revision")
        dataset = settings.get("dataset", "allenai/madlad-400")
        if not is_commit(rev) and not madlad.get("allow_unpinned", False):
            what = "missing" if not rev else f"{rev!r}, a branch or tag, not a 40-hex commit"
            problems.append(
                f"sources.madlad.settings.revision is {what}: set it to the commit of {dataset} to "
                f"reproduce ({_ls_remote(dataset, 'dataset')} lists them), or set "
                "sources.madlad.allow_unpinned: true to accept whatever the main branch holds today"
            )
    return problems


def unpinned_url_sources(config: dict[str, Any]) -> list[str]:
    """One line per `sources.files` entry with no sha256 that the config does not allow unpinned (its
    `allow_unpinned: true`): the key and what to do. Called where the config is loaded, with
    `unpinned_hub_sources`, before any job runs."""
    problems = []
    for name, spec in ((config.get("sources") or {}).get("files") or {}).items():
        if not spec.get("sha256") and not spec.get("allow_unpinned", False):
            problems.append(
                f"sources.files.{name} has no sha256: add `sha256:` (the `sha256sum` of a copy you trust) to pin "
                f"{spec.get('url')}, or set sources.files.{name}.allow_unpinned: true to accept whatever it "
                "serves (the sha256 observed is recorded in resources/provenance/"
                f"{name}.json)"
            )
    return problems


def require_pinned(revision: str | None, what: str, allow_unpinned: bool) -> None:
    """Refuse an unpinned `revision` of `what` unless `allow_unpinned`; warn when it is allowed."""
    if is_commit(revision):
        return
    if not allow_unpinned:
        raise UnpinnedError(
            f"{what}: revision {revision!r} is not a 40-hex commit (a branch or tag moves); pin a commit, "
            "or pass --allow-unpinned (config: allow_unpinned: true)"
        )
    log.warning(
        "%s: revision %r is not a commit; allowed unpinned, the commit it resolves to is recorded",
        what,
        revision,
    )


def resolve_hub_commit(repo: str, revision: str, kind: str, endpoint: str | None = None) -> str:
    """The commit that `revision` (a branch, tag or commit) of hub repository `repo` points at now."""
    from huggingface_hub import HfApi

    info = HfApi(endpoint=endpoint).repo_info(repo, repo_type=kind, revision=revision)
    sha = getattr(info, "sha", None)
    if not is_commit(sha):
        raise FetchError(
            f"the hub answered {sha!r} as the commit of {kind} {repo}@{revision}, not a 40-hex commit"
        )
    if is_commit(revision) and sha != revision:
        raise FetchError(f"the hub resolved commit {revision} of {kind} {repo} to another commit, {sha}")
    return str(sha)


def _downloaded_commits(out: Path) -> set[str]:
    """Commits recorded by huggingface_hub for each file of a `local_dir` download (.cache/huggingface)."""
    meta = out / ".cache" / "huggingface" / "download"
    found = set()
    for path in meta.rglob("*.metadata") if meta.is_dir() else []:
        first = path.read_text(encoding="utf-8").splitlines()[:1]
        if first:
            found.add(first[0].strip())
    return found


def _file_records(out: Path) -> dict[str, dict[str, Any]]:
    skip = {FETCH_MARKER, PROVENANCE}
    files = {}
    for path in sorted(out.rglob("*")):
        rel = path.relative_to(out)
        if path.is_file() and rel.parts[0] != ".cache" and str(rel) not in skip:
            files[rel.as_posix()] = {"bytes": path.stat().st_size, "sha256": sha256_file(path)}
    return files


def hub_provenance(
    repo: str, kind: str, requested: str | None, commit: str | None, **extra: Any
) -> dict[str, Any]:
    """The provenance record of a hub source: what was asked for and the commit it resolved to."""
    import huggingface_hub

    return {
        "source": "huggingface hub",
        "repo": repo,
        "kind": kind,
        "requested_revision": requested,
        "resolved_commit": commit,
        "pinned": is_commit(requested),
        **extra,
        "huggingface_hub": huggingface_hub.__version__,
        "recorded_at": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
    }


def fetch_hf(
    repo: str,
    revision: str,
    kind: str,
    out: str | os.PathLike,
    allow_patterns: list[str] | None = None,
    endpoint: str | None = None,
    allow_unpinned: bool = False,
) -> Path:
    """Snapshot a hub repository (`kind` = model or dataset) at `revision` into `out`.

    `revision` must be a 40-hex commit unless `allow_unpinned`. The revision is resolved to its commit
    first and the snapshot taken at that commit, so `out/provenance.json` names exactly the commit whose
    files are there (with their sizes and sha256)."""
    if kind not in ("model", "dataset"):
        raise ValueError(f"kind must be 'model' or 'dataset', got {kind!r}")
    if not revision:
        raise ValueError(f"hub source {repo} needs a pinned revision (a commit hash or tag)")
    require_pinned(revision, f"hub {kind} {repo}", allow_unpinned)
    out = Path(out)
    record = {"repo": repo, "revision": revision, "kind": kind, "allow_patterns": allow_patterns}
    marker, provenance = out / FETCH_MARKER, out / PROVENANCE
    if marker.exists() and json.loads(marker.read_text(encoding="utf-8")) == record:
        if not provenance.exists():  # placed by hand: the commit comes from the download's own metadata
            commits = _downloaded_commits(out) or ({revision} if is_commit(revision) else set())
            if len(commits) != 1 or (is_commit(revision) and commits != {revision}):
                raise FetchError(
                    f"{out} is marked as {repo}@{revision} but its download metadata "
                    f"({out}/.cache/huggingface) names commit(s) {sorted(commits) or 'none'}: "
                    f"delete {out} and fetch again"
                )
            how = "download metadata of a copy placed by hand"
            files = _file_records(out)
            prov = hub_provenance(repo, kind, revision, commits.pop(), allow_patterns=allow_patterns)
            _write_provenance(out, {**prov, "resolved_by": how, "files": files})
        log.info("fetch-hf: %s@%s already in %s", repo, revision, out)
        return out
    from huggingface_hub import snapshot_download

    started = time.monotonic()
    try:
        commit = resolve_hub_commit(repo, revision, kind, endpoint)
        snapshot_download(
            repo_id=repo,
            repo_type=kind,
            revision=commit,
            local_dir=out,
            allow_patterns=allow_patterns,
            endpoint=endpoint,
        )
    except FetchError:
        raise
    except Exception as err:  # the hub client raises many types for "no network"
        raise FetchError(
            f"could not fetch hub {kind} {repo}@{revision} -> {out}: {type(err).__name__}: {err}. "
            f"With no network, run `hf download {repo} --repo-type {kind} --revision {revision} "
            f"--local-dir {out}` on a machine that has one and copy {out} here (with its .cache folder, "
            f"which records the commit), then write {marker} containing {json.dumps(record)}."
        ) from err
    mixed = _downloaded_commits(out) - {commit}
    if mixed:
        raise FetchError(
            f"{out} holds files of commit(s) {sorted(mixed)} besides {commit} of {repo}: delete it and fetch again"
        )
    how = "hub API (repo_info), snapshot taken at that commit"
    prov = hub_provenance(repo, kind, revision, commit, allow_patterns=allow_patterns, endpoint=endpoint)
    _write_provenance(out, {**prov, "resolved_by": how, "files": _file_records(out)})
    write_fetch_marker(out, record)
    log.info(
        "fetch-hf: %s@%s (commit %s) -> %s in %.1fs", repo, revision, commit, out, time.monotonic() - started
    )
    return out


def _write_provenance(out: Path, record: dict[str, Any]) -> None:
    write_json(out / PROVENANCE, record)


def unpack(archive: str | os.PathLike, out: str | os.PathLike) -> Path:
    """Extract a zip or tar(.gz) archive into `out` atomically, refusing members that escape it."""

    archive, out = Path(archive), Path(out)
    with atomic_path(out) as tmp:
        tmp.mkdir()
        root = tmp.resolve()
        if zipfile.is_zipfile(archive):
            with zipfile.ZipFile(archive) as z:
                for name in z.namelist():
                    if not (root / name).resolve().is_relative_to(root):
                        raise FetchError(f"{archive}: member {name!r} would be written outside {out}")
                z.extractall(tmp)
        elif tarfile.is_tarfile(archive):
            with tarfile.open(archive) as t:
                try:  # the "data" filter refuses absolute paths, links out, devices
                    t.extractall(tmp, filter="data")
                except tarfile.FilterError as err:
                    raise FetchError(
                        f"{archive}: {err} (refused: an archive may hold only files, folders and links inside "
                        f"{out})"
                    ) from None
        else:
            raise FetchError(f"{archive}: not a zip or tar archive")
    log.info("unpacked %s into %s", archive, out)
    return out
