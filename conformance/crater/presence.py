"""Where a plugin's code has tested that an attribute exists, or that a value is
not None: ``if hasattr(out, "x")``, ``getattr(out, "x", None) is not None``, ``if xs:``,
through ``not``, ``and``, ``or``, an ``else`` and a comprehension's ``if``."""

from __future__ import annotations

import ast
from collections.abc import Callable, Iterator

from conformance.crater.syntax import exits

_SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)


def own_nodes(body: list[ast.stmt]) -> Iterator[ast.AST]:
    """Every node of ``body``, not those of the functions and classes it defines."""
    pending: list[ast.AST] = list(body)
    while pending:
        node = pending.pop()
        yield node
        if not isinstance(node, _SCOPES):
            pending.extend(ast.iter_child_nodes(node))


def truth_tested(test: ast.expr) -> Iterator[ast.expr]:
    """The expressions a test tests for truth or None: ``x``, ``x is not None``,
    through ``not``, ``and`` and ``or``."""
    if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
        yield from truth_tested(test.operand)
    elif isinstance(test, ast.BoolOp):
        for value in test.values:
            yield from truth_tested(value)
    elif none_compared(test):
        yield test.left  # type: ignore[attr-defined]
    elif isinstance(test, (ast.Name, ast.Attribute)):
        yield test


def tests_in(body: list[ast.stmt]) -> frozenset[int]:
    """The expressions (by id) ``body`` itself tests for truth or None: read there, a
    field that also takes None is handled (``if out.pooler_output:``)."""
    found: set[int] = set()
    for node in own_nodes(body):
        tests: list[ast.expr] = []
        if isinstance(node, (ast.If, ast.While, ast.IfExp, ast.Assert)):
            tests = [node.test]
        elif isinstance(node, ast.comprehension):
            tests = list(node.ifs)
        elif isinstance(node, ast.BoolOp):
            tests = list(node.values)
        for test in tests:
            found.update(id(tested) for tested in truth_tested(test))
    return frozenset(found)


def every_use_tested(body: list[ast.stmt], name: str) -> bool:
    """Whether every read of ``name`` in ``body`` (its own code) is a test of it for
    truth or None, or sits where one held (``xs[i] if xs else None``, under ``if xs:``,
    after ``if not xs: return``): a value bound to it that may be None is handled."""
    return _all_tested(body, name, guarded=False)


def _all_tested(statements: list[ast.stmt], name: str, guarded: bool) -> bool:
    for statement in statements:
        if not _tested_node(statement, name, guarded):
            return False
        if isinstance(statement, ast.If) and not statement.orelse and exits(statement.body):
            guarded = guarded or _holds_for(statement.test, name, False)
    return True


def _tested_node(
    node: ast.AST, name: str, guarded: bool, as_tests: frozenset[int] = frozenset()
) -> bool:
    """Whether every read of ``name`` in ``node`` is guarded, or one of ``as_tests``
    (reads that only test it for truth or None: ``if xs:``, ``xs is not None``)."""
    if isinstance(node, _SCOPES):
        return True
    if isinstance(node, (ast.If, ast.While, ast.IfExp)):
        tests = as_tests | {id(t) for t in truth_tested(node.test)}
        if not _tested_node(node.test, name, guarded, tests):
            return False  # ``if xs[0]:`` reads it beyond a test
        when_true = guarded or _holds_for(node.test, name, True)
        when_false = guarded or _holds_for(node.test, name, False)
        if isinstance(node, ast.IfExp):
            return _tested_node(node.body, name, when_true) and _tested_node(
                node.orelse, name, when_false
            )
        return _all_tested(node.body, name, when_true) and _all_tested(
            node.orelse, name, when_false
        )
    if isinstance(node, ast.BoolOp):
        reached = isinstance(node.op, ast.And)
        tests = as_tests | {id(t) for v in node.values for t in truth_tested(v)}
        earlier: list[ast.expr] = []
        for value in node.values:
            held = any(_holds_for(e, name, reached) for e in earlier)
            if not _tested_node(value, name, guarded or held, tests):
                return False
            earlier.append(value)
        return True
    if isinstance(node, ast.Name) and node.id == name and isinstance(node.ctx, ast.Load):
        return guarded or id(node) in as_tests
    return all(_tested_node(child, name, guarded, as_tests) for child in ast.iter_child_nodes(node))


def _holds_for(test: ast.expr, name: str, holds: bool) -> bool:
    """Whether ``name`` is neither None nor empty where ``test`` is ``holds``."""
    if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
        return _holds_for(test.operand, name, not holds)
    if isinstance(test, ast.BoolOp):
        if isinstance(test.op, ast.And) != holds:
            return False
        return any(_holds_for(v, name, holds) for v in test.values)
    if none_compared(test):
        is_not = isinstance(test.ops[0], ast.IsNot)  # type: ignore[attr-defined]
        left = test.left  # type: ignore[attr-defined]
        return isinstance(left, ast.Name) and left.id == name and is_not == holds
    return holds and isinstance(test, ast.Name) and test.id == name


def none_compared(test: ast.expr) -> bool:
    """``x is None`` or ``x is not None``."""
    return (
        isinstance(test, ast.Compare)
        and len(test.ops) == 1
        and isinstance(test.ops[0], (ast.Is, ast.IsNot))
        and isinstance(test.comparators[0], ast.Constant)
        and test.comparators[0].value is None
    )


def condition_text(test: ast.expr) -> str:
    """A condition as a record shows it, and as a use's guards are matched: one line."""
    return " ".join(ast.unparse(test).split())[:100]


def present_after_exit(
    node: ast.stmt, read: Callable[[ast.expr], ast.expr] = lambda test: test
) -> set[tuple[str, str]]:
    """What ``if not hasattr(x, "a"): return`` (no ``else``) leaves present after it;
    ``read``: the test as it is read (a flag as the test it was bound to)."""
    if not isinstance(node, ast.If) or node.orelse or not exits(node.body):
        return set()
    return present_when(read(node.test), False)


def present_when(test: ast.expr, holds: bool) -> set[tuple[str, str]]:
    """``(receiver, attribute)`` present where ``test`` is ``holds``: ``hasattr(x, "a")``
    true, ``not hasattr(x, "a")`` false (an ``else``, ``... or x.a``), through ``not``,
    every operand of an ``and`` that held and of an ``or`` that failed."""
    if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
        return present_when(test.operand, not holds)
    if isinstance(test, ast.BoolOp):
        if isinstance(test.op, ast.And) != holds:
            return set()  # one operand of several decided it: which is not known
        return set().union(*(present_when(v, holds) for v in test.values))
    if (
        not holds
        and isinstance(test, ast.Compare)
        and len(test.ops) == 1
        and isinstance(test.ops[0], ast.Is)
    ):
        # ``getattr(x, "a", None) is None`` failed: ``... is not None`` held.
        return attributes_tested(ast.Compare(test.left, [ast.IsNot()], test.comparators))
    return attributes_tested(test) if holds else set()


def absent_when(test: ast.expr, holds: bool) -> set[tuple[str, str]]:
    """``(receiver, attribute)`` absent where ``test`` is ``holds``: ``not hasattr(x,
    "a")`` true, ``hasattr(x, "a")`` false; a test of several operands tells nothing."""
    if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
        return absent_when(test.operand, not holds)
    if (
        not holds
        and isinstance(test, ast.Call)
        and isinstance(test.func, ast.Name)
        and test.func.id == "hasattr"
        and len(test.args) == 2
        and isinstance(test.args[1], ast.Constant)
    ):
        return {(ast.unparse(test.args[0]), str(test.args[1].value))}
    return set()


def attributes_tested(test: ast.expr) -> set[tuple[str, str]]:
    """``(receiver, attribute)`` a test holds only where the attribute exists, and is
    neither None nor empty where it reads it: ``hasattr(kv, "x")``, ``getattr(kv, "x",
    None)``, ``kv.x`` (``is not None`` too), under ``and``.  What such a test reads
    itself is judged where it stands."""
    if isinstance(test, ast.BoolOp) and isinstance(test.op, ast.And):
        return set().union(*(attributes_tested(v) for v in test.values))
    if isinstance(test, ast.Attribute):
        return {(ast.unparse(test.value), test.attr)}
    if (
        isinstance(test, ast.Compare)
        and len(test.ops) == 1
        and isinstance(test.ops[0], ast.IsNot)
        and isinstance(test.comparators[0], ast.Constant)
        and test.comparators[0].value is None
    ):
        left = test.left  # ``getattr(kv, "x", None) is not None``: the default must be None
        if isinstance(left, ast.Attribute):
            return {(ast.unparse(left.value), left.attr)}
        default = left.args[2] if isinstance(left, ast.Call) and len(left.args) == 3 else None
        if not (isinstance(default, ast.Constant) and default.value is None):
            return set()
        test = left
    if not (
        isinstance(test, ast.Call)
        and isinstance(test.func, ast.Name)
        and len(test.args) >= 2
        and isinstance(test.args[1], ast.Constant)
        and isinstance(test.args[1].value, str)
    ):
        return set()
    # getattr holds only where it found the attribute: its default must be falsy (a
    # missing getattr default raises, a truthy one passes the test without it).
    falsy = (
        len(test.args) == 3 and isinstance(test.args[2], ast.Constant) and not test.args[2].value
    )
    if (test.func.id == "hasattr" and len(test.args) == 2) or (test.func.id == "getattr" and falsy):
        return {(ast.unparse(test.args[0]), test.args[1].value)}
    return set()
