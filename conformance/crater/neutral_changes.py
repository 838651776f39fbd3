"""Whether a method's changed body still answers as before for a plugin's objects.

vLLM grows ``KVConnectorOutput.is_empty`` with each field it adds to the type:
``return not self.finished_sending and ... and not self.failed_recving``.  For an object
that leaves the new field at its default (a plugin written before the field existed
never sets it) the added term is ``not set()``, true, and the method returns what it
did.  Such a change is no break of the plugin's call; any other change of a body is.

Only that shape is recognised, on vLLM's own texts: the method's signature and
decorators the same, a body that is one ``return`` of an ``and`` (or ``or``) of terms
that are each true or false (``not x``, a comparison, ``bool(x)``), the pin's terms
kept in order, each term added reading only fields the pin's class lacks, whose
defaults are literals or an empty ``default_factory``, and which is true (for ``or``:
false) at those defaults.  The terms are evaluated by a small interpreter of those
forms, never by Python's own: nothing in a text can make it run anything, or long.
"""

from __future__ import annotations

import ast
import functools
import operator
from collections.abc import Callable

#: ``field(default_factory=...)`` values known: empty containers only.
_EMPTY_FACTORIES: dict[str, Callable[[], object]] = {
    "set": set, "list": list, "dict": dict, "tuple": tuple, "frozenset": frozenset,
}  # fmt: skip
_COMPARISONS: dict[type, Callable[[object, object], object]] = {
    ast.Eq: operator.eq, ast.NotEq: operator.ne, ast.Is: operator.is_, ast.IsNot: operator.is_not,
    ast.In: lambda a, b: operator.contains(b, a),  # type: ignore[arg-type]
    ast.NotIn: lambda a, b: not operator.contains(b, a),  # type: ignore[arg-type]
}  # fmt: skip
_UNKNOWN = object()


def answers_as_before(
    before_text: str, after_text: str, cls: str, method: str, set_by_plugin: set[str]
) -> bool:
    """Whether ``cls.method`` of ``after_text`` returns what it did in ``before_text``
    for an object whose fields added since leave their defaults (none of them is in
    ``set_by_plugin``, the fields the plugin passes, reads or writes)."""
    before_class, after_class = _class(before_text, cls), _class(after_text, cls)
    if before_class is None or after_class is None:
        return False
    before_def, after_def = _method(before_class, method), _method(after_class, method)
    if before_def is None or after_def is None or not _same_signature(before_def, after_def):
        return False
    before_return, after_return = _returned(before_def), _returned(after_def)
    if before_return is None or not isinstance(after_return, ast.BoolOp):
        return False
    kind = type(after_return.op)
    kept = (
        before_return.values
        if isinstance(before_return, ast.BoolOp) and isinstance(before_return.op, kind)
        else [before_return]
    )
    added = _added_terms(kept, after_return.values)
    if added is None or not added or not all(map(_is_truth, after_return.values)):
        return False
    new_fields = _defaults(after_class)
    for name in _fields(before_class):
        new_fields.pop(name, None)
    wanted = isinstance(after_return.op, ast.And)
    return all(_neutral(term, new_fields, set_by_plugin, wanted) for term in added)


def _class(text: str, name: str) -> ast.ClassDef | None:
    tree = _parsed(text)
    if tree is None:
        return None
    return next((n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == name), None)


@functools.lru_cache(maxsize=8)
def _parsed(text: str) -> ast.Module | None:
    """An ``outputs.py`` text parsed once: a run asks about a pin's and a target's, use
    after use (the trees are only read)."""
    try:
        return ast.parse(text)
    except (SyntaxError, ValueError):
        return None


def _method(cls: ast.ClassDef, name: str) -> ast.FunctionDef | None:
    return next((n for n in cls.body if isinstance(n, ast.FunctionDef) and n.name == name), None)


def _same_signature(before: ast.FunctionDef, after: ast.FunctionDef) -> bool:
    """The same parameters and decorators (a ``@property`` now, a parameter more: a
    change to every caller, whatever the body)."""
    return ast.dump(before.args) == ast.dump(after.args) and [
        ast.dump(d) for d in before.decorator_list
    ] == [ast.dump(d) for d in after.decorator_list]


def _returned(function: ast.FunctionDef) -> ast.expr | None:
    """The expression a method's body is one ``return`` of (its docstring aside)."""
    body = function.body
    if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
        body = body[1:]
    if len(body) != 1 or not isinstance(body[0], ast.Return) or body[0].value is None:
        return None
    return body[0].value


def _added_terms(kept: list[ast.expr], now: list[ast.expr]) -> list[ast.expr] | None:
    """The terms of ``now`` beyond ``kept``, where ``kept`` are all in it, in order."""
    remaining = [ast.dump(term) for term in kept]
    added = []
    for term in now:
        if remaining and ast.dump(term) == remaining[0]:
            remaining.pop(0)
        else:
            added.append(term)
    return added if not remaining else None


def _is_truth(term: ast.expr) -> bool:
    """A term whose value is True or False (``and`` hands back a term's value itself)."""
    if isinstance(term, ast.UnaryOp) and isinstance(term.op, ast.Not):
        return True
    if isinstance(term, ast.Compare):
        return True
    return (
        isinstance(term, ast.Call)
        and isinstance(term.func, ast.Name)
        and term.func.id == "bool"
        and len(term.args) == 1
    )


def _fields(cls: ast.ClassDef) -> set[str]:
    return {
        n.target.id
        for n in cls.body
        if isinstance(n, ast.AnnAssign) and isinstance(n.target, ast.Name)
    }


def _defaults(cls: ast.ClassDef) -> dict[str, object]:
    """The class's fields whose default value is known without running vLLM's code."""
    found: dict[str, object] = {}
    for node in cls.body:
        if (
            isinstance(node, ast.AnnAssign)
            and isinstance(node.target, ast.Name)
            and node.value is not None
        ):
            value = _default_of(node.value)
            if value is not _UNKNOWN:
                found[node.target.id] = value
    return found


def _default_of(node: ast.expr) -> object:
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "field":
        for keyword in node.keywords:
            if keyword.arg == "default_factory" and isinstance(keyword.value, ast.Name):
                factory = _EMPTY_FACTORIES.get(keyword.value.id)
                return factory() if factory is not None else _UNKNOWN
            if keyword.arg == "default":
                return _default_of(keyword.value)
        return _UNKNOWN
    if isinstance(node, ast.Constant) and isinstance(node.value, (bool, int, str, type(None))):
        return node.value
    return _empty_literal(node)


def _empty_literal(node: ast.expr) -> object:
    """``[]``, ``()``, ``{}``: their value; anything else unknown."""
    if isinstance(node, ast.List) and not node.elts:
        return []
    if isinstance(node, ast.Tuple) and not node.elts:
        return ()
    if isinstance(node, ast.Dict) and not node.keys:
        return {}
    return _UNKNOWN


def _neutral(
    term: ast.expr, new_fields: dict[str, object], set_by_plugin: set[str], wanted: bool
) -> bool:
    """Whether ``term`` reads only fields added since the pin that the plugin leaves at
    their defaults, and is ``wanted`` (True under ``and``, False under ``or``) there."""
    read = {
        node.attr
        for node in ast.walk(term)
        if isinstance(node, ast.Attribute)
        and isinstance(node.value, ast.Name)
        and node.value.id == "self"
    }
    if not read or not read <= set(new_fields) or read & set_by_plugin:
        return False
    return _value(term, new_fields) is wanted


def _value(node: ast.expr, fields: dict[str, object]) -> object:
    """The value of a term over the fields' defaults, for the forms a term of this shape
    takes (``not``, ``and``/``or``, comparisons, ``len``/``bool``, ``self.x``,
    constants); ``_UNKNOWN`` for anything else."""
    if isinstance(node, ast.Constant):
        return node.value
    if isinstance(node, (ast.List, ast.Tuple, ast.Dict)):
        return _empty_literal(node)
    if isinstance(node, ast.Attribute):
        if isinstance(node.value, ast.Name) and node.value.id == "self":
            return fields.get(node.attr, _UNKNOWN)
        return _UNKNOWN
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
        inner = _value(node.operand, fields)
        return _UNKNOWN if inner is _UNKNOWN else not inner
    if isinstance(node, ast.BoolOp):
        values = [_value(v, fields) for v in node.values]
        if _UNKNOWN in values:
            return _UNKNOWN
        result = values[0]
        for value in values[1:]:
            if bool(result) is not isinstance(node.op, ast.And):
                break
            result = value
        return result
    if isinstance(node, ast.Compare) and len(node.ops) == 1:
        compare = _COMPARISONS.get(type(node.ops[0]))
        left, right = _value(node.left, fields), _value(node.comparators[0], fields)
        if compare is None or _UNKNOWN in (left, right):
            return _UNKNOWN
        try:
            return bool(compare(left, right))
        except TypeError:
            return _UNKNOWN
    if (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Name)
        and node.func.id in ("len", "bool")
        and len(node.args) == 1
        and not node.keywords
    ):
        inner = _value(node.args[0], fields)
        if inner is _UNKNOWN:
            return _UNKNOWN
        try:
            return len(inner) if node.func.id == "len" else bool(inner)  # type: ignore[arg-type]
        except TypeError:
            return _UNKNOWN
    return _UNKNOWN
