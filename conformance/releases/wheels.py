"""What is cut from a vLLM wheel's or tree's files: the producer sections.

From the first runner's files, the async output classes of the GPU runner,
``Sampler.gather_logprobs`` / ``compute_logprobs``, ``RejectionSampler.parse_output``
and ``ops/logprobs.py``; from Model Runner V2's, whole files.  They are cut with
``ast`` and written in the sections layout :mod:`conformance.releases.texts` reads
(:mod:`conformance.releases.fetch` keeps them in the cache).
"""

from __future__ import annotations

import ast

from conformance.releases.texts import MRV2_PATHS

#: What is cut from each file of the wheel: top-level classes, ``Class.method``s, or
#: the whole file (None).
SECTIONS: dict[str, tuple[str, ...] | None] = {
    "vllm/v1/worker/gpu_model_runner.py": (
        "AsyncGPUModelRunnerOutput",
        "AsyncGPUPoolingModelRunnerOutput",
    ),
    "vllm/v1/sample/sampler.py": ("Sampler.compute_logprobs", "Sampler.gather_logprobs"),
    "vllm/v1/sample/rejection_sampler.py": ("RejectionSampler.parse_output",),
    "vllm/v1/sample/ops/logprobs.py": None,
}
#: Model Runner V2's files, taken whole (loaded, never compared between texts).
MRV2_SECTIONS: dict[str, tuple[str, ...] | None] = dict.fromkeys(MRV2_PATHS)
#: Every file a wheel or a tree is read for.
TAKEN = {**SECTIONS, **MRV2_SECTIONS}


def producer_text(version: str, wheel: str, texts: dict[str, str]) -> str:
    """The producer sections of a release's files, in the layout of the shared texts."""
    parts = [
        f"# vLLM {version}: its own producers of the vllm.v1.outputs types, verbatim from {wheel}",
        "# (Apache-2.0, Copyright contributors to the vLLM project), cut out by vllm-outputs-suite.",
    ]
    for path, wanted in TAKEN.items():
        source = texts.get(path)
        if source is None:
            continue
        if wanted is None:
            parts.append(f"\n# ---- {path}: whole file\n{source}")
            continue
        for title, body in _cut(source, wanted):
            parts.append(f"\n# ---- {path}: {title}\n{body}")
    elsewhere = found_elsewhere(texts)
    for path in sorted(elsewhere):
        parts.append(f"\n# ---- {path}: whole file\n{texts[path]}")
    whole = {p for p, wanted in TAKEN.items() if wanted is None and p in texts} | elsewhere
    for path in sorted(gathering_callers(texts, whole)):
        parts.append(f"\n# ---- {path}: {CALLER_TITLE}\n{texts[path]}")
    return "\n".join(parts) + "\n"


def found_elsewhere(texts: dict[str, str]) -> set[str]:
    """Files of ``texts`` holding a producer (:mod:`conformance.releases.discovery`) beyond
    the known paths: kept whole beside Model Runner V2's, or in place of the first
    runner's once it is gone (a release before both keeps its TPU sampler, on torch_xla,
    which nothing here runs)."""
    from conformance.releases.discovery import producer_files

    has_mrv2 = any(path in MRV2_SECTIONS for path in texts)
    has_first_runner = any(path in SECTIONS for path in texts)
    if not has_mrv2 and has_first_runner:
        return set()
    return producer_files(texts) - set(TAKEN)


#: The title of a caller's section (:func:`gathering_callers`): read, never loaded.
CALLER_TITLE = "whole file (a caller, read only)"


def gathering_callers(texts: dict[str, str], producers: set[str]) -> set[str]:
    """Files of ``texts`` that import one of the gatherings in ``producers`` (files) by
    name: Model Runner V2's ``sample/sampler.py`` imports ``compute_topk_logprobs``, and
    a plugin replacing the gathering patches the name there.  The crater reads them to
    tell such a patch still lands; nothing loads them."""
    from conformance.releases.discovery import find_producers

    gatherings = {
        (p.module, p.name)
        for p in find_producers({path: texts[path] for path in producers if path in texts})
        if p.kind == "gathering" and "." not in p.name
    }
    if not gatherings:
        return set()
    modules = {module for module, _ in gatherings}
    found = set()
    for path, text in texts.items():
        if (
            path in producers
            or path in TAKEN
            or not any(m.rpartition(".")[2] in text for m in modules)
        ):
            continue
        try:
            tree = ast.parse(text)
        except SyntaxError:
            continue
        package = path.removesuffix(".py").replace("/", ".").rpartition(".")[0]
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom):
                module = _absolute(node, package)
                if any((module, alias.name) in gatherings for alias in node.names):
                    found.add(path)
                    break
    return found


def _absolute(node: ast.ImportFrom, package: str) -> str:
    """The module ``from ... import`` names, relative ones resolved from ``package``."""
    if not node.level:
        return node.module or ""
    base = package.split(".")
    base = base[: len(base) - (node.level - 1)] if node.level > 1 else base
    return ".".join([*base, node.module] if node.module else base)


def _cut(source: str, wanted: tuple[str, ...]) -> list[tuple[str, str]]:
    """``(title, lines)`` of each wanted ``Class`` or ``Class.method`` the source defines."""
    lines = source.splitlines()
    found = []
    for node in ast.parse(source).body:
        if not isinstance(node, ast.ClassDef):
            continue
        if node.name in wanted:
            found.append((f"class {node.name}", _lines(lines, node)))
        for member in node.body:
            name = f"{node.name}.{getattr(member, 'name', '')}"
            if isinstance(member, ast.FunctionDef) and name in wanted:
                found.append((name, _lines(lines, member)))
    return found


def _lines(lines: list[str], node: ast.ClassDef | ast.FunctionDef) -> str:
    """The node's source lines, decorators included, indentation kept."""
    first = min([node.lineno, *(d.lineno for d in node.decorator_list)])
    return "\n".join(lines[first - 1 : node.end_lineno]) + "\n"
