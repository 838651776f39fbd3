"""What an async output inherits from vLLM's own, and what it must then hold itself.

A plugin subclass of one of vLLM's async outputs (``AsyncGPUModelRunnerOutput``,
``AsyncOutput``) that writes its own ``__init__`` without calling vLLM's, and leaves
``get_output()`` to vLLM's (not defining it, or calling ``super().get_output()``), runs
vLLM's ``get_output`` on the state its own ``__init__`` set.  Where a release's
``get_output`` reads an attribute its ``__init__`` sets (``self._num_nans_cpu`` from
0.28.0) that the plugin never sets, every step raises ``AttributeError``: vllm-omni
0.26.0's ``OmniAsyncGPUModelRunnerOutput`` at 0.28.0.

Both sides are read from text here.  vLLM's reads count only where ``get_output`` makes
them on every path (a read inside a branch may never run); the plugin's attributes are
every ``self.x = ...`` (and ``setattr(self, "x", ...)``) of its classes, and their
class-level names.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass

#: The methods whose chain decides what runs: the plugin's ``__init__`` and vLLM's
#: ``get_output``.
INIT, GET_OUTPUT = "__init__", "get_output"


@dataclass(frozen=True)
class VllmAsyncState:
    """One of vLLM's async output classes: what its ``get_output`` reads of ``self`` on
    every path, and what its ``__init__`` sets."""

    read: frozenset[str]
    set_by_init: frozenset[str]

    @property
    def needed(self) -> frozenset[str]:
        """What ``get_output`` reads that only ``__init__`` provides."""
        return self.read & self.set_by_init


@dataclass(frozen=True)
class PluginClassState:
    """A plugin class: what it sets on ``self``, and whether its ``__init__`` and
    ``get_output`` (where it defines them) hand on to its base's."""

    sets: frozenset[str] = frozenset()
    init_calls_base: bool = True
    get_output_calls_base: bool = True


def vllm_async_state(node: ast.ClassDef) -> VllmAsyncState:
    methods = _methods(node)
    init, get_output = methods.get(INIT), methods.get(GET_OUTPUT)
    read = frozenset(_read_on_every_path(get_output.body)) if get_output else frozenset()
    set_by_init = frozenset(_set_on_self(init)) if init else frozenset()
    return VllmAsyncState(read, set_by_init)


def plugin_class_state(node: ast.ClassDef) -> PluginClassState:
    methods = _methods(node)
    sets = set(_class_level_names(node))
    for method in methods.values():
        sets |= _set_on_self(method)
    return PluginClassState(
        frozenset(sets),
        INIT not in methods or _calls_base(methods[INIT], INIT),
        GET_OUTPUT not in methods or _calls_base(methods[GET_OUTPUT], GET_OUTPUT),
    )


def unset_by_plugin(
    chain: list[PluginClassState], vllm: VllmAsyncState | None
) -> frozenset[str] | None:
    """What vLLM's ``get_output`` reads that the plugin's classes (``chain``, the most
    derived first) never set, where their ``__init__`` does not reach vLLM's and
    vLLM's ``get_output`` runs; None where that is not the case."""
    if vllm is None or not any(not c.init_calls_base for c in chain):
        return None
    for state in chain:
        if not state.get_output_calls_base:
            return None  # the plugin's get_output is its own
        if not state.init_calls_base:
            break  # vLLM's __init__ never runs
    missing = vllm.needed - frozenset().union(*(c.sets for c in chain))
    return missing or None


def _methods(node: ast.ClassDef) -> dict[str, ast.FunctionDef | ast.AsyncFunctionDef]:
    return {n.name: n for n in node.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))}


def _class_level_names(node: ast.ClassDef) -> set[str]:
    found: set[str] = set()
    for statement in node.body:
        if isinstance(statement, ast.Assign):
            found |= {t.id for t in statement.targets if isinstance(t, ast.Name)}
        elif isinstance(statement, ast.AnnAssign) and isinstance(statement.target, ast.Name):
            found.add(statement.target.id)
        elif isinstance(statement, (ast.FunctionDef, ast.AsyncFunctionDef)):
            found.add(statement.name)  # a property or method of that name
    return found


def _set_on_self(function: ast.FunctionDef | ast.AsyncFunctionDef) -> set[str]:
    found: set[str] = set()
    for node in ast.walk(function):
        if (
            isinstance(node, ast.Attribute)
            and isinstance(node.ctx, ast.Store)
            and _is_self(node.value)
        ):
            found.add(node.attr)
        elif (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Name)
            and node.func.id == "setattr"
            and len(node.args) >= 2
            and _is_self(node.args[0])
            and isinstance(node.args[1], ast.Constant)
            and isinstance(node.args[1].value, str)
        ):
            found.add(node.args[1].value)
    return found


def _calls_base(function: ast.FunctionDef | ast.AsyncFunctionDef, method: str) -> bool:
    """Whether ``function`` calls its base's ``method``: ``super().method(...)``, or
    ``Base.method(self, ...)``."""
    for node in ast.walk(function):
        if not (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr == method
        ):
            continue
        owner = node.func.value
        if (
            isinstance(owner, ast.Call)
            and isinstance(owner.func, ast.Name)
            and owner.func.id == "super"
        ):
            return True
        if isinstance(owner, (ast.Name, ast.Attribute)) and not _is_self(owner):
            return True
    return False


def _read_on_every_path(body: list[ast.stmt]) -> set[str]:
    """The ``self.x`` a block reads (or deletes) whatever its branches: a branch's,
    a loop's or a handler's own statements may not run, its test does."""
    found: set[str] = set()
    for statement in body:
        if isinstance(statement, ast.If):
            found |= _read_in(statement.test)
        elif isinstance(statement, (ast.For, ast.AsyncFor)):
            found |= _read_in(statement.iter)
        elif isinstance(statement, ast.While):
            found |= _read_in(statement.test)
        elif isinstance(statement, (ast.With, ast.AsyncWith)):
            for item in statement.items:
                found |= _read_in(item.context_expr)
            found |= _read_on_every_path(statement.body)
        elif isinstance(statement, ast.Try):
            found |= _read_on_every_path(statement.body)
            found |= _read_on_every_path(statement.finalbody)
        elif isinstance(
            statement, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Match)
        ):
            continue
        elif isinstance(statement, ast.Delete):
            found |= {
                t.attr
                for t in statement.targets
                if isinstance(t, ast.Attribute) and _is_self(t.value)
            }
        else:
            found |= _read_in(statement)
        if isinstance(statement, (ast.Return, ast.Raise)):
            break
    return found


def _read_in(node: ast.AST) -> set[str]:
    """The ``self.x`` an expression or simple statement reads whatever its values: of
    ``a and b`` only ``a``, of ``x if t else y`` only ``t``; nothing of a lambda."""
    found: set[str] = set()
    pending = [node]
    while pending:
        current = pending.pop()
        if isinstance(current, ast.Attribute) and _is_self(current.value):
            if isinstance(current.ctx, ast.Load):
                found.add(current.attr)
            continue
        if isinstance(current, ast.BoolOp):
            pending.append(current.values[0])
        elif isinstance(current, ast.IfExp):
            pending.append(current.test)
        elif isinstance(current, _DEFERRED):
            continue
        else:
            pending.extend(ast.iter_child_nodes(current))
    return found


#: Expressions whose parts run later, or once per element (perhaps never).
_DEFERRED = (ast.Lambda, ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)


def _is_self(node: ast.AST) -> bool:
    return isinstance(node, ast.Name) and node.id == "self"
