"""The suite beside other packages: where the ``conformance``, ``reference`` or ``reports``
Python imports is not the suite's, one line names it (exit 4); the console command runs
from a folder holding a ``conformance.py``; the docs never tell an author to write one."""

from __future__ import annotations

import re
import sys
from pathlib import Path

import conformance

CHECKOUT = Path(conformance.__file__).resolve().parents[1]
SUITE_NAMES = ("conformance", "reference", "reports", "reference_speedups")

# --- the docs -------------------------------------------------------------------------


def _documented_module_names() -> set[str]:
    names = set()
    for doc in ("README.md", "conformance/README.md", "examples/npu_plugin/README.md"):
        text = (CHECKOUT / doc).read_text(encoding="utf-8")
        names |= set(re.findall(r"# my_plugin/(\w+)\.py", text))
        names |= set(re.findall(r"\b(?:my|example_npu)_plugin\.(\w+):BACKEND", text))
    return names


def test_no_documented_module_of_a_plugin_is_named_like_a_module_it_imports() -> None:
    names = _documented_module_names()
    assert "conformance_backend" in names
    shadowing = {n for n in names if n in SUITE_NAMES or n in sys.stdlib_module_names}
    assert not shadowing, f"run from its folder, python -m would import these: {shadowing}"
    example = CHECKOUT / "examples" / "npu_plugin" / "example_npu_plugin"
    modules = {p.stem for p in example.glob("*.py")}
    assert not modules & {*SUITE_NAMES, *sys.stdlib_module_names} - {"__init__"}
