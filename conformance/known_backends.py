"""Backends whose capabilities the suite knows although their module cannot declare them."""

from __future__ import annotations

import importlib
import importlib.metadata
from types import ModuleType

from conformance.backend import BUILTIN_DEVICES, Backend, BackendResolutionError


def for_module(module: ModuleType) -> Backend | None:
    """The known Backend for ``module``, or None for any other module."""
    if module.__name__ == "reference":
        return reference_backend()
    if module.__name__ == "vllm.v1.outputs":
        return vllm_backend(module)
    return None


def reference_backend(revision: str | None = None) -> Backend:
    """This project's reference of ``revision`` (default 2025.10): every device, every producer."""
    from reference.revisions import DEFAULT_REVISION, reference_module

    module = reference_module(revision or DEFAULT_REVISION)
    return Backend(
        name="reference",
        module=module,
        devices=BUILTIN_DEVICES,
        spec_revision=revision,
        version=_version("vllm-outputs-suite"),
        pad_sampled_token_ids=module.pad_sampled_token_ids,
        unpad_sampled_token_ids=module.unpad_sampled_token_ids,
        gather_logprobs=module.gather_logprobs,
        make_async_output=module.DeviceAsyncModelRunnerOutput,
    )


def vllm_backend(module: ModuleType | None = None) -> Backend:
    """vLLM's own ``vllm.v1.outputs``, judged against the revision of the installed version.

    Only its types: vLLM exports no standalone producers.
    """
    from conformance.spec import (
        ReleaseTooOldError,
        UnsupportedReleaseError,
        revision_for_vllm_version,
    )

    version = _version("vllm")
    revision, undetectable = None, None
    if version is not None:
        try:
            revision = revision_for_vllm_version(version)
        except ReleaseTooOldError as error:
            raise BackendResolutionError(f"backend 'vllm': {error}") from None
        except UnsupportedReleaseError as error:
            undetectable = f"backend 'vllm': {error}"
    if module is None:
        # Imported only when vLLM is asked for.
        module = importlib.import_module("vllm.v1.outputs")
    return Backend(
        name="vllm",
        module=module,
        devices=("cpu", "cuda"),
        version=version,
        spec_revision=revision,
        revision_detected_from=f"installed vLLM {version}" if revision else None,
        revision_undetectable=undetectable,
    )


def _version(distribution: str) -> str | None:
    try:
        return importlib.metadata.version(distribution)
    except importlib.metadata.PackageNotFoundError:
        return None


def retarget_reference(backend: Backend, revision: str) -> Backend:
    """The reference backend judged at ``revision`` is the reference *of* that revision."""
    if backend.name != "reference" or not backend.module.__name__.startswith("reference"):
        return backend
    from dataclasses import replace

    retargeted = reference_backend(revision)
    return replace(retargeted, source=backend.source)
