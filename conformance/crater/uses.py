"""What a plugin uses of vLLM's output types and producers, found by what it is.

The plugin's Python files are parsed (never imported), whatever its layout: every
module's imports are resolved (``from vllm.v1.outputs import X as Y``, a module
alias, a name re-exported by another of the plugin's modules, a relative import), and
every class the plugin defines is followed to its bases, so its own subclass of
``ModelRunnerOutput`` or of vLLM's async output counts as the type.  From there:

* ``import``: each import of a vLLM module (and each name taken from one);
* ``construct``: each call building one of the seven types, ``EMPTY_MODEL_RUNNER_OUTPUT``'s
  ``replace``, a plugin subclass of them, or one of vLLM's own async output classes,
  with its keywords (a ``**kwargs`` dict built beforehand in the function is read) and
  positional arity;
* ``subclass``: each plugin class below ``AsyncModelRunnerOutput``, with the methods it
  and its plugin bases define;
* ``read``/``write``: each attribute of an expression whose type is known from an
  annotation, a construction, ``get_output()`` or ``self.x`` bound to one of those;
* ``call``: each call of vLLM's own producers (``gather_logprobs``,
  ``compute_logprobs``, ``parse_output``) with its arity and how its result is unpacked.

Each use carries the conditions it sits under (:mod:`.guards`) and whether an
``except ImportError`` handles it.
"""

from __future__ import annotations

import ast
import dataclasses
import functools
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import cast

from conformance.crater.forwarders import Forwarder
from conformance.crater.guards import (
    Guard,
    GuardReader,
    Test,
    VersionHelpers,
    imports_taking,
    module_tests,
    version_helpers,
    versions_named,
)
from conformance.crater.import_hooks import redirected_modules
from conformance.crater.inherited_state import PluginClassState
from conformance.crater.keyword_dicts import (
    Alternatives,
    KeyTests,
    KeywordDict,
    built_dict,
    dicts_in,
)
from conformance.crater.lenient_parse import parse_leniently
from conformance.crater.output_members import (
    SEQUENCE_OF,
    element_annotation,
    output_aliases,
    output_field_may_be_none,
    output_field_types,
    output_method_returns,
    unwrap_annotation,
)
from conformance.crater.presence import (
    absent_when,
    condition_text,
    every_use_tested,
    none_compared,
    present_after_exit,
    present_when,
    tests_in,
)
from conformance.crater.syntax import (
    asserts_one_token_rows,
    bindings_counted,
    binds,
    catches,
    exits,
    is_empty,
    literal_not_none,
    module_imported,
    own_statements,
    reraises,
    strings_in,
    suppressed,
    tail_name,
    under_tests,
    unevaluated_annotations,
    value_bound,
    walked,
)
from conformance.crater.vllm_names import (
    ASYNC_BASE,
    ASYNC_OUTPUT_ATTRIBUTES,
    EMPTY,
    JUDGED_MODULES,
    JUDGED_TYPES,
    OUTPUTS,
    PRODUCER_CALLS,
    VLLM_ASYNC_OUTPUTS,
    is_judged,
    output_type_reexported,
)
from conformance.crater.world import PluginClass, World, module_name
from conformance.releases.output_classes import output_classes


@dataclass(frozen=True)
class Use:
    """One use of vLLM by the plugin, where it is and what it needs."""

    kind: str  #: import, construct, subclass, read, write, call, patch
    file: str  #: the plugin's file, its path inside the distribution
    line: int
    target: str  #: the vLLM module, or ``module.Class`` the use is of
    member: str = ""  #: the name imported, the field read, the method called
    positional: int = 0
    keywords: tuple[str, ...] = ()
    open_ended: bool = False  #: ``*args`` or a ``**kwargs`` whose keys are not known
    via: str = ""  #: the plugin class it goes through (a subclass), where one
    guards: tuple[Guard, ...] = ()
    handled: bool = False  #: inside ``try: ... except ImportError``
    #: inside ``try: ... except AttributeError``: a member gone is the plugin's fallback
    missing_handled: bool = False
    #: inside ``try: ... except TypeError``: a constructor refusing its arguments is
    #: the plugin's fallback
    type_handled: bool = False
    #: the ``try`` block it is in whose handler is a fallback (``(file, line)``): the
    #: handler runs where a use of it fails (:func:`tried_and_failed`)
    in_try: tuple[str, int] | None = None
    unpacked: int | None = None  #: names the call's result (a field read's value) unpacks into
    defines: tuple[str, ...] = ()  #: a subclass: the methods the plugin's classes define
    #: a subclass: the methods the plugin's classes deriving from it define
    below_define: tuple[str, ...] = ()
    abstract: bool = False  #: a subclass that declares abstract methods of its own
    own_init: bool = False  #: the plugin class defines ``__init__`` itself
    #: a subclass: its plugin classes' states, the most derived first
    #: (:mod:`.inherited_state`)
    chain_states: tuple[PluginClassState, ...] = ()
    own_fields: tuple[tuple[str, bool], ...] = ()  #: a dataclass subclass: (field, has default)
    #: a subclass: the words of ``HANDED_OVER_BY_WORD`` its classes' code names
    handles: frozenset[str] = frozenset()
    #: ``**kwargs`` keys added under version tests: passed where their guards hold
    guarded_keywords: tuple[tuple[str, Alternatives], ...] = ()
    #: ``**kwargs`` keys added where a test names them: passed where the field exists
    tested_keywords: tuple[str, ...] = ()
    top_level: bool = False  #: an import run when the module is (not in a function)
    #: an import that is a module's attribute read (``outputs.X``): the module's own
    #: import names its absence
    as_attribute: bool = False
    #: keywords given, or the field written, an empty ``[]``, ``{}``, ``()``: the same
    #: value under any element type
    empty: tuple[str, ...] = ()
    #: keywords given a value that is never None (a list, a literal, a name bound once
    #: to one): a field that no longer takes None takes them
    never_none: tuple[str, ...] = ()
    #: keywords given what ``tensor.tolist()`` builds: Python lists (of lists), which a
    #: field typed ``list[list[int]]`` takes whatever it was typed before
    python_lists: tuple[str, ...] = ()
    #: a read whose value is tested for truth or None where it is read (``if
    #: out.x:``), or through the one name it is bound to (``xs = out.x`` ... ``if xs:``):
    #: a field that now also takes None is handled there
    none_tested: bool = False
    #: a call of a method through the class (``LogprobsTensors.empty_cpu(...)``): a
    #: method that is neither static nor a classmethod then takes ``self`` first
    on_class: bool = False
    #: a plugin async output built where its function asserts one token per row
    #: (``assert sampled_token_ids.shape[-1] == 1``): never handed rows of several
    one_token_rows: bool = False

    @property
    def type_name(self) -> str:
        return self.target.rsplit(".", 1)[-1]

    @property
    def module(self) -> str:
        return self.target if self.kind == "import" else self.target.rsplit(".", 1)[0]


@dataclass
class Reading:
    """Everything read of one plugin: its uses, and what could not be read."""

    uses: list[Use]
    unparsed: list[str]  #: files that are not Python this interpreter parses
    conditions_taken: set[tuple[str, int, str]]  #: (file, line, condition) not a version test
    versions_named: set[str]
    #: ``{vLLM module: the plugin's}`` its import hook hands out instead (vllm-kunlun's
    #: ``builtins.__import__``): a use of such a module is of the plugin's own code
    redirected: dict[str, str] = field(default_factory=dict)
    imports_vllm: bool = True  #: any of its files imports a vLLM module, anywhere
    #: what the plugin sets on vLLM's output types themselves
    #: (``ModelRunnerOutput.__init__ = patched``, ``ModelRunnerOutput.extra = None``)
    class_changes: list[ClassChange] = field(default_factory=list)
    #: ``file:line`` of lines this interpreter does not parse (a newer Python's syntax),
    #: read as placeholders
    placeholders: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class ClassChange:
    """An ``__init__`` or an attribute a plugin sets on one of vLLM's output types."""

    target: str  #: the output type
    member: str  #: ``__init__``, or the attribute
    file: str
    line: int
    guards: tuple[Guard, ...]  #: where it is set: it holds where they do
    #: an ``__init__``'s own keywords (None: what it takes is not known)
    own: frozenset[str] | None = None
    passes_on: bool = False  #: it hands the rest (``**kwargs``) to vLLM's ``__init__``


def read_plugin(files: dict[str, str]) -> Reading:
    """The uses of vLLM in a plugin's files (``{path inside the distribution: text}``).

    Only the files that can hold a use are parsed: those naming vLLM, then those
    naming one of the judged types, vLLM's producers or a plugin class found to rest
    on them, until no new class turns up (a large plugin's other files are most of it).
    """
    trees: dict[str, tuple[str, ast.Module]] = {}
    unparsed: list[str] = []
    placeholders: list[str] = []
    parsed_files: dict[str, tuple[ast.Module, tuple[int, ...]] | None] = {}

    def parsed(path: str) -> tuple[ast.Module, tuple[int, ...]] | None:
        if path not in parsed_files:
            parsed_files[path] = parse_leniently(files[path])
        return parsed_files[path]

    helpers = version_helpers(
        (
            (module_name(path), read[0])
            for path, text in files.items()
            if _READS_VERSION.search(text) and (read := parsed(path)) is not None
        ),
        {module_name(p): frozenset(_TOP_LEVEL_DEF.findall(t)) for p, t in files.items()},
    )
    pending = dict(files)
    wanted = _FIRST_PASS
    names: frozenset[str] = frozenset()
    read_before: World | None = None
    while True:
        found = {p: t for p, t in pending.items() if wanted.search(t)}
        for path in sorted(found):
            del pending[path]
            read = parsed(path)
            if read is None:
                unparsed.append(path)
                continue
            trees[module_name(path)] = (path, read[0])
            placeholders += [f"{path}:{line}" for line in read[1]]
        world = read_before = World(trees, read_before)
        resting = [c for c in world.classes.values() if world.chain(c.qualified)[1]]
        new = _NAMED_IN_USES | {c.name for c in resting}
        # a mixin such a class rests on too (its methods are the class's), not read yet
        new |= {
            base.rpartition(".")[2]
            for c in resting
            for base in c.bases
            if base.startswith("plugin:") and base not in world.classes
        }
        # a function, or a class's method, annotated to return a judged type: its
        # callers read one (``self.model_runner.execute_model(...)`` in a worker)
        new |= _returning_judged(world)
        # a helper handing its ``**kwargs`` to a type: its callers build that type
        new |= {
            qualified.rpartition(".")[2]
            for qualified, forwarder in world.forwarders.items()
            if world.constructs(world.resolve(forwarder.module, forwarder.called))
        }
        # ``from vllm.v1.outputs import ModelRunnerOutput as Out`` in a compat module:
        # a file importing ``Out`` from it names none of vLLM's names.
        new |= {
            alias
            for bound in world.bindings.values()
            for alias, target in bound.items()
            if target.startswith("vllm.") and is_judged(output_type_reexported(target))
        }
        if not found or new <= names:
            break
        names = new
        wanted = re.compile(r"\b(" + "|".join(sorted(map(re.escape, names))) + r")\b")
    reading = Reading([], unparsed, set(), set(), placeholders=placeholders)
    visitors = [
        _ModuleVisitor(world, helpers, m, path, tree, reading) for m, (path, tree) in trees.items()
    ]
    for visitor in visitors:
        visitor.type_attributes()
    for visitor in visitors:
        visitor.run()
    for path, text in sorted(pending.items()):
        # Not parsed: its top-level imports of vLLM, for what a target lacks (an indented
        # one may sit under a guard or a try, which only parsing would tell).
        for match in _VLLM_IMPORT.finditer(text):
            if match.group(0)[:1] in " \t":
                continue
            line = text.count("\n", 0, match.start()) + 1
            reading.uses.append(Use("import", path, line, match[1] or match[2], top_level=True))
    reading.imports_vllm = any(
        _VLLM_IMPORT.search(t) for p, t in files.items() if p.endswith(".py")
    )
    reading.redirected = redirected_modules(files)
    if reading.redirected:
        reading.uses = [u for u in reading.uses if u.module not in reading.redirected]
    return reading


def _returning_judged(world: World) -> set[str]:
    """The names by which a file calls a plugin function, or a method of a plugin
    class, annotated to return one of the judged types: the function's, or the class's."""
    found = set()
    for qualified, (_, annotation) in world.returns.items():
        if not _JUDGED_NAME.search(ast.unparse(annotation)):
            continue
        owner, _, function = qualified.rpartition(".")
        found.add(owner.rpartition(".")[2] if owner in world.classes else function)
    return found


#: The parameter name vLLM gives a ``ModelRunnerOutput`` it hands on.
_RUNNER_OUTPUT_NAME = "model_runner_output"
#: Names a file may use vLLM's types and producers by without naming vLLM (a
#: ``Scheduler`` subclass reads the ``model_runner_output`` it is handed).
_NAMED_IN_USES = frozenset(
    {*JUDGED_TYPES, EMPTY, *PRODUCER_CALLS, "Sampler", "RejectionSampler", _RUNNER_OUTPUT_NAME}
    | {name for names in VLLM_ASYNC_OUTPUTS.values() for name in names}
)
#: What a file that can hold a use names: vLLM's output or producer modules, or one of
#: those names (a plugin's other files, most of a large one, are not parsed).
_FIRST_PASS = re.compile(
    r"vllm\.v1\.(?:outputs|worker\.gpu(?:_model_runner)?|sample)\b"
    r"|\bimport[ \t]+\*"  # a star import may re-export the types under no name shown
    r"|from[ \t]+vllm\.v1(?:\.worker)?[ \t]+import|\b("
    + "|".join(sorted(map(re.escape, _NAMED_IN_USES)))
    + r")\b"
)
#: A judged type's name, as an annotation writes it.
_JUDGED_NAME = re.compile(r"\b(" + "|".join(sorted(map(re.escape, JUDGED_TYPES))) + r")\b")
#: A function a module defines at its top.
_TOP_LEVEL_DEF = re.compile(r"^(?:async[ \t]+)?def[ \t]+(\w+)", re.MULTILINE)
#: What a file defining a version helper holds (:func:`version_helpers`): any other
#: file is not parsed for them.
_READS_VERSION = re.compile(r"__version__|version\(\s*[\"']vllm")
#: An import of vLLM in any file, parsed or not (what a target lacks is counted).
_VLLM_IMPORT = re.compile(
    r"^[ \t]*(?:from[ \t]+(vllm(?:\.\w+)*)[ \t]+import|import[ \t]+(vllm(?:\.\w+)*)(?![\w.]))",
    re.MULTILINE,
)


def _class_attribute_held(cls: ast.ClassDef, name: str) -> ast.expr | None:
    """What the class attribute ``name`` holds, where the class body binds it once to a
    name (``output_cls = ModelRunnerOutput``) and no method binds ``self.name``."""
    held = [
        node.value
        for node in cls.body
        if isinstance(node, ast.Assign)
        and any(isinstance(t, ast.Name) and t.id == name for t in node.targets)
    ]
    rebound = any(
        isinstance(target, ast.Attribute)
        and isinstance(target.value, ast.Name)
        and target.value.id == "self"
        and target.attr == name
        for node in ast.walk(cls)
        if isinstance(node, (ast.Assign, ast.AnnAssign))
        for target in (node.targets if isinstance(node, ast.Assign) else [node.target])
    )
    if len(held) != 1 or rebound or not isinstance(held[0], (ast.Name, ast.Attribute)):
        return None
    return held[0]


def _defined_by(chain: list[PluginClass]) -> set[str]:
    """What the plugin's classes define themselves: methods and fields."""
    return {m for c in chain for m in c.methods} | {f for c in chain for f, _ in c.fields}


_COMPREHENSIONS = (ast.ListComp, ast.SetComp, ast.GeneratorExp, ast.DictComp)


@dataclass(frozen=True)
class _Under:
    """A mark in an expression walk: the part between an entering mark and its closing
    one runs under ``guard`` (a version test's branch) with ``present`` found present."""

    guard: Guard | None
    present: frozenset[tuple[str, str]]
    entering: bool = True

    def closing(self) -> _Under:
        return _Under(self.guard, self.present, entering=False)


class _ModuleVisitor:
    """Walks one module, keeping the conditions and ``try`` blocks a node sits in."""

    def __init__(
        self,
        world: World,
        helpers: VersionHelpers,
        module: str,
        path: str,
        tree: ast.Module,
        reading: Reading,
    ) -> None:
        self.world = world
        self.module = module
        self.path = path
        self.tree = tree
        self.reading = reading
        self.guards: GuardReader = module_tests(
            tree, helpers, lambda called: world.resolve(module, called)
        )
        self.conditions: list[Guard] = []
        self.handled = 0
        self.missing_handled = 0
        self.type_handled = 0
        #: the ``try`` blocks the walk is in whose handlers are fallbacks
        self.fallback_tries: list[tuple[str, int]] = []
        self.class_stack: list[PluginClass] = []
        self.scope_types: list[dict[str, str]] = [{}]
        self.scope_dicts: list[dict[str, KeywordDict]] = [{}]
        self.unpack: dict[int, int] = {}
        self.functions = 0  #: how many functions the walk is in
        self.function_bodies: list[list[ast.stmt]] = []  #: the functions the walk is in
        #: the parameters of each function the walk is in, and the names its body binds
        #: (:func:`bindings_counted`)
        self.function_parameters: list[set[str]] = []
        self.function_bindings: list[dict[str, int]] = []
        #: per function (the module first): the expressions and names it tests for truth
        #: or None (``if x:``, ``x is not None``, ``a if x else b``, ``x and ...``)
        self.truth_tested: list[frozenset[int]] = [tests_in(tree.body)]
        self.bound_to: dict[int, str] = {}  #: a value assigned to one name: that name
        self.class_nodes: list[ast.ClassDef] = []  #: the classes the walk is in
        self.assigned: dict[int, ast.expr] = {}  #: each assignment target's value
        self.methods_called: set[int] = set()  #: attributes judged as the method a call calls
        self.augmented: set[int] = set()  #: ``x.a += 1`` targets: read first, not replaced
        #: ``(receiver, attribute)`` the ``if`` tests the walk is in find present
        #: (``if hasattr(kv, "x"):``): a use of it there runs only where it exists
        self.attributes_present: list[set[tuple[str, str]]] = []
        #: ``(receiver, attribute)`` the ``if`` tests the walk is in find absent (``if not
        #: hasattr(outputs, "X"):``): a name set there is the plugin's polyfill
        self.attributes_absent: list[set[tuple[str, str]]] = []
        #: the nodes of annotations Python never evaluates (any, under ``from __future__
        #: import annotations``; a variable's inside a function)
        self.unevaluated = unevaluated_annotations(tree)
        #: the module's top-level ``NAME = value`` bindings
        self.constants = {
            target.id: node.value
            for node in tree.body
            if isinstance(node, ast.Assign)
            for target in node.targets
            if isinstance(target, ast.Name)
        }

    def type_attributes(self) -> None:
        """Each class's ``self.x`` types, before any module is walked: a subclass in
        another file reads what its base's ``__init__`` stored."""
        for node in walked(self.tree):
            if isinstance(node, ast.ClassDef):
                cls = self.world.classes.get(f"plugin:{self.module}.{node.name}")
                if cls is not None:
                    cls.attribute_types = self._self_attribute_types(node)
                    cls.attribute_classes = self._self_attribute_classes(node)

    def run(self) -> None:
        self._types_in(self.tree.body, into=self.scope_types[0])
        self._statements(self.tree.body)

    # --- walking ------------------------------------------------------------------

    def _statements(self, body: list[ast.stmt]) -> None:
        pushed = present = 0
        for node in body:
            self._statement(node)
            if exits([node]):
                break  # what follows a return or a raise in the same block never runs
            after = self._after_decided_exit(node)
            if after is not None:
                # ``if vllm_version_is(X): return ...``: what follows runs for the others.
                self.conditions.append(after)
                pushed += 1
            tested = present_after_exit(node, self._flag_read)
            if tested:
                # ``if not hasattr(out, "x"): return``: what follows runs where it exists.
                self.attributes_present.append(tested)
                present += 1
        del self.conditions[len(self.conditions) - pushed :]
        del self.attributes_present[len(self.attributes_present) - present :]

    def _after_imports(self, body: list[ast.stmt]) -> None:
        """A ``try`` block's statements, each where the imports of vLLM before it took."""
        for index, statement in enumerate(body):
            self._under_guard(imports_taking(body[:index]), True, [statement])

    def _under_guard(self, guard: Guard | None, branch: bool, body: list[ast.stmt]) -> None:
        """``body`` walked under ``guard``'s ``branch`` (as it is, where no guard)."""
        if guard is None:
            self._statements(body)
            return
        self.conditions.append(dataclasses.replace(guard, branch=branch))
        self._statements(body)
        self.conditions.pop()

    def _flag_read(self, test: ast.expr) -> ast.expr:
        """``test`` with a flag the function binds once to a presence test read as that
        test (``has_map = hasattr(out, "x")`` then ``if has_map:``)."""
        negated = isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not)
        flag = test.operand if negated else test  # type: ignore[attr-defined]
        if not (
            isinstance(flag, ast.Name)
            and self.function_bodies
            and self.function_bindings[-1].get(flag.id) == 1
        ):
            return test
        value = value_bound(own_statements(self.function_bodies[-1]), flag)
        if value is None or not (present_when(value, True) or present_when(value, False)):
            return test
        return ast.UnaryOp(op=ast.Not(), operand=value) if negated else value

    def _after_decided_exit(self, node: ast.stmt) -> Guard | None:
        """The guard the rest of a block sits under after an ``if`` on a version or
        member test one of whose branches always leaves the block."""
        if not isinstance(node, ast.If):
            return None
        test = self.guards.test_of(node.test, self._member_test)
        guard = Guard(test, True, condition_text(node.test))
        if not guard.is_decided:
            return None
        body_exits, else_exits = exits(node.body), exits(node.orelse)
        if body_exits and not else_exits:
            return Guard(test, False, guard.text)
        if else_exits and not body_exits:
            return guard
        return None

    def _statement(self, node: ast.stmt) -> None:
        if isinstance(node, ast.If):
            test = self.guards.test_of(node.test, self._member_test)
            text = condition_text(node.test)
            self._expressions(node.test)
            for branch, body in ((True, node.body), (False, node.orelse)):
                if not body:
                    continue
                guard = Guard(test, branch, text)
                self.conditions.append(guard)
                self.attributes_present.append(present_when(self._flag_read(node.test), branch))
                self.attributes_absent.append(absent_when(node.test, branch))
                narrowed = self._narrowed(node.test) if branch else {}
                for name in bindings_counted(body):
                    narrowed.pop(name, None)  # rebound in the branch: its own type shows
                self.scope_types.append(narrowed)
                self._statements(body)
                self.scope_types.pop()
                self.attributes_present.pop()
                self.attributes_absent.pop()
                self.conditions.pop()
            if test[0] == "other":
                self.reading.conditions_taken.add((self.path, node.lineno, text))
            return
        if isinstance(node, ast.Try) or type(node).__name__ == "TryStar":
            handlers = node.handlers  # type: ignore[attr-defined]
            handles = any(catches(h, "ImportError", "ModuleNotFoundError") for h in handlers)
            # A fallback where a member is gone: a handler of AttributeError by name that
            # does not raise again (``except Exception`` mostly logs and passes it on).
            handles_missing = any(
                catches(h, "AttributeError", broadly=False) and not reraises(h) for h in handlers
            )
            # ``try: Output(new=...)`` / ``except TypeError: Output(...)``: the older call
            handles_type = any(
                catches(h, "TypeError", broadly=False) and not reraises(h) for h in handlers
            )
            key = (self.path, node.lineno)
            self.handled += handles
            self.missing_handled += handles_missing
            self.type_handled += handles_type
            if handles_missing or handles_type:
                self.fallback_tries.append(key)
            before = len(self.reading.uses)
            self._after_imports(node.body)  # type: ignore[attr-defined]
            tried = any(u.in_try == key for u in self.reading.uses[before:])
            if handles_missing or handles_type:
                self.fallback_tries.pop()
            self.handled -= handles
            self.missing_handled -= handles_missing
            self.type_handled -= handles_type
            # An ``except ImportError`` runs where one of the block's imports failed; a
            # fallback where a use of vLLM in the block failed, where it tried one.
            took = imports_taking(node.body)  # type: ignore[attr-defined]
            for handler in handlers:
                if tried and catches(handler, "AttributeError", "TypeError", broadly=False):
                    fell_back = Guard(
                        ("raised", *key), True, f"the try at line {node.lineno} failed"
                    )
                    self._under_guard(fell_back, True, handler.body)
                    continue
                failed = catches(handler, "ImportError", "ModuleNotFoundError", broadly=False)
                self._under_guard(took if failed else None, False, handler.body)
            self._statements(node.orelse)  # type: ignore[attr-defined]
            self._statements(node.finalbody)  # type: ignore[attr-defined]
            return
        if isinstance(node, (ast.With, ast.AsyncWith)) and (
            swallowed := suppressed(node) & {"AttributeError", "TypeError"}
        ):
            # ``with suppress(AttributeError): idx = out.gone[rid]``: a use failing there
            # is passed over, as under a ``try`` whose handler passes.
            missing, wrong_call = "AttributeError" in swallowed, "TypeError" in swallowed
            self.missing_handled += missing
            self.type_handled += wrong_call
            self._statements(node.body)
            self.missing_handled -= missing
            self.type_handled -= wrong_call
            return
        if isinstance(node, ast.ClassDef):
            self._class(node)
            return
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            self._function(node)
            return
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            self._import(node)
            return
        if isinstance(node, ast.Assign) and isinstance(node.value, (ast.Call, ast.Attribute)):
            # ``a, b, c = gather_logprobs(...)``, ``a, b, c = out.logprobs_tensors``
            for target in node.targets:
                if isinstance(target, (ast.Tuple, ast.List)) and not any(
                    isinstance(e, ast.Starred) for e in target.elts
                ):
                    self.unpack[id(node.value)] = len(target.elts)
        for target, value in _unpackings(node):
            self._value_unpacked(target, value, node.lineno)
        if isinstance(node, ast.Assign):
            self.assigned.update((id(t), node.value) for t in node.targets)
            if len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
                self.bound_to[id(node.value)] = node.targets[0].id
        if isinstance(node, ast.AugAssign):
            self.augmented.add(id(node.target))
        for _, value in ast.iter_fields(node):
            children = value if isinstance(value, list) else [value]
            if children and all(isinstance(child, ast.stmt) for child in children):
                # A loop's or a ``with``'s block: what follows an exit in it never runs,
                # and ``if not hasattr(out, "x"): continue`` holds for the rest.
                self._statements(children)
                continue
            for child in children:
                if isinstance(child, ast.expr):
                    self._expressions(child)
                elif isinstance(child, ast.match_case):  # ``case X:`` of a ``match``
                    if child.guard is not None:
                        self._expressions(child.guard)
                    self._statements(child.body)

    def _class(self, node: ast.ClassDef) -> None:
        for decorator in node.decorator_list:
            self._expressions(decorator)
        for base in node.bases:
            self._expressions(base)
        cls = self.world.classes.get(f"plugin:{self.module}.{node.name}")
        if cls is not None:
            self._subclass_use(cls, node)
            self.class_stack.append(cls)
        self.class_nodes.append(node)
        self._statements(node.body)
        self.class_nodes.pop()
        if cls is not None:
            self.class_stack.pop()

    def _function(self, node: ast.FunctionDef | ast.AsyncFunctionDef) -> None:
        for decorator in node.decorator_list:
            self._expressions(decorator)
        parameters = [*node.args.posonlyargs, *node.args.args, *node.args.kwonlyargs]
        known = {}
        for arg in parameters:
            judged = self._type_of_annotation(arg.annotation)
            if judged is None and arg.annotation is None and self._names_runner_output(arg):
                judged = f"{OUTPUTS}.ModelRunnerOutput"
            if judged:
                known[arg.arg] = judged
        starred = node.args.vararg
        judged = self._type_of_annotation(starred.annotation) if starred is not None else None
        if starred is not None and judged is not None and not judged.startswith(SEQUENCE_OF):
            known[starred.arg] = SEQUENCE_OF + judged  # ``*outputs: ModelRunnerOutput``
        self.scope_types.append(known)
        bindings = bindings_counted(node.body)
        self._types_in(node.body, into=known, bindings=bindings)
        self.function_bodies.append(node.body)
        names = {a.arg for a in (*parameters, node.args.vararg, node.args.kwarg) if a is not None}
        self.function_parameters.append(names)
        self.function_bindings.append(bindings)
        self.truth_tested.append(tests_in(node.body))
        self.scope_dicts.append(dicts_in(node.body, KeyTests(self._strings_named, self._guard)))
        # The presence tests around a def test other objects than its own names, and the
        # try around it is left when it is called.
        present, self.attributes_present = self.attributes_present, []
        handled, missing_handled = self.handled, self.missing_handled
        type_handled, tries = self.type_handled, self.fallback_tries
        self.handled = self.missing_handled = self.type_handled = 0
        self.fallback_tries = []
        self.functions += 1
        self._statements(node.body)
        self.functions -= 1
        self.handled, self.missing_handled = handled, missing_handled
        self.type_handled, self.fallback_tries = type_handled, tries
        self.attributes_present = present
        self.function_bodies.pop()
        self.function_parameters.pop()
        self.function_bindings.pop()
        self.truth_tested.pop()
        self.scope_types.pop()
        self.scope_dicts.pop()

    def _is_local(self, name: ast.expr) -> bool:
        """A name the function the walk is in binds (a parameter, an assignment): not
        the module's import of the same name."""
        return (
            isinstance(name, ast.Name)
            and bool(self.function_parameters)
            and (name.id in self.function_parameters[-1] or name.id in self.function_bindings[-1])
        )

    def _names_runner_output(self, arg: ast.arg) -> bool:
        """An unannotated parameter vLLM's way of naming a ``ModelRunnerOutput``, of a
        method of a class resting on one of vLLM's (what ``update_from_output(self,
        scheduler_output, model_runner_output)`` of a ``Scheduler`` subclass, and the
        helpers it passes it to, is handed), or in a module naming vLLM's type."""
        return arg.arg == _RUNNER_OUTPUT_NAME and (
            (bool(self.class_stack) and self.world.rests_on_vllm(self.class_stack[-1].qualified))
            or self._names_vllm_runner_output
        )

    @functools.cached_property
    def _names_vllm_runner_output(self) -> bool:
        """Whether the module imports vLLM's ``ModelRunnerOutput`` (under any name): there
        a ``model_runner_output`` of no type shown (a queue's message, a parameter) is
        one of vLLM's, as vLLM's own code names them."""
        wanted = f"{OUTPUTS}.ModelRunnerOutput"
        return any(
            self.world.resolve(self.module, ast.Name(id=name)) == wanted
            for name in self.world.bindings.get(self.module, {})
        )

    def _guard(self, test: ast.expr, branch: bool) -> Guard:
        # A condition the vLLM judged does not decide is kept too, as an ``if``'s is:
        # code under it runs, and a break there names it.
        return Guard(self.guards.test_of(test, self._member_test), branch, condition_text(test))

    def _member_test(self, node: ast.expr) -> Test | None:
        """A test of what vLLM has: ``hasattr(x, "a")`` of an output type or of a value
        of one, ``X is not None`` (or ``if X``) of a name bound to one of vLLM's output
        types (it is None only where an ``except ImportError`` set it so)."""
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Name)
            and node.func.id == "hasattr"
            and len(node.args) == 2
            and isinstance(node.args[1], ast.Constant)
            and isinstance(node.args[1].value, str)
        ):
            receiver, attr = node.args[0], node.args[1].value
            named = self.world.resolve(self.module, receiver)
            if named is not None and named.startswith(f"{OUTPUTS}.") and is_judged(named):
                return ("has", named, attr, "class")
            typed = self._type_of(receiver)
            if typed is None or not typed.startswith(f"{OUTPUTS}."):
                return None
            if self._may_be_none(receiver):
                # None has no attribute either: where the type has it, either branch runs.
                return ("and", (("has", typed, attr, "value"), ("other", "the value is not None")))
            return ("has", typed, attr, "value")
        if (
            isinstance(node, ast.Compare)
            and len(node.ops) == 1
            and isinstance(node.ops[0], (ast.In, ast.NotIn))
            and isinstance(node.left, ast.Constant)
            and isinstance(node.left.value, str)
            and isinstance(node.comparators[0], ast.Attribute)
            and node.comparators[0].attr in _FIELD_TABLES
        ):
            # ``"x" in ModelRunnerOutput.__dataclass_fields__``: whether it has the field
            named = self.world.resolve(self.module, node.comparators[0].value)
            if named is None or not named.startswith(f"{OUTPUTS}.") or not is_judged(named):
                return None
            found: Test = ("has", named, node.left.value, "field")
            return ("not", found) if isinstance(node.ops[0], ast.NotIn) else found
        negated = False
        if isinstance(node, ast.Compare) and none_compared(node):
            negated, node = isinstance(node.ops[0], ast.Is), node.left
        if not isinstance(node, ast.Name):
            return None
        named = self.world.resolve(self.module, node)
        flag = self._import_flag(node.id, named)
        if flag is not None and not negated:
            return flag  # ``if HAS_V1:``, set by whether a ``try`` block's imports took
        if named is None or not named.startswith("vllm.") or not is_judged(named):
            return None
        module, _, name = named.rpartition(".")
        # None where its try block's imports failed (one of them, not only its own).
        imported = self.world.try_imported.get(self.module, {}).get(node.id)
        if imported is None:
            imported = ("imports", module, name)
        return ("not", imported) if negated else imported

    def _import_flag(self, name: str, named: str | None) -> Test | None:
        """The test a module flag stands for, where a ``try`` block importing from vLLM
        sets it (this module's, or another module's it is imported from)."""
        flag = self.world.try_imported.get(self.module, {}).get(name)
        if named is not None and named.startswith("plugin:"):
            module, _, bound = named.removeprefix("plugin:").rpartition(".")
            flag = self.world.try_imported.get(module, {}).get(bound)
        return flag if flag is not None and not (named or "").startswith("vllm.") else None

    def _strings_named(self, test: ast.expr) -> frozenset[str]:
        """The strings a test names, those of the flags it reads included (``HAS_X =
        "x" in T.__dataclass_fields__`` ... ``if HAS_X:``: a module constant, a local,
        ``self.has_x`` bound in the class)."""
        found = set(strings_in(test))
        for inner in ast.walk(test):
            bound: ast.expr | None = None
            if isinstance(inner, ast.Name):
                if self.function_bodies:
                    bound = value_bound(own_statements(self.function_bodies[-1]), inner)
                bound = bound if bound is not None else self.constants.get(inner.id)
            elif (
                isinstance(inner, ast.Attribute)
                and isinstance(inner.value, ast.Name)
                and inner.value.id == "self"
                and self.class_nodes
            ):
                bound = value_bound(ast.walk(self.class_nodes[-1]), inner)
            if bound is not None:
                found |= strings_in(bound)
        return frozenset(found)

    def _expressions(self, node: ast.expr) -> None:
        # A comprehension's names are its own: typed while its parts are walked only.
        # The sides of ``a if test else b``, the later operands of ``and`` and ``or`` and
        # what a comprehension makes run under their test, as an ``if``'s branches do.
        pending: list[ast.AST | _Under | None] = [node]
        while pending:
            inner = pending.pop()
            if inner is None:
                self.scope_types.pop()  # the end of a comprehension
                continue
            if isinstance(inner, _Under):
                self._enter(inner) if inner.entering else self._leave(inner)
                continue
            if isinstance(inner, ast.IfExp):
                pending.extend(self._sides_under_test(inner))
                continue
            if isinstance(inner, ast.BoolOp):
                pending.extend(self._operands_under_earlier(inner))
                continue
            if isinstance(inner, _COMPREHENSIONS):
                self.scope_types.append(self._comprehension_types(inner))
                pending.append(None)
                pending.extend(self._comprehension_parts(inner))
                continue
            if isinstance(inner, ast.Call):
                self._call(inner)
            elif isinstance(inner, ast.Attribute):
                self._attribute(inner)
            pending.extend(reversed(list(ast.iter_child_nodes(inner))))

    def _sides_under_test(self, node: ast.IfExp) -> list[ast.AST | _Under]:
        """What walks ``body if test else orelse``, in reverse (a stack): the test, then
        each side under its branch of it."""
        walk: list[ast.AST | _Under] = [node.test]
        for branch, side in ((True, node.body), (False, node.orelse)):
            walk += self._under(node.test, branch, [side])
        return walk[::-1]

    def _operands_under_earlier(self, node: ast.BoolOp) -> list[ast.AST | _Under]:
        """What walks ``a and b and c``, in reverse: ``b`` runs where ``a`` held, ``c``
        where both did (of ``or``: where they failed)."""
        reached = isinstance(node.op, ast.And)  # what the earlier operands were
        first, *rest = node.values
        walk: list[ast.AST | _Under] = [first]
        for index, operand in enumerate(rest, start=1):
            earlier = node.values[:index]
            test = earlier[0] if len(earlier) == 1 else ast.BoolOp(op=node.op, values=earlier)
            walk += self._under(test, reached, [operand])
        return walk[::-1]

    def _comprehension_parts(
        self, node: ast.ListComp | ast.SetComp | ast.GeneratorExp | ast.DictComp
    ) -> list[ast.AST | _Under]:
        """What walks a comprehension, in reverse: each ``for`` part and ``if``, then
        what it makes, each where every ``if`` before it held."""
        walk: list[ast.AST | _Under] = []
        tests: list[ast.expr] = []

        def under_tests(parts: list[ast.AST]) -> list[ast.AST | _Under]:
            if not tests:
                return list(parts)
            test = tests[0] if len(tests) == 1 else ast.BoolOp(op=ast.And(), values=tests)
            return self._under(test, True, parts)

        for generator in node.generators:
            walk += under_tests([generator.target, generator.iter])
            for test in generator.ifs:
                walk += under_tests([test])
                tests = [*tests, test]
        made: list[ast.AST] = (
            [node.key, node.value] if isinstance(node, ast.DictComp) else [node.elt]
        )
        return [*walk, *under_tests(made)][::-1]

    def _under(self, test: ast.expr, branch: bool, parts: list[ast.AST]) -> list[ast.AST | _Under]:
        """``parts`` between the marks of running where ``test`` came out ``branch``."""
        under = _Under(self._guard(test, branch), frozenset(present_when(test, branch)))
        return [under, *parts, under.closing()]

    def _enter(self, under: _Under) -> None:
        if under.guard is not None:
            self.conditions.append(under.guard)
        self.attributes_present.append(set(under.present))

    def _leave(self, under: _Under) -> None:
        self.attributes_present.pop()
        if under.guard is not None:
            self.conditions.pop()

    def _comprehension_types(
        self, node: ast.ListComp | ast.SetComp | ast.GeneratorExp | ast.DictComp
    ) -> dict[str, str]:
        """``[out.req_ids for out in outputs]``: the names its ``for`` parts type."""
        found: dict[str, str] = {}
        self.scope_types.append(found)
        for generator in node.generators:
            found.update(self._loop_types(generator.target, generator.iter))
        self.scope_types.pop()
        return found

    # --- uses ---------------------------------------------------------------------

    def _add(self, kind: str, line: int, target: str, **more: object) -> None:
        guards = tuple(self.conditions)
        fallback = self.world.fallbacks.get(self.module, {}).get(target)
        if fallback is not None and kind != "import":
            # ``try: from a import X`` / ``except ImportError: from b import Y as X``:
            # X is a's where that block's imports take, b's elsewhere.
            text = f"the imports of the try binding {fallback.primary.rpartition('.')[2]}"
            took = Guard(fallback.took, True, text)
            self._append(kind, line, fallback.primary, (*guards, took), more)
            guards = (*guards, dataclasses.replace(took, branch=False))
        self._append(kind, line, target, guards, more)
        for guard in self.conditions:
            if guard.is_version:
                self.reading.versions_named.update(versions_named(guard.test))

    def _append(
        self, kind: str, line: int, target: str, guards: tuple[Guard, ...], more: dict[str, object]
    ) -> None:
        self.reading.uses.append(
            Use(
                kind,
                self.path,
                line,
                target,
                guards=guards,
                handled=self.handled > 0,
                missing_handled=self.missing_handled > 0,
                type_handled=self.type_handled > 0,
                in_try=self.fallback_tries[-1] if self.fallback_tries else None,
                **more,  # type: ignore[arg-type]
            )
        )

    def _import(self, node: ast.Import | ast.ImportFrom) -> None:
        top_level = self.functions == 0
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.startswith("vllm.") or alias.name == "vllm":
                    self._add("import", node.lineno, alias.name, top_level=top_level)
            return
        if node.level or not node.module:
            return
        if node.module != "vllm" and not node.module.startswith("vllm."):
            return
        for alias in node.names:
            if alias.name == "*":  # the module is imported; what it binds is read as used
                self._add("import", node.lineno, node.module, top_level=top_level)
            else:
                self._add(
                    "import", node.lineno, node.module, member=alias.name, top_level=top_level
                )

    def _subclass_use(self, cls: PluginClass, node: ast.ClassDef) -> None:
        chain, vllm_base = self.world.chain(cls.qualified)
        if vllm_base is None:
            return
        own_init = any("__init__" in c.methods for c in chain)
        fields: list[tuple[str, bool]] = []
        if all(c.is_dataclass for c in chain):
            for c in reversed(chain):
                fields += c.fields
        self._add(
            "subclass",
            node.lineno,
            vllm_base,
            member=cls.name,
            via=cls.name,
            defines=tuple(sorted({m for c in chain for m in c.methods})),
            below_define=tuple(sorted(self.world.defined_below(cls.qualified))),
            abstract=any(c.abstract for c in chain),
            own_init=own_init,
            own_fields=tuple(fields),
            handles=frozenset().union(*(c.handles for c in chain)),
            chain_states=tuple(c.state for c in chain),
        )

    def _called(self, func: ast.expr) -> str | None:
        """What a call calls; ``cls(...)`` and ``type(self)(...)`` in a plugin class call
        that class."""
        instance = _instance_whose_class(func)
        own = (isinstance(func, ast.Name) and func.id == "cls") or (
            isinstance(instance, ast.Name) and instance.id == "self"
        )
        if own and self.class_stack:
            return self.class_stack[-1].qualified
        if instance is not None:
            # ``type(output)(...)`` keeps whatever subclass ``output`` is, which its
            # annotation does not tell: not judged.
            return None
        return self.world.resolve(self.module, self._class_held(func))

    def _class_held(self, func: ast.expr) -> ast.expr:
        """The class a local name holds where the function binds it once to a class or
        to a choice of two (``cls = NPUOutput if omni else AsyncGPUModelRunnerOutput``):
        the side the ``if`` the call sits in takes on the same test; the class a class
        attribute holds (``output_cls = ModelRunnerOutput``, called as
        ``self.output_cls(...)``); else ``func``."""
        if (
            isinstance(func, ast.Attribute)
            and isinstance(func.value, ast.Name)
            and func.value.id == "self"
            and self.class_nodes
        ):
            return _class_attribute_held(self.class_nodes[-1], func.attr) or func
        if not isinstance(func, ast.Name) or not self.function_bodies:
            return func
        body = self.function_bodies[-1]
        if self.function_bindings[-1].get(func.id) != 1:
            return func
        value = value_bound(own_statements(body), func)
        if isinstance(value, ast.IfExp):
            test = condition_text(value.test)
            branch = next((g.branch for g in reversed(self.conditions) if g.text == test), None)
            if branch is None:
                return func
            value = value.body if branch else value.orelse
        return value if isinstance(value, (ast.Name, ast.Attribute)) else func

    def _call(self, node: ast.Call) -> None:
        if self._named_member(node) or self._base_init(node):
            return
        imported = module_imported(node)
        if imported is not None and (imported == "vllm" or imported.startswith("vllm.")):
            self._add("import", node.lineno, imported, top_level=self.functions == 0)
            return
        called = self._called(node.func)
        shape = self._shape(node)
        if self._standard(called) == "functools.partial" and node.args:
            # ``partial(ModelRunnerOutput, req_ids=...)``: the rest comes at its call
            first = node.args[0]
            shape = {**shape, "positional": cast(int, shape["positional"]) - 1}
            self._construct(node, self._called(first), {**shape, "open_ended": True})
            return
        forwarder = self._forwarder(node.func, called)
        if forwarder is not None:
            # ``make_output(req_ids=...)`` handing its keywords to ``ModelRunnerOutput``
            target = self.world.resolve(forwarder.module, forwarder.called)
            if self._construct(node, target, _forwarded(shape, forwarder)):
                return
        if self._standard(called) in _REPLACES or (
            isinstance(node.func, ast.Name) and node.func.id == "replace"
        ):
            self._replace(node, shape)
            return
        if isinstance(node.func, ast.Attribute) and node.func.attr == "_replace":
            # ``tensors._replace(cu_num_generated_tokens=...)`` on vLLM's NamedTuple
            held = self._type_of(node.func.value)
            if held is not None and held.startswith(f"{OUTPUTS}."):
                self._add("construct", node.lineno, held, member="replace", **shape)
                return
        if self._construct(node, called, shape):
            return
        if (
            called is not None
            and called.startswith("vllm.")
            and called.rsplit(".", 1)[-1] in PRODUCER_CALLS
        ):
            self._add(
                "call",
                node.lineno,
                called.rsplit(".", 1)[0],
                member=called.rsplit(".", 1)[1],
                unpacked=self.unpack.get(id(node)),
                **shape,
            )
            return
        method = self._output_method(node.func)
        if method is not None:
            owner, member, via, on_class = method
            self.methods_called.add(id(node.func))
            self._add(
                "call",
                node.lineno,
                owner,
                member=member,
                via=via,
                on_class=on_class,
                unpacked=self.unpack.get(id(node)),
                **shape,
            )
            return
        if isinstance(node.func, ast.Attribute) and node.func.attr in PRODUCER_CALLS:
            producer = self._producer_owner(node.func)
            if producer is not None:
                self._add(
                    "call",
                    node.lineno,
                    producer,
                    member=node.func.attr,
                    unpacked=self.unpack.get(id(node)),
                    **shape,
                )

    def _base_init(self, node: ast.Call) -> bool:
        """``super().__init__(...)`` (or ``AsyncOutput.__init__(self, ...)``) in a plugin
        class right below one of vLLM's judged classes: a construction of vLLM's class
        with those arguments, as its constructor takes them. Whether it was one."""
        func = node.func
        if not (isinstance(func, ast.Attribute) and func.attr == "__init__" and self.class_stack):
            return False
        cls = self.class_stack[-1]
        parent = cls.bases[0] if cls.bases else None
        if parent is None or not parent.startswith("vllm.") or not is_judged(parent):
            return False
        shape = self._shape(node)
        if _is_super(func.value):
            pass
        elif (
            self.world.resolve(self.module, func.value) == parent
            and node.args
            and isinstance(node.args[0], ast.Name)
            and node.args[0].id == "self"
        ):
            shape["positional"] = cast(int, shape["positional"]) - 1  # self
        else:
            return False
        self._add("construct", node.lineno, parent, **shape)
        return True

    def _shape(self, node: ast.Call) -> dict[str, object]:
        """A call's arguments as a use records them."""
        positional = sum(not isinstance(a, ast.Starred) for a in node.args)
        open_ended = any(isinstance(a, ast.Starred) for a in node.args)
        keywords: list[str] = []
        guarded: dict[str, Alternatives] = {}
        tested: set[str] = set()
        for keyword in node.keywords:
            if keyword.arg is not None:
                keywords.append(keyword.arg)
                continue
            built = self._dict_keys(keyword.value)
            keywords += sorted(built.keys)
            guarded.update(built.guarded)
            tested |= built.tested
            open_ended = open_ended or not built.known
        return {
            "positional": positional,
            "keywords": tuple(keywords),
            "open_ended": open_ended,
            "guarded_keywords": tuple(sorted(guarded.items())),
            "tested_keywords": tuple(sorted(tested)),
            "empty": tuple(k.arg for k in node.keywords if k.arg and is_empty(k.value)),
            "never_none": tuple(
                k.arg for k in node.keywords if k.arg and self._never_none(k.value)
            ),
            "python_lists": tuple(
                k.arg for k in node.keywords if k.arg and self._python_lists(k.value)
            ),
        }

    def _construct(self, node: ast.Call, called: str | None, shape: dict[str, object]) -> bool:
        """Records the call as building ``called`` where that is one of the judged types
        or a plugin class resting on one; whether it was."""
        if called is None or not self.world.constructs(called):
            return False
        if called.startswith("plugin:"):
            chain, vllm_base = self.world.chain(called)
            self._add(
                "construct",
                node.lineno,
                str(vllm_base),
                via=chain[0].name,
                own_init=any("__init__" in c.methods for c in chain),
                own_fields=_fields_of(chain),
                one_token_rows=self._asserts_one_token_rows(),
                **shape,
            )
        else:
            self._add("construct", node.lineno, called, **shape)
        return True

    def _asserts_one_token_rows(self) -> bool:
        """Whether the function the walk is in, or a method of its class it calls on
        ``self`` (the runner's bookkeeping), asserts one token per row of sampled ids."""
        if not self.function_bodies:
            return False
        body = self.function_bodies[-1]
        if asserts_one_token_rows(body):
            return True
        if not self.class_nodes:
            return False
        methods = {
            n.name: n.body
            for n in self.class_nodes[-1].body
            if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))
        }
        called = {
            node.func.attr
            for statement in own_statements(body)
            for node in walked(statement)
            if isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and isinstance(node.func.value, ast.Name)
            and node.func.value.id == "self"
        }
        return any(asserts_one_token_rows(methods[m]) for m in called & set(methods))

    def _forwarder(self, func: ast.expr, called: str | None) -> Forwarder | None:
        """The plugin function a call calls, where it hands its ``**kwargs`` on: by its
        name, or as a method of the class the walk is in (``self.make_output(...)``)."""
        if called is not None and called in self.world.forwarders:
            return self.world.forwarders[called]
        if not isinstance(func, ast.Attribute):
            return None
        owner = self._held_class(func.value)
        if owner is None and isinstance(func.value, ast.Name) and func.value.id == "cls":
            owner = self.class_stack[-1].qualified if self.class_stack else None
        if owner is None:
            return None
        for cls in self.world.chain(owner)[0]:
            found = self.world.forwarders.get(f"{cls.qualified}.{func.attr}")
            if found is not None:
                return found
        return None

    def _replace(self, node: ast.Call, shape: dict[str, object]) -> None:
        if not node.args:
            return
        first = node.args[0]
        target = self.world.resolve(self.module, first)
        if target == f"{OUTPUTS}.{EMPTY}":
            target = f"{OUTPUTS}.ModelRunnerOutput"
        else:
            target = self._type_of(first)
        if target is None or not target.startswith("vllm."):
            return
        self._add("construct", node.lineno, target, member="replace", **{**shape, "positional": 0})

    def _python_lists(self, value: ast.expr) -> bool:
        """Whether a value is built by ``tensor.tolist()``, where it is given or in the
        one binding of the name given: Python lists, whatever the tensor held."""
        if isinstance(value, ast.Name) and self.function_bodies:
            if self.function_bindings[-1].get(value.id) != 1:
                return False
            if value.id in self.function_parameters[-1]:
                return False
            bound = value_bound(own_statements(self.function_bodies[-1]), value)
            value = bound if bound is not None else value
        return (
            isinstance(value, ast.Call)
            and isinstance(value.func, ast.Attribute)
            and value.func.attr == "tolist"
            and not value.args
        )

    def _never_none(self, value: ast.expr) -> bool:
        """Whether a value is never None: a display, a literal, or a name the function
        binds once, to one of those."""
        if isinstance(value, ast.Name) and self.function_bodies:
            body = self.function_bodies[-1]
            if value.id in self.function_parameters[-1]:
                return False  # a parameter may be handed None whatever it is bound to after
            if self.function_bindings[-1].get(value.id) != 1:
                return False
            for node in own_statements(body):
                if isinstance(node, ast.AnnAssign) and binds(node.target, value.id):
                    return node.value is not None and literal_not_none(node.value)
                if isinstance(node, ast.Assign) and any(binds(t, value.id) for t in node.targets):
                    return literal_not_none(node.value)
            return False
        return literal_not_none(value)

    def _output_method(self, func: ast.expr) -> tuple[str, str, str, bool] | None:
        """The output type whose method a call calls, the method, the plugin class it
        goes through and whether through the class: ``tensors.tolists(cu)``,
        ``sampler_output.logprobs_tensors.tolists()``, ``LogprobsTensors.empty_cpu(0, k)``,
        ``NPUOutput.with_kv_conn_output_only(out)``.  Its arguments are then judged
        against the method's signature in each vLLM, as a producer call's are."""
        if not isinstance(func, ast.Attribute) or func.attr in PRODUCER_CALLS:
            return None
        if self._tested_present(func.value, func.attr):
            return None
        owner = self.world.resolve(self.module, func.value)
        on_class = owner is not None and (
            is_judged(owner)
            or (owner.startswith("plugin:") and self.world.chain(owner)[1] is not None)
        )
        if not on_class:
            owner = self._type_of(func.value)
        if owner is None or owner.startswith(SEQUENCE_OF):
            return None
        via = ""
        if owner.startswith("plugin:"):
            chain, base = self.world.chain(owner)
            if base is None or func.attr in _defined_by(chain):
                return None
            owner, via = base, chain[0].name
        module, _, type_name = owner.rpartition(".")
        if module != OUTPUTS or not is_judged(owner) or type_name not in output_classes():
            return None  # ``PoolerOutput``, an alias of tensors: its methods are torch's
        return owner, func.attr, via, on_class

    def _producer_owner(self, func: ast.Attribute) -> str | None:
        """The vLLM class whose producer method is called: known from the receiver
        (``Sampler.gather_logprobs``, ``self.sampler`` of a plugin subclass of Sampler,
        ``super()``), else from the module importing vLLM's producer module."""
        wanted = PRODUCER_CALLS[func.attr]
        receiver = func.value
        resolved = self.world.resolve(self.module, receiver)
        if resolved == wanted:
            return wanted
        if resolved is not None and resolved.startswith("plugin:"):
            # ``NPURejectionSampler.parse_output(...)``: vLLM's through a subclass that
            # does not define it; any other plugin class or module calls its own.
            chain, base = self.world.chain(resolved)
            return wanted if base == wanted and func.attr not in _defined_by(chain) else None
        below = False  # ``super().gather_logprobs(...)`` skips the class's own
        if isinstance(receiver, ast.Call) and tail_name(receiver.func) == "super":
            receiver, below = ast.Name("self"), True
        if isinstance(receiver, ast.Name) and receiver.id == "self" and self.class_stack:
            chain, base = self.world.chain(self.class_stack[-1].qualified)
            if func.attr in _defined_by(chain[1:] if below else chain):
                return None  # the plugin's own method
            if base == wanted:
                return wanted
        held = self._held_class(receiver)
        if held is not None and held != (
            self.class_stack[-1].qualified if self.class_stack else None
        ):
            # ``self.rejection_sampler.parse_output(...)`` of ``self.rejection_sampler =
            # NPURejectionSampler()``: vLLM's where that class rests on it without
            # defining the method, the plugin's own otherwise, whatever the file imports.
            chain, base = self.world.chain(held)
            return wanted if base == wanted and func.attr not in _defined_by(chain) else None
        module = wanted.rsplit(".", 1)[0]
        imports = self.world.bindings.get(self.module, {}).values()
        if any(b == module or b.startswith(module + ".") for b in imports):
            return wanted
        return None

    def _attribute(self, node: ast.Attribute) -> None:
        if id(node) in self.methods_called:
            return
        if isinstance(node.ctx, ast.Store) and (self._class_changed(node) or self._patch(node)):
            return
        kind = "write" if isinstance(node.ctx, ast.Store) else "read"
        if kind == "read" and self._module_member(node):
            return
        value = self.assigned.get(id(node))
        empty = (node.attr,) if value is not None and is_empty(value) else ()
        never_none = (node.attr,) if value is not None and self._never_none(value) else ()
        none_tested = kind == "read" and self._none_tested(node)
        self._member_use(
            node.value,
            node.attr,
            kind,
            node.lineno,
            empty,
            never_none,
            none_tested,
            unpacked=self.unpack.get(id(node)),
        )

    def _module_member(self, node: ast.Attribute) -> bool:
        """``outputs.RoutedExpertsLists`` of ``import vllm.v1.outputs as outputs``: a name
        taken from one of vLLM's judged modules where the code runs, as ``from`` imports
        it (an AttributeError where the module lacks it). Whether it was."""
        module = self.world.resolve(self.module, node.value)
        if module is None or module not in JUDGED_MODULES:
            return False
        if (
            node.attr.startswith("__")
            or id(node) in self.unevaluated
            or (module, node.attr) in self.world.vllm_module_stores
            or self._tested_present(node.value, node.attr)
        ):
            return True  # never read, or read where the plugin made sure it is there
        self._add(
            "import", node.lineno, module, member=node.attr, top_level=False, as_attribute=True
        )
        return True

    def _none_tested(self, node: ast.Attribute) -> bool:
        """A read that is itself a test for truth or None, or whose value goes to a name
        the function binds once and reads only where such a test held."""
        if id(node) in self.truth_tested[-1]:
            return True
        bound = self.bound_to.get(id(node))
        return (
            bound is not None
            and bool(self.function_bodies)
            and self.function_bindings[-1].get(bound) == 1
            and every_use_tested(self.function_bodies[-1], bound)
        )

    def _named_member(self, node: ast.Call) -> bool:
        """``getattr(o, "x")`` reads ``o.x`` (with a default it cannot fail);
        ``setattr(o, "x", v)`` writes it."""
        if not isinstance(node.func, ast.Name) or node.func.id not in ("getattr", "setattr"):
            return False
        wanted = 2 if node.func.id == "getattr" else 3
        if len(node.args) != wanted or node.keywords:
            return False
        name = node.args[1]
        if not (isinstance(name, ast.Constant) and isinstance(name.value, str)):
            return False
        kind = "read" if node.func.id == "getattr" else "write"
        self._member_use(node.args[0], name.value, kind, node.lineno)
        return True

    def _class_changed(self, node: ast.Attribute) -> bool:
        """``ModelRunnerOutput.__init__ = patched``, ``ModelRunnerOutput.extra = None``
        (on the class, or a local name holding it): the plugin changes vLLM's output
        type itself, for its own constructions and reads."""
        held = self._class_held(node.value) if self._is_local(node.value) else node.value
        owner = self.world.resolve(self.module, held)
        if owner is None or not owner.startswith(f"{OUTPUTS}.") or self._type_of(held):
            return False
        if owner.removeprefix(f"{OUTPUTS}.") not in JUDGED_TYPES:
            return False
        value = self.assigned.get(id(node))
        change = ClassChange(owner, node.attr, self.path, node.lineno, tuple(self.conditions))
        if node.attr == "__init__":
            if value is not None and not self._restores_init(value):
                self.reading.class_changes.append(self._replacement(change, value))
            return True
        if value is not None and (isinstance(value, ast.Constant) or literal_not_none(value)):
            self.reading.class_changes.append(change)
            return True
        return False

    def _restores_init(self, value: ast.expr) -> bool:
        """``cls.__init__ = original_init`` (bound to ``cls.__init__`` before): vLLM's
        own constructor put back."""
        if isinstance(value, ast.Name):
            bodies = (*self.function_bodies[::-1], self.tree.body)
            value = next(
                (v for b in bodies if (v := value_bound(own_statements(b), value)) is not None),
                value,
            )
        return isinstance(value, ast.Attribute) and value.attr == "__init__"

    def _replacement(self, change: ClassChange, value: ast.expr) -> ClassChange:
        """What the ``__init__`` a plugin sets takes: a function it defines beside."""
        definition = None
        if isinstance(value, ast.Name):
            scopes = [own_statements(b) for b in (*self.function_bodies[::-1], self.tree.body)]
            definition = next(
                (
                    statement
                    for body in scopes
                    for statement in body
                    if isinstance(statement, (ast.FunctionDef, ast.AsyncFunctionDef))
                    and statement.name == value.id
                ),
                None,
            )
        if definition is None:
            return change
        arguments = definition.args
        named = [*arguments.posonlyargs, *arguments.args][1:] + arguments.kwonlyargs
        return dataclasses.replace(
            change, own=frozenset(a.arg for a in named), passes_on=arguments.kwarg is not None
        )

    def _patch(self, node: ast.Attribute) -> bool:
        """``sampler.compute_topk_logprobs = npu_topk``, ``AsyncOutput.get_output = f``:
        the plugin replaces a name of vLLM's module or class, which then must still
        have it for the patch to take."""
        if self._is_local(node.value) or id(node) in self.augmented:
            return False  # ``rejection_sampler = runner.rejection_sampler``: not the module
        owner = self.world.resolve(self.module, node.value)
        if owner is None or not owner.startswith("vllm.") or self._type_of(node.value):
            return False  # an object's field written (``EMPTY_MODEL_RUNNER_OUTPUT.x = ...``)
        key = (ast.unparse(node.value), node.attr)
        polyfill = any(key in absent for absent in self.attributes_absent)
        if not polyfill and not self._tested_present(node.value, node.attr):
            self._add("patch", node.lineno, owner, member=node.attr)
        return True

    def _tested_present(self, value: ast.expr, attr: str) -> bool:
        key = (ast.unparse(value), attr)
        return any(key in present for present in self.attributes_present)

    def _member_use(
        self,
        value: ast.expr,
        attr: str,
        kind: str,
        line: int,
        empty: tuple[str, ...] = (),
        never_none: tuple[str, ...] = (),
        none_tested: bool = False,
        unpacked: int | None = None,
    ) -> None:
        if self._tested_present(value, attr):
            return
        owner = self._type_of(value)
        if owner is None:
            return
        cls = owner
        via = ""
        if owner.startswith("plugin:"):
            chain, base = self.world.chain(owner)
            if base is None:
                return
            if attr in _defined_by(chain):
                return
            cls, via = base, chain[0].name
        if not cls.startswith(f"{OUTPUTS}.") and cls.rsplit(".", 1)[0] not in VLLM_ASYNC_OUTPUTS:
            return
        if cls.removeprefix(f"{OUTPUTS}.") in output_aliases():
            return  # ``PoolerOutput``, an alias of tensors: its members are torch's
        self._add(
            kind,
            line,
            cls,
            member=attr,
            via=via,
            empty=empty,
            never_none=never_none,
            none_tested=none_tested,
            unpacked=unpacked,
        )

    def _value_unpacked(self, target: ast.Tuple | ast.List, value: ast.expr, line: int) -> None:
        """``ids, logprobs, ranks = tensors`` (or ``for ... in``) of a value holding one of
        vLLM's types: the names must be as many as its fields (a NamedTuple's)."""
        held = self._type_of(value) if value is not None else None
        if held is None or not held.startswith(f"{OUTPUTS}."):
            return
        self._add("read", line, held, unpacked=len(target.elts))

    # --- types --------------------------------------------------------------------

    def _standard(self, called: str | None) -> str | None:
        """``copy.copy``, ``dataclasses.replace``: a name of the standard library's
        module the plugin holds none of its own by (None for anything else)."""
        if called is None or not called.startswith("plugin:"):
            return None
        dotted = called.removeprefix("plugin:")
        return None if dotted.split(".")[0] in self.world.tops else dotted

    def _type_of(self, node: ast.expr) -> str | None:
        if isinstance(node, ast.Name):
            for scope in reversed(self.scope_types):
                if node.id in scope:
                    return scope[node.id]
        if (
            isinstance(node, (ast.Name, ast.Attribute))
            and self.world.resolve(self.module, node) == f"{OUTPUTS}.{EMPTY}"
        ):
            return f"{OUTPUTS}.ModelRunnerOutput"
        if isinstance(node, ast.Name):
            return None
        if (
            isinstance(node, ast.Attribute)
            and isinstance(node.value, ast.Name)
            and node.value.id == "self"
            and self.class_stack
        ):
            chain, vllm_base = self.world.chain(self.class_stack[-1].qualified)
            for cls in chain or self.class_stack[-1:]:
                if node.attr in cls.attribute_types:
                    return cls.attribute_types[node.attr]
            if vllm_base is not None and vllm_base.rpartition(".")[0] in VLLM_ASYNC_OUTPUTS:
                # what vLLM's async output's own __init__ stored
                return ASYNC_OUTPUT_ATTRIBUTES.get(node.attr)
            return None
        if isinstance(node, ast.Attribute):
            # ``self.state.out``: what the plugin class ``self.state`` holds stores there
            held = self._held_class(node.value) if isinstance(node.value, ast.Attribute) else None
            for cls in self.world.chain(held)[0] if held is not None else ():
                if node.attr in cls.attribute_types:
                    return cls.attribute_types[node.attr]
            return self._field_type(self._type_of(node.value), node.attr)
        if isinstance(node, ast.Call):
            return self._type_of_value(node)
        if isinstance(node, ast.Subscript):
            # ``outputs[0]`` an element, ``outputs[1:]`` a sequence again
            element = self._element_of(node.value)
            if element is not None and isinstance(node.slice, ast.Slice):
                return SEQUENCE_OF + element
            return element
        if isinstance(node, ast.IfExp):
            # ``result if result is not None else EMPTY_MODEL_RUNNER_OUTPUT``
            sides = [
                side
                for side in (node.body, node.orelse)
                if not (isinstance(side, ast.Constant) and side.value is None)
            ]
            types = {self._type_of(side) for side in sides} - {None}
            return types.pop() if len(types) == 1 else None
        return None

    def _field_type(self, owner: str | None, attr: str) -> str | None:
        """The output type a field of an output type holds (``SamplerOutput``'s
        ``logprobs_tensors``), as vLLM's own annotations say."""
        if owner is None or owner.startswith(SEQUENCE_OF):
            return None
        if owner.startswith("plugin:"):
            chain, base = self.world.chain(owner)
            if base is None or attr in _defined_by(chain):
                return None
            owner = base
        module, _, type_name = owner.rpartition(".")
        if module != OUTPUTS:
            return None
        return output_field_types().get((type_name, attr))

    def _element_of(self, node: ast.expr) -> str | None:
        """The judged type of the elements of a sequence (``reversed(x)``,
        ``sorted(x)`` and ``list(x)`` hold the elements of ``x``)."""
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Name)
            and node.func.id in ("reversed", "sorted", "list", "tuple", "iter")
            and len(node.args) == 1
        ):
            node = node.args[0]
        typed = self._type_of(node)
        if typed is None or not typed.startswith(SEQUENCE_OF):
            return None
        return typed.removeprefix(SEQUENCE_OF)

    def _loop_types(self, target: ast.expr, over: ast.expr) -> dict[str, str]:
        """The names ``for target in over`` binds to a judged type (``enumerate`` too)."""
        if (
            isinstance(over, ast.Call)
            and isinstance(over.func, ast.Name)
            and over.func.id == "enumerate"
            and over.args
            and isinstance(target, (ast.Tuple, ast.List))
            and len(target.elts) == 2
        ):
            over, target = over.args[0], target.elts[1]
        element = self._element_of(over)
        if element is None or not isinstance(target, ast.Name):
            return {}
        return {target.id: element}

    def _returned_by(self, func: ast.expr, called: str | None) -> str | None:
        """The judged type a plugin function or method says it returns
        (``def build(...) -> ModelRunnerOutput``, ``self.build(...)``)."""
        found = self.world.returns.get(called) if called is not None else None
        owner = self._held_class(func.value) if isinstance(func, ast.Attribute) else None
        if found is None and owner is not None and isinstance(func, ast.Attribute):
            own = [c for c in self.class_stack[-1:] if c.qualified == owner]
            for cls in self.world.chain(owner)[0] or own:
                found = self.world.returns.get(f"{cls.qualified}.{func.attr}")
                if found is not None:
                    break
        if found is None:
            return None
        module, annotation = found
        return self._type_of_annotation(annotation, module)

    def _may_be_none(self, node: ast.expr) -> bool:
        """A read of a field vLLM types as possibly None (``out.kv_connector_output``)."""
        if not isinstance(node, ast.Attribute):
            return False
        owner = self._type_of(node.value)
        if owner is None or not owner.startswith(f"{OUTPUTS}."):
            return False
        return output_field_may_be_none(owner.rpartition(".")[2], node.attr)

    def _held_class(self, node: ast.expr) -> str | None:
        """The plugin class whose instance ``node`` is: ``self`` (its own class), or
        ``self.x`` bound to one (:meth:`_self_attribute_classes`), at any depth
        (``self.model.sampler`` where the model's class binds its ``self.sampler``)."""
        if not self.class_stack:
            return None
        if isinstance(node, ast.Name) and node.id == "self":
            return self.class_stack[-1].qualified
        if not isinstance(node, ast.Attribute):
            return None
        holder = self._held_class(node.value)
        if holder is None:
            return None
        own = self.class_stack[-1]
        for cls in self.world.chain(holder)[0] or ([own] if own.qualified == holder else []):
            if node.attr in cls.attribute_classes:
                return cls.attribute_classes[node.attr]
        return None

    def _type_of_value(self, node: ast.expr) -> str | None:
        """The judged type a value has: a construction's, or ``get_output()``'s."""
        if not isinstance(node, ast.Call):
            return None
        called = self._called(node.func)
        if self._standard(called) in _COPIES and node.args:
            return self._type_of(node.args[0])  # a copy is of its original's type
        if self._standard(called) == "typing.cast" and node.args:
            return self._type_of_annotation(node.args[0])  # cast(ModelRunnerOutput, x)
        returned = self._returned_by(node.func, called)
        if returned is not None:
            return returned
        method = self._output_method(node.func)
        if method is not None:
            owner, member, _, _ = method
            return output_method_returns().get((owner.rpartition(".")[2], member))
        if called is not None and (called.startswith("plugin:") or is_judged(called)):
            if called.startswith("plugin:"):
                return called if self.world.chain(called)[1] else None
            return called
        if called is not None and called.rpartition(".")[0] == OUTPUTS:
            # a function of the outputs module annotated to return one of the types
            return output_method_returns().get(("", called.rpartition(".")[2]))
        if isinstance(node.func, ast.Attribute) and node.func.attr == "get_output":
            receiver = node.func.value
            typed = self._type_of(receiver)
            if _is_super(receiver) or (isinstance(receiver, ast.Name) and receiver.id == "self"):
                # ``super().get_output()`` in a plugin's async output
                typed = self.class_stack[-1].qualified if self.class_stack else None
            if (typed is not None and self._is_async_output(typed)) or "async" in ast.unparse(
                receiver
            ).lower():
                return f"{OUTPUTS}.ModelRunnerOutput"
        return None

    def _is_async_output(self, name: str) -> bool:
        if name.startswith("plugin:"):
            name = self.world.chain(name)[1] or ""
        return name == ASYNC_BASE or name.rsplit(".", 1)[0] in VLLM_ASYNC_OUTPUTS

    def _type_of_annotation(self, node: ast.expr | None, module: str | None = None) -> str | None:
        inner = unwrap_annotation(node)
        if inner is None:
            return None
        element = element_annotation(inner)
        if element is not None:
            judged = self._type_of_annotation(element, module)
            return (
                None if judged is None or judged.startswith(SEQUENCE_OF) else SEQUENCE_OF + judged
            )
        named = self.world.resolve(module or self.module, inner)
        if named is None:
            return None
        if named.startswith("plugin:"):
            return named if self.world.chain(named)[1] else None
        return named if is_judged(named) else None

    def _types_in(
        self, body: list[ast.stmt], into: dict[str, str], bindings: dict[str, int] | None = None
    ) -> None:
        """Names of a function (or module) whose judged type its assignments show, added
        to ``into``, the scope in force (so a copy of a name typed before is typed).
        ``bindings``: :func:`bindings_counted` of ``body``, where already counted."""
        counts = bindings_counted(body) if bindings is None else bindings
        bound_once = {name for name, count in counts.items() if count == 1}
        for node, narrowed in _under_isinstance(body, self._narrowed):
            if isinstance(node, (ast.For, ast.AsyncFor)):
                # A name the function binds elsewhere too may hold anything there.
                self.scope_types.append(narrowed)
                for name, element in self._loop_types(node.target, node.iter).items():
                    if name in bound_once:
                        into.setdefault(name, element)
                self.scope_types.pop()
            elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
                judged = self._type_of_annotation(node.annotation)
                if judged:
                    into[node.target.id] = judged
            elif isinstance(node, ast.Assert):
                # ``assert isinstance(out, NPUModelRunnerOutput)``: so it is after
                for name, judged in self._narrowed(node.test).items():
                    into[name] = judged
            elif isinstance(node, ast.Assign) and len(node.targets) == 1:
                target = node.targets[0]
                value = node.value
                # ``if isinstance(out, NPUAsyncOutput): out = out.get_output()``
                self.scope_types.append(narrowed)
                judged = self._type_of(value)
                self.scope_types.pop()
                if (
                    judged is None
                    and isinstance(target, ast.Name)
                    and target.id == _RUNNER_OUTPUT_NAME
                    and not isinstance(value, ast.Constant)
                    and not self._plugins_own_class_made(value)
                    and self._names_vllm_runner_output
                ):
                    judged = f"{OUTPUTS}.ModelRunnerOutput"  # ``model_runner_output = data``
                if judged and isinstance(target, ast.Name):
                    into.setdefault(target.id, judged)

    def _plugins_own_class_made(self, value: ast.expr) -> bool:
        """Whether ``value`` constructs a plugin class resting on none of vLLM's judged
        types (``StepResult(ids)``): its type is shown, and it is not vLLM's."""
        if not isinstance(value, ast.Call):
            return False
        called = self._called(value.func)
        if called is None or not called.startswith("plugin:"):
            return False
        chain, vllm_base = self.world.chain(called)
        return bool(chain) and vllm_base is None

    def _narrowed(self, test: ast.expr) -> dict[str, str]:
        """The names an ``if`` test narrows to a judged type (``isinstance(out,
        ModelRunnerOutput)``, also under ``and``), for the branch it holds in."""
        tests = (
            test.values if isinstance(test, ast.BoolOp) and isinstance(test.op, ast.And) else [test]
        )
        found: dict[str, str] = {}
        for one in tests:
            if not (
                isinstance(one, ast.Call)
                and isinstance(one.func, ast.Name)
                and one.func.id == "isinstance"
                and len(one.args) == 2
                and isinstance(one.args[0], ast.Name)
            ):
                continue
            kinds = one.args[1].elts if isinstance(one.args[1], ast.Tuple) else [one.args[1]]
            judged = {self._type_of_annotation(kind) for kind in kinds} - {None}
            if len(judged) == 1:
                found[one.args[0].id] = judged.pop()  # type: ignore[assignment]
        return found

    def _self_attribute_types(self, node: ast.ClassDef) -> dict[str, str]:
        found: dict[str, str] = {}
        for method in node.body:
            # ``self.x = x`` of a parameter annotated with a judged type
            if not isinstance(method, (ast.FunctionDef, ast.AsyncFunctionDef)):
                continue
            arguments = [*method.args.posonlyargs, *method.args.args, *method.args.kwonlyargs]
            typed = {a.arg: self._type_of_annotation(a.annotation) for a in arguments}
            for statement in own_statements(method.body):
                if not (isinstance(statement, ast.Assign) and len(statement.targets) == 1):
                    continue
                bound, value = statement.targets[0], statement.value
                if (
                    isinstance(bound, ast.Attribute)
                    and isinstance(bound.value, ast.Name)
                    and bound.value.id == "self"
                    and isinstance(value, ast.Name)
                ):
                    of_parameter = typed.get(value.id)
                    if of_parameter:
                        found.setdefault(bound.attr, of_parameter)
        for inner in walked(node):
            target: ast.expr | None = None
            judged = None
            if isinstance(inner, ast.AnnAssign):
                target, judged = inner.target, self._type_of_annotation(inner.annotation)
            elif isinstance(inner, ast.Assign) and len(inner.targets) == 1:
                target, judged = inner.targets[0], self._type_of_value(inner.value)
            if (
                judged
                and isinstance(target, ast.Attribute)
                and isinstance(target.value, ast.Name)
                and target.value.id == "self"
            ):
                found.setdefault(target.attr, judged)
        for statement in node.body:
            # ``output: ModelRunnerOutput`` in the class body: a dataclass field, or an
            # attribute the class declares
            if isinstance(statement, ast.AnnAssign) and isinstance(statement.target, ast.Name):
                judged = self._type_of_annotation(statement.annotation)
                if judged:
                    found.setdefault(statement.target.id, judged)
            # ``@property def last(self) -> ModelRunnerOutput``: read as an attribute
            if isinstance(statement, (ast.FunctionDef, ast.AsyncFunctionDef)) and any(
                tail_name(d) in ("property", "cached_property") for d in statement.decorator_list
            ):
                judged = self._type_of_annotation(statement.returns)
                if judged:
                    found.setdefault(statement.name, judged)
        return found

    def _self_attribute_classes(self, node: ast.ClassDef) -> dict[str, str]:
        """``self.x`` bound to an instance of one plugin class (``self.model_runner =
        NPUModelRunner(...)``, or annotated so), wherever the class binds it: what
        ``self.x.f()`` returns is what that class's ``f`` says it does."""
        found: dict[str, str | None] = {}
        for inner in walked(node):
            target: ast.expr | None = None
            named: str | None = None
            if isinstance(inner, ast.Assign) and len(inner.targets) == 1:
                target = inner.targets[0]
                value = inner.value
                if isinstance(value, ast.Call):
                    named = self.world.resolve(self.module, value.func)
            elif isinstance(inner, ast.AnnAssign):
                target = inner.target
                annotation = unwrap_annotation(inner.annotation)
                named = self.world.resolve(self.module, annotation) if annotation else None
            if not (
                isinstance(target, ast.Attribute)
                and isinstance(target.value, ast.Name)
                and target.value.id == "self"
            ):
                continue
            held = named if named is not None and named in self.world.classes else None
            # Bound to two classes, or to anything else too: which one is not known.
            found[target.attr] = held if found.get(target.attr, held) == held else None
        return {attr: held for attr, held in found.items() if held is not None}

    def _dict_keys(self, node: ast.expr) -> KeywordDict:
        """The keys of a ``**`` argument, and whether they are all known."""
        built = built_dict(node, KeyTests(self._strings_named, self._guard), self._dict_named)
        if built is None and isinstance(node, ast.Call):
            built = self._dict_returned(node)
        return built if built is not None else KeywordDict(set(), False)

    def _dict_returned(self, call: ast.Call) -> KeywordDict | None:
        """The keys of the dictionary a plugin function returns (``**common(ids)``), where
        its one ``return``, at the top of its body (under no test: the keys hold whatever
        the vLLM), gives one whose keys are known."""
        called = self.world.resolve(self.module, call.func)
        function = self.world.functions.get(called or "")
        if function is None:
            return None
        returns = [n for n in own_statements(function.body) if isinstance(n, ast.Return)]
        if len(returns) != 1 or returns[0] not in function.body or returns[0].value is None:
            return None
        return built_dict(returns[0].value, named=dicts_in(function.body).get)

    def _dict_named(self, name: str) -> KeywordDict | None:
        for scope in reversed(self.scope_dicts):
            if name in scope:
                return scope[name]
        return None


#: A class's tables of its fields (a dataclass's, a NamedTuple's, the annotations).
_FIELD_TABLES = frozenset({"__dataclass_fields__", "_fields", "__annotations__"})
#: Calls that hand back a copy of their first argument (``replace`` with changes).
_REPLACES = frozenset({"dataclasses.replace", "copy.replace"})
_COPIES = _REPLACES | {"copy.copy", "copy.deepcopy"}


def _unpackings(node: ast.stmt) -> Iterator[tuple[ast.Tuple | ast.List, ast.expr]]:
    """The ``a, b, c = value`` of an assignment and a ``for`` loop's target and the value
    each name comes from (a loop's element: ``elements[0]`` stands for it), where no name
    is starred. Calls and field reads unpacked are counted where they are read."""
    pairs: list[tuple[ast.expr, ast.expr]] = []
    if isinstance(node, ast.Assign) and not isinstance(node.value, (ast.Call, ast.Attribute)):
        pairs = [(target, node.value) for target in node.targets]
    elif isinstance(node, (ast.For, ast.AsyncFor)):
        element = ast.Subscript(node.iter, ast.Constant(0), ast.Load())
        pairs = [(node.target, element)]
    for target, value in pairs:
        if isinstance(target, (ast.Tuple, ast.List)) and not any(
            isinstance(e, ast.Starred) for e in target.elts
        ):
            yield target, value


def _instance_whose_class(func: ast.expr) -> ast.expr | None:
    """``x`` of ``type(x)(...)`` and of ``x.__class__(...)``."""
    instance: ast.expr | None = None
    if (
        isinstance(func, ast.Call)
        and tail_name(func.func) == "type"
        and len(func.args) == 1
        and not func.keywords
    ):
        instance = func.args[0]
    elif isinstance(func, ast.Attribute) and func.attr == "__class__":
        instance = func.value
    return instance


def _is_super(node: ast.expr) -> bool:
    """``super()`` or ``super(Cls, self)``."""
    return (
        isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "super"
    )


def _forwarded(shape: dict[str, object], forwarder: Forwarder) -> dict[str, object]:
    """What the call a :class:`Forwarder` makes gets, from its caller's ``shape``: the
    caller's keywords less those it removes or that bind its own parameters, with its
    own; its own positional arguments."""
    given = cast(tuple[str, ...], shape["keywords"])
    kept = [k for k in given if k not in forwarder.removed and k not in forwarder.parameters]
    return {
        **shape,
        "positional": forwarder.positional,
        "keywords": tuple(dict.fromkeys([*kept, *forwarder.keywords])),
        "open_ended": bool(shape["open_ended"]) or forwarder.open_ended,
    }


def _fields_of(chain: list[PluginClass]) -> tuple[tuple[str, bool], ...]:
    if not all(c.is_dataclass for c in chain):
        return ()
    found: list[tuple[str, bool]] = []
    for c in reversed(chain):
        found += c.fields
    return tuple(found)


def _under_isinstance(
    body: list[ast.stmt], narrowed_by: Callable[[ast.expr], dict[str, str]]
) -> Iterator[tuple[ast.stmt, dict[str, str]]]:
    """:func:`own_statements`, each with the names the ``isinstance`` tests it sits
    under narrow (in their ``if`` bodies)."""
    read: dict[int, dict[str, str]] = {}
    for node, above in under_tests(body):
        narrowed: dict[str, str] = {}
        for test, in_body in above:
            if in_body:
                if id(test) not in read:
                    read[id(test)] = narrowed_by(test)
                narrowed.update(read[id(test)])
        yield node, narrowed
