"""Any vLLM text, tree or wheel as a :class:`VllmSource`: its outputs.py and its producers.

A *source* is what a revision path (``--revision PATH``, ``--vllm-outputs FILE``,
``--bump-to PATH``) names:

* a file: vLLM's ``vllm/v1/outputs.py`` under any name; the version is read from a
  name ``outputs-<version>.py[.txt]`` where it has one (``0.34.0.dev3+g1a2b3c4`` too),
  and the producer text ``producers/producers-<version>.py.txt`` beside it is taken;
* a folder: a checkout of vLLM or an unpacked wheel (``vllm/v1/outputs.py`` under it,
  or the ``vllm`` package folder itself), whose producers are cut out of their real
  files (:data:`conformance.releases.wheels.SECTIONS`); the version comes from
  ``vllm/_version.py`` or a ``vllm-<version>.dist-info``;
* a ``.whl``: the same files, read from the archive.

:func:`read_source` refuses anything else with one line naming the path and what was
expected (:class:`~conformance.releases.texts.ReleaseTextError`), before any check runs.
"""

from __future__ import annotations

import ast
import hashlib
import re
import zipfile
import zlib
from dataclasses import dataclass
from pathlib import Path

from packaging.version import InvalidVersion, Version

from conformance.oracle.text_surface import Surface, surface_of_module, surface_of_snippet
from conformance.releases.output_classes import output_classes
from conformance.releases.texts import (
    MRV2_FOLDER,
    PRODUCERS_FOLDER,
    ReleaseTextError,
    producer_sections,
)
from conformance.releases.wheels import SECTIONS, TAKEN, found_elsewhere, producer_text
from conformance.spec_names import SPEC_NAMES

OUTPUTS_FILE = "vllm/v1/outputs.py"

_NAMED_VERSION = re.compile(r"^outputs-(?P<version>.+?)\.py(\.txt)?$")


@dataclass(frozen=True)
class VllmSource:
    """vLLM's outputs.py (and, where there, its producer sections) from one place."""

    path: Path  #: what was named
    origin: str  #: ``text``, ``tree``, ``wheel`` or ``installed``
    outputs: str  #: the text of vllm/v1/outputs.py
    producers: str | None  #: producer sections in the layout of the shared texts
    version: str | None  #: the version it says it is, where it says one
    #: ``(name, class source)`` of output types outputs.py imports from another module
    #: of the tree or wheel (a type moved and re-exported): its surface, as they are
    reexported: tuple[tuple[str, str], ...] = ()

    @property
    def what(self) -> str:
        """How the header names it: ``outputs-0.34.0.dev3.py.txt``, ``tree /src/vllm (0.34.0.dev3)``."""
        if self.origin == "text":
            return self.path.name
        version = f" {self.version}" if self.version else ""
        if self.origin == "installed":
            return f"installed{version} ({self.path})"
        return f"{self.origin} {self.path}" + (f" ({self.version})" if self.version else "")

    @property
    def digest(self) -> str:
        """Names the texts: equal digests, equal sources."""
        hashed = hashlib.sha256(self.outputs.encode())
        hashed.update(b"\0" + (self.producers or "").encode())
        for name, text in self.reexported:
            hashed.update(f"\0{name}\0{text}".encode())
        return hashed.hexdigest()[:16]

    def surface(self) -> Surface:
        """The outputs text's surface (with the types it re-exports) and, where present,
        its producers'."""
        found = surface_of_module(self.outputs)
        for _, text in self.reexported:
            found.update(surface_of_module(text))
        if self.producers is not None:
            found.update(producer_surface(self.producers))
        return found


def version_in_name(path: Path) -> str | None:
    """``0.34.0.dev3+g1a2b3c4`` for ``outputs-0.34.0.dev3+g1a2b3c4.py.txt``; None when the
    name carries no version (``outputs.py``) or not a valid one."""
    match = _NAMED_VERSION.match(path.name)
    if match is None:
        return None
    try:
        Version(match["version"])
    except InvalidVersion:
        return None
    return match["version"]


def read_source(path: str | Path) -> VllmSource:
    """The source ``path`` names; :class:`ReleaseTextError` (one line) for anything else."""
    path = Path(path).expanduser()
    if path.is_dir():
        source = _from_tree(path)
    elif path.is_file() and path.suffix == ".whl":
        source = _from_wheel(path)
    elif path.is_file():
        source = _from_text(path)
    else:
        raise ReleaseTextError(
            f"{path}: no such file or folder; give vLLM's outputs.py, a vLLM checkout or "
            "unpacked wheel (a folder holding vllm/v1/outputs.py), or a vLLM wheel"
        )
    validate(source)
    return source


def installed_source(package_dir: Path, version: str | None) -> VllmSource:
    """The source of an installed ``vllm`` package (the folder ``vllm/`` itself)."""
    source = _from_tree(package_dir.parent, origin="installed", version=version)
    validate(source)
    return source


def validate(source: VllmSource) -> None:
    """Refuse a text that is not Python or defines none of the spec's types."""
    # In a tree or a wheel the text read is its outputs.py: the message names that.
    where = source.path if source.origin == "text" else f"{source.path}: {OUTPUTS_FILE}"
    try:
        tree = ast.parse(source.outputs)
    except SyntaxError as error:
        raise ReleaseTextError(
            f"{where}: not a Python text (line {error.lineno}: {error.msg}); give "
            f"vLLM's {OUTPUTS_FILE}"
        ) from None
    defined = {n.name for n in tree.body if isinstance(n, ast.ClassDef)}
    if not defined & set(SPEC_NAMES):
        raise ReleaseTextError(
            f"{where}: defines none of the spec's types ({', '.join(SPEC_NAMES)}); "
            f"give vLLM's {OUTPUTS_FILE}"
        )


def _read(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8")
    except UnicodeDecodeError:
        raise ReleaseTextError(
            f"{path}: not a text file (not UTF-8); give vLLM's {OUTPUTS_FILE}"
        ) from None


def _from_text(path: Path) -> VllmSource:
    version = version_in_name(path)
    producers = None
    if version is not None:
        beside = path.parent / PRODUCERS_FOLDER / f"producers-{version}.py.txt"
        runner_v2 = path.parent / MRV2_FOLDER / f"producers-mrv2-{version}.py.txt"
        found = [_read(p) for p in (beside, runner_v2) if p.is_file()]
        producers = "\n".join(found) if found else None
    return VllmSource(path, "text", _read(path), producers, version)


def _tree_root(path: Path) -> Path | None:
    if (path / OUTPUTS_FILE).is_file():
        return path
    if path.name == "vllm" and (path / "v1" / "outputs.py").is_file():
        return path.parent
    return None


def _from_tree(path: Path, origin: str = "tree", version: str | None = None) -> VllmSource:
    root = _tree_root(path)
    if root is None:
        raise ReleaseTextError(
            f"{path}: no {OUTPUTS_FILE} in this folder; give a vLLM checkout or unpacked wheel "
            "(the folder holding vllm/), or vLLM's outputs.py itself"
        )
    texts = {name: _read(root / name) for name in (*TAKEN, OUTPUTS_FILE) if (root / name).is_file()}
    # Every file of vllm/v1, as a wheel's: a caller of a gathering that names no output
    # type (Model Runner V2's sampler) is part of what a plugin can patch.
    texts.update((name, text) for name, text in _v1_files(root).items() if name not in texts)
    version = version or _tree_version(root)
    return VllmSource(
        path,
        origin,
        texts[OUTPUTS_FILE],
        _producers_of(texts, version, str(path)),
        version,
        _reexported(texts),
    )


def _v1_files(root: Path) -> dict[str, str]:
    """``{path: text}`` of every readable Python file under ``root``'s ``vllm/v1``."""
    found = {}
    for path in sorted((root / "vllm" / "v1").rglob("*.py")):
        try:
            found[path.relative_to(root).as_posix()] = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError):
            continue
    return found


def output_type_files(root: Path) -> dict[str, str]:
    """``{path: text}`` of the ``vllm/v1`` files under ``root`` (the folder holding
    ``vllm/``) that mention an output type: the only ones that can hold a producer,
    wherever vLLM moved it (:mod:`conformance.releases.discovery` tells which do)."""
    return {
        name: text
        for name, text in _v1_files(root).items()
        if "AsyncModelRunnerOutput" in text or "LogprobsTensors" in text
    }


def _tree_version(root: Path) -> str | None:
    """The version a tree says it is: ``vllm/_version.py`` (a build), else a dist-info."""
    version_file = root / "vllm" / "_version.py"
    if version_file.is_file():
        # ``__version__ = version = '0.34.0'`` (vcs-versioning), ``__version__: str = "..."``
        found = re.search(
            r"""^(?:__version__|version)\s*(?::[^=\n]*)?=\s*(?:\w+\s*=\s*)*['"]([^'"]+)['"]""",
            version_file.read_text(encoding="utf-8", errors="replace"),
            re.MULTILINE,
        )
        if found:
            return found[1]
    for info in sorted(root.glob("vllm*.dist-info")):
        metadata = info / "METADATA"
        if metadata.is_file():
            found = re.search(
                r"^Version:\s*(\S+)", metadata.read_text(encoding="utf-8"), re.MULTILINE
            )
            if found:
                return found[1]
    return None


def _from_wheel(path: Path) -> VllmSource:
    try:
        with zipfile.ZipFile(path) as archive:
            names = set(archive.namelist())
            if OUTPUTS_FILE not in names:
                raise ReleaseTextError(
                    f"{path}: this wheel has no {OUTPUTS_FILE}; give a vLLM wheel from 0.10.2 on"
                )
            texts = {
                n: archive.read(n).decode("utf-8")
                for n in sorted(names)
                if n in TAKEN or n == OUTPUTS_FILE or _in_v1(n)
            }
    except zipfile.BadZipFile as error:
        if not zipfile.is_zipfile(path):
            raise ReleaseTextError(f"{path}: not a wheel (not a zip archive)") from None
        raise ReleaseTextError(f"{path}: a damaged wheel ({error}); download it again") from None
    except (zlib.error, EOFError, UnicodeDecodeError) as error:
        raise ReleaseTextError(f"{path}: a damaged wheel ({error}); download it again") from None
    # vllm-0.34.0.dev3+g1a2b3c4-cp38-abi3-manylinux1_x86_64.whl
    parts = path.name.split("-")
    version = parts[1] if len(parts) >= 5 else None
    return VllmSource(
        path,
        "wheel",
        texts[OUTPUTS_FILE],
        _producers_of(texts, version, path.name),
        version,
        _reexported(texts),
    )


def _reexported(texts: dict[str, str]) -> tuple[tuple[str, str], ...]:
    """The output types (classes some release's outputs.py defined) that this outputs.py
    imports at run time from another module of ``texts`` instead: moved, and still
    ``vllm.v1.outputs.X`` to whoever imports it."""
    try:
        tree = ast.parse(texts[OUTPUTS_FILE])
    except SyntaxError:
        return ()
    defined = {n.name for n in tree.body if isinstance(n, ast.ClassDef)}
    wanted = output_classes() - defined
    found = []
    for node in tree.body:  # top-level imports only: one under TYPE_CHECKING never runs
        if not isinstance(node, ast.ImportFrom) or node.level or not node.module:
            continue
        base = node.module.replace(".", "/")
        text = texts.get(f"{base}.py") or texts.get(f"{base}/__init__.py")
        if text is None:
            continue
        for alias in node.names:
            if alias.name in wanted and alias.asname in (None, alias.name):
                source = _class_source(text, alias.name)
                if source is not None:
                    found.append((alias.name, source))
    return tuple(found)


def _class_source(text: str, name: str) -> str | None:
    """The source of top-level class ``name`` in ``text``, decorators included."""
    try:
        tree = ast.parse(text)
    except SyntaxError:
        return None
    for node in tree.body:
        if isinstance(node, ast.ClassDef) and node.name == name:
            first = min([node.lineno, *(d.lineno for d in node.decorator_list)])
            return "\n".join(text.splitlines()[first - 1 : node.end_lineno]) + "\n"
    return None


def _in_v1(name: str) -> bool:
    return name.startswith("vllm/v1/") and name.endswith(".py")


def _producers_of(texts: dict[str, str], version: str | None, where: str) -> str | None:
    """The producer sections of the files found, or None when none of them is there."""
    if not any(name in texts for name in TAKEN) and not found_elsewhere(texts):
        return None
    return producer_text(version or "(no version)", where, texts)


# --- the producers' surface ---------------------------------------------------------------


#: Producer sections compared between texts: the ones every source gives (a wheel and a
#: tree are cut to these; the shared texts hold more, the runner's own methods).
def _compared(path: str, title: str) -> bool:
    wanted = SECTIONS.get(path, ())
    if path not in SECTIONS:
        return False
    if wanted is None:
        return title == "whole file"
    name = title.removeprefix("class ").split(" ", 1)[0]
    return name in wanted


def producer_surface(text: str) -> Surface:
    """The surface of a producer text's sections (those :data:`SECTIONS` names)."""
    found: Surface = {}
    for section in producer_sections(text):
        if not _compared(section.path, section.title):
            continue
        try:
            if section.title == "whole file":
                found.update(surface_of_module(section.body, section.module))
            elif section.title.startswith("class "):
                found.update(surface_of_snippet(section.body, section.module))
            else:
                owner = section.title.split(".", 1)[0]
                found.update(surface_of_snippet(section.body, section.module, owner))
        except SyntaxError:
            continue  # a section we cannot read is no part of the comparison
    return found
