"""A plugin's modules as one world: what each name is bound to, across its imports and
re-exports, and every class it defines followed up to its bases."""

from __future__ import annotations

import ast
import functools
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import PurePosixPath

from conformance.crater.forwarders import Forwarder, forwarder_of
from conformance.crater.guards import Test, imports_taking
from conformance.crater.inherited_state import PluginClassState, plugin_class_state
from conformance.crater.syntax import (
    bindings_counted,
    catches,
    decorated,
    identifier,
    module_imported,
    own_statements,
    tail_name,
    value_bound,
    walked,
)
from conformance.crater.vllm_names import (
    EMPTY,
    JUDGED_MODULES,
    JUDGED_TYPES,
    OUTPUTS,
    PRODUCER_CALLS,
    VLLM_ASYNC_OUTPUTS,
    is_judged,
    output_type_reexported,
)

#: What an async output may be handed beside its rows, by the word its code names it
#: with (``num_nans``) and the part of the behaviours' names that asks for it. A class
#: that never names the word leaves the thing to its runner, or its runner has none.
HANDED_OVER_BY_WORD = {
    "logprob": "logprobs",
    "nans": "nan-counts",
    "routed": "routed-experts",
    "sampling_mask": "sampling-masks",
}


@dataclass
class PluginClass:
    """A class the plugin defines: its bases as resolved names and what it defines."""

    module: str
    name: str
    file: str
    line: int
    bases: list[str]
    methods: set[str]
    is_dataclass: bool
    fields: list[tuple[str, bool]]
    abstract: bool
    #: the words of :data:`HANDED_OVER_BY_WORD` its code names at all
    handles: frozenset[str] = frozenset()
    attribute_types: dict[str, str] = field(default_factory=dict)
    #: ``self.x`` holding an instance of one plugin class, by ``x``
    attribute_classes: dict[str, str] = field(default_factory=dict)
    #: what it sets on ``self``, and whether its ``__init__``/``get_output`` call its base's
    state: PluginClassState = field(default_factory=PluginClassState)

    @property
    def qualified(self) -> str:
        return f"plugin:{self.module}.{self.name}"


def module_name(path: str) -> str:
    """The dotted module of a file in a distribution (``src/`` layouts too)."""
    parts = list(PurePosixPath(path).with_suffix("").parts)
    if parts and parts[0] == "src":
        parts = parts[1:]
    if parts and parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(parts)


class World:
    """Every module's bindings and classes, to resolve a name across the plugin."""

    def __init__(
        self, trees: dict[str, tuple[str, ast.Module]], known: World | None = None
    ) -> None:
        """``known``: a world of some of the same trees, whose per-module facts are
        taken rather than read again (the plugin's files are read in rounds)."""
        self.trees = trees
        self.bindings: dict[str, dict[str, str]] = {}
        self.classes: dict[str, PluginClass] = {}
        #: ``plugin:mod.f`` and ``plugin:mod.Class.f`` -> (its module, its return annotation)
        self.returns: dict[str, tuple[str, ast.expr]] = {}
        #: ``plugin:mod.f`` and ``plugin:mod.Class.f`` handing their ``**kwargs`` on
        self.forwarders: dict[str, Forwarder] = {}
        #: ``plugin:mod.f`` and ``plugin:mod.Class.f`` -> its definition
        self.functions: dict[str, ast.FunctionDef | ast.AsyncFunctionDef] = {}
        #: the plugin's top-level packages and modules
        self.tops = {module.split(".")[0] for module in trees}
        #: ``{module: {fallback target: Fallback}}``: a name bound by ``try: from a import
        #: X`` and, where that fails, ``except ImportError: from b import Y as X``
        self.fallbacks: dict[str, dict[str, Fallback]] = {}
        #: ``{module: {name: where its import takes}}`` of names a ``try`` imports
        self.try_imported: dict[str, dict[str, Test]] = {}
        self._facts: dict[str, _ModuleFacts] = {}
        packages = _packages(trees)
        for module, (_, tree) in trees.items():
            facts = known._facts.get(module) if known is not None else None
            if facts is None or facts.tree is not tree:
                facts = _module_facts(module, tree, module in packages)
            self._facts[module] = facts
            self.bindings[module] = dict(facts.bindings)
            self.fallbacks[module], self.try_imported[module] = facts.fallbacks, facts.try_imported
            for qualified, returned in facts.returns.items():
                self.returns.setdefault(qualified, (module, returned))
            for qualified, forwarder in facts.forwarders.items():
                self.forwarders.setdefault(qualified, forwarder)
            for qualified, function in facts.functions.items():
                self.functions.setdefault(qualified, function)
        self._bind_star_imports(packages)
        for module, (path, _) in trees.items():
            for node, aliased, handles in self._facts[module].classes:
                made = self._plugin_class(module, path, node, aliased, handles)
                self.classes.setdefault(made.qualified, made)

    def _bind_star_imports(self, packages: set[str]) -> None:
        """``from M import *`` at a module's top: the names M makes public, where the
        module binds them no other way; of two stars, the later one's, as Python binds
        them. vLLM's outputs module and runner modules give the names the crater judges; a
        plugin module gives its ``__all__`` (a literal list), else its own public names (a
        package re-exporting its modules this way), followed to a fixed point."""
        stars = [
            (module, source)
            for module, (_, tree) in self.trees.items()
            for node in _run_where_imports_take(tree)
            if isinstance(node, ast.ImportFrom) and any(a.name == "*" for a in node.names)
            if (source := _from_module(node, _package_of(module, module in packages)))
        ]
        exported = {
            module: _literal_all(self.trees[module][1])
            for module in {source.removeprefix("plugin:") for _, source in stars}
            if module in self.trees
        }
        explicit = {module: set(self.bindings[module]) for module, _ in stars}
        for _ in range(len(stars) + 1):
            starred: dict[str, dict[str, str]] = {module: {} for module, _ in stars}
            for module, source in stars:  # in statement order: a later star wins
                starred[module].update(_public_names(source, self.bindings, exported))
            changed = False
            for module, names in starred.items():
                bound = self.bindings[module]
                for name, target in names.items():
                    if name not in explicit[module] and bound.get(name) != target:
                        bound[name] = target
                        changed = True
            if not changed:
                return

    @functools.cached_property
    def vllm_module_stores(self) -> frozenset[tuple[str, str]]:
        """``(vLLM module, name)`` the plugin sets on one of vLLM's judged modules itself
        (``outputs.RoutedExpertsLists = _Own``): its reads of them are its own."""
        found = set()
        for module, (_, tree) in self.trees.items():
            for node in walked(tree):
                stored: list[tuple[ast.expr, str]] = []
                if isinstance(node, (ast.Assign, ast.AugAssign, ast.AnnAssign)):
                    targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                    stored = [(t.value, t.attr) for t in targets if isinstance(t, ast.Attribute)]
                elif (
                    isinstance(node, ast.Call)
                    and tail_name(node.func) == "setattr"
                    and len(node.args) >= 2
                    and isinstance(node.args[1], ast.Constant)
                ):
                    stored = [(node.args[0], str(node.args[1].value))]
                for owner, name in stored:
                    resolved = self.resolve(module, owner)
                    if resolved is not None and resolved in JUDGED_MODULES:
                        found.add((resolved, name))
        return frozenset(found)

    def constructs(self, called: str | None) -> bool:
        """Whether calling ``called`` builds one of the judged types (not a producer), or
        a plugin class resting on one."""
        if called is None:
            return False
        if called.startswith("plugin:"):
            return self.chain(called)[1] is not None
        return (
            called.startswith("vllm.")
            and is_judged(called)
            and called not in PRODUCER_CALLS.values()
        )

    def resolve(self, module: str, expr: ast.expr, depth: int = 0) -> str | None:
        """What ``expr`` names in ``module``: ``vllm....`` for vLLM, ``plugin:mod.Name``
        for the plugin's own, None for anything else."""
        if depth > 20:
            return None
        if isinstance(expr, ast.Name):
            bound = self.bindings.get(module, {}).get(expr.id)
            return self._follow(bound, depth) if bound else None
        if isinstance(expr, ast.Attribute):
            owner = self.resolve(module, expr.value, depth + 1)
            if owner is None:
                return None
            return self._follow(f"{owner}.{expr.attr}", depth)
        return None

    def _follow(self, name: str, depth: int) -> str | None:
        """A plugin name followed to what it finally is (a re-export of vLLM's names too)."""
        if name.startswith("vllm."):
            return output_type_reexported(name)
        if not name.startswith("plugin:") or depth > 20:
            return name
        dotted = name.removeprefix("plugin:")
        if dotted in self.trees:
            return name  # a plugin module
        module, _, attr = dotted.rpartition(".")
        if module in self.trees:
            if f"plugin:{dotted}" in self.classes:
                return f"plugin:{dotted}"
            bound = self.bindings[module].get(attr)
            if bound is not None and bound != name:
                return self._follow(bound, depth + 1)
            return name
        # ``plugin:pkg.mod.Name.attr``: an attribute of something found further up
        head, _, tail = dotted.rpartition(".")
        found = self._follow(f"plugin:{head}", depth + 1) if head else None
        if found is not None and not found.startswith("plugin:"):
            return f"{found}.{tail}"
        return name

    def _plugin_class(
        self,
        module: str,
        path: str,
        node: ast.ClassDef,
        aliased: dict[str, ast.expr],
        handles: frozenset[str],
    ) -> PluginClass:
        methods = {
            n.name for n in node.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))
        }
        # ``get_kv_connector_output = _kv``: a name the class body binds defines it as a
        # def would (an abstract method so bound is implemented, for ``abc`` too).
        methods |= {
            t.id
            for n in node.body
            if isinstance(n, ast.Assign)
            for t in n.targets
            if isinstance(t, ast.Name)
        }
        abstract = any(
            decorated(n, "abstractmethod")
            for n in node.body
            if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))
        )
        fields = [
            (n.target.id, n.value is not None)
            for n in node.body
            if isinstance(n, ast.AnnAssign)
            and isinstance(n.target, ast.Name)
            and "ClassVar" not in ast.unparse(n.annotation)
        ]
        named = [aliased.get(b.id, b) if isinstance(b, ast.Name) else b for b in node.bases]
        bases = [b for b in (self.resolve(module, base) for base in named) if b]
        return PluginClass(
            module,
            node.name,
            path,
            node.lineno,
            bases,
            methods,
            any(tail_name(d) == "dataclass" for d in node.decorator_list),
            fields,
            abstract,
            handles,
            state=plugin_class_state(node),
        )

    def chain(self, qualified: str) -> tuple[list[PluginClass], str | None]:
        """The plugin classes from ``qualified`` up, and the first vLLM class they rest on."""
        seen: list[PluginClass] = []
        todo = [qualified]
        vllm_base = None
        while todo:
            name = todo.pop(0)
            cls = self.classes.get(name)
            if cls is None or cls in seen:
                continue
            seen.append(cls)
            for base in cls.bases:
                if base.startswith("vllm.") and vllm_base is None and is_judged(base):
                    vllm_base = base
                elif base.startswith("plugin:"):
                    todo.append(base)
        return seen, vllm_base

    def defined_below(self, qualified: str) -> set[str]:
        """The methods the plugin's classes deriving from this one define."""
        return {
            method
            for cls in self.classes.values()
            if cls.qualified != qualified
            and any(c.qualified == qualified for c in self.chain(cls.qualified)[0])
            for method in cls.methods
        }

    def rests_on_vllm(self, qualified: str) -> bool:
        """Whether the plugin class derives from any of vLLM's (a ``Scheduler`` too)."""
        return any(
            base.startswith("vllm.") for cls in self.chain(qualified)[0] for base in cls.bases
        )


def _function_bodies(module: str, tree: ast.Module) -> Iterator[tuple[str, list[ast.stmt]]]:
    """The module's body and each top-level class's, with the name owning what they define."""
    yield module, tree.body
    for node in tree.body:
        if isinstance(node, ast.ClassDef):
            yield f"{module}.{node.name}", node.body


@dataclass(frozen=True)
class _ModuleFacts:
    """What one module's tree says on its own, before other modules' names are known."""

    tree: ast.Module
    bindings: dict[str, str]  #: :func:`module_bindings`, before any star import
    fallbacks: dict[str, Fallback]
    try_imported: dict[str, Test]
    #: every class: its node, its bases aliased in its function, the words it names
    classes: list[tuple[ast.ClassDef, dict[str, ast.expr], frozenset[str]]]
    returns: dict[str, ast.expr]  #: ``plugin:mod.f`` -> its return annotation
    forwarders: dict[str, Forwarder]  #: ``plugin:mod.f`` handing its ``**kwargs`` on
    functions: dict[str, ast.FunctionDef | ast.AsyncFunctionDef]  #: ``plugin:mod.f``'s def


def _module_facts(module: str, tree: ast.Module, is_package: bool) -> _ModuleFacts:
    bindings = module_bindings(module, tree, is_package)
    fallbacks, try_imported = _try_imports(module, tree, is_package, bindings)
    aliased = _bases_aliased_in_functions(tree)
    classes = [
        (node, aliased.get(id(node), {}), _words_handed_over(node))
        for node in walked(tree)
        if isinstance(node, ast.ClassDef)
    ]
    returns: dict[str, ast.expr] = {}
    forwarders: dict[str, Forwarder] = {}
    functions: dict[str, ast.FunctionDef | ast.AsyncFunctionDef] = {}
    for owner, body in _function_bodies(module, tree):
        for node in body:
            if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                continue
            qualified = f"plugin:{owner}.{node.name}"
            functions.setdefault(qualified, node)
            if node.returns:
                returns.setdefault(qualified, node.returns)
            forwarder = forwarder_of(module, node)
            if forwarder is not None:
                forwarders.setdefault(qualified, forwarder)
    return _ModuleFacts(
        tree, bindings, fallbacks, try_imported, classes, returns, forwarders, functions
    )


def _words_handed_over(node: ast.ClassDef) -> frozenset[str]:
    """The words of :data:`HANDED_OVER_BY_WORD` the class's code names."""
    names = {identifier(n) for n in walked(node)}
    names.discard("")
    return frozenset(word for word in HANDED_OVER_BY_WORD if any(word in n for n in names))


def _run_where_imports_take(tree: ast.Module) -> Iterator[ast.stmt]:
    """A module's top-level statements, with a top-level ``try``'s body in its place: what
    runs where vLLM is installed (``try: from vllm.v1.outputs import *`` in a plugin's
    compat module, its ``except ImportError`` a fallback for machines without vLLM)."""
    for node in tree.body:
        if isinstance(node, ast.Try):
            yield from node.body
        else:
            yield node


def _packages(trees: dict[str, tuple[str, ast.Module]]) -> set[str]:
    return {m for m, (path, _) in trees.items() if path.endswith("__init__.py")}


def module_bindings(module: str, tree: ast.Module, is_package: bool) -> dict[str, str]:
    """``{name: what it is bound to}`` for every import in the module (at any depth) and
    its top-level classes, functions and aliases."""
    found: dict[str, str] = {}
    package = _package_of(module, is_package)
    for node in walked(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.asname:
                    found[alias.asname] = _absolute(alias.name)
                else:
                    head = alias.name.split(".")[0]
                    found.setdefault(head, _absolute(head))
        elif isinstance(node, ast.ImportFrom):
            found.update(_imported([node], package))
        elif isinstance(node, ast.Assign) and (imported := module_imported(node.value)):
            # ``outputs = importlib.import_module("vllm.v1.outputs")``: ``import ... as``
            for bound in node.targets:
                if isinstance(bound, ast.Name):
                    found[bound.id] = _absolute(imported)
    aliases: dict[str, str | None] = {}
    for node in tree.body:
        if isinstance(node, (ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            found[node.name] = f"plugin:{module}.{node.name}"
        value = node.value if isinstance(node, (ast.Assign, ast.AnnAssign)) else None
        targets = node.targets if isinstance(node, ast.Assign) else [getattr(node, "target", None)]
        for target in targets:
            if isinstance(target, ast.Name):
                # ``Output = ModelRunnerOutput``: an alias, where it is the one binding
                dotted = _dotted(value, found) if value is not None else None
                aliases[target.id] = dotted if target.id not in aliases else None
    for name, dotted in aliases.items():
        if dotted is not None:
            found[name] = dotted
    return found


def _bases_aliased_in_functions(tree: ast.Module) -> dict[int, dict[str, ast.expr]]:
    """``{id(class): {base name: what it names}}`` for a class defined in a function on a
    name the function binds once to another (``base = async_utils.AsyncOutput``, then
    ``class BeamAsyncOutput(base)``)."""
    found: dict[int, dict[str, ast.expr]] = {}
    for function in walked(tree):
        if not isinstance(function, (ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        statements = list(own_statements(function.body))
        counted: dict[str, int] | None = None
        for cls in statements:
            if not isinstance(cls, ast.ClassDef):
                continue
            counted = counted if counted is not None else bindings_counted(function.body)
            for base in cls.bases:
                if isinstance(base, ast.Name) and counted.get(base.id) == 1:
                    value = value_bound(statements, base)
                    if isinstance(value, (ast.Name, ast.Attribute)):
                        found.setdefault(id(cls), {})[base.id] = value
    return found


@dataclass(frozen=True)
class Fallback:
    """A name a module-level ``try`` binds to ``primary`` and, where that block's imports
    fail, its ``except ImportError`` to another of vLLM's names."""

    primary: str
    took: Test  #: where every import of vLLM in the ``try`` block takes


def _try_imports(
    module: str, tree: ast.Module, is_package: bool, bindings: dict[str, str]
) -> tuple[dict[str, Fallback], dict[str, Test]]:
    """What the module-level ``try: from vllm... import X`` / ``except ImportError:``
    blocks bind: ``{fallback target: Fallback}`` of the names the handler binds to other
    vLLM names (only where no other name of the module is bound to the same target, which a
    use could come through), and ``{name: where it is bound}`` of the names the block
    imports from vLLM."""
    package = _package_of(module, is_package)
    fallbacks: dict[str, Fallback] = {}
    taken: dict[str, Test] = {}
    for node in tree.body:
        handlers = node.handlers if isinstance(node, ast.Try) else []
        if not any(
            catches(h, "ImportError", "ModuleNotFoundError", broadly=False) for h in handlers
        ):
            continue
        took = imports_taking(node.body)  # type: ignore[attr-defined]
        if took is None:
            continue
        primary = _imported(node.body, package)  # type: ignore[attr-defined]
        taken.update(
            (name, took.test) for name, first in primary.items() if first.startswith("vllm.")
        )
        taken.update(_flags(node.body, handlers, took.test))  # type: ignore[attr-defined]
        for handler in handlers:
            if not catches(handler, "ImportError", "ModuleNotFoundError", broadly=False):
                continue
            for name, fallback in _imported(handler.body, package).items():
                first = primary.get(name)
                if first is None or first == fallback or not first.startswith("vllm."):
                    continue
                if sum(1 for bound in bindings.values() if bound == fallback) == 1:
                    fallbacks[output_type_reexported(fallback)] = Fallback(
                        output_type_reexported(first), took.test
                    )
    return fallbacks, taken


def _flags(body: list[ast.stmt], handlers: list[ast.ExceptHandler], took: Test) -> dict[str, Test]:
    """``HAS_V1 = True`` after the imports of a ``try`` block and ``HAS_V1 = False`` in
    its ``except ImportError`` (or the other way round): the flag is whether they took."""

    def constants(statements: list[ast.stmt]) -> dict[str, bool]:
        return {
            target.id: node.value.value
            for node in statements
            if isinstance(node, ast.Assign)
            and isinstance(node.value, ast.Constant)
            and isinstance(node.value.value, bool)
            for target in node.targets
            if isinstance(target, ast.Name)
        }

    set_in_try = constants(body)
    import_errors = [
        constants(h.body)
        for h in handlers
        if catches(h, "ImportError", "ModuleNotFoundError", broadly=False)
    ]
    flags: dict[str, Test] = {}
    for name, value in set_in_try.items():
        if all(name in other and other[name] is not value for other in import_errors):
            flags[name] = took if value else ("not", took)
    return flags


def _package_of(module: str, is_package: bool) -> str:
    return module if is_package else module.rpartition(".")[0]


def _public_names(
    source: str, bindings: dict[str, dict[str, str]], exported: dict[str, set[str] | None]
) -> dict[str, str]:
    """What ``from source import *`` binds, where the crater can know it."""
    if source == OUTPUTS:
        return {name: f"{OUTPUTS}.{name}" for name in (*JUDGED_TYPES, EMPTY)}
    if source in VLLM_ASYNC_OUTPUTS:
        return {name: f"{source}.{name}" for name in VLLM_ASYNC_OUTPUTS[source]}
    module = source.removeprefix("plugin:")
    own = bindings.get(module, {}) if source.startswith("plugin:") else {}
    listed = exported.get(module)
    return {
        k: v
        for k, v in own.items()
        if (k in listed if listed is not None else not k.startswith("_"))
    }


def _literal_all(tree: ast.Module) -> set[str] | None:
    """A module's ``__all__`` where it is one literal list or tuple of strings, bound once
    and never changed after (``+=``, ``.append``: then it is not known)."""
    mentions = [
        node
        for node in ast.walk(tree)
        if isinstance(node, ast.Name)
        and node.id == "__all__"
        and not isinstance(node.ctx, ast.Load)
    ]
    changed = any(
        isinstance(node, ast.Attribute)
        and isinstance(node.value, ast.Name)
        and node.value.id == "__all__"
        for node in ast.walk(tree)
    )
    if len(mentions) != 1 or changed:
        return None
    for node in tree.body:
        if (
            isinstance(node, ast.Assign)
            and any(isinstance(t, ast.Name) and t.id == "__all__" for t in node.targets)
            and isinstance(node.value, (ast.List, ast.Tuple))
        ):
            names = [e.value for e in node.value.elts if isinstance(e, ast.Constant)]
            if len(names) == len(node.value.elts):
                return {str(n) for n in names}
    return None


def _imported(body: list[ast.stmt], package: str) -> dict[str, str]:
    """``{name: what it is}`` the ``from ... import`` statements of ``body`` bind."""
    found = {}
    for node in body:
        source = _from_module(node, package) if isinstance(node, ast.ImportFrom) else None
        if source is not None:
            for alias in node.names:  # type: ignore[attr-defined]
                if alias.name != "*":  # a star binds names the text does not show
                    found[alias.asname or alias.name] = f"{source}.{alias.name}"
    return found


def _dotted(value: ast.expr, bound: dict[str, str]) -> str | None:
    """What a name or an attribute chain of bound names stands for (``outputs.X``)."""
    if isinstance(value, ast.Name):
        return bound.get(value.id)
    if isinstance(value, ast.Attribute):
        owner = _dotted(value.value, bound)
        return f"{owner}.{value.attr}" if owner is not None else None
    return None


def _absolute(dotted: str) -> str:
    return dotted if dotted == "vllm" or dotted.startswith("vllm.") else f"plugin:{dotted}"


def _from_module(node: ast.ImportFrom, package: str) -> str | None:
    if node.level == 0:
        return _absolute(node.module or "")
    parts = package.split(".") if package else []
    if node.level - 1 > len(parts):
        return None
    base = parts[: len(parts) - (node.level - 1)]
    return "plugin:" + ".".join([*base, *([node.module] if node.module else [])])
