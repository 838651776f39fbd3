"""vLLM's own producers, loaded from the release texts at their real module paths.

:func:`conformance.releases.texts.write_stub_tree` lays out each release's
``producers/producers-X.py.txt`` (beside ``outputs-X.py.txt`` in
the user cache, fetched from each wheel) as ``vllm.v1.sample.sampler``,
``vllm.v1.sample.rejection_sampler``, ``vllm.v1.sample.ops.logprobs`` and
``vllm.v1.worker.gpu_model_runner``.  Each distinct release (producer sections and
outputs.py) is checked once, in a subprocess of its own so that the stub ``vllm``
never enters this process: the sampler's logprobs, the rejection sampler's parsing
and the async output classes, as the release ships them.  Without the texts these
tests skip.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from vllm_release_texts import RELEASES, SKIP_REASON

from conformance.releases.texts import (
    PRODUCERS_FOLDER,
    ProducerSection,
    producer_modules,
    producer_sections,
    producer_text_beside,
    release_texts,
    write_stub_tree,
)

PRODUCERS = RELEASES / PRODUCERS_FOLDER
pytestmark = pytest.mark.skipif(not PRODUCERS.is_dir(), reason=SKIP_REASON)


def _version(text: str) -> tuple[int, ...]:
    return tuple(int(part) for part in text.split("."))


def _distinct() -> dict[str, tuple[Path, Path]]:
    """``{version: (outputs text, producers text)}``, one per distinct pair, oldest first.

    The header comment of a producer text names its release, so texts are compared by
    their sections: two releases are the same when those and their outputs.py are.
    """
    if not PRODUCERS.is_dir():
        return {}
    seen: set[str] = set()
    distinct = {}
    for version, outputs in _suites_release_texts().items():
        producers = producer_text_beside(outputs, version)
        if producers is None:
            continue
        sections = producer_sections(producers.read_text(encoding="utf-8"))
        digest = hashlib.sha256(repr(sections).encode() + outputs.read_bytes()).hexdigest()
        if digest not in seen:
            seen.add(digest)
            distinct[version] = (outputs, producers)
    return distinct


def _suites_release_texts() -> dict[str, Path]:
    """The cached texts of the releases the suite fetches: a user's cache may also hold
    others (``crater 0.9.0`` fetches 0.9.0's), which these tests are not about."""
    from conformance.releases.fetch import every_release

    wanted = set(every_release())
    return {v: p for v, p in release_texts(RELEASES).items() if v in wanted}


DISTINCT = _distinct()

#: The probe, as a script: ``probe.py JOBS.json`` imports torch (and dynamo) once, then
#: forks one child per job ``{"folder", "out", "log"}``, two at a time; each child puts
#: its release's stub folder first on ``sys.path``, imports the release's producers and
#: writes what it found to ``out`` as JSON.  So every release is a process of its own and
#: the stub ``vllm`` never enters this one, without paying torch's import per release.
#: Without ``os.fork``: ``probe.py --one FOLDER OUT`` per job, a fresh interpreter each.
PROBE = r"""
import json, os, subprocess, sys

def probe(folder, out):
    sys.path.insert(0, folder)
    import importlib.metadata, inspect
    import torch
    import vllm
    import vllm.v1.outputs as outputs
    from vllm.platforms import current_platform
    from vllm.v1.sample import rejection_sampler
    from vllm.v1.sample.sampler import Sampler
    from vllm.v1.worker import gpu_model_runner as runner

    def call(cls, name, *args):
        static = isinstance(inspect.getattr_static(cls, name), staticmethod)
        method = getattr(cls, name)
        return static, method(*args) if static else method(None, *args)

    torch.manual_seed(0)
    logits = torch.randn(3, 50)
    compute_static, logprobs = call(Sampler, "compute_logprobs", logits)
    order = logprobs.argsort(dim=-1, descending=True)
    tokens = torch.stack([order[0, 0], order[1, 17], order[2, 49]]).to(torch.int64)
    gather_static, got = call(Sampler, "gather_logprobs", logprobs, 2, tokens)

    def parse(vocab_size):
        out = rejection_sampler.RejectionSampler.parse_output(
            torch.tensor([[5, -1], [7, 8]], dtype=torch.int32), vocab_size)
        rows, second = out if isinstance(out, tuple) else (out, "absent")
        return {"tuple": isinstance(out, tuple), "row_type": type(rows[0]).__name__,
                "rows": [[int(t) for t in row] for row in rows], "second": repr(second)}

    names = ("AsyncGPUModelRunnerOutput", "AsyncGPUPoolingModelRunnerOutput")
    found = {
        "version": importlib.metadata.version("vllm"),
        "stub_file": vllm.__file__,
        "platform": [current_platform.device_type, current_platform.simple_compile_backend],
        "log_softmax": torch.equal(logprobs, logits.log_softmax(-1)),
        "compute_static": compute_static,
        "gather_static": gather_static,
        "is_logprobs_tensors": isinstance(got, outputs.LogprobsTensors),
        "logprobs": logprobs.tolist(),
        "tokens": tokens.tolist(),
        "ids": got.logprob_token_ids.tolist(),
        "ids_dtype": str(got.logprob_token_ids.dtype),
        "values": got.logprobs.tolist(),
        "values_dtype": str(got.logprobs.dtype),
        "ranks": got.selected_token_ranks.tolist(),
        "placeholder": rejection_sampler.PLACEHOLDER_TOKEN_ID,
        "parse_100": parse(100),
        "parse_8": parse(8),
        "async_classes": {n: issubclass(getattr(runner, n), outputs.AsyncModelRunnerOutput)
                          for n in names if hasattr(runner, n)},
        "runner_methods_loaded": hasattr(runner, "GPUModelRunner"),
    }
    with open(out, "w") as file:
        json.dump(found, file)

def child(job):
    code = 1
    try:
        log = os.open(job["log"], os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        os.dup2(log, 1)
        os.dup2(log, 2)
        probe(job["folder"], job["out"])
        code = 0
    except BaseException:
        import traceback
        traceback.print_exc()
    finally:
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)

def main():
    if sys.argv[1] == "--one":
        probe(sys.argv[2], sys.argv[3])
        return
    jobs = json.loads(open(sys.argv[1]).read())
    if not hasattr(os, "fork"):
        for job in jobs:
            with open(job["log"], "w") as log:
                subprocess.run([sys.executable, __file__, "--one", job["folder"], job["out"]],
                               stdout=log, stderr=subprocess.STDOUT)
        return
    import numpy, torch, torch._dynamo  # what every probe needs, imported once
    torch.set_num_threads(1)
    running, pending = set(), list(jobs)
    while pending or running:
        while pending and len(running) < 2:
            job = pending.pop(0)
            pid = os.fork()
            if pid == 0:
                child(job)
            running.add(pid)
        running.discard(os.wait()[0])

main()
"""


@pytest.fixture(scope="module")
def probed(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """Probe every distinct release once; ``{version: folder}`` with ``found.json``, ``log``.

    Under xdist the workers share one run: the first to take the lock probes, the
    others read its results (the shared temp folder is per pytest session).
    """
    base = tmp_path_factory.getbasetemp()
    if os.environ.get("PYTEST_XDIST_WORKER"):
        base = base.parent
    root = base / "producer-probes"
    root.mkdir(exist_ok=True)
    folders = {version: root / version for version in DISTINCT}
    with open(root / "lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not (root / "done").exists():
            _probe_all(root, folders)
            (root / "done").touch()
    return folders


def _probe_all(root: Path, folders: dict[str, Path]) -> None:
    jobs = []
    for version, (outputs, producers) in DISTINCT.items():
        folder = folders[version]
        tree = write_stub_tree(outputs, version, folder / "tree", producers)
        jobs.append(
            {"folder": str(tree), "out": str(folder / "found.json"), "log": str(folder / "log")}
        )
    (root / "jobs.json").write_text(json.dumps(jobs), encoding="utf-8")
    (root / "probe.py").write_text(PROBE, encoding="utf-8")
    done = subprocess.run(
        [sys.executable, str(root / "probe.py"), str(root / "jobs.json")],
        cwd=root,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-3000:]


def _found(probed: dict[str, Path], version: str) -> dict[str, Any]:
    folder = probed[version]
    out = folder / "found.json"
    log = folder / "log"
    assert out.is_file(), log.read_text(encoding="utf-8")[-3000:] if log.is_file() else "no log"
    found: dict[str, Any] = json.loads(out.read_text(encoding="utf-8"))
    assert found["stub_file"].startswith(str(folder / "tree")), found["stub_file"]
    return found


@pytest.mark.parametrize("version", list(DISTINCT))
def test_release_producers_behave_as_shipped(probed: dict[str, Path], version: str) -> None:
    found = _found(probed, version)
    old = _version(version) < (0, 11, 1)
    assert found["version"] == version
    assert found["platform"] == ["cpu", "eager"]

    # Sampler: instance methods in 0.10.2 and 0.11.0, static from 0.11.1 on.
    assert found["compute_static"] is found["gather_static"] is (not old)
    assert found["log_softmax"]
    assert found["is_logprobs_tensors"]
    assert found["ids_dtype"] == "torch.int32"
    assert found["values_dtype"] == "torch.float32"
    ids, values, logprobs = found["ids"], found["values"], found["logprobs"]
    assert [len(row) for row in ids] == [len(row) for row in values] == [3, 3, 3]
    for row, token, row_ids, row_values, rank in zip(
        logprobs, found["tokens"], ids, values, found["ranks"], strict=True
    ):
        top = sorted(range(len(row)), key=lambda i: -row[i])[:2]
        assert row_ids == [token, *top]
        assert row_values == [row[token], *(row[i] for i in top)]
        assert rank == sum(value >= row[token] for value in row)
    assert found["ranks"] == [1, 18, 50]

    # RejectionSampler.parse_output drops the placeholder and ids >= vocab_size.
    assert found["placeholder"] == -1
    assert found["parse_100"]["rows"] == [[5], [7, 8]]
    assert found["parse_8"]["rows"] == [[5], [7]]
    shape = (found["parse_100"]["tuple"], found["parse_100"]["row_type"])
    if _version(version) >= (0, 12, 0):
        assert shape == (True, "list")
        assert found["parse_100"]["second"] == "None"  # no logprobs given, none back
    elif old:
        assert shape == (False, "list")
    else:
        assert shape == (False, "ndarray")

    # The async outputs subclass the release's own AsyncModelRunnerOutput.
    expected = {"AsyncGPUModelRunnerOutput": True}
    if _version(version) >= (0, 14, 0):
        expected["AsyncGPUPoolingModelRunnerOutput"] = True
    assert found["async_classes"] == expected
    assert not found["runner_methods_loaded"]


def test_every_release_with_a_producer_text_is_covered() -> None:
    texts = _suites_release_texts()
    with_producers = [v for v, p in texts.items() if producer_text_beside(p, v) is not None]
    assert len(with_producers) == 36
    assert with_producers[0] == "0.10.2"
    assert producer_text_beside(texts["0.10.1"], "0.10.1") is None
    # Every release whose gather_logprobs counts with batched_count_greater_than ships
    # ops/logprobs.py, which defines it (so far, all of them).
    for version in with_producers:
        path = producer_text_beside(texts[version], version)
        assert path is not None
        sections = producer_sections(path.read_text(encoding="utf-8"))
        gather = next(s for s in sections if s.title == "Sampler.gather_logprobs")
        ops = [s for s in sections if s.path == "vllm/v1/sample/ops/logprobs.py"]
        if "batched_count_greater_than" in gather.body:
            assert ops and "def batched_count_greater_than(" in ops[0].body, version
    # Same sections and outputs.py: one probe stands for all the releases that ship them.
    assert len(DISTINCT) >= 21


def test_sections_and_where_each_goes() -> None:
    text = (PRODUCERS / "producers-0.33.0.py.txt").read_text(encoding="utf-8")
    sections = producer_sections(text)
    assert all(isinstance(s, ProducerSection) for s in sections)
    titles = {(s.path, s.title) for s in sections}
    assert ("vllm/v1/sample/ops/logprobs.py", "whole file") in titles
    assert ("vllm/v1/sample/sampler.py", "Sampler.gather_logprobs") in titles
    assert sections[0].title == "class AsyncGPUModelRunnerOutput"
    assert sections[0].body.startswith("class AsyncGPUModelRunnerOutput(")
    assert sections[0].module == "vllm.v1.worker.gpu_model_runner"
    # Every line after the header comment lands in one section, in order (blank ones aside).
    lines = text.splitlines()
    start = lines.index(
        "# ---- vllm/v1/worker/gpu_model_runner.py: class AsyncGPUModelRunnerOutput"
    )
    parsed = [f"# ---- {s.path}: {s.title}\n{s.body}" for s in sections]
    assert [ln for ln in "".join(parsed).splitlines() if ln.strip()] == [
        ln for ln in lines[start:] if ln.strip()
    ]

    outputs = (RELEASES / "outputs-0.33.0.py.txt").read_text(encoding="utf-8")
    modules = producer_modules(sections, outputs, "0.33.0")
    assert sorted(modules) == [
        "vllm.platforms",
        "vllm.v1.sample.ops.logprobs",
        "vllm.v1.sample.rejection_sampler",
        "vllm.v1.sample.sampler",
        "vllm.v1.worker.gpu_model_runner",
    ]
    runner = modules["vllm.v1.worker.gpu_model_runner"]
    assert "def _bookkeeping_sync" not in runner and "def sample_tokens" not in runner
    # 0.33.0's outputs.py has no RoutedExpertsTensors: a stub stands in, raising if made.
    assert "from vllm.v1.outputs import AsyncModelRunnerOutput" in runner
    assert "class RoutedExpertsTensors:" in runner
    # The whole file goes as it is.
    whole = next(s for s in sections if s.title == "whole file")
    assert modules["vllm.v1.sample.ops.logprobs"] == whole.body
    assert "\nclass Sampler(nn.Module):\n    @staticmethod\n" in modules["vllm.v1.sample.sampler"]
    assert "import batched_count_greater_than" in modules["vllm.v1.sample.sampler"]
    # A release without ops/logprobs.py would lack batched_count_greater_than altogether.
    without = [s for s in sections if s.path != "vllm/v1/sample/ops/logprobs.py"]
    lacking = producer_modules(without, outputs, "0.33.0")
    assert "vllm.v1.sample.ops.logprobs" not in lacking
    assert (
        "batched_count_greater_than"
        not in lacking["vllm.v1.sample.sampler"].split("class Sampler")[0]
    )


def test_without_producer_text_the_tree_is_outputs_only(tmp_path: Path) -> None:
    alone = tmp_path / "texts" / "outputs-0.12.0.py.txt"
    alone.parent.mkdir()
    alone.write_bytes((RELEASES / "outputs-0.12.0.py.txt").read_bytes())
    assert producer_text_beside(alone, "0.12.0") is None
    folder = write_stub_tree(alone, "0.12.0", tmp_path / "tree")
    assert (folder / "vllm" / "v1" / "outputs.py").is_file()
    assert not (folder / "vllm" / "v1" / "sample").exists()
    assert not (folder / "vllm" / "platforms.py").exists()


def test_the_stand_in_platform_compiles_as_the_environment_says(monkeypatch) -> None:
    """vLLM's platforms hand torch.compile "inductor"; the stand-in hands "eager" (a
    minute of compiling on 2 cores) unless the benchmarks on a GPU ask for vLLM's own."""
    from conformance.releases.texts import _PLATFORMS_SOURCE

    def backend() -> str:
        namespace: dict[str, object] = {}
        exec(compile(_PLATFORMS_SOURCE, "vllm/platforms/__init__.py", "exec"), namespace)
        return namespace["CpuPlatform"].simple_compile_backend  # type: ignore[attr-defined]

    monkeypatch.delenv("OUTPUTS_VLLM_COMPILE_BACKEND", raising=False)
    assert backend() == "eager"
    monkeypatch.setenv("OUTPUTS_VLLM_COMPILE_BACKEND", "inductor")
    assert backend() == "inductor"
