"""The one device layer: which torch device types exist here, waiting for them, and why a
device-dependent check does not run on one.

The conformance suite and the benchmarks both use it.  A device type is anything
torch can name: the built-in ``cpu``, ``cuda``, ``xpu``, ``mps``, ``hpu``, and the
PrivateUse1 name an out-of-tree plugin registers (``npu`` for torch_npu), whose
runtime lives in ``torch.<name>``.  Only what the device module offers is used:
``is_available``, ``synchronize``, and ``Event`` where it exists.
"""

from __future__ import annotations

from dataclasses import dataclass
from types import ModuleType
from typing import Any

import torch

from conformance.backends.backend import BUILTIN_DEVICES, Backend

# The report's machine-readable skip causes.
DEVICE_NOT_DECLARED = "device-not-declared"
DEVICE_NOT_PRESENT = "device-not-present"


@dataclass(frozen=True)
class DeviceSkip:
    """Why a check does not run on a device: a cause for the report, words for people."""

    cause: str
    message: str


def device_module(device: str) -> ModuleType | None:
    """torch's runtime module for device type ``device`` (``torch.cuda``, ``torch.npu``)."""
    if device == "cpu":
        return None
    if device == "mps":
        return getattr(torch, "mps", None)
    return getattr(torch, device, None)


def is_present(device: str) -> bool:
    """True when this process can allocate on torch device type ``device``."""
    if device == "cpu":
        return True
    try:
        if device == "mps":
            backend = getattr(torch.backends, "mps", None)
            return bool(backend is not None and backend.is_available())
        is_available = getattr(device_module(device), "is_available", None)
        return bool(is_available and is_available())
    except Exception:  # a half-installed device runtime counts as absent
        return False


def candidate_devices(declared: tuple[str, ...] = ()) -> tuple[str, ...]:
    """The built-in device types, then any other type ``declared`` names, in that order."""
    return BUILTIN_DEVICES + tuple(d for d in declared if d not in BUILTIN_DEVICES)


def present_devices(declared: tuple[str, ...] = ()) -> list[str]:
    return [d for d in candidate_devices(declared) if is_present(d)]


def skip_for(backend: Backend, device: str) -> DeviceSkip | None:
    """Why a check cannot run on ``device`` for ``backend``; None when it can."""
    if device not in backend.devices:
        return DeviceSkip(
            DEVICE_NOT_DECLARED,
            f"device {device}: not declared by the backend (it declares "
            f"{', '.join(backend.devices)})",
        )
    if not is_present(device):
        return DeviceSkip(
            DEVICE_NOT_PRESENT, f"device {device}: declared, but no such device on this machine"
        )
    return None


def synchronize(device: str | torch.device) -> None:
    """Wait for all work queued on ``device`` (no-op on CPU)."""
    kind = torch.device(device).type if not isinstance(device, str) else device.split(":")[0]
    if kind == "cpu":
        return
    module = device_module(kind)
    sync = getattr(module, "synchronize", None)
    if sync is None:
        raise RuntimeError(f"torch.{kind} offers no synchronize(); cannot wait for device {kind}")
    sync()


def new_event(device: str) -> Any | None:
    """A recordable event of ``device``'s runtime, or None where it offers none (MPS, CPU)."""
    module = device_module(device)
    event = getattr(module, "Event", None)
    if event is None or device in ("cpu", "mps"):
        return None
    return event()


def to_device(device: str, tensor: torch.Tensor) -> torch.Tensor:
    """``tensor`` moved to ``device`` and the copy finished."""
    moved = tensor.to(device)
    synchronize(moved.device)
    return moved


def device_names(present: list[str]) -> list[dict[str, Any]]:
    """What each present device is, for the report: ``{"type", "index", "name"}``, one entry
    per device of a type (``cuda`` 0 ``NVIDIA H200``, ...), the host's processor for cpu.

    Asked of torch's module for the type (``get_device_name``), whatever the type; a
    runtime that cannot say gives the type's name alone, never an error."""
    found: list[dict[str, Any]] = []
    for device in present:
        if device == "cpu":
            found.append({"type": "cpu", "index": None, "name": _cpu_name()})
            continue
        module = device_module(device)
        count, name_of = _count_and_namer(device, module)
        for index in range(count):
            found.append({"type": device, "index": index, "name": name_of(index)})
    return found


def _count_and_namer(device: str, module: ModuleType | None) -> tuple[int, Any]:
    count_devices = getattr(module, "device_count", None)
    try:
        count = int(count_devices()) if count_devices is not None else 1
    except Exception:
        count = 1
    get_name = getattr(module, "get_device_name", None)

    def name_of(index: int) -> str:
        if get_name is None:
            return device
        try:
            return str(get_name(index))
        except Exception:  # a runtime that cannot name its device still ran the checks
            return device

    return max(count, 1), name_of


def _cpu_name() -> str:
    """The processor's model name (/proc/cpuinfo on Linux), else what ``platform`` knows."""
    import platform

    try:
        with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as info:
            for line in info:
                key, _, value = line.partition(":")
                if key.strip() in ("model name", "Model", "Hardware") and value.strip():
                    return value.strip()
    except OSError:
        pass
    return platform.processor() or platform.machine() or "cpu"
