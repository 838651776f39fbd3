"""Dictionaries a plugin function builds to pass as ``**kwargs``: the keys each is
known to hold, and the tests each key is added under."""

from __future__ import annotations

import ast
from collections.abc import Callable
from dataclasses import dataclass, field

from conformance.crater.guards import Guard
from conformance.crater.syntax import under_tests


@dataclass(frozen=True)
class KeyTests:
    """What a test says to the dictionaries built under it."""

    strings: Callable[[ast.expr], frozenset[str]]  #: the strings a test names
    version: Callable[[ast.expr, bool], Guard | None]  #: its version guard, if one


NO_KEY_TESTS = KeyTests(lambda test: frozenset(), lambda test, branch: None)


#: The guards a key is passed under: each alternative's guards must all hold.
Alternatives = tuple[tuple[Guard, ...], ...]


@dataclass
class KeywordDict:
    """A dictionary built to be passed as ``**kwargs``."""

    keys: set[str]  #: passed wherever the call runs
    known: bool  #: every key it can hold is known
    #: keys added under tests, with the guards of each place they are added at
    guarded: dict[str, Alternatives] = field(default_factory=dict)
    #: keys added where a test names them: passed where vLLM's type has the field
    tested: set[str] = field(default_factory=set)

    def add(self, key: str, above: tuple[tuple[ast.expr, bool], ...], tests: KeyTests) -> None:
        """Sorts a key by the tests it is added under (read only here: most keys are
        added under none, and a module's tests are many)."""
        if any(key in tests.strings(test) for test, _ in above):
            # ``if "k" in T.__dataclass_fields__:``, or a flag bound to such a test
            self.tested.add(key)
            return
        guards = tuple(g for test, branch in above if (g := tests.version(test, branch)))
        if guards:
            self._guard(key, (guards,))
        else:
            self.keys.add(key)
            self.guarded.pop(key, None)  # passed wherever the call runs: once

    def take(self, key: str, conditionally: bool) -> None:
        """``key`` taken away (``del d["k"]``, ``d.pop("k")``): never passed after; taken
        under a test, whether it is there is no longer known."""
        self.keys.discard(key)
        self.guarded.pop(key, None)
        self.tested.discard(key)
        self.known = self.known and not conditionally

    def merge(self, other: KeywordDict) -> None:
        """``other``'s keys too: the other side of a conditional expression."""
        self.known = self.known and other.known
        self.tested |= other.tested
        self.keys |= other.keys
        for key, alternatives in other.guarded.items():
            self._guard(key, alternatives)
        for key in self.keys & set(self.guarded):
            del self.guarded[key]

    def _guard(self, key: str, alternatives: Alternatives) -> None:
        """``key`` passed under ``alternatives`` too; passed always where both sides of
        one test pass it (``{"k": 1} if T else {"k": 2}``)."""
        merged = _joined((*self.guarded.get(key, ()), *alternatives))
        if () in merged:
            self.keys.add(key)
            self.guarded.pop(key, None)
        elif key not in self.keys:
            self.guarded[key] = merged


def _joined(alternatives: Alternatives) -> Alternatives:
    """``alternatives`` with any two that differ only in their last guard, one test's two
    branches, made one: their common guards."""
    found = list(dict.fromkeys(alternatives))
    joined = True
    while joined:
        joined = False
        for a in found:
            for b in found:
                if a is not b and a[:-1] == b[:-1] and a and b and _opposite(a[-1], b[-1]):
                    found = [x for x in found if x is not a and x is not b]
                    found.append(a[:-1])
                    joined = True
                    break
            if joined:
                break
    return tuple(dict.fromkeys(found))


def _opposite(a: Guard, b: Guard) -> bool:
    return a.test == b.test and a.branch != b.branch


def built_dict(
    value: ast.expr,
    tests: KeyTests = NO_KEY_TESTS,
    named: Callable[[str], KeywordDict | None] = lambda name: None,
    above: tuple[tuple[ast.expr, bool], ...] = (),
) -> KeywordDict | None:
    """The keys of a dictionary expression: a literal, ``dict(k=...)``, a dictionary built
    before (``named``), or either side of ``A if T else B``, each side's keys added under
    its side of ``T``; None for anything else."""
    if isinstance(value, ast.IfExp):
        merged: KeywordDict | None = None
        for side, branch in ((value.body, True), (value.orelse, False)):
            part = built_dict(side, tests, named, (*above, (value.test, branch)))
            if part is None:
                return None
            if merged is None:
                merged = part
            else:
                merged.merge(part)
        return merged
    if isinstance(value, ast.Name):
        built = named(value.id)
        if built is None or not above:
            return built
        copied = KeywordDict(set(), built.known, dict(built.guarded), set(built.tested))
        for key in built.keys:
            copied.add(key, above, tests)
        return copied
    if isinstance(value, ast.Dict):
        keys = [str(k.value) for k in value.keys if isinstance(k, ast.Constant)]
        built = KeywordDict(set(), all(isinstance(k, ast.Constant) for k in value.keys))
    elif (
        isinstance(value, ast.Call) and isinstance(value.func, ast.Name) and value.func.id == "dict"
    ):
        keys = [k.arg for k in value.keywords if k.arg]
        built = KeywordDict(set(), not value.args and all(k.arg for k in value.keywords))
    else:
        return None
    for key in keys:
        built.add(key, above, tests)
    return built


def dicts_in(body: list[ast.stmt], tests: KeyTests = NO_KEY_TESTS) -> dict[str, KeywordDict]:
    """Dictionaries a function builds before passing them as ``**kwargs``: their keys
    from a literal, ``dict(k=...)`` (annotated or not), either side of ``A if T else B``,
    ``d["k"] = ...``, ``d.update(k=...)`` and ``d.setdefault("k", ...)``, each as
    :meth:`KeywordDict.add` sorts it by the tests it sits under."""
    found: dict[str, KeywordDict] = {}
    for node, above in under_tests(body):
        assigned: tuple[ast.expr, ast.expr] | None = None
        if isinstance(node, ast.Assign) and len(node.targets) == 1:
            assigned = node.targets[0], node.value
        elif isinstance(node, ast.AnnAssign) and node.value is not None:
            assigned = node.target, node.value  # ``kwargs: dict[str, Any] = {...}``
        if assigned is not None:
            target, value = assigned
            if isinstance(target, ast.Name):
                built = built_dict(value, tests, found.get)
                if built is not None and not isinstance(value, ast.Name):
                    found[target.id] = built
            elif (keyed := _key_of(target, found)) is not None:
                built, key = keyed
                if key is not None:
                    built.add(key, above, tests)
                else:
                    built.known = False
        elif (
            isinstance(node, ast.Expr)
            and isinstance(node.value, ast.Call)
            and isinstance(node.value.func, ast.Attribute)
            and isinstance(node.value.func.value, ast.Name)
            and node.value.func.value.id in found
        ):
            built = found[node.value.func.value.id]
            method, arguments = node.value.func.attr, node.value.args
            if method == "update":
                for keyword in node.value.keywords:
                    if keyword.arg:
                        built.add(keyword.arg, above, tests)
                if arguments:
                    built.known = False
            elif method == "setdefault" and arguments and isinstance(arguments[0], ast.Constant):
                built.add(str(arguments[0].value), above, tests)  # ``d.setdefault("k", v)``
            elif method == "pop" and arguments and isinstance(arguments[0], ast.Constant):
                built.take(str(arguments[0].value), bool(above))
            elif method in ("pop", "popitem", "clear", "setdefault"):
                built.known = False  # a key taken away, or one not spelt out
        elif isinstance(node, ast.Delete):
            for target in node.targets:  # ``del d["k"]``: a key taken away
                if (keyed := _key_of(target, found)) is not None:
                    built, key = keyed
                    if key is not None:
                        built.take(key, bool(above))
                    else:
                        built.known = False
    return found


def _key_of(
    target: ast.expr, found: dict[str, KeywordDict]
) -> tuple[KeywordDict, str | None] | None:
    """``d["k"]`` of a dictionary in ``found``: it and its key (None: a key not spelt out)."""
    if not (
        isinstance(target, ast.Subscript)
        and isinstance(target.value, ast.Name)
        and target.value.id in found
    ):
        return None
    key = str(target.slice.value) if isinstance(target.slice, ast.Constant) else None
    return found[target.value.id], key
