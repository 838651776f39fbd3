"""Version guards evaluated for the vLLM judged."""

from __future__ import annotations

import ast

import pytest

from conformance.crater.guards import Guard, module_tests


def _guard(module: str, condition: str, branch: bool = True) -> Guard:
    reader = module_tests(ast.parse(module))
    return Guard(reader.test_of(ast.parse(condition, mode="eval").body), branch, condition)


@pytest.mark.parametrize(
    ("condition", "version", "holds"),
    [
        ('vllm_version_is("0.33.0")', "0.33.0", True),
        ('vllm_version_is("0.33.0")', "0.34.0", False),
        ('vllm_version_is("0.33.0")', "0.33.0+ascend", True),
        ('Version(vllm.__version__) >= Version("0.34.0")', "0.34.0", True),
        ('Version(vllm.__version__) >= Version("0.34.0")', "0.33.0", False),
        ('version.parse(VLLM) < version.parse("0.20")', "0.19.1", True),
        ('"0.30.0" <= Version(vllm.__version__)', "0.29.0", False),
        ('not vllm_version_is("0.11.0") and OLD', "0.11.0", False),
        ('vllm_version_is("0.11.0") or config.x', "0.11.0", True),
        ("OLD", "0.25.0", True),
        ("OLD", "0.31.0", False),
    ],
)
def test_a_version_guard_holds_for_the_versions_it_names(
    condition: str, version: str, holds: bool
) -> None:
    module = 'import vllm\nVLLM = vllm.__version__\nOLD = Version(VLLM) < Version("0.30.0")\n'
    assert _guard(module, condition).holds(version) is holds
    assert _guard(module, condition, branch=False).holds(version) is (not holds)


def test_type_checking_never_runs_and_other_conditions_are_taken() -> None:
    assert _guard("", "TYPE_CHECKING").holds("0.34.0") is False
    assert _guard("", "TYPE_CHECKING", branch=False).holds("0.34.0") is True
    other = _guard("", "self.config.enable")
    assert other.holds("0.34.0") is None
    assert not other.is_version
    assert _guard("", 'vllm_version_is("0.33.0") or flag').holds("0.34.0") is None
