"""Downloads against a loopback HTTP server: resume after a dropped connection, wrong checksum, offline."""

from __future__ import annotations

import hashlib
import http.server
import json
import socket
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from lem.data.download import (
    ChecksumError,
    DownloadSettings,
    FetchError,
    UnpinnedError,
    fetch_hf,
    fetch_url,
    unpinned_url_sources,
)

PAYLOAD = bytes(range(256)) * 400  # 102,400 bytes
SHA = hashlib.sha256(PAYLOAD).hexdigest()
FAST = DownloadSettings(retries=3, backoff_s=0.01, timeout_s=5, chunk_bytes=4096)


class Handler(http.server.BaseHTTPRequestHandler):
    """Serves PAYLOAD at /file; behaviour set per server: drop mid-file once, ignore Range, corrupt."""

    def log_message(self, *args: object) -> None:  # keep test output quiet
        pass

    def do_GET(self) -> None:  # noqa: N802 - http.server API
        server = self.server
        server.requests.append(dict(self.headers))  # type: ignore[attr-defined]
        if self.path != "/file":
            self.send_error(404)
            return
        body = PAYLOAD
        if server.mode == "corrupt":  # type: ignore[attr-defined]
            body = PAYLOAD[:-1] + b"\x00"
        start = 0
        rng = self.headers.get("Range")
        if rng and server.mode != "no-range":  # type: ignore[attr-defined]
            start = int(rng.removeprefix("bytes=").rstrip("-"))
            if start >= len(body):
                self.send_response(416)
                self.end_headers()
                return
            self.send_response(206)
            self.send_header("Content-Range", f"bytes {start}-{len(body) - 1}/{len(body)}")
        else:
            self.send_response(200)
        rest = body[start:]
        self.send_header("Content-Length", str(len(rest)))
        self.end_headers()
        if server.drops > 0:  # type: ignore[attr-defined]
            server.drops -= 1  # type: ignore[attr-defined]
            self.wfile.write(rest[: len(rest) // 3])
            self.wfile.flush()
            self.connection.shutdown(socket.SHUT_RDWR)
            return
        self.wfile.write(rest)


@pytest.fixture
def server() -> Iterator[http.server.ThreadingHTTPServer]:
    srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    srv.mode = "ok"  # type: ignore[attr-defined]
    srv.drops = 0  # type: ignore[attr-defined]
    srv.requests = []  # type: ignore[attr-defined]
    thread = threading.Thread(target=srv.serve_forever, daemon=True)
    thread.start()
    yield srv
    srv.shutdown()
    srv.server_close()


def url(srv: http.server.ThreadingHTTPServer, path: str = "/file") -> str:
    return f"http://127.0.0.1:{srv.server_address[1]}{path}"


def test_plain_download_verifies_checksum(server, tmp_path: Path) -> None:
    out = fetch_url(url(server), tmp_path / "raw" / "f.bin", sha256=SHA, settings=FAST)
    assert out.read_bytes() == PAYLOAD
    assert not (tmp_path / "raw" / "f.bin.part").exists()
    fetch_url(url(server), out, sha256=SHA, settings=FAST)  # cached: no second request
    assert len(server.requests) == 1


def test_resumes_with_range_after_dropped_connection(server, tmp_path: Path) -> None:
    server.drops = 2
    out = fetch_url(url(server), tmp_path / "f.bin", sha256=SHA, settings=FAST)
    assert out.read_bytes() == PAYLOAD
    ranges = [r.get("Range") for r in server.requests]
    assert ranges[0] is None and ranges[1] is not None and ranges[1].startswith("bytes=")
    assert int(ranges[1][6:-1]) > 0 and len(ranges) == 3


def test_server_ignoring_range_restarts_cleanly(server, tmp_path: Path) -> None:
    server.mode, server.drops = "no-range", 1
    out = fetch_url(url(server), tmp_path / "f.bin", sha256=SHA, settings=FAST)
    assert out.read_bytes() == PAYLOAD


def test_existing_whole_part_file_is_finished_by_416(server, tmp_path: Path) -> None:
    (tmp_path / "f.bin.part").write_bytes(PAYLOAD)
    out = fetch_url(url(server), tmp_path / "f.bin", sha256=SHA, settings=FAST)
    assert out.read_bytes() == PAYLOAD


def test_wrong_checksum_fails_and_leaves_nothing(server, tmp_path: Path) -> None:
    server.mode = "corrupt"
    with pytest.raises(ChecksumError, match="expected " + SHA):
        fetch_url(url(server), tmp_path / "f.bin", sha256=SHA, settings=FAST)
    assert list(tmp_path.iterdir()) == []


def test_404_is_not_retried(server, tmp_path: Path) -> None:
    with pytest.raises(FetchError, match="404"):
        fetch_url(url(server, "/missing"), tmp_path / "f.bin", settings=FAST, allow_unpinned=True)
    assert len(server.requests) == 1


def test_no_network_error_says_how_to_place_by_hand(tmp_path: Path) -> None:
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    sock.close()  # nothing listens there now: connection refused
    out = tmp_path / "resources" / "raw" / "x.csv"
    with pytest.raises(FetchError) as err:
        fetch_url(f"http://127.0.0.1:{port}/x.csv", out, sha256=SHA, settings=FAST)
    msg = str(err.value)
    assert f"http://127.0.0.1:{port}/x.csv" in msg and str(out) in msg and SHA in msg and "place it" in msg


def test_hub_fetch_offline_names_repo_and_revision(tmp_path: Path, monkeypatch) -> None:
    import huggingface_hub.constants

    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_OFFLINE", True)  # as HF_HUB_OFFLINE=1
    rev = "0" * 40
    with pytest.raises(FetchError) as err:
        fetch_hf("org/model", rev, "model", tmp_path / "hf")
    assert "org/model@" + rev in str(err.value) and "hf download" in str(err.value)
    assert not (tmp_path / "hf" / ".lem-fetch.json").exists()


def test_hub_fetch_needs_a_revision(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="pinned revision"):
        fetch_hf("org/model", "", "model", tmp_path)


# --- URL pins: nothing is used unchecked -----------------------------------------------------------------


def test_a_url_with_no_pin_is_refused_before_any_request(server, tmp_path: Path) -> None:
    out = tmp_path / "raw" / "f.bin"
    with pytest.raises(UnpinnedError, match="no sha256 pin.*allow_unpinned: true"):
        fetch_url(url(server), out, settings=FAST)
    assert server.requests == [] and not out.exists()


def test_a_file_present_with_no_pin_is_refused_too(tmp_path: Path) -> None:
    placed = tmp_path / "downloads" / "f.bin"
    placed.parent.mkdir()
    placed.write_bytes(PAYLOAD)
    out = tmp_path / "raw" / "f.bin"
    with pytest.raises(UnpinnedError):
        fetch_url("http://127.0.0.1:9/f.bin", out, settings=FAST, download=placed)
    assert not out.exists()


def test_an_allowed_unpinned_download_records_the_sha256_it_saw(server, tmp_path: Path, caplog) -> None:
    out, prov = tmp_path / "raw" / "f.bin", tmp_path / "provenance" / "f.bin.json"
    download = tmp_path / "downloads" / "f.bin"
    with caplog.at_level("WARNING"):
        fetch_url(url(server), out, settings=FAST, allow_unpinned=True, download=download, provenance=prov)
    assert out.read_bytes() == PAYLOAD == download.read_bytes()
    record = json.loads(prov.read_text())
    assert record["sha256"] == SHA and record["pinned_sha256"] is None and not record["pinned"]
    assert record["allow_unpinned"] and record["obtained"] == "downloaded" and record["bytes"] == len(PAYLOAD)
    assert SHA in caplog.text and "no sha256 pinned" in caplog.text


def test_a_copy_placed_by_hand_is_checked_against_its_pin(server, tmp_path: Path) -> None:
    placed, out, prov = tmp_path / "downloads" / "f.bin", tmp_path / "raw" / "f.bin", tmp_path / "p.json"
    placed.parent.mkdir()
    placed.write_bytes(PAYLOAD[:-1] + b"\x00")  # a wrong copy: refused, nothing linked, nothing fetched
    with pytest.raises(ChecksumError, match=f"{placed} exists but its sha256 is .* expected {SHA}"):
        fetch_url(url(server), out, sha256=SHA, settings=FAST, download=placed, provenance=prov)
    assert not out.exists() and not prov.exists() and server.requests == []
    placed.write_bytes(PAYLOAD)
    fetch_url(url(server), out, sha256=SHA, settings=FAST, download=placed, provenance=prov)
    assert out.read_bytes() == PAYLOAD and server.requests == []  # used, after the check, not fetched again
    record = json.loads(prov.read_text())
    assert record["pinned"] and record["sha256"] == record["pinned_sha256"] == SHA
    assert record["obtained"].startswith("present before this job")


def test_an_allowed_unpinned_copy_placed_by_hand_is_not_used_silently(tmp_path: Path, caplog) -> None:
    placed, out, prov = tmp_path / "downloads" / "f.bin", tmp_path / "raw" / "f.bin", tmp_path / "p.json"
    placed.parent.mkdir()
    placed.write_bytes(PAYLOAD)
    with caplog.at_level("WARNING"):
        fetch_url("http://127.0.0.1:9/f.bin", out, settings=FAST, allow_unpinned=True, download=placed,
                  provenance=prov)  # fmt: skip
    assert out.read_bytes() == PAYLOAD
    assert f"{placed} already present with no sha256 pinned" in caplog.text and SHA in caplog.text
    assert json.loads(prov.read_text())["sha256"] == SHA


def test_url_sources_without_a_pin_are_named_at_config_load() -> None:
    files = {
        "a.zip": {"url": "https://x/a.zip"},
        "b.txt": {"url": "https://x/b.txt", "sha256": SHA},
        "c.tar.gz": {"url": "https://x/c.tar.gz", "allow_unpinned": True},
    }
    (problem,) = unpinned_url_sources({"sources": {"files": files}})
    assert problem.startswith("sources.files.a.zip has no sha256") and "allow_unpinned: true" in problem
    assert unpinned_url_sources({}) == [] and unpinned_url_sources({"sources": {}}) == []
