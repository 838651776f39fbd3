"""pytest plugin of the conformance suite (registered through the pytest11 entry point)."""

from __future__ import annotations

import pytest


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("conformance", "vllm.v1.outputs conformance suite")
    group.addoption(
        "--backend",
        default=None,
        help="backend to check: a module path, module:attribute naming a "
        "conformance.Backend, or an entry-point name (default: $OUTPUTS_BACKEND, "
        "else 'reference')",
    )
