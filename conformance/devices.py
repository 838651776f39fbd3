"""Which torch devices exist here, and why a device-dependent check does not run on one.

The two skip reasons are worded so that a reader (and the report's ``skip_cause``)
can tell "the backend does not claim this device" from "it does, but this machine
has none".
"""

from __future__ import annotations

import torch

from conformance.backend import ALL_DEVICES, Backend

ACCELERATORS = tuple(d for d in ALL_DEVICES if d != "cpu")

NOT_DECLARED = "not declared by the backend"
NOT_PRESENT = "declared, but no such device on this machine"


def is_present(device: str) -> bool:
    """True when this process can allocate on torch device type ``device``."""
    if device == "cpu":
        return True
    if device == "mps":
        backend = getattr(torch.backends, "mps", None)
        return bool(backend is not None and backend.is_available())
    module = getattr(torch, device, None)
    is_available = getattr(module, "is_available", None)
    try:
        return bool(is_available and is_available())
    except Exception:  # a half-installed device runtime counts as absent
        return False


def present_devices() -> list[str]:
    return [d for d in ALL_DEVICES if is_present(d)]


def skip_reason(backend: Backend, device: str) -> str | None:
    """Why a check cannot run on ``device`` for ``backend``; None when it can."""
    if device not in backend.devices:
        return f"device {device}: {NOT_DECLARED} (it declares {', '.join(backend.devices)})"
    if not is_present(device):
        return f"device {device}: {NOT_PRESENT}"
    return None


def skip_cause(message: str) -> str | None:
    """The report's machine-readable cause of a skip, from its message."""
    if NOT_PRESENT in message:
        return "device-not-present"
    if NOT_DECLARED in message:
        # Device skips start with "device <type>:"; the rest are producers or constants.
        return "device-not-declared" if message.startswith("device ") else "producer-not-declared"
    return None


def synchronize(device: str | torch.device) -> None:
    """Wait for all work queued on ``device`` (no-op on CPU)."""
    kind = torch.device(device).type
    if kind == "cpu":
        return
    getattr(torch, kind).synchronize()
