"""Whether a method's changed body still answers as before for a plugin's objects.

vLLM grows ``KVConnectorOutput.is_empty`` with each field it adds to the type:
``return not self.finished_sending and ... and not self.failed_recving``.  For an object
that leaves the new field at its default (a plugin written before the field existed
never sets it) the added term is ``not set()``, true, and the method returns what it
did.  Such a change is no break of the plugin's call; any other change of a body is.

Only that shape is recognised, on vLLM's own texts: a body that is one ``return`` of
an ``and`` (or ``or``) of terms, the pin's terms kept in order, each term added reading
only fields the pin's class lacks, whose defaults are literals or an empty
``default_factory``, and which is true (for ``or``: false) at those defaults.
"""

from __future__ import annotations

import ast
from types import SimpleNamespace

#: ``field(default_factory=...)`` values evaluated: empty containers only.
_EMPTY_FACTORIES = {"set": set, "list": list, "dict": dict, "tuple": tuple, "frozenset": frozenset}
#: What an added term may call when evaluated.
_TERM_BUILTINS = {"len": len, "bool": bool, "any": any, "all": all}


def answers_as_before(
    before_text: str, after_text: str, cls: str, method: str, set_by_plugin: set[str]
) -> bool:
    """Whether ``cls.method`` of ``after_text`` returns what it did in ``before_text``
    for an object whose fields added since leave their defaults (none of them is in
    ``set_by_plugin``, the fields the plugin passes or writes)."""
    before_class, after_class = _class(before_text, cls), _class(after_text, cls)
    if before_class is None or after_class is None:
        return False
    before_return, after_return = _returned(before_class, method), _returned(after_class, method)
    if before_return is None or after_return is None:
        return False
    if not isinstance(after_return, ast.BoolOp):
        return False
    operator = type(after_return.op)
    kept = (
        before_return.values
        if isinstance(before_return, ast.BoolOp) and isinstance(before_return.op, operator)
        else [before_return]
    )
    added = _added_terms(kept, after_return.values)
    if added is None:
        return False
    new_fields = _defaults(after_class)
    for name in _fields(before_class):
        new_fields.pop(name, None)
    wanted = isinstance(after_return.op, ast.And)
    return all(_neutral(term, new_fields, set_by_plugin, wanted) for term in added)


def _class(text: str, name: str) -> ast.ClassDef | None:
    try:
        tree = ast.parse(text)
    except SyntaxError:
        return None
    return next((n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == name), None)


def _returned(cls: ast.ClassDef, method: str) -> ast.expr | None:
    """The expression a method's body is one ``return`` of (its docstring aside)."""
    found = next((n for n in cls.body if isinstance(n, ast.FunctionDef) and n.name == method), None)
    if found is None:
        return None
    body = found.body
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
        if not (
            isinstance(node, ast.AnnAssign)
            and isinstance(node.target, ast.Name)
            and node.value is not None
        ):
            continue
        value = _default_of(node.value)
        if value is not _UNKNOWN:
            found[node.target.id] = value
    return found


_UNKNOWN = object()


def _default_of(node: ast.expr) -> object:
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "field":
        for keyword in node.keywords:
            if keyword.arg == "default_factory" and isinstance(keyword.value, ast.Name):
                factory = _EMPTY_FACTORIES.get(keyword.value.id)
                return factory() if factory is not None else _UNKNOWN
            if keyword.arg == "default":
                return _default_of(keyword.value)
        return _UNKNOWN
    try:
        return ast.literal_eval(node)
    except ValueError:
        return _UNKNOWN


def _neutral(
    term: ast.expr, new_fields: dict[str, object], set_by_plugin: set[str], wanted: bool
) -> bool:
    """Whether ``term`` reads only fields added since the pin that the plugin leaves at
    their defaults, and is ``wanted`` (true under ``and``, false under ``or``) there."""
    read = {
        node.attr
        for node in ast.walk(term)
        if isinstance(node, ast.Attribute)
        and isinstance(node.value, ast.Name)
        and node.value.id == "self"
    }
    names = {node.id for node in ast.walk(term) if isinstance(node, ast.Name)} - {"self"}
    if not read or not read <= set(new_fields) or read & set_by_plugin:
        return False
    if not names <= set(_TERM_BUILTINS):
        return False
    if any(
        isinstance(node, ast.Attribute)
        and not (isinstance(node.value, ast.Name) and node.value.id == "self")
        for node in ast.walk(term)
    ):
        return False  # a method of a default: not evaluated
    defaults = SimpleNamespace(**{name: new_fields[name] for name in read})
    try:
        value = eval(
            compile(ast.Expression(term), "<term>", "eval"),
            {"__builtins__": _TERM_BUILTINS},
            {"self": defaults},
        )
    except Exception:
        return False
    return bool(value) is wanted
