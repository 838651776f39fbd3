"""The installed suite's version (for the report and the header)."""

from __future__ import annotations

import importlib.metadata


def suite_version() -> str | None:
    try:
        return importlib.metadata.version("vllm-outputs-suite")
    except importlib.metadata.PackageNotFoundError:
        return None
