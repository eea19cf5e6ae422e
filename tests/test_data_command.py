"""``harness data list|fetch|verify`` against a real HTTP server on 127.0.0.1 (``http.server`` in a thread).

The server serves copies of the real release files from the shared data root at the paths their official URLs
have (``/raw.githubusercontent.com/OWNER/REPO/COMMIT/PATH``), and ``HARNESS_DATA_MIRROR`` points every download at
it, so the catalog's real URLs and pinned SHA-256s are what is tested. Faults are set per path: a corrupted body,
a truncated one (a ``Content-Length`` longer than what is sent), a 404 and a redirect loop. Every failure must
leave nothing in the data root and say what happened in one line; a fresh data root filled by ``fetch all`` must
verify and load through the built-in loaders exactly as the shared copies do (same instances, same data hash).
"""

from __future__ import annotations

import http.server
import io
import json
import shutil
import socket
import tarfile
import threading
import urllib.parse
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from harness.data.downloads import mirrored
from harness.data.sets import DataFile, DataSet, sha256_file
from harness.errors import DataNotFoundError, HarnessError
from harness.hookspecs import hookimpl
from harness.plugins.loaders import catalog
from harness.registry.manager import _collect, get_plugin_manager, get_registry
from tests.conftest import CliResult, run_main
from tests.helpers import REPO, shared_data_dir

REAL = shared_data_dir()
PINNED = [ds for ds in catalog.DATA_SETS if ds.pinned]
FIXTURES = REPO / "tests" / "fixtures"


def _url_path(url: str) -> str:
    """Where a URL is served on the mirror: ``/HOST/PATH``."""
    parts = urllib.parse.urlsplit(url)
    return f"/{parts.netloc}{parts.path}"


@dataclass
class Mirror:
    """The test server: ``files`` maps a served path to the file whose bytes it sends; ``faults`` a path to
    ``corrupt``, ``truncate``, ``404`` or ``loop``; ``requests`` counts what was asked for."""

    url: str = ""
    files: dict[str, Path] = field(default_factory=dict)
    faults: dict[str, str] = field(default_factory=dict)
    requests: list[str] = field(default_factory=list)

    def serve(self, url: str, path: Path) -> None:
        self.files[_url_path(url)] = path

    def fault(self, url: str, kind: str) -> None:
        self.faults[_url_path(url)] = kind


def _handler(mirror: Mirror) -> type[http.server.BaseHTTPRequestHandler]:
    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # noqa: N802 (the standard library's name)
            path = urllib.parse.unquote(urllib.parse.urlsplit(self.path).path)
            mirror.requests.append(path)
            fault = mirror.faults.get(path)
            if fault == "loop":
                self.send_response(302)
                self.send_header("Location", self.path)
                self.send_header("Content-Length", "0")
                self.end_headers()
                return
            if fault == "404" or path not in mirror.files:
                self.send_error(404, "Not Found")
                return
            body = mirror.files[path].read_bytes()
            if fault == "corrupt":
                middle = len(body) // 2
                body = body[:middle] + bytes([body[middle] ^ 0x01]) + body[middle + 1 :]
            self.send_response(200)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body[: len(body) // 2] if fault == "truncate" else body)

        def log_message(self, format: str, *args: Any) -> None:
            pass

    return Handler


@pytest.fixture(scope="module")
def copies(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Copies of the real release files, laid out as in the data root."""
    if not all((REAL / f.path).is_file() for ds in PINNED for f in ds.files):
        pytest.skip(f"the shared data sets are not all in {REAL}")
    out = tmp_path_factory.mktemp("copies")
    for ds in PINNED:
        for f in ds.files:
            (out / f.path).parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(REAL / f.path, out / f.path)
    return out


@pytest.fixture
def mirror(copies: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Mirror]:
    """A server on 127.0.0.1 serving the copies at their official URLs' paths, with every download pointed at it."""
    served = Mirror()
    for ds in PINNED:
        for f in ds.files:
            served.serve(f.url, copies / f.path)
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _handler(served))
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    served.url = f"http://127.0.0.1:{server.server_address[1]}/"
    monkeypatch.setenv("HARNESS_DATA_MIRROR", served.url)
    monkeypatch.delenv("HARNESS_OFFLINE", raising=False)
    try:
        yield served
    finally:
        server.shutdown()
        server.server_close()


def data(*args: str) -> CliResult:
    return run_main("data", *args, check=False)


def one_error_line(result: CliResult) -> str:
    """The failure's message: exit status 2, nothing on stdout, exactly one line on stderr."""
    assert result.returncode == 2, (result.stdout, result.stderr)
    assert result.stdout == ""
    lines = result.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), result.stderr
    return lines[0]


def all_files(root: Path) -> list[Path]:
    return sorted(p for p in root.rglob("*") if p.is_file()) if root.exists() else []


# ------------------------------------------------------------------------------------------- the whole catalog


def test_fetch_all_places_every_pinned_data_set_and_the_loaders_read_it(mirror: Mirror, tmp_path: Path) -> None:
    fresh = tmp_path / "fresh"
    result = data("fetch", "all", "--data-dir", str(fresh))
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert len(lines) == len(catalog.DATA_SETS)
    for ds in PINNED:
        assert any(line.startswith(f"{ds.name}: fetched {len(ds.files)} files") for line in lines), lines
        assert ", SHA-256 verified," in next(line for line in lines if line.startswith(ds.name))
    for name in ("provo", "writingprompts"):  # no pinned checksum: not part of 'all'
        assert f"{name}: not fetched by 'all': no SHA-256 is pinned for it" in result.stdout
    expected = sorted(fresh / f.path for ds in PINNED for f in ds.files)
    assert all_files(fresh) == expected  # every file, and nothing else (no temporary file left)
    assert all((fresh / f.path).read_bytes() == (REAL / f.path).read_bytes() for ds in PINNED for f in ds.files)
    assert len(mirror.requests) == len(expected)

    verified = data("verify", "--data-dir", str(fresh))
    assert verified.returncode == 0 and verified.stderr == ""
    assert "asset: verified (22 files)" in verified.stdout and "pragmatics-mcq: verified (47 files)" in verified.stdout

    # The built-in loaders read the fresh root exactly as they read the shared copies: same instances, same hash.
    registry = get_registry()
    for loader, options, n in [
        ("asset", {"split": "valid"}, 2000),
        ("asset", {"split": "test"}, 359),
        ("wmt14_multiref", {"pair": "en-de"}, 500),
        ("wmt14_multiref", {"pair": "en-fr"}, 500),
        ("dailydialog_pp", {"split": "dev"}, 1028),
        ("dailydialog_pp", {"split": "test"}, 1142),
        ("pragmatics_mcq", {"format": "hu"}, 170),
        ("pragmatics_mcq", {"format": "hu", "descriptions": "hu"}, 170),
    ]:
        official = {"format": "official"} if loader in ("asset", "wmt14_multiref") else {}
        got = registry.loader(loader)({**official, **options}, fresh)
        shared = registry.loader(loader)({**official, **options}, REAL)
        assert len(got.instances) == n, loader
        assert got.instances == shared.instances and got.data_hash == shared.data_hash, (loader, options)

    again = data("fetch", "all", "--data-dir", str(fresh))
    assert again.returncode == 0 and "asset: already present and verified (22 files)" in again.stdout
    assert len(mirror.requests) == len(expected)  # nothing was downloaded twice


@pytest.mark.parametrize(
    ("name", "path", "fault", "said"),
    [
        ("asset", "asset/dataset/asset.valid.simp.3", "corrupt", "checksum mismatch: SHA-256 "),
        ("wmt14-multiref", "wmt14-multiref/original/wmt14-en-fr.extra_refs.gz", "truncate", "truncated transfer"),
        ("dailydialog-plusplus", "dailydialog-plusplus/dataset/test-v1.0.json", "404", "HTTP 404 Not Found"),
        ("pragmatics-mcq", "pragmatics-mcq/hu2023/human_data/fj/Human_Irony.csv", "loop", "redirect loop"),
    ],
)
def test_a_failed_transfer_leaves_nothing_and_says_so_in_one_line(
    mirror: Mirror, tmp_path: Path, name: str, path: str, fault: str, said: str
) -> None:
    file = next(f for f in get_registry().data_set(name).files if f.path == path)
    mirror.fault(file.url, fault)
    fresh = tmp_path / "fresh"
    line = one_error_line(data("fetch", name, "--data-dir", str(fresh)))
    assert line.startswith(f"error: {name}: {path}: {said}") and line.endswith("; nothing was written"), line
    assert mirrored(file.url) in line
    assert not fresh.exists()  # not a file, not a temporary file, not even a folder
    # In a data root that exists, the files fetched before the failing one are gone too, and the root stays.
    fresh.mkdir()
    one_error_line(data("fetch", name, "--data-dir", str(fresh)))
    assert list(fresh.iterdir()) == []


def test_fetch_all_goes_on_past_a_failed_data_set(mirror: Mirror, tmp_path: Path) -> None:
    mirror.fault(catalog.DAILYDIALOG.files[0].url, "404")
    result = data("fetch", "all", "--data-dir", str(tmp_path))
    assert result.returncode == 2
    assert result.stderr.count("\n") == 1 and "error: dailydialog-plusplus: " in result.stderr
    assert not (tmp_path / "dailydialog-plusplus").exists()
    assert data("verify", "asset", "wmt14-multiref", "pragmatics-mcq", "--data-dir", str(tmp_path)).returncode == 0


def test_offline_and_unreachable_are_one_line_and_write_nothing(
    mirror: Mirror, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    fresh = tmp_path / "fresh"
    monkeypatch.setenv("HARNESS_OFFLINE", "1")
    line = one_error_line(data("fetch", "all", "--data-dir", str(fresh)))
    assert "downloads are off (HARNESS_OFFLINE is set)" in line and not fresh.exists()
    assert mirror.requests == []

    monkeypatch.delenv("HARNESS_OFFLINE")
    with socket.socket() as sock:  # a port nothing listens on: what no network looks like to urllib
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    monkeypatch.setenv("HARNESS_DATA_MIRROR", f"http://127.0.0.1:{port}/")
    line = one_error_line(data("fetch", "all", "--data-dir", str(fresh)))  # one line, not one per data set
    assert "cannot reach the server" in line and line.endswith("(no network?)") and not fresh.exists()


def test_mirror_option_and_a_malformed_mirror(mirror: Mirror, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("HARNESS_DATA_MIRROR")
    result = data("fetch", "wmt14-multiref", "--mirror", mirror.url.rstrip("/"), "--data-dir", str(tmp_path))
    assert result.returncode == 0, result.stderr
    assert "wmt14-multiref: fetched 2 files (351,039 bytes)" in result.stdout
    line = one_error_line(data("fetch", "asset", "--mirror", "ftp://example.org", "--data-dir", str(tmp_path)))
    assert "--mirror: expected an http:// or https:// base URL" in line
    assert (
        mirrored("https://osf.io/e4a2m/download", "http://127.0.0.1:9/m")
        == "http://127.0.0.1:9/m/osf.io/e4a2m/download"
    )


def test_verify_names_each_file_problem_and_force_repairs(mirror: Mirror, tmp_path: Path) -> None:
    assert data("fetch", "asset", "--data-dir", str(tmp_path)).returncode == 0
    changed = tmp_path / "asset/dataset/asset.valid.simp.3"
    changed.write_bytes(changed.read_bytes().replace(b"the", b"teh", 1))
    (tmp_path / "asset/dataset/asset.test.orig").unlink()
    result = data("verify", "--data-dir", str(tmp_path))
    assert result.returncode == 2
    problems = result.stderr.splitlines()
    assert len(problems) == 2
    assert problems[0].startswith(f"error: asset: {changed}: not the pinned file (SHA-256 ")
    assert problems[1] == f"error: asset: {tmp_path / 'asset/dataset/asset.test.orig'}: missing"
    assert "wmt14-multiref: absent, nothing to verify" in result.stdout

    refused = one_error_line(data("fetch", "asset", "--data-dir", str(tmp_path)))
    assert "is present but is not the pinned file" in refused and "--force replaces it" in refused
    fixed = data("fetch", "asset", "--force", "--data-dir", str(tmp_path))
    assert fixed.returncode == 0 and "asset: fetched 2 files" in fixed.stdout
    assert data("verify", "asset", "--data-dir", str(tmp_path)).returncode == 0
    assert "not present under" in one_error_line(data("verify", "wmt14-multiref", "--data-dir", str(tmp_path)))


# ------------------------------------------------------------------------- the data sets with no pinned checksum


def test_provo_is_fetched_unverified_with_its_header_checked(mirror: Mirror, tmp_path: Path) -> None:
    fixture = FIXTURES / "provo" / "Provo_Corpus-Predictability_Norms.csv"  # hand-made, in the official format
    (url,) = [f.url for f in catalog.PROVO.files]
    mirror.serve(url, fixture)
    result = data("fetch", "provo", "--data-dir", str(tmp_path))
    assert result.returncode == 0, result.stderr
    (line,) = result.stdout.splitlines()
    size = fixture.stat().st_size
    assert line.startswith(f"provo: fetched 1 file ({size:,} bytes) from {url} (through the mirror {mirror.url}) into ")
    assert "NOT verified: no SHA-256 is pinned for it (Provo_Corpus-Predictability_Norms.csv SHA-256 " in line
    assert sha256_file(fixture) in line and "verified," not in line
    loaded = get_registry().loader("provo")({}, tmp_path)
    assert loaded.instances == get_registry().loader("provo")({"path": "provo"}, FIXTURES).instances
    assert "provo: present but NOT verified" in data("verify", "provo", "--data-dir", str(tmp_path)).stdout

    html = tmp_path / "login.html"
    html.write_text("<html>Sign in to OSF</html>")
    mirror.serve(url, html)
    empty = tmp_path / "empty"
    line = one_error_line(data("fetch", "provo", "--data-dir", str(empty)))
    assert "the response is not the norms CSV" in line and not empty.exists()


def _tarball(folder: Path) -> bytes:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as archive:
        for path in sorted(folder.iterdir()):
            archive.add(path, arcname=f"writingPrompts/{path.name}")
    return buffer.getvalue()


def test_writingprompts_is_extracted_from_the_archive_unverified(mirror: Mirror, tmp_path: Path) -> None:
    archive = tmp_path / "writingPrompts.tar.gz"
    archive.write_bytes(_tarball(FIXTURES / "writingprompts" / "writingPrompts"))  # the hand-made fixture
    url = catalog.WRITINGPROMPTS.files[0].url
    mirror.fault(url, "404")
    empty = tmp_path / "empty"
    line = one_error_line(data("fetch", "writingprompts", "--data-dir", str(empty)))
    assert "HTTP 404" in line and all_files(empty) == [] and not (empty / "writingprompts").exists()

    del mirror.faults[_url_path(url)]
    mirror.serve(url, archive)
    fresh = tmp_path / "fresh"
    result = data("fetch", "writingprompts", "--data-dir", str(fresh))
    assert result.returncode == 0, result.stderr
    assert "NOT verified: no SHA-256 is pinned" in result.stdout
    assert all_files(fresh) == sorted(fresh / f.path for f in catalog.WRITINGPROMPTS.files)
    loader = get_registry().loader("writingprompts")
    assert loader({}, fresh).instances == loader({}, FIXTURES).instances


# ------------------------------------------------------------------------------------------ messages and listing


@pytest.mark.parametrize(
    ("loader", "options", "name"),
    [
        ("asset", {"split": "valid"}, "asset"),
        ("wmt14_multiref", {"pair": "en-de"}, "wmt14-multiref"),
        ("dailydialog_pp", {}, "dailydialog-plusplus"),
        ("pragmatics_mcq", {}, "pragmatics-mcq"),
        ("provo", {}, "provo"),
        ("writingprompts", {}, "writingprompts"),
    ],
)
def test_a_missing_data_set_names_the_command_that_gets_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, loader: str, options: dict[str, Any], name: str
) -> None:
    monkeypatch.setenv("HARNESS_OFFLINE", "1")
    with pytest.raises(DataNotFoundError) as caught:
        get_registry().loader(loader)(options, tmp_path)
    message = str(caught.value)
    assert f"'harness data fetch {name}'" in message and "\n" not in message
    assert name in get_registry().data_sets


def test_list_shows_source_license_size_and_state() -> None:
    if not (REAL / "asset").is_dir():
        pytest.skip(f"the shared data sets are not in {REAL}")
    listed = json.loads(data("list", "--json", "--data-dir", str(REAL)).stdout)
    rows = {row["name"]: row for row in listed["data_sets"]}
    assert list(rows) == [ds.name for ds in catalog.DATA_SETS]
    assert {rows[ds.name]["status"] for ds in PINNED} == {"verified"}
    assert rows["provo"]["status"] == "derived copy only" and rows["provo"]["sha256_pinned"] is False
    assert rows["asset"]["bytes"] == sum(f.size or 0 for f in catalog.ASSET.files)
    assert rows["asset"]["license"].startswith("CC BY-NC 4.0")
    text = data("list", "--data-dir", str(REAL)).stdout
    assert f"    source: https://github.com/facebookresearch/asset at commit {catalog.ASSET_COMMIT}" in text
    assert "no SHA-256 pinned: the official OSF file was never available to this project" in text


def test_every_pin_is_a_file_a_loader_reads() -> None:
    """The catalog's paths are the loaders' own: pragmatics' come from the loader's functions, and every pinned
    file's URL is at the commit the release's SOURCE.md names."""
    for ds in PINNED:
        for f in ds.files:
            assert f.url.startswith("https://raw.githubusercontent.com/") and f.sha256 and f.size
    assert len(catalog.PRAGMATICS.files) == 47 and len(catalog.ASSET.files) == 22


# --------------------------------------------------------------------------------------------------- the hook


class _MyNorms:
    @staticmethod
    @hookimpl
    def register_data_sets(register: Callable[[DataSet], None]) -> None:
        register(DataSet("my-norms", "t", "s", "l", (DataFile("my-norms/a.csv", "https://example.org/a.csv"),)))


class _Again:
    @staticmethod
    @hookimpl
    def register_data_sets(register: Callable[[DataSet], None]) -> None:
        register(catalog.ASSET)
        register(DataSet("asset", "t", "s", "l", (DataFile("asset/x", "https://example.org/x"),)))


def test_a_plugin_registers_its_own_data_set() -> None:
    pm = get_plugin_manager(load_entry_points=False)
    pm.register(_MyNorms, name="my-plugin")
    registry = _collect(pm)
    assert registry.data_sets["my-norms"].plugin == "my-plugin"
    assert registry.data_sets["asset"].plugin == "harness.plugins.builtin"
    pm.register(_Again, name="again")
    twice = "data set 'asset' is registered twice: by harness.plugins.builtin and by again"
    with pytest.raises(HarnessError, match=twice):
        _collect(pm)
    with pytest.raises(HarnessError, match="is not 64 lower-case hex digits"):
        DataSet("x", "t", "s", "l", (DataFile("x/a", "https://example.org/a", sha256="ABC"),))
    with pytest.raises(HarnessError, match="is not a relative path under the data root"):
        DataSet("x", "t", "s", "l", (DataFile("../a", "https://example.org/a"),))
