"""vLLM's texts fetched from a wheel on an index: only the members wanted, checked, once.

The wheel here is made by the test and served over loopback by a server that answers
range requests as PyPI's does, so the reading is the real one without the network.
"""

from __future__ import annotations

import base64
import hashlib
import http.server
import os
import threading
import zipfile
from pathlib import Path

import pytest

from conformance.releases import fetch, remote_wheel
from conformance.releases.remote_wheel import WheelFetchError, WheelTexts

OUTPUTS = "from dataclasses import dataclass\n\n\n@dataclass\nclass SamplerOutput:\n    x: int\n"
ASYNC = (
    "from vllm.v1.outputs import AsyncModelRunnerOutput\n\n\n"
    "class MovedAsyncOutput(AsyncModelRunnerOutput):\n"
    "    def get_output(self):\n        return None\n"
)
#: Compiled code stands for the bulk of a real wheel: never read.
BULK = os.urandom(2 << 20)


def _hash(data: bytes) -> str:
    return "sha256=" + base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()


def _wheel(path: Path, members: dict[str, bytes], record: dict[str, bytes] | None = None) -> Path:
    listed = record if record is not None else members
    rows = "".join(f"{name},{_hash(data)},{len(data)}\n" for name, data in listed.items())
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("vllm/_C.abi3.so", BULK, compress_type=zipfile.ZIP_STORED)
        for name, data in members.items():
            archive.writestr(name, data)
        archive.writestr("vllm-9.9.9.dist-info/RECORD", rows)
    return path


class _RangeHandler(http.server.SimpleHTTPRequestHandler):
    """Files of a folder, with ``Range: bytes=a-b`` and ``bytes=-n`` answered 206."""

    def do_GET(self) -> None:
        path = Path(self.translate_path(self.path))
        data = path.read_bytes()
        wanted = self.headers.get("Range", "")
        if not wanted.startswith("bytes="):
            self.send_response(200)
            self.end_headers()
            self.wfile.write(data)
            return
        first, _, last = wanted.removeprefix("bytes=").partition("-")
        start, end = (
            (len(data) - int(last), len(data) - 1) if not first else (int(first), int(last))
        )
        body = data[start : end + 1]
        self.send_response(206)
        self.send_header("Content-Range", f"bytes {start}-{start + len(body) - 1}/{len(data)}")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def served(tmp_path):
    """``url(name)`` of a file in ``tmp_path``, served on loopback."""
    handler = lambda *a: _RangeHandler(*a, directory=str(tmp_path))  # noqa: E731
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield lambda name: f"http://127.0.0.1:{server.server_address[1]}/{name}"
    server.shutdown()


def test_only_the_wanted_members_cross_the_network(tmp_path, served) -> None:
    members = {"vllm/v1/outputs.py": OUTPUTS.encode(), "vllm/v1/moved/out.py": ASYNC.encode()}
    wheel = _wheel(tmp_path / "vllm-9.9.9-py3-none-any.whl", members)
    got = remote_wheel._read_ranged(served(wheel.name), lambda n: n.startswith("vllm/v1/"))
    assert got.ranged and got.wheel_size == wheel.stat().st_size
    assert got.texts == {name: data.decode() for name, data in members.items()}
    assert got.bytes_read < len(BULK) / 4  # the compiled bulk was never read


def test_a_member_that_breaks_the_wheels_record_is_refused(tmp_path, served) -> None:
    members = {"vllm/v1/outputs.py": OUTPUTS.encode()}
    wheel = _wheel(tmp_path / "w.whl", members, record={"vllm/v1/outputs.py": b"other"})
    with pytest.raises(WheelFetchError, match="does not match the wheel's RECORD"):
        remote_wheel._read_ranged(served(wheel.name), lambda n: n.endswith(".py"))


class _FakeIndex:
    """Stands for the index: counts the wheels read."""

    def __init__(self) -> None:
        self.reads = 0
        self.lock = threading.Lock()

    def __call__(self, version: str, wanted) -> WheelTexts:
        with self.lock:
            self.reads += 1
        texts = {"vllm/v1/outputs.py": OUTPUTS, "vllm/v1/moved/out.py": ASYNC}
        return WheelTexts(f"vllm-{version}.whl", "https://index/w.whl", texts, 10, 100, True)


def test_a_release_is_fetched_once_and_its_producers_kept_wherever_they_moved(
    tmp_path, monkeypatch
) -> None:
    index = _FakeIndex()
    monkeypatch.setattr(fetch, "wheel_texts", index)
    lines: list[str] = []
    threads = [
        threading.Thread(
            target=fetch.fetched, args=("9.9.9", tmp_path), kwargs={"progress": lines.append}
        )
        for _ in range(4)
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert index.reads == 1 and len(lines) == 1
    assert lines[0].startswith("vLLM 9.9.9: 0.0 MB of vllm-9.9.9.whl (0.0 MB) read, 2 texts kept")
    assert (tmp_path / "outputs-9.9.9.py.txt").read_text() == OUTPUTS
    moved = (tmp_path / "producers-mrv2" / "producers-mrv2-9.9.9.py.txt").read_text()
    assert "# ---- vllm/v1/moved/out.py: whole file\n" + ASYNC in moved
    fetch.fetched("9.9.9", tmp_path, progress=lines.append)
    assert index.reads == 1  # a second run downloads nothing


def test_a_corrupt_cached_text_is_fetched_again(tmp_path, monkeypatch) -> None:
    index = _FakeIndex()
    monkeypatch.setattr(fetch, "wheel_texts", index)
    fetch.fetched("9.9.9", tmp_path, progress=lambda line: None)
    (tmp_path / "outputs-9.9.9.py.txt").write_text("truncated")
    lines: list[str] = []
    fetch.fetched("9.9.9", tmp_path, progress=lines.append)
    assert index.reads == 2
    assert lines[0] == "vLLM 9.9.9: the cached texts do not match what was fetched; fetching again"
    assert (tmp_path / "outputs-9.9.9.py.txt").read_text() == OUTPUTS


def test_a_folder_of_texts_named_by_the_environment_is_read_not_fetched_into(
    tmp_path, monkeypatch
) -> None:
    monkeypatch.setenv(fetch.RELEASES_ENV_VAR, str(tmp_path))
    monkeypatch.setattr(fetch, "wheel_texts", _FakeIndex())
    with pytest.raises(fetch.FetchError, match=r"holds no outputs-9\.9\.9\.py\.txt; unset it"):
        fetch.release_outputs("9.9.9")
    (tmp_path / "outputs-9.9.9.py.txt").write_text(OUTPUTS)
    assert fetch.release_outputs("9.9.9") == tmp_path / "outputs-9.9.9.py.txt"


def test_threads_writing_one_file_at_once_each_write_it_whole(tmp_path) -> None:
    # The crater fetches four plugin releases at once, each rewriting one listing.
    from conformance.files import write_whole

    target = tmp_path / "listing.json"
    failures: list[BaseException] = []

    def write(text: str) -> None:
        for _ in range(50):
            try:
                write_whole(target, text)
            except OSError as error:
                failures.append(error)

    texts = [str(n) * 50_000 for n in range(4)]
    threads = [threading.Thread(target=write, args=(t,)) for t in texts]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert not failures
    assert target.read_text() in texts
    assert [p.name for p in tmp_path.iterdir()] == ["listing.json"]


@pytest.mark.parametrize(
    ("said", "why"),
    [
        ("after connection broken by 'NewConnectionError(...: Failed to establish a new "
         "connection: [Errno 111] Connection refused')'", "([Errno 111] Connection refused)"),
        ("after connection broken by 'ProtocolError('Connection aborted.', "
         "ConnectionResetError(104, 'Connection reset by peer'))'", "(Connection reset by peer)"),
        ("after connection broken by 'ReadTimeoutError(\"HTTPSConnectionPool(host='pypi.org', "
         "port=443): Read timed out. (read timeout=15)\")'", "(Read timed out)"),
    ],
)  # fmt: skip
def test_an_index_that_does_not_answer_is_named_so(said, why) -> None:
    stderr = (
        f"WARNING: Retrying (Retry(total=0, ...)) {said}: /simple/vllm/\n"
        "ERROR: Could not find a version that satisfies the requirement vllm==0.18.0 "
        "(from versions: none)\nERROR: No matching distribution found for vllm==0.18.0\n"
    )
    assert remote_wheel.pip_failure(stderr) == f"{remote_wheel.INDEX_UNREACHABLE} {why}"
    # Another index listed versions: the release is what is missing.
    listed = stderr.replace("(from versions: none)", "(from versions: 0.17.0)")
    assert (
        remote_wheel.pip_failure(listed) == "ERROR: No matching distribution found for vllm==0.18.0"
    )
