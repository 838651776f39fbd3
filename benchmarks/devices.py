"""The benchmarks' device layer: ``conformance.backends.devices``, with a fallback for old commits.

One device layer and one device order for the whole project: the benchmarks use
``conformance.backends.devices`` (presence, order, waiting).  asv history runs import
today's benchmarks against each old commit's installed project; for a commit
older than ``conformance.backends.devices`` the few lines below stand in, in the same order.
"""

from __future__ import annotations

try:
    from conformance.backends.devices import candidate_devices, is_present, synchronize
except ImportError:  # a commit older than conformance.backends.devices
    import torch

    _BUILTIN_DEVICES = ("cpu", "cuda", "xpu", "mps")

    def candidate_devices(declared: tuple[str, ...] = ()) -> tuple[str, ...]:
        return _BUILTIN_DEVICES + tuple(d for d in declared if d not in _BUILTIN_DEVICES)

    def is_present(device: str) -> bool:
        if device == "cpu":
            return True
        if device == "mps":
            return bool(torch.backends.mps.is_available())
        module = getattr(torch, device, None)
        return bool(module is not None and module.is_available())

    def synchronize(device: str) -> None:  # type: ignore[misc]
        if device != "cpu":
            getattr(torch, device).synchronize()


__all__ = ["candidate_devices", "is_present", "synchronize"]
