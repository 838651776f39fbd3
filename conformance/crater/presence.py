"""Where a plugin's code has tested that an attribute exists, or that a value is
not None: ``if hasattr(out, "x")``, ``getattr(out, "x", None) is not None``, ``if xs:``,
through ``not``, ``and``, ``or``, an ``else`` and a comprehension's ``if``."""

from __future__ import annotations

import ast
from dataclasses import dataclass

from conformance.crater.syntax import exits


@dataclass(frozen=True)
class Tested:
    """What a body tests for truth or None: expressions (as written) and names.  A read
    of the same expression anywhere in the body counts: the body handles None."""

    expressions: frozenset[str]
    names: frozenset[str]


def tested_in(body: list[ast.stmt]) -> Tested:
    """What ``body`` tests for truth or None: the tests of its ``if``, ``while``,
    ``assert``, ``a if t else b`` and comprehensions, the operands of ``and``/``or``."""
    tests: list[ast.expr] = []
    for statement in body:
        for node in ast.walk(statement):
            if isinstance(node, (ast.If, ast.While, ast.IfExp, ast.Assert)):
                tests.append(node.test)
            elif isinstance(node, ast.comprehension):
                tests += node.ifs
            elif isinstance(node, ast.BoolOp):
                tests += node.values
    expressions: set[str] = set()
    names: set[str] = set()
    while tests:
        test = tests.pop()
        if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
            tests.append(test.operand)
        elif isinstance(test, ast.BoolOp):
            tests += test.values
        elif (
            isinstance(test, ast.Compare)
            and len(test.ops) == 1
            and isinstance(test.ops[0], (ast.Is, ast.IsNot))
            and isinstance(test.comparators[0], ast.Constant)
            and test.comparators[0].value is None
        ):
            tests.append(test.left)
        elif isinstance(test, ast.Name):
            names.add(test.id)
        elif isinstance(test, ast.Attribute):
            expressions.add(ast.unparse(test))
    return Tested(frozenset(expressions), frozenset(names))


def condition_text(test: ast.expr) -> str:
    """A condition as a record shows it, and as a use's guards are matched: one line."""
    return " ".join(ast.unparse(test).split())[:100]


def present_after_exit(node: ast.stmt) -> set[tuple[str, str]]:
    """What ``if not hasattr(x, "a"): return`` (no ``else``) leaves present after it."""
    if not isinstance(node, ast.If) or node.orelse or not exits(node.body):
        return set()
    return present_when(node.test, False)


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


def attributes_tested(test: ast.expr) -> set[tuple[str, str]]:
    """``(receiver, attribute)`` a test holds only where the attribute exists:
    ``hasattr(kv, "x")``, ``getattr(kv, "x", None)`` (``is not None`` too), under
    ``and``."""
    if isinstance(test, ast.BoolOp) and isinstance(test.op, ast.And):
        return set().union(*(attributes_tested(v) for v in test.values))
    if (
        isinstance(test, ast.Compare)
        and len(test.ops) == 1
        and isinstance(test.ops[0], ast.IsNot)
        and isinstance(test.comparators[0], ast.Constant)
        and test.comparators[0].value is None
    ):
        left = test.left  # ``getattr(kv, "x", None) is not None``: the default must be None
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
