"""Each use of a plugin judged against one vLLM: :class:`Finding` per break.

A use is judged only where it runs for that vLLM (:mod:`.guards`) and where vLLM's
text shows what it needs; the kinds of break:

* ``import-fails``: a vLLM module or a name of it the plugin imports is not there
  (an ``except ImportError`` around it handles it: no break);
* ``construction-raises``: a keyword vLLM's type no longer takes, a required field the
  call does not give, more positional arguments than it takes (a plugin's dataclass
  below vLLM's type whose own field follows a defaulted one raises when defined);
* ``cannot-instantiate``: a plugin's async output lacks a method abstract in vLLM's;
* ``read-fails``: an attribute a release of vLLM's type had and this one lacks;
* ``call-raises``: a call of vLLM's producer, or of an output type's method, that is
  gone or whose arguments or unpacking it no longer fits;
* ``behaviour-changed``: the same name, another meaning: a field retyped (for a
  reader, only where it takes more), what a method called returns, what the async
  output must hand over changed (the revisions' behaviours), a field written that vLLM
  no longer reads, a name of vLLM's module or class the plugin replaces that vLLM no
  longer has (``logprob.compute_topk_logprobs = npu_topk``: set, never read).  A
  method's changed body is none: it is what vLLM's own callers of that release get.

Each break names the vLLM change behind it in the words of ``--bump-to``'s report
(:mod:`conformance.oracle.vllm_changes`): the changes between the other vLLM judged
(the plugin's pin) and this one; at the pin itself, what the pin's text lacks.
"""

from __future__ import annotations

import ast
import dataclasses
from dataclasses import dataclass, field
from typing import cast

from conformance.crater.guards import Test
from conformance.crater.inherited_state import unset_by_plugin
from conformance.crater.output_members import SEQUENCE_OF, output_field_types, parsed_def
from conformance.crater.uses import Reading, Use
from conformance.crater.vllm_names import (
    ASYNC_BASE,
    EMPTY,
    JUDGED_MODULES,
    JUDGED_TYPES,
    OUTPUTS,
    OWN_OUTPUT_TYPES,
    PRODUCER_MODULES,
    VLLM_ASYNC_OUTPUTS,
)
from conformance.crater.vllm_side import (
    VllmView,
    compiled_or_private,
    known_members,
    release_history,
)
from conformance.crater.world import HANDED_OVER_BY_WORD
from conformance.oracle.annotations import normalise
from conformance.oracle.text_surface import PIECE_OF_CLASS, Member
from conformance.oracle.vllm_changes import Change, changes_between

#: vLLM's producer classes a plugin imports by name.
_PRODUCER_CLASSES = frozenset(
    {"Sampler", "RejectionSampler", *(c for names in VLLM_ASYNC_OUTPUTS.values() for c in names)}
)
#: Async output behaviours about rows of several tokens alone.
_SEVERAL_TOKENS_ONLY = frozenset(
    {
        "producer.async_output:unpads-multi-token-rows",
        "producer.async_output:logprobs-read-by-request",
    }
)
#: Logprobs rules that ask what another asks and more: ``tolists()`` of the step's
#: logprobs tensors (0.11.1) is what each later rule asks of rows of one token.
_LOGPROBS_ASKED_BY = {
    "producer.async_output:logprobs-tolists": frozenset(
        {
            "producer.async_output:logprobs-cu-of-kept-tokens",
            "producer.async_output:logprobs-filtered-to-kept-tokens",
            "producer.async_output:logprobs-every-logits-row",
        }
    ),
}
#: Fields whose every reader in vLLM tests them by truth before indexing them, so that a
#: None written where a release's annotation no longer takes one reads as empty: the
#: scheduler's ``if pooler_outputs: pooler_output = pooler_outputs[req_index]`` in every
#: release whose ``pooler_output`` is a bare list (0.10.2 to 0.13.0).
_NONE_READ_AS_EMPTY = frozenset({("ModelRunnerOutput", "pooler_output")})

#: Members every NamedTuple or dataclass instance has beside its fields.
_INHERENT = {
    "_replace",
    "_asdict",
    "_fields",
    "_field_defaults",
    "_make",
    "count",
    "index",
    "__dict__",
    "__class__",
    "__dataclass_fields__",
}

#: The changes that make a NamedTuple unpack into another number of names.
_FIELDS_CHANGED = ("field added", "field removed")


@dataclass(frozen=True)
class Finding:
    """One break: ``kind`` at the plugin's ``file``:``line``, of ``member``, because of
    ``vllm_change``."""

    kind: str
    file: str
    line: int
    member: str
    vllm_change: str
    #: the plugin's condition the line runs under that no vLLM decides (a setting, an
    #: attribute of its own), as written; "" where it runs whatever the plugin's state
    condition: str = ""

    def to_json(self) -> dict[str, object]:
        # The report's keys are a contract (DESIGN section 3): the condition is said in
        # the terminal's lines only.
        return {
            "kind": self.kind,
            "file": self.file,
            "line": self.line,
            "member": self.member,
            "vllm_change": self.vllm_change,
        }

    @property
    def where(self) -> str:
        """``file:line``, and the condition it runs under where one is not decided."""
        under = f" (if {self.condition})" if self.condition else ""
        return f"{self.file}:{self.line}{under}"


@dataclass
class Judgement:
    """A plugin judged against one vLLM: its breaks, and what could not be judged."""

    findings: list[Finding] = field(default_factory=list)
    #: modules of vLLM the plugin imports that this vLLM lacks: {module: its first import}
    missing_modules: dict[str, str] = field(default_factory=dict)
    unjudged: int = 0  #: uses whose vLLM side the text does not show
    #: files that cannot be imported at the pin: {file: the vLLM module it lacks}
    dead_at_pin: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class Parameter:
    name: str
    kind: str  #: positional, keyword, var-positional, var-keyword
    has_default: bool


def judge(
    reading: Reading,
    view: VllmView,
    other: VllmView | None,
    async_behaviours: tuple[frozenset[str], frozenset[str]] | None = None,
    pin: VllmView | None = None,
) -> Judgement:
    """``reading``'s uses judged against ``view``; ``other`` (the pin, when ``view`` is the
    target) names the changes behind each break.  ``async_behaviours`` (the pin's and
    this vLLM's async output behaviours) adds what a plugin's async output must now do.
    ``pin``: the plugin's pin, whose unimportable files are not judged."""
    dead = files_dead_at(reading, pin) if pin is not None else {}
    view = dataclasses.replace(view, failing_tries=_failing_tries(reading, view, other, dead))
    judge_ = _Judge(view, other)
    alone = judge_.without_pin() if other is not None else judge_
    judge_.result.dead_at_pin = dead
    active = [
        u
        for u in reading.uses
        if u.file not in dead and all(view.runs_under(g) is not False for g in u.guards)
    ]
    # Plugin async outputs its code builds only where it asserts one token per row.
    built = [u for u in active if u.kind == "construct" and u.via]
    one_token = {u.via for u in built} - {u.via for u in built if not u.one_token_rows}
    # What failed to import: a use of it is no news (its import names the break).
    failed: set[str] = set()
    for use in active:
        if use.kind == "import":
            found = judge_.import_(use)
            if found is not None:
                failed.add(found.member)
                judge_.add(found)
    # A patch in a file that does not import here is never set, and vLLM's own code
    # does not run in its place: the import fails first, and names the break.
    not_importing = files_dead_at(reading, view, judged_modules=True, before=other)
    for use in active:
        if use.kind == "import" or use.target in failed or use.module in failed:
            continue
        if use.kind == "patch" and use.file in not_importing:
            continue

        if use.guarded_keywords or use.tested_keywords:
            passed = [
                key
                for key, alternatives in use.guarded_keywords
                if any(all(view.runs_under(g) is not False for g in a) for a in alternatives)
            ]
            fields = judge_.constructor(use.module, use.type_name) if use.tested_keywords else None
            present = {p.name for p in fields or ()}
            passed += [key for key in use.tested_keywords if key in present]
            use = dataclasses.replace(use, keywords=(*use.keywords, *passed))
        changed = _as_the_plugin_changed_it(use, reading, view)
        if changed is None:
            continue
        use = changed
        runs_at_other = other is None or all(other.runs_under(g) is not False for g in use.guards)
        by = judge_ if runs_at_other else alone
        condition = _undecided_condition(use)
        found_here = list(getattr(by, use.kind)(use))
        if use.kind == "subclass" and async_behaviours is not None:
            found_here += by.async_contract(use, *async_behaviours, use.member in one_token)
        by.add_all([dataclasses.replace(f, condition=condition) for f in found_here])
    judge_.result.findings.sort(key=lambda f: (f.file, f.line, f.kind, f.member))
    return judge_.result


def _undecided_condition(use: Use) -> str:
    """The innermost condition ``use`` sits under that no vLLM decides ("" where none):
    a whole test, or the operands of an ``and`` beside its version or member tests (the
    body runs where those hold and these do)."""
    texts = []
    for guard in use.guards:
        if guard.is_type_checking:
            continue
        if not guard.is_decided:
            texts.append(guard.text if guard.branch else f"not ({guard.text})")
        elif guard.branch and guard.test[0] == "and":
            parts = cast("tuple[Test, ...]", guard.test[1])
            undecided = [str(part[1]) for part in parts if part[0] == "other"]
            if undecided:
                texts.append(" and ".join(undecided))
    return texts[-1] if texts else ""


def _as_the_plugin_changed_it(use: Use, reading: Reading, view: VllmView) -> Use | None:
    """A use of an output type the plugin changed itself where that change holds: a
    construction through the ``__init__`` it set (vLLM's own judges only the keywords
    that one passes on), a read of an attribute it set on the class (None: nothing of
    vLLM's to judge).  A plugin subclass's construction is its own ``__init__``'s."""
    changes = [
        c
        for c in reading.class_changes
        if c.target == use.target and all(view.runs_under(g) is not False for g in c.guards)
    ]
    if use.kind in ("read", "write"):
        return None if any(c.member == use.member for c in changes) else use
    inits = [c for c in changes if c.member == "__init__"]
    if use.kind != "construct" or use.via or not inits:
        return use
    if any(c.own is None or not c.passes_on for c in inits):
        return None
    own = frozenset().union(*(c.own or () for c in inits))
    return dataclasses.replace(use, keywords=tuple(k for k in use.keywords if k not in own))


#: The kinds of finding that raise in the plugin's code, and what each is found by.
_RAISING = {"read": "read-fails", "call": "call-raises", "construct": "construction-raises"}


def _failing_tries(
    reading: Reading, view: VllmView, other: VllmView | None, dead: dict[str, str]
) -> frozenset[tuple[str, int]]:
    """The plugin's fallback ``try`` blocks (``except AttributeError``/``TypeError``) in
    which a use of vLLM fails with ``view``, as if nothing caught it: where their
    handlers run."""
    probe = _Judge(view, other)
    failing = set()
    for use in reading.uses:
        if (
            use.in_try is None
            or use.in_try in failing
            or use.kind not in _RAISING
            or use.file in dead
            or any(view.runs_under(g) is False for g in use.guards)
        ):
            continue
        bare = dataclasses.replace(use, missing_handled=False, type_handled=False)
        if any(f.kind == _RAISING[use.kind] for f in getattr(probe, use.kind)(bare)):
            failing.add(use.in_try)
    return frozenset(failing)


#: The method every release's AsyncModelRunnerOutput has abstract.
_ALWAYS_ABSTRACT = "get_output"


def files_dead_at(
    reading: Reading,
    pin: VllmView,
    *,
    judged_modules: bool = False,
    before: VllmView | None = None,
) -> dict[str, str]:
    """The plugin's files that cannot be imported at its pin: each imports, when it is
    imported, a vLLM module the pin lacks (one the crater judges no use of, such as V0's
    ``vllm.model_executor.sampling_metadata``).  What they do elsewhere is no use the
    plugin makes at its pin, so no break of it.

    ``judged_modules``: also the output and producer modules (a finding where a file
    is judged, but evidence all the same of which vLLM the code was written for).
    ``before``: a vLLM whose submodule ``from package import name`` took, gone here."""
    dead: dict[str, str] = {}
    for use in reading.uses:
        if not (
            use.kind == "import"
            and use.top_level
            and not use.handled
            and use.file not in dead
            and all(pin.runs_under(g) is not False for g in use.guards)
        ):
            continue
        # ``from vllm.v1.worker import gpu_model_runner``: the submodule is imported
        submodule = f"{use.target}.{use.member}"
        imported = submodule if use.member and submodule in JUDGED_MODULES else use.target
        if (
            (judged_modules or imported not in JUDGED_MODULES)
            and not compiled_or_private(imported)
            and pin.has_module(imported) is False
        ):
            dead[use.file] = imported
        elif (
            before is not None
            and use.member
            and before.has_module(submodule)
            and pin.has_module(submodule) is False
        ):
            dead[use.file] = submodule
    return dead


#: The prefix of the behaviours of a producer's async output (what get_output() hands over).
ASYNC_OUTPUT_BEHAVIOURS = "producer.async_output:"


class _Judge:
    def __init__(self, view: VllmView, other: VllmView | None) -> None:
        self.view = view
        self.other = other
        self.result = Judgement()
        self._seen: set[tuple[str, str, int, str]] = set()
        self.changes: list[Change] = []
        if other is not None:
            modules = {m.module for m in view.surface.values()} & {
                m.module for m in other.surface.values()
            }
            self.changes = changes_between(other.surface, view.surface, sorted(modules))
        #: judged against an older vLLM than the pin: the changes run back in time
        self.backwards = _older(view, other)

    def said(self, change: Change) -> str:
        """A change as the vLLM judged sees it: going back from the pin, what the pin's
        vLLM added is newer than this one, what it removed was still here."""
        if not self.backwards:
            return _described(change)
        kind, _, verb = change.change.rpartition(" ")
        if verb == "removed":
            return f"{kind} {_where(change)} is newer than {self.view.named}"
        if verb == "added":
            return f"{kind} {_where(change)} was removed after {self.view.named}"
        return f"{_described(change)} (going back to {self.view.named})"

    def without_pin(self) -> _Judge:
        """This judge with no vLLM to compare with, adding to the same result: for a
        use that never runs at the pin, what changed since the pin is no news to it."""
        alone = _Judge(self.view, None)
        alone.result, alone._seen = self.result, self._seen
        return alone

    def add(self, found: Finding) -> None:
        key = (found.kind, found.file, found.line, found.member)
        if key not in self._seen:
            self._seen.add(key)
            self.result.findings.append(found)

    def add_all(self, found: list[Finding]) -> None:
        for one in found:
            self.add(one)

    # --- why --------------------------------------------------------------------

    def because(self, type_name: str, member: str, fact: str, kinds: tuple[str, ...] = ()) -> str:
        """The change between the two vLLMs behind a break, else the fact at this one."""
        for change in self.changes:
            if (change.type, change.member) == (type_name, member) and (
                not kinds or change.change in kinds
            ):
                return _with_fact(self.said(change), change, fact)
        made = self._made_by(type_name, member, kinds)
        if made is None:
            return fact
        change, release = made
        return _with_fact(f"{_described(change)} (vLLM {release})", change, fact)

    def _made_by(
        self, type_name: str, member: str, kinds: tuple[str, ...]
    ) -> tuple[Change, str] | None:
        """Without a pin to compare with: the newest known release up to this vLLM whose
        change explains the break (``field removed ModelRunnerOutput.x (vLLM 0.34.0)``)."""
        from packaging.version import InvalidVersion, Version

        try:
            limit = Version(self.view.version) if self.view.version else None
        except InvalidVersion:
            limit = None
        found = None
        for release, changes in release_history():
            if limit is not None and Version(release) > limit:
                break
            for change in changes:
                if (change.type, change.member) == (type_name, member) and (
                    not kinds or change.change in kinds
                ):
                    found = (change, release)
        return found

    def module_because(self, module: str, name: str = "") -> str:
        """Why ``module`` (``name`` imported from it) is not there, and where it went."""
        if self.other is None or not self.other.has_module(module):
            said = f"{self.view.named} has no module {module}"
        elif self.backwards:
            said = f"module {module} is newer than {self.view.named}"
        else:
            said = f"module removed {module}"
        return said + self._successors(module, name)

    def _successors(self, module: str, name: str) -> str:
        """Where a removed producer module's work went: the class of the name imported,
        where this vLLM defines one (Model Runner V2's ``Sampler``), else this vLLM's own
        producers of the module's kind, found by what they are (its ``AsyncOutput``), for
        an import of a producer (not of a constant or a runner the module also held, nor
        of the module alone: what of it is used, a runner to patch, is not known)."""
        if not name:
            return ""
        homes = sorted(m for (m, c, member) in self.view.surface if (c, member) == (name, ""))
        if homes:
            return f"; {self.view.named} has {name} in {', '.join(homes)}"
        if name not in _PRODUCER_CLASSES:
            return ""
        if module in VLLM_ASYNC_OUTPUTS:
            kind = "async-output"
        elif module in PRODUCER_MODULES:
            kind = "gathering"
        else:
            return ""
        found = [f"{p.name} ({p.module})" for p in self.view.producers if p.kind == kind]
        if not found:
            return ""
        does = "builds its async outputs" if kind == "async-output" else "gathers logprobs"
        return f"; {self.view.named} {does} in {', '.join(found)}"

    # --- kinds --------------------------------------------------------------------

    def import_(self, use: Use) -> Finding | None:
        module, name = use.target, use.member
        # A name read off a module raises AttributeError, which an ImportError handler
        # does not catch.
        if use.missing_handled if use.as_attribute else use.handled:
            return None
        present = self.view.has_module(module)
        if present is False and use.as_attribute:
            return None  # the module's own import names its absence
        if present is False:
            if module in PRODUCER_MODULES or module == OUTPUTS or module in VLLM_ASYNC_OUTPUTS:
                return Finding(
                    "import-fails", use.file, use.line, module, self.module_because(module, name)
                )
            if module.startswith("vllm.v1.") and (name in JUDGED_TYPES or name == EMPTY):
                # An output type imported from a module that re-exported it (V0's
                # modules held types of the same names: not the ones judged).
                return Finding(
                    "import-fails",
                    use.file,
                    use.line,
                    f"{module}.{name}",
                    self.module_because(module, name),
                )
            self.result.missing_modules.setdefault(module, f"{use.file}:{use.line}")
            return None
        if present is None or not name:
            if present is None:
                self.result.unjudged += 1
            return None
        submodule = f"{module}.{name}"
        if submodule in JUDGED_MODULES and self.view.has_module(submodule) is False:
            # ``from vllm.v1.worker import gpu_model_runner``
            return Finding(
                "import-fails", use.file, use.line, submodule, self.module_because(submodule)
            )
        if self.view.has_module(submodule) and module != OUTPUTS:
            return None  # a submodule (``from vllm.v1 import outputs``)
        if (
            self.other is not None
            and self.other.has_module(submodule)
            and self.view.has_module(submodule) is False
        ):
            # a submodule gone: listed apart
            self.result.missing_modules.setdefault(submodule, f"{use.file}:{use.line}")
            return None
        bound = self.view.bound.get(module)
        if bound is not None:
            return None if name in bound else self._name_missing(use, module, name)
        # A module of which only sections are known: only the classes the suite reads.
        known = {m.owner for m in self.view.surface.values() if m.module == module and m.owner}
        if name in _PRODUCER_CLASSES and known and name not in known:
            return self._name_missing(use, module, name)
        return None

    def _name_missing(self, use: Use, module: str, name: str) -> Finding:
        fact = f"{module} of {self.view.named} has no {name}"
        return Finding(
            "import-fails", use.file, use.line, f"{module}.{name}",
            self.because(name, "", fact, ("type removed",)),
        )  # fmt: skip

    def construct(self, use: Use) -> list[Finding]:
        module, type_name = use.module, use.type_name
        if use.own_init or use.type_handled:
            return []  # a TypeError it raises is the plugin's fallback: its handler runs
        parameters = self.constructor(module, type_name)
        if parameters is None:
            self.result.unjudged += 1
            return []
        if use.member == "replace":
            parameters = [
                Parameter(p.name, "keyword", True)
                for p in parameters
                if p.kind in ("positional", "keyword")
            ]
        elif use.own_fields:
            parameters = _with_own_fields(parameters, use.own_fields)
        where = f"{use.via} (below {type_name})" if use.via else type_name
        found = []
        for problem, member, fact in _bind(parameters, use):
            kinds = {
                "keyword": ("field removed", "type removed", "signature changed"),
                "missing": ("field added", "field re-defaulted", "signature changed"),
                "arity": ("field removed", "fields reordered", "signature changed"),
            }[problem]
            name = f"{type_name}.{member}" if member else type_name
            fact = f"{where} of {self.view.named}: {fact}"
            found.append(
                Finding(
                    "construction-raises",
                    use.file,
                    use.line,
                    name,
                    self.because(type_name, member, fact, kinds),
                )
            )
        found += self._shifted(use, parameters)
        for keyword in use.keywords:
            if keyword in use.empty:
                continue  # ``sampled_token_ids=[]`` fits the field whatever it holds
            changed = self._changed(type_name, keyword, ("field retyped",), module)
            if changed is None or _only_widened(changed):
                continue
            if _only_narrowed(changed) and (
                keyword in use.never_none or (type_name, keyword) in _NONE_READ_AS_EMPTY
            ):
                continue  # a list where None is no longer taken, or None read as empty
            if keyword in use.python_lists and _now_python_lists(changed):
                continue  # ``ids.tolist()`` where ``list[list[int]]`` is now asked
            found.append(
                Finding(
                    "behaviour-changed",
                    use.file,
                    use.line,
                    f"{type_name}.{keyword}",
                    _retype_said(changed, self.backwards),
                )
            )
        return found

    def _shifted(self, use: Use, parameters: list[Parameter]) -> list[Finding]:
        """Positional arguments that land on another field than at the pin: no error,
        another meaning (a field removed or added before them)."""
        if self.other is None or not use.positional or use.member == "replace":
            return []
        pinned = constructor(self.other, use.module, use.type_name)
        if pinned is None:
            return []
        if use.own_fields:
            pinned = _with_own_fields(pinned, use.own_fields)
        pinned_names = [p.name for p in pinned if p.kind == "positional"]
        names = [p.name for p in parameters if p.kind == "positional"]
        for index, (was, now) in enumerate(
            zip(pinned_names[: use.positional], names[: use.positional], strict=False)
        ):
            if was == now:
                continue
            # The first argument landing elsewhere: the field inserted, removed or moved there.
            kinds: tuple[str, ...]
            if now not in pinned_names:
                member, kinds = now, ("field added",)
            elif was not in names:
                member, kinds = was, ("field removed",)
            else:
                member, kinds = was, ("fields reordered", "field removed", "field added")
            fact = f"positional argument {index + 1} is {now}, not {was}"
            because = self.because(use.type_name, member, fact, kinds)
            if not because.endswith(fact):  # a removal says the field gone, not the shift
                because = f"{because}: {fact}"
            return [
                Finding("behaviour-changed", use.file, use.line, f"{use.type_name}.{was}", because)
            ]
        return []

    def subclass(self, use: Use) -> list[Finding]:
        found = []
        base_module, base = use.module, use.type_name
        if use.own_fields and not use.own_init:
            parameters = self.constructor(base_module, base)
            if parameters is not None:
                broken = _defaults_out_of_order(parameters, use.own_fields)
                if broken is not None:
                    found.append(
                        Finding(
                            "import-fails",
                            use.file,
                            use.line,
                            f"{use.member} (below {base})",
                            self.because(
                                base,
                                broken[0],
                                f"{base} of {self.view.named}: "
                                f"field {broken[1]} without a default follows "
                                f"{broken[0]}, which has one",
                                ("field re-defaulted", "field added"),
                            ),
                        )
                    )
        if use.target != ASYNC_BASE and base_module not in VLLM_ASYNC_OUTPUTS:
            return found
        if use.abstract:
            return found
        abstract = self.abstract_methods()
        if abstract is None:
            self.result.unjudged += 1
            return found
        defined = set(use.defines)
        if use.target != ASYNC_BASE:
            members = self.view.class_members(base_module, base)
            if members is None:
                return found  # vLLM's class is gone: its import says so
            defined |= {name for name, m in members.items() if getattr(m, "kind", "") == "method"}
        if _ALWAYS_ABSTRACT in abstract - defined:
            # Never instantiable, at any release: a base of the plugin's own classes,
            # which are judged themselves.
            return found
        # A method the plugin's own subclasses define marks a base of theirs, not a
        # class made as it is.
        for method in sorted(abstract - defined - set(use.below_define)):
            found.append(
                Finding(
                    "cannot-instantiate",
                    use.file,
                    use.line,
                    f"AsyncModelRunnerOutput.{method}",
                    self.because(
                        "AsyncModelRunnerOutput",
                        method,
                        f"AsyncModelRunnerOutput of {self.view.named} has "
                        f"{method} abstract; {use.member} does not define it",
                    ),
                )
            )
        return found + self.inherited_state(use)

    def inherited_state(self, use: Use) -> list[Finding]:
        """vLLM's inherited ``get_output`` reading what only vLLM's ``__init__`` sets,
        where the plugin's ``__init__`` never calls it (:mod:`.inherited_state`)."""
        key = (use.module, use.type_name)
        missing = unset_by_plugin(list(use.chain_states), self.view.async_states.get(key))
        if missing is None:
            return []
        read = ", ".join(f"self.{name}" for name in sorted(missing))
        earlier = ""
        if self.other is not None:
            before = self.other.async_states.get(key)
            if before is not None and not missing & before.needed:
                earlier = f" ({self.other.named}'s get_output read none of them)"
        fact = (
            f"{use.type_name}.get_output of {self.view.named}, which {use.member} runs, reads "
            f"{read}, set only by {use.type_name}.__init__, which {use.member}.__init__ does "
            f"not call: AttributeError at every step{earlier}"
        )
        return [Finding("call-raises", use.file, use.line, f"{use.type_name}.get_output", fact)]

    def async_contract(
        self, use: Use, before: frozenset[str], after: frozenset[str], one_token: bool = False
    ) -> list[Finding]:
        """What the plugin's async output must hand over now that it did not at the pin;
        ``one_token``: its code builds it only where it asserts one token per row, so what
        vLLM asks of rows of several tokens is not asked of it."""
        if use.target != ASYNC_BASE and use.module not in VLLM_ASYNC_OUTPUTS:
            return []
        if use.module in VLLM_ASYNC_OUTPUTS:
            return []  # vLLM's own get_output() does it; the plugin inherits it
        new = sorted(
            b
            for b in after - before
            if b.startswith(ASYNC_OUTPUT_BEHAVIOURS)
            and not any(
                asked in b and word not in use.handles
                for word, asked in HANDED_OVER_BY_WORD.items()
            )
            and not (one_token and b in _SEVERAL_TOKENS_ONLY)
            and not (_LOGPROBS_ASKED_BY.get(b, frozenset()) & before)
        )

        from reference.revisions.behaviours import PRODUCER_BEHAVIOURS

        since = f", which {self.other.named} did not ask" if self.other is not None else ""
        return [
            Finding(
                "behaviour-changed",
                use.file,
                use.line,
                f"{use.member}.get_output",
                f"behaviour added {name}: {self.view.named} asks that "
                f"{PRODUCER_BEHAVIOURS.get(name, name)}{since}",
            )
            for name in new
        ]

    def patch(self, use: Use) -> list[Finding]:
        """A name of vLLM's module or class the plugin replaces: gone, the assignment
        still runs and nothing reads it (vLLM's own code runs instead)."""
        if self.other is None:
            return []  # what it replaced once is not known: a new name is the plugin's own
        owner, name = use.target, use.member
        module, _, cls = owner.rpartition(".")
        before, now = self.other.bound.get(owner), self.view.bound.get(owner)
        if before is not None and now is not None:
            where = owner
        else:
            before_class, now_class = (
                view.class_members(module, cls) for view in (self.other, self.view)
            )
            if before_class is None or now_class is None:
                return []  # not a module or class whose names are known at both
            before, now, where = frozenset(before_class), frozenset(now_class), cls
        if name not in before or name in now:
            return []
        fact = (
            f"{where} of {self.view.named} has no {name}: the plugin's replacement "
            "is set and never read, vLLM's own code runs"
        )
        return [Finding("behaviour-changed", use.file, use.line, f"{where}.{name}", fact)]

    def read(self, use: Use) -> list[Finding]:
        if not use.member and use.unpacked is not None:
            return self._value_unpacked(use)
        return self._attribute(use, "read-fails")

    def _value_unpacked(self, use: Use) -> list[Finding]:
        """A value holding one of vLLM's NamedTuples unpacked into another number of
        names than it has fields here."""
        held = f"{use.type_name} of {self.view.named} has "
        because = self._unpacked_into(use.type_name, use.unpacked, held, _FIELDS_CHANGED)
        if because is None:
            return []
        return [Finding("read-fails", use.file, use.line, use.type_name, because)]

    def write(self, use: Use) -> list[Finding]:
        return self._attribute(use, "behaviour-changed")

    def _attribute(self, use: Use, kind: str) -> list[Finding]:
        module, type_name, member = use.module, use.type_name, use.member
        if member in _INHERENT or member.startswith("__"):
            return []
        members = self.view.class_members(module, type_name)
        if members is None:
            if self.view.has_module(module) is None or module == OUTPUTS:
                self.result.unjudged += 1
            return []
        ever = known_members().get((module, type_name), set())
        if self.other is not None:
            pinned = self.other.class_members(module, type_name) or {}
            ever = ever | set(pinned)
        name = f"{type_name}.{member}"
        if member not in members:
            if member not in ever or (use.missing_handled and kind == "read-fails"):
                return []  # never vLLM's (the plugin's own attribute), or its fallback runs
            if kind == "behaviour-changed" and self.backwards:
                return []  # a field newer than this vLLM: nothing of it reads what is lost
            fact = f"{type_name} of {self.view.named} has no {member}"
            if kind == "behaviour-changed":
                fact += "; the value written is never read"
            return [Finding(kind, use.file, use.line, name, self.because(type_name, member, fact))]
        unpacked = self._unpacked(use, type_name, member) if kind == "read-fails" else None
        if unpacked is not None:
            return [unpacked]
        # A method's body is not the reader's concern (see :meth:`call`); a field's
        # type is, but for a reader only where it takes more than it did.
        changed = self._changed(type_name, member, ("field retyped",), module)
        if changed is None:
            return []
        if _only_narrowed(changed) if kind == "read-fails" else _only_widened(changed):
            return []
        if kind == "read-fails" and use.none_tested and _only_widened(changed):
            return []  # ``if out.pooler_output:``: the reader handles None, as vLLM's does
        if changed.change == "field retyped" and member in use.empty:
            return []  # ``output.sampled_token_ids = []`` fits it whatever it holds
        if (
            kind != "read-fails"
            and _only_narrowed(changed)
            and (member in use.never_none or (type_name, member) in _NONE_READ_AS_EMPTY)
        ):
            return []  # ``output.pooler_output = [None] * n`` where None no longer is
        return [
            Finding(
                "behaviour-changed", use.file, use.line, name, _retype_said(changed, self.backwards)
            )
        ]

    def call(self, use: Use) -> list[Finding]:
        module, cls, member = use.module, use.type_name, use.member
        if member in _INHERENT or member.startswith("__"):
            return []
        members = self.view.class_members(module, cls)
        if members is None:
            if self.view.has_module(module) is False:
                return [
                    Finding(
                        "call-raises",
                        use.file,
                        use.line,
                        f"{cls}.{member}",
                        self.module_because(module),
                    )
                ]
            self.result.unjudged += 1
            return []
        method = members.get(member)
        if not isinstance(method, Member):
            pinned = self.other.class_members(module, cls) if self.other is not None else None
            ever = known_members().get((module, cls), set()) | set(pinned or ())
            if member in ever and not use.missing_handled:
                return [
                    Finding(
                        "call-raises",
                        use.file,
                        use.line,
                        f"{cls}.{member}",
                        self.because(cls, member, f"{cls} of {self.view.named} has no {member}"),
                    )
                ]
            return []
        parameters, returns = _callers_parameters(method.shape, use.on_class)
        if parameters is None:
            self.result.unjudged += 1
            return []
        where = f"{cls}.{member}"

        def raises(fact: str) -> Finding:
            because = self.because(cls, member, fact, ("signature changed",))
            return Finding("call-raises", use.file, use.line, where, because)

        found = [
            raises(f"{where} of {self.view.named}: {fact}") for _, _, fact in _bind(parameters, use)
        ]
        if use.unpacked is not None and returns is not None and use.unpacked != returns:
            found.append(
                raises(
                    f"{where} of {self.view.named} returns {returns} values; the plugin "
                    f"unpacks {use.unpacked}"
                )
            )
        named = _returned_name(method.shape) if returns is None else None
        # ``-> LogprobsTensors``: a NamedTuple unpacks into as many names as it has
        # fields, and vLLM adds fields with defaults (0.29.0 a fifth).
        held = f"{where} of {self.view.named} returns a {named} of "
        because = self._unpacked_into(named, use.unpacked, held, ("field added",))
        if because is not None:
            found.append(Finding("call-raises", use.file, use.line, where, because))
        # A changed body is what vLLM's own callers of this release get: no break of a
        # call that still binds. Its arguments meaning another thing, or its result
        # changing, is.
        changed = self._changed(cls, member, ("signature changed",), module)
        if changed is not None and not found and use.positional:
            before = _callers_parameters(changed.known or "", use.on_class)[0]
            filled, were = (
                [p.name for p in given if p.kind == "positional"][: use.positional]
                for given in (parameters, before or [])
            )
            # Only where the call bound there too: else the pin's own record says so.
            if before is not None and len(were) == use.positional and filled != were:
                fact = (
                    f"{where} of {self.view.named}: the call's positional arguments are "
                    f"its {', '.join(filled)}, where they were {', '.join(were)}"
                )
                because = self.because(cls, member, fact, ("signature changed",))
                found.append(Finding("behaviour-changed", use.file, use.line, where, because))
        results = _results(changed) if changed is not None and not found else None
        if results is not None:
            fact = f"{where} of {self.view.named} returns {results[1]}, where it returned "
            found.append(
                Finding(
                    "behaviour-changed",
                    use.file,
                    use.line,
                    where,
                    self.because(cls, member, fact + results[0], ("signature changed",)),
                )
            )
        return found

    # --- vLLM's side ------------------------------------------------------------------

    def _changed(
        self, type_name: str, member: str, kinds: tuple[str, ...], module: str
    ) -> Change | None:
        """The change of ``module``'s ``type_name.member`` of one of ``kinds``: Model
        Runner V2's ``SamplerOutput`` is not ``vllm.v1.outputs``'."""
        for change in self.changes:
            if (change.module, change.type, change.member) != (module, type_name, member):
                continue
            if change.change in kinds:
                if change.change == "signature changed" and _same_for_callers(change):
                    continue
                return change
        return None

    def abstract_methods(self) -> set[str] | None:
        members = self.view.class_members(OUTPUTS, "AsyncModelRunnerOutput")
        if members is None:
            return None
        return {
            name
            for name, m in members.items()
            if isinstance(m, Member) and m.kind == "method" and "abstractmethod" in m.shape
        }

    def _unpacked(self, use: Use, type_name: str, member: str) -> Finding | None:
        """A field holding one of vLLM's NamedTuples (``logprobs_tensors``) unpacked into
        another number of names than it has fields here."""
        held = output_field_types().get((type_name, member)) if use.unpacked is not None else None
        named = held.rpartition(".")[2] if held and not held.startswith(SEQUENCE_OF) else None
        holder = f"{type_name}.{member} of {self.view.named} holds a {named} of "
        because = self._unpacked_into(named, use.unpacked, holder, _FIELDS_CHANGED)
        if because is None:
            return None
        return Finding("read-fails", use.file, use.line, f"{type_name}.{member}", because)

    def _unpacked_into(
        self, tuple_name: str | None, names: int | None, holder: str, kinds: tuple[str, ...]
    ) -> str | None:
        """Why unpacking vLLM's NamedTuple ``tuple_name`` into ``names`` names fails here
        (``holder`` says what holds it), with the release that changed its fields; None
        where it fits or is no NamedTuple of vLLM's."""
        fields = self._tuple_fields(tuple_name) if tuple_name else None
        if fields is None or names is None or names == len(fields):
            return None
        fact = f"{holder}{len(fields)} fields; the plugin unpacks {names}"
        extra = fields[names].name if names < len(fields) else ""
        return self.because(tuple_name or "", extra, fact, kinds)

    def _tuple_fields(self, name: str) -> list[Parameter] | None:
        """The fields of vLLM's NamedTuple ``name`` (of its outputs) here, in order."""
        header = self.view.surface.get((OUTPUTS, name, ""))
        if header is None or "NamedTuple" not in _bases(header.shape):
            return None
        return constructor(self.view, OUTPUTS, name)

    def constructor(self, module: str, cls: str) -> list[Parameter] | None:
        return constructor(self.view, module, cls)


def constructor(view: VllmView, module: str, cls: str, depth: int = 0) -> list[Parameter] | None:
    """The parameters vLLM's class takes at this vLLM, from its text; None where
    the text does not show them."""
    members = view.class_members(module, cls)
    header = view.surface.get((module, cls, ""))
    if members is None or header is None or header.value == PIECE_OF_CLASS or depth > 5:
        return None  # a class the texts show one method of: its constructor unknown
    init = members.get("__init__")
    if isinstance(init, Member) and init.kind == "method":
        parameters, _ = _signature(init.shape)
        return parameters[1:] if parameters else None
    shape = header.shape
    bases = _bases(shape)
    fields = sorted(
        (m for m in members.values() if isinstance(m, Member) and m.kind == "field"),
        key=lambda m: m.position,
    )
    if "NamedTuple" in bases:
        return [Parameter(f.name, "positional", bool(f.value)) for f in fields]
    if "@dataclass" not in shape and "@dataclasses.dataclass" not in shape:
        for base in bases:
            inherited = constructor(view, module, base, depth + 1)
            if inherited is not None:
                return inherited
        return [] if not fields and not bases else None
    inherited_params: list[Parameter] = []
    for base in bases:
        inherited_params += constructor(view, module, base, depth + 1) or []
    keyword_only = "kw_only=True" in shape
    own = [
        Parameter(f.name, "keyword" if keyword_only else "positional", bool(f.value))
        for f in fields
        if "ClassVar" not in f.shape and f.shape != "KW_ONLY" and "init=False" not in f.value
    ]
    names = {p.name for p in own}
    return [p for p in inherited_params if p.name not in names] + own


def _bases(shape: str) -> list[str]:
    if "(" not in shape:
        return []
    inside = shape[shape.index("(") + 1 : shape.rindex(")")]
    return [b.strip().rsplit(".", 1)[-1] for b in inside.split(",") if "=" not in b and b.strip()]


def _signature(shape: str) -> tuple[list[Parameter] | None, int | None]:
    """The parameters of a method's shape (``@staticmethod def f(a, b=1) -> tuple[x, y]``)
    and how many values it returns (a ``tuple[...]`` annotation), where it says."""
    function = parsed_def(shape)
    if function is None:
        return None, None
    args = function.args
    parameters: list[Parameter] = []
    positional = [*args.posonlyargs, *args.args]
    first_default = len(positional) - len(args.defaults)
    for index, arg in enumerate(positional):
        parameters.append(Parameter(arg.arg, "positional", index >= first_default))
    if args.vararg is not None:
        parameters.append(Parameter(args.vararg.arg, "var-positional", True))
    for arg, default in zip(args.kwonlyargs, args.kw_defaults, strict=True):
        parameters.append(Parameter(arg.arg, "keyword", default is not None))
    if args.kwarg is not None:
        parameters.append(Parameter(args.kwarg.arg, "var-keyword", True))
    returns = None
    annotation = function.returns
    if (
        isinstance(annotation, ast.Subscript)
        and isinstance(annotation.value, ast.Name)
        and annotation.value.id in ("tuple", "Tuple")
        and isinstance(annotation.slice, ast.Tuple)
        and not any(
            isinstance(e, ast.Constant) and e.value is Ellipsis for e in annotation.slice.elts
        )
    ):
        returns = len(annotation.slice.elts)
    return parameters, returns


def _with_fact(said: str, change: Change, fact: str) -> str:
    """A removal says it all; any other change says what, and the fact what of it the
    plugin meets (the parameter, the abstract method, the field)."""
    return said if change.change.endswith("removed") else f"{said}: {fact}"


def _callers_parameters(shape: str, on_class: bool) -> tuple[list[Parameter] | None, int | None]:
    """:func:`_signature` of a method as its call fills it: without ``self`` (or a
    classmethod's ``cls``), unless a plain method is called through its class."""
    parameters, returns = _signature(shape)
    if not parameters:
        return parameters, returns
    decorators = shape[: shape.find("def ")]
    if "@staticmethod" not in decorators and (not on_class or "@classmethod" in decorators):
        parameters = parameters[1:]
    return parameters, returns


def _results(change: Change) -> tuple[str, str] | None:
    """What a method returned at the one shape of ``change`` and at the other, where
    the two differ (``list[list[int]]`` and ``tuple[list[list[int]], LogprobsLists]``)."""
    found = []
    for shape in (change.known, change.new):
        function = parsed_def(shape) if shape else None
        if function is None:
            return None
        returns = function.returns
        # One spelling: ``Optional[X]``, ``"X | None"`` and ``X | None`` are one result.
        found.append(
            normalise(ast.unparse(returns)) if returns is not None else "what it does not say"
        )
    return (found[0], found[1]) if found[0] != found[1] else None


def _same_for_callers(change: Change) -> bool:
    """A method made a ``@staticmethod`` (``self`` dropped), its parameters and result
    otherwise the same: ``self.sampler.gather_logprobs(...)`` calls it as before."""
    forms = [_callers_form(shape) for shape in (change.known, change.new)]
    return forms[0] is not None and forms[0] == forms[1]


def _callers_form(shape: str | None) -> str | None:
    """A method's shape as its callers see it: no decorator, no ``self``."""
    function = parsed_def(shape) if shape else None
    if shape is None or function is None:
        return None
    arguments = function.args
    if "@staticmethod" not in shape[: shape.find("def ")]:
        if not (arguments.posonlyargs or arguments.args):
            return None
        if arguments.posonlyargs:
            arguments.posonlyargs = arguments.posonlyargs[1:]
        else:
            arguments.args = arguments.args[1:]
    function.decorator_list = []
    return ast.unparse(function)


def _returned_name(shape: str) -> str | None:
    """The class a method's shape says it returns (``-> LogprobsTensors``), if one."""
    function = parsed_def(shape)
    returns = function.returns if function is not None else None
    if isinstance(returns, ast.Constant) and isinstance(returns.value, str):
        return returns.value.rpartition(".")[2] or None  # a string annotation
    if isinstance(returns, ast.Name):
        return returns.id
    if isinstance(returns, ast.Attribute):
        return returns.attr
    return None


def _bind(parameters: list[Parameter], use: Use) -> list[tuple[str, str, str]]:
    """What a call with ``use``'s arguments does wrong against ``parameters``:
    ``(problem, member, fact)`` with problem ``arity``, ``keyword`` or ``missing``."""
    positional = [p for p in parameters if p.kind == "positional"]
    names = {p.name for p in parameters if p.kind in ("positional", "keyword")}
    takes_more = any(p.kind == "var-positional" for p in parameters)
    takes_any = any(p.kind == "var-keyword" for p in parameters)
    problems = []
    if use.positional > len(positional) and not takes_more:
        problems.append(
            ("arity", "", f"takes {len(positional)} positional arguments, {use.positional} given")
        )
    filled = {p.name for p in positional[: use.positional]}
    for keyword in use.keywords:
        if keyword not in names and not takes_any:
            problems.append(("keyword", keyword, f"no parameter {keyword}"))
    if not use.open_ended:
        for p in parameters:
            if (
                p.kind in ("positional", "keyword")
                and not p.has_default
                and p.name not in filled
                and p.name not in use.keywords
            ):
                problems.append(("missing", p.name, f"{p.name} is required and not given"))
    return problems


def _with_own_fields(
    parameters: list[Parameter], own: tuple[tuple[str, bool], ...]
) -> list[Parameter]:
    """A plugin dataclass's parameters: vLLM's fields, then its own (a redefined field
    keeps its place, as dataclasses do)."""
    by_name = {p.name: p for p in parameters}
    result = list(parameters)
    for name, has_default in own:
        made = Parameter(name, "positional", has_default)
        if name in by_name:
            result[result.index(by_name[name])] = made
        else:
            result.append(made)
    return result


def _defaults_out_of_order(
    parameters: list[Parameter], own: tuple[tuple[str, bool], ...]
) -> tuple[str, str] | None:
    """``(defaulted field, the plugin's field without a default after it)`` where a
    plugin dataclass below vLLM's cannot be defined, else None."""
    merged = _with_own_fields(parameters, own)
    own_names = {name for name, _ in own}
    last_default = None
    for p in merged:
        if p.kind != "positional":
            continue
        if p.has_default:
            last_default = p.name
        elif last_default is not None and p.name in own_names:
            return last_default, p.name
    return None


def _older(view: VllmView, other: VllmView | None) -> bool:
    """Whether ``view`` is an older vLLM than ``other``, where both say their version."""
    from packaging.version import InvalidVersion, Version

    if other is None or view.version is None or other.version is None:
        return False
    try:
        return Version(view.version) < Version(other.version)
    except InvalidVersion:
        return False


def _retype_said(change: Change, backwards: bool = False) -> str:
    """``field retyped ModelRunnerOutput.x: list[np.ndarray], now list[list[int]]``
    (going back to an older vLLM: what it was there)."""
    types = _retyped(change)
    if types is None:
        return _described(change)
    return f"{_described(change)}: {types[0]}, {'there' if backwards else 'now'} {types[1]}"


def _where(change: Change) -> str:
    """The member changed, its module named where the type is not ``vllm.v1.outputs``' own
    of that name (Model Runner V2's ``SamplerOutput``)."""
    if change.type in OWN_OUTPUT_TYPES.get(change.module, ()):
        return f"{change.module}.{change.where}"
    return change.where


def _described(change: Change) -> str:
    return f"{change.change} {_where(change)}"


def _now_python_lists(change: Change) -> bool:
    """A field retyped to Python lists of lists (``list[np.ndarray]`` ->
    ``list[list[int]]``): what ``tensor.tolist()`` of a matrix builds."""
    types = _retyped(change)
    return types is not None and types[1].replace(" ", "") in (
        "list[list[int]]",
        "list[list[int]]|None",
    )


def _only_widened(change: Change) -> bool:
    """A field that now also takes None (``X`` -> ``X | None``): news to who reads it,
    none to who builds or writes it."""
    types = _retyped(change)
    return types is not None and _with_none(types[0], types[1])


def _only_narrowed(change: Change) -> bool:
    """A field that no longer takes None (``X | None`` -> ``X``): none to who reads it."""
    types = _retyped(change)
    return types is not None and _with_none(types[1], types[0])


def _retyped(change: Change) -> tuple[str, str] | None:
    if change.change != "field retyped" or not change.known or not change.new:
        return None
    before = change.known.split(":", 1)[-1].split("=", 1)[0].strip()
    after = change.new.split(":", 1)[-1].split("=", 1)[0].strip()
    return before, after


def _with_none(bare: str, wider: str) -> bool:
    """Whether ``wider`` is ``bare`` that also takes None."""
    return wider in (f"{bare} | None", f"None | {bare}", f"Optional[{bare}]")
