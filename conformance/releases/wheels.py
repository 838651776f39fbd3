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
    for path in sorted(found_elsewhere(texts)):
        parts.append(f"\n# ---- {path}: whole file\n{texts[path]}")
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
