"""vLLM's release texts, fetched from the package index once and kept in the user cache.

Every vLLM text the suite, its tests and its benchmarks read comes from here: a
release's ``vllm/v1/outputs.py`` and its producers, cut from the release's wheel
(:mod:`.remote_wheel` reads only those members) into
``$XDG_CACHE_HOME/vllm-outputs-suite/vllm-releases/`` in the layout every reader of
texts knows::

    outputs-X.py.txt                          vllm/v1/outputs.py
    producers/producers-X.py.txt              the first runner's producer sections
    producers-mrv2/producers-mrv2-X.py.txt    Model Runner V2's files, and any other
                                              file holding a producer (:mod:`.discovery`)
    fetched/X.json                            the wheel, what was read, each file's sha256,
                                              and every module the wheel holds

A release is fetched once: under a lock (parallel workers wait for one fetch), with
one progress line, its manifest written last.  A cached text whose hash no longer
matches its manifest is fetched again, never judged.  ``OUTPUTS_VLLM_RELEASES=DIR``
names a folder of texts to read instead; nothing is fetched into it.

``python -m conformance.cli.fetch_releases [--all | X ...]`` fetches ahead of time.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path

from conformance.files import write_whole
from conformance.releases.remote_wheel import WheelFetchError, wheel_texts
from conformance.releases.texts import MRV2_FOLDER, PRODUCERS_FOLDER, ReleaseTextError
from conformance.releases.wheels import (
    CALLER_TITLE,
    MRV2_SECTIONS,
    SECTIONS,
    found_elsewhere,
    gathering_callers,
    producer_text,
)

#: A folder of release texts to read instead of the cache (nothing is fetched into it).
RELEASES_ENV_VAR = "OUTPUTS_VLLM_RELEASES"
#: The command that fetches every release ahead of time (messages name it).
FETCH_COMMAND = "python -m conformance.cli.fetch_releases --all"
#: Published vLLM releases older than the seven types: fetched too, because the suite's
#: refusal of them is part of what it promises (and tested).
OLDER_RELEASES = ("0.10.0", "0.10.1", "0.10.1.1")

_MANIFEST_FOLDER = "fetched"
_FORMAT = "vllm-outputs-suite/fetched/2"
#: What a wheel is read for: every Python file of ``vllm/v1`` (2 MB of a 240 MB wheel),
#: so producers are found wherever vLLM keeps them, and the version file.
_READ_PREFIXES = ("vllm/v1/",)
_VERSION_FILE = "vllm/_version.py"


class FetchError(ReleaseTextError):
    """A release's texts cannot be had; the one-line message names why and the fix."""


def cache_home() -> Path:
    """``$XDG_CACHE_HOME/vllm-outputs-suite`` (``~/.cache`` without it): every cache of
    the suite's lives here."""
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "vllm-outputs-suite"


def cache_folder() -> Path:
    """``$XDG_CACHE_HOME/vllm-outputs-suite/vllm-releases``."""
    return cache_home() / "vllm-releases"


def texts_folder() -> Path:
    """Where release texts are read: ``$OUTPUTS_VLLM_RELEASES``, else the cache."""
    given = os.environ.get(RELEASES_ENV_VAR)
    return Path(given).expanduser() if given else cache_folder()


def every_release() -> tuple[str, ...]:
    """Every published release the suite reads texts of, oldest first."""
    from conformance.releases.known_surfaces import KNOWN_FILE

    known = json.loads(KNOWN_FILE.read_text(encoding="utf-8"))["releases"]
    return (*OLDER_RELEASES, *known)


def release_name(text: str, option: str = "--revision") -> str:
    """``0.13``, ``v0.13.0`` -> ``0.13.0``: a release as the index names it
    (:class:`FetchError` naming ``option`` for what is no version)."""
    from packaging.version import InvalidVersion, Version

    try:
        parsed = Version(text.strip())
    except InvalidVersion:
        raise FetchError(f"{option} {text!r} is not a version such as 0.13.0") from None
    return ".".join(map(str, (*parsed.release, 0, 0)[: max(3, len(parsed.release))]))


def release_outputs(
    version: str, progress: Callable[[str], None] | None = None, with_modules: bool = False
) -> Path:
    """``outputs-X.py.txt`` of vLLM ``version`` (producers beside it), fetched if need be.

    From ``$OUTPUTS_VLLM_RELEASES`` when set (:class:`FetchError` when it lacks the
    release), else from the cache, fetched once (``with_modules``: with the list of the
    wheel's modules, :func:`release_modules`).
    """
    given = os.environ.get(RELEASES_ENV_VAR)
    if given:
        path = Path(given).expanduser() / f"outputs-{version}.py.txt"
        if not path.is_file():
            raise FetchError(
                f"${RELEASES_ENV_VAR}={given} holds no outputs-{version}.py.txt; unset it to "
                f"fetch vLLM {version}'s texts into the cache, or add them there"
            )
        return path
    return fetched(version, cache_folder(), progress=progress, with_modules=with_modules)


def fetched(
    version: str,
    folder: Path,
    progress: Callable[[str], None] | None = None,
    with_modules: bool = False,
) -> Path:
    """vLLM ``version``'s texts in ``folder``, fetched unless a sound copy is there
    (``with_modules``: one whose manifest lists the wheel's modules, as a fetch by this
    suite since the crater writes it)."""
    say = progress or to_stderr

    def sound() -> bool:
        return _sound(folder, version) and (
            not with_modules or release_modules(version, folder) is not None
        )

    if sound():
        return folder / f"outputs-{version}.py.txt"
    try:
        folder.mkdir(parents=True, exist_ok=True)
        with locked(folder, version):
            if sound():  # another process fetched it meanwhile
                return folder / f"outputs-{version}.py.txt"
            if _sound(folder, version):
                say(f"vLLM {version}: fetching again to list the wheel's modules")
            elif manifest(version, folder) is not None:
                say(
                    f"vLLM {version}: the cached texts do not match what was fetched; fetching again"
                )
            _fetch_into(folder, version, say)
    except OSError as error:
        raise FetchError(
            f"cannot write vLLM {version}'s texts into {folder} ({error.strerror or error}); "
            f"set XDG_CACHE_HOME to a folder you can write, or {RELEASES_ENV_VAR} to a folder "
            "of texts"
        ) from None
    return folder / f"outputs-{version}.py.txt"


def fetch_all(
    versions: Sequence[str],
    folder: Path | None = None,
    progress: Callable[[str], None] | None = None,
) -> dict[str, Path]:
    """:func:`fetched` of each version into ``folder`` (default: the cache)."""
    target = folder or cache_folder()
    return {v: fetched(v, target, progress=progress) for v in versions}


def is_fetched(version: str, folder: Path | None = None) -> bool:
    """Whether a sound copy of ``version``'s texts is in ``folder`` (default: the cache)."""
    return _sound(folder or cache_folder(), version)


def manifest(version: str, folder: Path | None = None) -> dict[str, object] | None:
    """What was fetched of ``version`` (wheel, bytes read, files), or None."""
    path = (folder or cache_folder()) / _MANIFEST_FOLDER / f"{version}.json"
    try:
        data: dict[str, object] = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return data if data.get("format") == _FORMAT else None


def release_modules(version: str, folder: Path | None = None) -> frozenset[str] | None:
    """Every module of the ``vllm`` package in ``version``'s wheel (``vllm.v1.outputs``...),
    as its fetched manifest lists them; None where no manifest says (a folder of texts)."""
    data = manifest(version, folder)
    modules = data.get("modules") if data is not None else None
    return frozenset(modules) if isinstance(modules, list) else None


def module_names(paths: Sequence[str], package: str = "vllm") -> list[str]:
    """The dotted modules among archive ``paths`` under ``package/`` (a package's
    ``__init__.py`` names the package)."""
    found = set()
    for path in paths:
        if path.startswith(f"{package}/") and path.endswith(".py"):
            dotted = path.removesuffix(".py").replace("/", ".")
            found.add(dotted.removesuffix(".__init__"))
    return sorted(found)


def _sound(folder: Path, version: str) -> bool:
    """The manifest is there and every file it names has the hash it names."""
    data = manifest(version, folder)
    if data is None or not isinstance(data.get("files"), dict):
        return False
    files: dict[str, str] = data["files"]  # type: ignore[assignment]
    for name, digest in files.items():
        try:
            if hashlib.sha256((folder / name).read_bytes()).hexdigest() != digest:
                return False
        except OSError:
            return False
    return bool(files)


def _wanted(name: str) -> bool:
    return name == _VERSION_FILE or (name.endswith(".py") and name.startswith(_READ_PREFIXES))


def _fetch_into(folder: Path, version: str, say: Callable[[str], None]) -> None:
    started = time.perf_counter()
    try:
        wheel = wheel_texts(version, _wanted)
    except WheelFetchError as error:
        raise FetchError(str(error)) from None
    texts = wheel.texts
    if "vllm/v1/outputs.py" not in texts:
        raise FetchError(
            f"{wheel.wheel} has no vllm/v1/outputs.py: vLLM {version} predates the output "
            "types this suite judges"
        )
    # A release older than the seven types is fetched for its outputs.py alone: the
    # suite refuses it, and has no producer contract to read from it.
    if version in OLDER_RELEASES:
        texts = {"vllm/v1/outputs.py": texts["vllm/v1/outputs.py"]}
    files = laid_out(version, wheel.wheel, texts)
    origin = {"wheel": wheel.wheel, "url": wheel.url, "wheel_size": wheel.wheel_size,
              "bytes_read": wheel.bytes_read, "read_by_ranges": wheel.ranged,
              "modules": module_names(wheel.names)}  # fmt: skip
    store(folder, version, files, origin)
    kept = sum(len(t.encode("utf-8")) for t in files.values())
    how = "read" if wheel.ranged else "downloaded whole"
    say(
        f"vLLM {version}: {_mb(wheel.bytes_read)} of {wheel.wheel} ({_mb(wheel.wheel_size)}) "
        f"{how}, {len(files)} texts kept ({kept // 1024} KB), "
        f"{time.perf_counter() - started:.1f} s"
    )


def store(folder: Path, version: str, files: dict[str, str], origin: dict[str, object]) -> None:
    """Write a release's ``files`` (relative path -> text) into ``folder``, then the
    manifest that makes them count as fetched (``origin`` says where they came from).
    Files an earlier fetch of the release kept and this one does not are removed."""
    earlier = manifest(version, folder) or {}
    kept_before = earlier.get("files")
    for name in set(kept_before if isinstance(kept_before, dict) else {}) - set(files):
        (folder / name).unlink(missing_ok=True)
    for name, text in files.items():
        write_whole(folder / name, text)
    record = {
        "format": _FORMAT,
        "version": version,
        **origin,
        "files": {n: hashlib.sha256(t.encode("utf-8")).hexdigest() for n, t in files.items()},
    }
    # The manifest last: its presence is what marks the release as fetched.
    write_whole(folder / _MANIFEST_FOLDER / f"{version}.json", json.dumps(record, indent=1) + "\n")


def laid_out(version: str, wheel: str, texts: dict[str, str]) -> dict[str, str]:
    """``{relative path: text}`` of a release's files in the cache's layout."""
    files = {f"outputs-{version}.py.txt": texts["vllm/v1/outputs.py"]}
    first_runner = {p: t for p, t in texts.items() if p in SECTIONS}
    if first_runner:
        files[f"{PRODUCERS_FOLDER}/producers-{version}.py.txt"] = producer_text(
            version, wheel, first_runner
        )
    whole = {p: t for p, t in texts.items() if p in MRV2_SECTIONS}
    whole.update({p: texts[p] for p in found_elsewhere(texts)})
    if whole:
        callers = {p: texts[p] for p in gathering_callers(texts, set(whole))}
        files[f"{MRV2_FOLDER}/producers-mrv2-{version}.py.txt"] = _whole_files(
            version, wheel, whole, callers
        )
    return files


def _whole_files(version: str, wheel: str, texts: dict[str, str], callers: dict[str, str]) -> str:
    parts = [
        f"# vLLM {version}: files holding its producers of the vllm.v1.outputs types, verbatim "
        f"from {wheel}",
        "# (Apache-2.0, Copyright contributors to the vLLM project), cut out by vllm-outputs-suite.",
    ]
    parts += [f"\n# ---- {path}: whole file\n{texts[path]}" for path in sorted(texts)]
    parts += [f"\n# ---- {path}: {CALLER_TITLE}\n{callers[path]}" for path in sorted(callers)]
    return "\n".join(parts) + "\n"


@contextlib.contextmanager
def locked(folder: Path, version: str) -> Iterator[None]:
    """One fetch of ``version`` at a time across processes (a no-op without fcntl)."""
    locks = folder / ".locks"
    locks.mkdir(parents=True, exist_ok=True)
    with open(locks / f"{version}.lock", "w") as handle:
        try:
            import fcntl
        except ImportError:  # Windows: two fetches may race, each writing whole files
            yield
            return
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def _mb(size: int) -> str:
    return f"{size / 1e6:.1f} MB"


def to_stderr(line: str) -> None:
    print(line, file=sys.stderr, flush=True)
