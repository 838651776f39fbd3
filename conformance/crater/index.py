"""A distribution's files on the package index pip is configured to use.

The crater reads plugins that only publish an sdist, or wheels for another platform
(macOS arm64), so it cannot let pip pick a wheel for this machine, and it must never
let pip build an sdist (that runs the plugin's ``setup.py``).  It asks the same
indexes pip would (``PIP_INDEX_URL``/``PIP_EXTRA_INDEX_URL``, else pip's own
configuration, else PyPI) for the project's file list (the simple API: PEP 691 JSON,
else PEP 503 HTML) and picks a file itself; every file comes with the index's sha256.
"""

from __future__ import annotations

import datetime
import functools
import html.parser
import json
import os
import re
import subprocess
import sys
import urllib.error
import urllib.parse
import urllib.request
from dataclasses import dataclass

from packaging.utils import canonicalize_name, parse_sdist_filename, parse_wheel_filename
from packaging.version import InvalidVersion, Version

PYPI_SIMPLE = "https://pypi.org/simple/"
_TIMEOUT_S = 60
_JSON = "application/vnd.pypi.simple.v1+json"


class PackageIndexError(RuntimeError):
    """No index answered for a distribution; the message names what was asked and why."""


class UnknownDistributionError(PackageIndexError):
    """Every index answered, and none knows the distribution."""


@dataclass(frozen=True)
class IndexFile:
    """One file of a distribution on an index."""

    filename: str
    url: str
    version: str
    kind: str  #: ``wheel`` or ``sdist``
    sha256: str | None
    yanked: bool = False
    uploaded: str | None = None  #: when, ISO 8601 (PEP 700; an HTML index says nothing)

    @property
    def pure(self) -> bool:
        """A wheel for every platform (``py3-none-any``)."""
        return self.kind == "wheel" and self.filename.endswith("-none-any.whl")


def index_urls() -> list[str]:
    """The simple-API roots pip would ask, in its order: the index, then extra ones."""
    main = os.environ.get("PIP_INDEX_URL") or _pip_config("global.index-url") or PYPI_SIMPLE
    extra = os.environ.get("PIP_EXTRA_INDEX_URL") or _pip_config("global.extra-index-url") or ""
    roots = [main, *extra.split()]
    return [root if root.endswith("/") else root + "/" for root in dict.fromkeys(roots)]


@functools.cache
def _pip_config(key: str) -> str | None:
    try:
        done = subprocess.run(
            [sys.executable, "-m", "pip", "config", "get", key],
            capture_output=True,
            text=True,
            timeout=60,
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    value = done.stdout.strip()
    return value if done.returncode == 0 and value else None


def project_files(name: str) -> list[IndexFile]:
    """Every file of distribution ``name`` on the configured indexes (the first index
    that knows the project answers, as pip merges them; a later one adds what it lacks).
    :class:`PackageIndexError` when none can be reached and none knows it."""
    found: dict[str, IndexFile] = {}
    problems = []
    for root in index_urls():
        try:
            for entry in _files_on(root, name):
                found.setdefault(entry.filename, entry)
        except _Unknown:
            continue
        except PackageIndexError as error:
            problems.append(str(error))
    if not found:
        if problems:
            raise PackageIndexError(f"{name}: no package index answered ({'; '.join(problems)})")
        raise UnknownDistributionError(f"{name}: no such distribution on the package index")
    return list(found.values())


def newest_version(files: list[IndexFile], prereleases: bool = False) -> str | None:
    """The newest version with a file that is not yanked (final releases first, as pip)."""
    versions = {Version(f.version) for f in files if not f.yanked}
    finals = {v for v in versions if not v.is_prerelease}
    pool = versions if prereleases or not finals else finals
    return str(max(pool)) if pool else None


def first_uploads(files: list[IndexFile]) -> dict[str, datetime.datetime]:
    """When each version was published: its first file's upload, where the index says."""
    found: dict[str, datetime.datetime] = {}
    for file in files:
        when = parsed_time(file.uploaded)
        if when is not None:
            found[file.version] = min(when, found.get(file.version, when))
    return found


def first_uploaded(files: list[IndexFile], version: str) -> datetime.datetime | None:
    """When ``version`` was published, where the index says."""
    return first_uploads(files).get(str(Version(version)))


def parsed_time(text: object) -> datetime.datetime | None:
    """An ISO 8601 time (``2026-05-11T15:50:59.818554Z``, PEP 700), in UTC when it
    names no zone; None for anything else."""
    if not isinstance(text, str):
        return None
    try:
        when = datetime.datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        return None
    return when if when.tzinfo else when.replace(tzinfo=datetime.timezone.utc)


def best_file(files: list[IndexFile], version: str) -> IndexFile | None:
    """The file of ``version`` to read its Python from: a pure wheel, else any wheel
    (the Python files are the same on every platform), else the sdist."""
    wanted = Version(version)
    of_version = [f for f in files if Version(f.version) == wanted]
    for chosen in (
        [f for f in of_version if f.pure],
        [f for f in of_version if f.kind == "wheel"],
        [f for f in of_version if f.kind == "sdist"],
    ):
        if chosen:
            return sorted(chosen, key=lambda f: f.filename)[0]
    return None


class _Unknown(Exception):
    """This index does not have the project."""


def _files_on(root: str, name: str) -> list[IndexFile]:
    url = urllib.parse.urljoin(root, canonicalize_name(name) + "/")
    if url.startswith("file:"):
        path = urllib.request.url2pathname(urllib.parse.urlparse(url).path)
        index = os.path.join(path, "index.html")
        if not os.path.isfile(index):
            raise _Unknown
        with open(index, encoding="utf-8") as handle:
            return _from_html(handle.read(), url, name)
    request = urllib.request.Request(url, headers={"Accept": f"{_JSON}, text/html;q=0.1"})
    try:
        with urllib.request.urlopen(request, timeout=_TIMEOUT_S) as answer:
            kind = answer.headers.get("Content-Type", "")
            body = answer.read().decode("utf-8", errors="replace")
            url = answer.geturl()
    except urllib.error.HTTPError as error:
        if error.code == 404:
            raise _Unknown from None
        raise PackageIndexError(f"{url}: HTTP {error.code}") from None
    except (urllib.error.URLError, OSError) as error:
        raise PackageIndexError(f"{url}: {getattr(error, 'reason', error)}") from None
    if _JSON in kind or body.lstrip().startswith("{"):
        try:
            data = json.loads(body)
            if not isinstance(data, dict) or not isinstance(data.get("files"), list):
                raise ValueError("no files")
            return _from_json(data, url, name)
        except (ValueError, KeyError, TypeError, AttributeError):
            # A proxy's or portal's page in the index's place.
            raise PackageIndexError(f"{url}: not a package index's page") from None
    return _from_html(body, url, name)


def _entry(
    filename: str,
    url: str,
    sha256: str | None,
    yanked: bool,
    name: str,
    uploaded: str | None = None,
) -> IndexFile | None:
    try:
        if filename.endswith(".whl"):
            dist, version, _, _ = parse_wheel_filename(filename)
            kind = "wheel"
        elif filename.endswith((".tar.gz", ".zip")):
            dist, version = parse_sdist_filename(filename)
            kind = "sdist"
        else:
            return None
    except (ValueError, InvalidVersion):
        return None
    if canonicalize_name(dist) != canonicalize_name(name):
        return None
    return IndexFile(filename, url, str(version), kind, sha256, yanked, uploaded)


def _from_json(data: dict[str, object], base: str, name: str) -> list[IndexFile]:
    found = []
    files = data.get("files")
    for entry in files if isinstance(files, list) else []:
        hashes = entry.get("hashes") or {}
        made = _entry(
            entry["filename"],
            urllib.parse.urljoin(base, entry["url"]),
            hashes.get("sha256"),
            bool(entry.get("yanked")),
            name,
            entry.get("upload-time") if isinstance(entry.get("upload-time"), str) else None,
        )
        if made is not None:
            found.append(made)
    return found


class _Anchors(html.parser.HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.found: list[tuple[str, str, bool]] = []
        self._href: str | None = None
        self._yanked = False
        self._text = ""

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag == "a":
            given = dict(attrs)
            self._href = given.get("href")
            self._yanked = "data-yanked" in given
            self._text = ""

    def handle_data(self, data: str) -> None:
        if self._href is not None:
            self._text += data

    def handle_endtag(self, tag: str) -> None:
        if tag == "a" and self._href is not None:
            self.found.append((self._href, self._text.strip(), self._yanked))
            self._href = None


def _from_html(body: str, base: str, name: str) -> list[IndexFile]:
    parser = _Anchors()
    parser.feed(body)
    found = []
    for href, text, yanked in parser.found:
        url = urllib.parse.urljoin(base, href)
        digest = re.search(r"#sha256=([0-9a-f]{64})", href)
        filename = text or urllib.parse.unquote(url.split("#", 1)[0].rsplit("/", 1)[-1])
        made = _entry(filename, url, digest[1] if digest else None, yanked, name)
        if made is not None:
            found.append(made)
    return found
