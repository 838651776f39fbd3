"""Backends whose capabilities the suite knows although their module cannot declare them."""

from __future__ import annotations

import importlib.metadata
from types import ModuleType

from conformance.backend import ALL_DEVICES, Backend


def for_module(module: ModuleType) -> Backend | None:
    """The known Backend for ``module``, or None for any other module."""
    if module.__name__ == "reference":
        return reference_backend()
    if module.__name__ == "vllm.v1.outputs":
        return vllm_backend(module)
    return None


def reference_backend() -> Backend:
    """This project's reference: every device, every producer."""
    import reference

    return Backend(
        name="reference",
        module=reference,
        devices=ALL_DEVICES,
        spec_revision=reference.SPEC_REVISION,
        version=_version("vllm-outputs-suite"),
        pad_sampled_token_ids=reference.pad_sampled_token_ids,
        unpad_sampled_token_ids=reference.unpad_sampled_token_ids,
        gather_logprobs=reference.gather_logprobs,
        make_async_output=reference.DeviceAsyncModelRunnerOutput,
    )


def vllm_backend(module: ModuleType | None = None) -> Backend:
    """vLLM's own ``vllm.v1.outputs`` (its types only; vLLM exports no standalone producers)."""
    if module is None:
        # Imported only when vLLM is asked for.
        module = importlib.import_module("vllm.v1.outputs")
    return Backend(
        name="vllm",
        module=module,
        devices=("cpu", "cuda"),
        version=_version("vllm"),
    )


def _version(distribution: str) -> str | None:
    try:
        return importlib.metadata.version(distribution)
    except importlib.metadata.PackageNotFoundError:
        return None
