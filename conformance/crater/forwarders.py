"""Plugin functions that pass their ``**kwargs`` on to one call: a helper such as
``def make_output(**fields): fields.setdefault(...); return ModelRunnerOutput(**fields)``
builds what its callers' keywords say, so each call of it is a construction."""

from __future__ import annotations

import ast
from dataclasses import dataclass


@dataclass(frozen=True)
class Forwarder:
    """A function handing its ``**kwargs`` to one call, with what it adds and removes."""

    module: str  #: where ``called`` is resolved
    called: ast.expr  #: what the function calls with its ``**kwargs``
    positional: int  #: the positional arguments of that call
    keywords: tuple[str, ...]  #: keywords the function itself passes or adds
    removed: frozenset[str]  #: keys it takes out of the caller's
    open_ended: bool  #: the call also takes ``*args`` or another ``**dict``
    #: its own parameters a keyword can name: a caller's keyword of one of these binds it,
    #: and never reaches ``**kwargs`` (a positional-only one's name does)
    parameters: frozenset[str] = frozenset()


def forwarder_of(module: str, node: ast.FunctionDef | ast.AsyncFunctionDef) -> Forwarder | None:
    """The function as a :class:`Forwarder`, where its ``**kwargs`` reach one call and are
    otherwise only given keys (``d.setdefault("k", v)``, ``d["k"] = v``) or lose them
    (``d.pop("k")``, ``del d["k"]``), each in the function's own top-level statements.
    Anything else done with them (a test, a loop, another call) leaves it unknown, None:
    what the call gets could no longer be told from the caller's keywords."""
    if node.args.kwarg is None:
        return None
    name = node.args.kwarg.arg
    added: list[str] = []
    removed: set[str] = set()
    for statement in node.body:
        if not _mentions(statement, name):
            continue
        change = _key_change(statement, name)
        if change is not None:
            key, added_here = change
            added = [k for k in added if k != key] + ([key] if added_here else [])
            if added_here:
                removed.discard(key)
            else:
                removed.add(key)
            continue
        call = _forwarding_call(statement, name)
        if call is None:
            return None
        own = [k.arg for k in call.keywords if k.arg is not None]
        others = [k for k in call.keywords if k.arg is None and not _is_name(k.value, name)]
        return Forwarder(
            module,
            call.func,
            sum(not isinstance(a, ast.Starred) for a in call.args),
            tuple(dict.fromkeys([*own, *added])),
            frozenset(removed),
            bool(others) or any(isinstance(a, ast.Starred) for a in call.args),
            frozenset(a.arg for a in (*node.args.args, *node.args.kwonlyargs)),
        )
    return None


def _is_name(node: ast.expr, name: str) -> bool:
    return isinstance(node, ast.Name) and node.id == name


def _mentions(node: ast.AST, name: str) -> bool:
    return any(_is_name(n, name) for n in ast.walk(node) if isinstance(n, ast.expr))


def _string(node: ast.expr) -> str | None:
    return node.value if isinstance(node, ast.Constant) and isinstance(node.value, str) else None


def _key_change(statement: ast.stmt, name: str) -> tuple[str, bool] | None:
    """``(key, True)`` for ``d.setdefault("k", v)`` or ``d["k"] = v`` (a value not naming
    ``d``), ``(key, False)`` for ``d.pop("k"[, default])`` or ``del d["k"]``."""
    if isinstance(statement, ast.Expr) and isinstance(statement.value, ast.Call):
        call = statement.value
        if isinstance(call.func, ast.Attribute) and _is_name(call.func.value, name) and call.args:
            method, key = call.func.attr, _string(call.args[0])
            if method == "setdefault" and len(call.args) == 2 and not _mentions(call.args[1], name):
                return (key, True) if key is not None else None
            if method == "pop":
                return (key, False) if key is not None else None
        return None
    if isinstance(statement, (ast.Assign, ast.Delete)) and len(statement.targets) == 1:
        target = statement.targets[0]
        if not (isinstance(target, ast.Subscript) and _is_name(target.value, name)):
            return None
        key = _string(target.slice)
        if isinstance(statement, ast.Delete):
            return (key, False) if key is not None else None
        if not _mentions(statement.value, name):
            return (key, True) if key is not None else None
    return None


def _forwarding_call(statement: ast.stmt, name: str) -> ast.Call | None:
    """``return f(..., **d)``, ``x = f(..., **d)`` or ``f(..., **d)``, where ``d`` is
    nowhere else in the statement."""
    value = statement.value if isinstance(statement, (ast.Return, ast.Assign, ast.Expr)) else None
    if not isinstance(value, ast.Call):
        return None
    passed = [k for k in value.keywords if k.arg is None and _is_name(k.value, name)]
    if len(passed) != 1:
        return None
    rest = [value.func, *value.args, *(k.value for k in value.keywords if k is not passed[0])]
    if any(_mentions(part, name) for part in rest):
        return None
    if isinstance(statement, ast.Assign) and any(_mentions(t, name) for t in statement.targets):
        return None
    return value
