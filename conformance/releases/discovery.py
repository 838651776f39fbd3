"""vLLM's producers found by what they are, not by where a release kept them.

vLLM has moved its producers twice (``v1/sample`` to ``worker/gpu/sample``; the first
GPU runner to Model Runner V2) and removed the first runner in 0.34.0.  A producer is
recognised in vLLM's source by its nature:

* an **async output**: a concrete class deriving, directly or through another class
  of the source, from ``AsyncModelRunnerOutput``;
* a **gathering**: a function that builds ``LogprobsTensors`` from logits (it calls
  ``LogprobsTensors(...)`` and takes the logits or logprobs as an argument).

:func:`producer_files` names the files of a source tree that hold any, so a wheel's
fetch keeps them whole, whatever module they moved to.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass

ASYNC_BASE = "AsyncModelRunnerOutput"
LOGPROBS_TYPE = "LogprobsTensors"
#: Parameter names of a function that turns a step's scores into logprobs.
_SCORE_PARAMETERS = frozenset({"logits", "logprobs", "raw_logprobs", "scores"})


@dataclass(frozen=True)
class FoundProducer:
    """One producer recognised in vLLM's source."""

    path: str  #: the file, e.g. ``vllm/v1/worker/gpu/async_utils.py``
    name: str  #: ``AsyncOutput``, ``compute_topk_scores``, ``Sampler.gather_logprobs``
    kind: str  #: ``async-output`` or ``gathering``

    @property
    def module(self) -> str:
        return self.path.removesuffix(".py").replace("/", ".")


def find_producers(sources: dict[str, str]) -> list[FoundProducer]:
    """Every async output and gathering in ``sources`` (``{path: text}``), in path order.

    A text that is not Python is passed over: it can hold no producer we could run.
    """
    trees: dict[str, ast.Module] = {}
    for path, text in sorted(sources.items()):
        if ASYNC_BASE not in text and LOGPROBS_TYPE not in text:
            continue
        try:
            trees[path] = ast.parse(text)
        except SyntaxError:
            continue
    found: list[FoundProducer] = []
    for path, name in _async_outputs(trees):
        found.append(FoundProducer(path, name, "async-output"))
    for path, tree in trees.items():
        found.extend(FoundProducer(path, name, "gathering") for name in _gatherings(tree))
    return sorted(found, key=lambda p: (p.path, p.kind, p.name))


def producer_files(sources: dict[str, str]) -> set[str]:
    """The paths of ``sources`` that hold a producer (``vllm/v1/outputs.py`` itself aside)."""
    return {p.path for p in find_producers(sources) if not p.path.endswith("v1/outputs.py")}


def _async_outputs(trees: dict[str, ast.Module]) -> list[tuple[str, str]]:
    """(path, class) of every concrete subclass of :data:`ASYNC_BASE` among ``trees``."""
    classes: dict[str, tuple[str, ast.ClassDef]] = {}
    for path, tree in trees.items():
        for node in tree.body:
            if isinstance(node, ast.ClassDef):
                classes.setdefault(node.name, (path, node))
    derived = {ASYNC_BASE}
    changed = True
    while changed:  # subclasses of subclasses, across files
        changed = False
        for name, (_, node) in classes.items():
            if name not in derived and any(_base_name(b) in derived for b in node.bases):
                derived.add(name)
                changed = True
    return [
        (path, name)
        for name, (path, node) in classes.items()
        if name in derived and name != ASYNC_BASE and not _is_abstract(node)
    ]


def _base_name(node: ast.expr) -> str:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return node.attr
    if isinstance(node, ast.Subscript):
        return _base_name(node.value)
    return ""


def _is_abstract(node: ast.ClassDef) -> bool:
    """A class that declares abstract methods, or derives from ABC itself."""
    if any(_base_name(b) in {"ABC", "Protocol"} for b in node.bases):
        return True
    for member in node.body:
        if isinstance(member, (ast.FunctionDef, ast.AsyncFunctionDef)) and any(
            _base_name(d) == "abstractmethod" for d in member.decorator_list
        ):
            return True
    return False


def _gatherings(tree: ast.Module) -> list[str]:
    """Functions (and ``Class.method``s) that build :data:`LOGPROBS_TYPE` from scores."""
    found = []
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and _builds_logprobs(node):
            found.append(node.name)
        elif isinstance(node, ast.ClassDef):
            for member in node.body:
                if isinstance(member, (ast.FunctionDef, ast.AsyncFunctionDef)) and (
                    _builds_logprobs(member)
                ):
                    found.append(f"{node.name}.{member.name}")
    return found


def _builds_logprobs(function: ast.FunctionDef | ast.AsyncFunctionDef) -> bool:
    arguments = {a.arg for a in (*function.args.posonlyargs, *function.args.args)}
    if not arguments & _SCORE_PARAMETERS:
        return False
    return any(
        isinstance(node, ast.Call) and _base_name(node.func) == LOGPROBS_TYPE
        for node in ast.walk(function)
    )
