"""Version guards evaluated for the vLLM judged."""

from __future__ import annotations

import ast

import pytest

from conformance.crater.guards import Guard, module_tests, version_helpers

#: A plugin's version helpers, named freely (what vllm_version_is does, under other names).
HELPERS = """
from packaging.version import Version, parse


def vllm_version_ge(v: str) -> bool:
    import vllm

    return Version(vllm.__version__) >= Version(v)


def is_older_than(target):
    current = importlib.metadata.version("vllm")
    return parse(target) > parse(current)


def not_a_helper(target, other):
    return Version(vllm.__version__) >= Version(target)


def mixed(target):
    if target:
        return Version(vllm.__version__) >= Version(target)
    return config.enabled
"""


#: The test plugin's modules and what each defines at its top.
_DEFINES = {
    "npu": frozenset(),
    "npu.compat": frozenset({"vllm_version_ge", "is_older_than", "not_a_helper", "mixed"}),
    "npu.torch": frozenset({"vllm_version_ge"}),
}


def _own(called: ast.expr) -> str | None:
    """What a name resolves to in the test's plugin: the helpers' module's functions."""
    return f"plugin:npu.compat.{called.id}" if isinstance(called, ast.Name) else None


def _guard(module: str, condition: str, branch: bool = True) -> Guard:
    helpers = version_helpers([("npu.compat", ast.parse(HELPERS))], _DEFINES)
    reader = module_tests(ast.parse(module), helpers, _own)
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
        # vLLM's release as a tuple of ints, compared as Python compares tuples
        ("MINOR >= (0, 34)", "0.34.1", True),
        ("MINOR >= (0, 34)", "0.33.0", False),
        ("MINOR == (0, 34)", "0.34.1", True),  # (0, 34, 1)[:2] == (0, 34)
        ("MINOR > (0, 34)", "0.34.1", False),
        ("(0, 30) > RELEASE", "0.29.0", True),
        ("Version(vllm.__version__).release[:2] < (0, 12)", "0.11.2", True),
        ("tuple(map(int, vllm.__version__.split('.')[:3])) >= (0, 11, 1)", "0.11.0", False),
        # vLLM's own tuple of its version, whole, sliced, one component
        ("vllm.__version_tuple__[:2] >= (0, 34)", "0.34.0", True),
        ("vllm.__version_tuple__ >= (0, 34)", "0.33.0", False),
        ("TUPLE[:2] == (0, 33)", "0.33.0", True),
        ("vllm.__version_tuple__[1] >= 34", "0.33.0", False),
        ("34 <= vllm.version.__version_tuple__[1]", "0.34.1", True),
        ("MINOR[1] < 12", "0.11.2", True),
        # the version's text
        ('VLLM.startswith("0.33")', "0.33.0", True),
        ('vllm.__version__.startswith("0.33")', "0.34.0", False),
        # the plugin's own helpers comparing vLLM's version with their argument
        ('vllm_version_ge("0.34.0")', "0.34.0", True),
        ('vllm_version_ge("0.34.0")', "0.33.0", False),
        ('is_older_than("0.20.0")', "0.19.1", True),
        ('is_older_than("0.20.0")', "0.20.0", False),
    ],
)
def test_a_version_guard_holds_for_the_versions_it_names(
    condition: str, version: str, holds: bool
) -> None:
    module = (
        'import vllm\nVLLM = vllm.__version__\nOLD = Version(VLLM) < Version("0.30.0")\n'
        'MINOR = tuple(int(p) for p in vllm.__version__.split(".")[:2])\n'
        "RELEASE = parse(VLLM).release\n"
        "from vllm import __version_tuple__ as TUPLE\n"
    )
    assert _guard(module, condition).holds(version) is holds
    assert _guard(module, condition, branch=False).holds(version) is (not holds)


def test_type_checking_never_runs_and_other_conditions_are_taken() -> None:
    assert _guard("", "TYPE_CHECKING").holds("0.34.0") is False
    assert _guard("", "TYPE_CHECKING", branch=False).holds("0.34.0") is True
    other = _guard("", "self.config.enable")
    assert other.holds("0.34.0") is None
    assert not other.is_version
    assert _guard("", 'vllm_version_is("0.33.0") or flag').holds("0.34.0") is None


def test_only_a_function_that_always_compares_vllms_version_with_its_argument_is_a_helper() -> None:
    helpers = version_helpers([("npu.compat", ast.parse(HELPERS))], _DEFINES)
    assert helpers.symbols == {
        "plugin:npu.compat.vllm_version_ge": ">=",
        "plugin:npu.compat.is_older_than": "<",
    }
    # One a package of the plugin re-exports is the helper; a function of the same name
    # another module defines (scanned for helpers or not), or another distribution's,
    # is not.
    assert helpers.symbol_of("plugin:npu.vllm_version_ge") == ">="
    assert helpers.symbol_of("plugin:npu.torch.vllm_version_ge") is None
    assert helpers.symbol_of("plugin:torch_npu.utils.vllm_version_ge") is None


@pytest.mark.parametrize(
    "condition",
    [
        r"tuple(map(int, re.match(r'(\d+)\.(\d+)', vllm.__version__).groups())) == (0, 33)",
        "tuple(int(p) for p in vllm.__version__.split('.')[1:3]) >= (34, 0)",
        "MINOR[2] == 0",  # a component the tuple does not hold
        "vllm.__version_tuple__[-1] == 0",
    ],
)
def test_a_tuple_of_the_version_in_a_shape_not_known_is_no_version_test(condition) -> None:
    # Compared as all of the release's components, (0, 33, 0) == (0, 33) would be False
    # at 0.33.0: better taken (both branches judged) than decided wrongly.
    module = 'import vllm\nMINOR = tuple(int(p) for p in vllm.__version__.split(".")[:2])\n'
    assert _guard(module, condition).holds("0.33.0") is None
