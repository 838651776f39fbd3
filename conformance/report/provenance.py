"""Where a run ran and which run it was: the report's ``machine``, ``vllm`` and ``run``.

Every report says where it ran, so the reports of many CI jobs merge into one matrix
(``python -m reports --conformance``) and two runs can be compared
(``python -m reports --conformance-diff``):

* ``machine``: its name (``$OUTPUTS_MACHINE``, else the host name: CI names its runners,
  whose host names change from run to run), the OS, and each device present with its
  name (``NVIDIA H200``);
* ``vllm``: the vLLM whose code the run judged: its version and the distribution that
  installed it, or the release text it was laid out from; all null where the backend
  holds no vLLM code;
* ``run``: an id (``$OUTPUTS_RUN_ID``, else made here) and the time it started.

A run's :class:`Provenance` is decided once, by the process that writes the report
(the xdist controller hands its stamp to its workers in ``workerinput``), so the
report's content is the same with and without pytest-xdist but for ``run``.
"""

from __future__ import annotations

import os
import platform
import secrets
import socket
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Any

MACHINE_ENV = "OUTPUTS_MACHINE"
RUN_ID_ENV = "OUTPUTS_RUN_ID"
#: The ``workerinput`` key under which an xdist controller hands its stamp to workers.
WORKERINPUT_KEY = "conformance_run_stamp"


@dataclass(frozen=True)
class RunStamp:
    """Which run this is: an id and when it started (ISO 8601, UTC, to the second)."""

    id: str
    started: str

    @classmethod
    def new(cls) -> RunStamp:
        now = datetime.now(timezone.utc).replace(microsecond=0)
        given = os.environ.get(RUN_ID_ENV, "").strip()
        # Sortable by time, and unique among runs started in the same second.
        made = f"{now:%Y%m%dT%H%M%SZ}-{secrets.token_hex(3)}"
        return cls(given or made, now.isoformat().replace("+00:00", "Z"))

    @classmethod
    def of(cls, data: Any) -> RunStamp | None:
        """The stamp ``as_json`` wrote, or None for anything else."""
        if isinstance(data, dict) and isinstance(data.get("id"), str):
            return cls(data["id"], str(data.get("started", "")))
        return None

    def as_json(self) -> dict[str, str]:
        return {"id": self.id, "started": self.started}


@dataclass(frozen=True)
class Provenance:
    """The report's ``machine``, ``vllm`` and ``run``, decided once per run."""

    machine: dict[str, Any]
    vllm: dict[str, Any]
    stamp: RunStamp

    @classmethod
    def of_run(cls, backend: Any, devices_available: list[str], stamp: RunStamp) -> Provenance:
        return cls(machine_of(devices_available), vllm_judged(backend), stamp)

    def header(self, platform_line: str) -> list[str]:
        """The terminal header's lines (``conformance: `` is the caller's)."""
        machine = self.machine
        devices = ", ".join(_device_text(d) for d in machine["devices"]) or "none"
        vllm = self.vllm
        if vllm["version"] is None:
            judged = "none (the backend holds no vLLM code)"
        elif vllm["text"]:
            judged = f"{vllm['version']}, from the release text {vllm['text']}"
        else:
            judged = f"{vllm['version']} (installed {vllm['distribution'] or 'vllm'})"
        return [
            f"machine {machine['name']} ({machine['name_source']}), {machine['os']}, "
            + platform_line,
            f"devices here: {devices}",
            f"vLLM judged: {judged}",
            f"run {self.stamp.id}, started {self.stamp.started}",
        ]


def machine_name() -> tuple[str, str]:
    """The machine's name and where it came from: ``$OUTPUTS_MACHINE``, else the host name."""
    given = os.environ.get(MACHINE_ENV, "").strip()
    if given:
        return given, MACHINE_ENV
    return socket.gethostname() or platform.node() or "unknown", "host name"


def machine_of(devices_available: list[str]) -> dict[str, Any]:
    from conformance.backends.devices import device_names

    name, source = machine_name()
    return {
        "name": name,
        "name_source": source,
        "os": platform.platform(),
        "devices": device_names(devices_available),
    }


def _device_text(device: dict[str, Any]) -> str:
    where = device["type"] if device.get("index") is None else f"{device['type']}:{device['index']}"
    return f"{where} {device['name']}"


def vllm_judged(backend: Any) -> dict[str, Any]:
    """The vLLM whose code ``backend`` holds (its types, or producers), else all None."""
    from conformance.backends.known import RELEASE_MODULE_PREFIX, installed_vllm

    none: dict[str, Any] = {"version": None, "distribution": None, "text": None}
    module = backend.module
    if _module_name(backend).startswith(RELEASE_MODULE_PREFIX):
        # vllm-release:X, a release text loaded under a module name of its own.
        return {**none, "version": backend.version, "text": getattr(module, "__file__", None)}
    if not _holds_vllm_code(backend):
        return none
    installed = installed_vllm()
    if installed is None:
        return none
    if installed.text is not None:
        return {**none, "version": installed.version, "text": installed.text}
    return {**none, "version": installed.version, "distribution": installed.distribution}


def _module_name(backend: Any) -> str:
    """The backend's module name (``Backend.module_name``; any object with a ``module``)."""
    name = getattr(backend, "module_name", None)
    return name if isinstance(name, str) else str(getattr(backend.module, "__name__", ""))


def _holds_vllm_code(backend: Any) -> bool:
    """Whether the backend's module, its types or its producers come from ``vllm``."""
    from conformance.spec_names import SPEC_NAMES

    def from_vllm(name: Any) -> bool:
        return isinstance(name, str) and (name == "vllm" or name.startswith("vllm."))

    module = backend.module
    held = [getattr(module, name, None) for name in SPEC_NAMES]
    producers = [
        backend.pad_sampled_token_ids,
        backend.unpad_sampled_token_ids,
        backend.gather_logprobs,
        backend.make_async_output,
    ]
    return from_vllm(_module_name(backend)) or any(
        from_vllm(getattr(thing, "__module__", None)) for thing in (*held, *producers) if thing
    )
