"""``crater --run-producers``: a plugin's torch async output run on the simulated device."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest
from vllm_release_texts import MISSING, RELEASES

from conformance.crater.producer_run import run_producers
from conformance.crater.sources import plugin_source
from conformance.crater.uses import read_plugin

pytestmark = pytest.mark.skipif(MISSING is not None, reason=MISSING or "")

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "npu_plugin" / "example_npu_plugin"


def _plugin(folder: Path) -> Path:
    """The example plugin's async output as a published plugin writes it (importing
    vLLM's types, pinned to 0.12.0), beside one that reads before it waits, one whose
    constructor vLLM's runner cannot fill and one written in JAX."""
    worker = (
        (EXAMPLE / "worker.py")
        .read_text(encoding="utf-8")
        .replace("from example_npu_plugin.outputs import", "from vllm.v1.outputs import")
    )
    worker += """

class HastyOutput(NPUAsyncModelRunnerOutput):
    def get_output(self):
        self._copied.synchronize = lambda: None  # reads before the copies arrived
        return super().get_output()


class StagedOutput(NPUAsyncModelRunnerOutput):
    # The sampled ids staged as plugins stage them: a pinned host buffer shaped like the
    # device tensor, a non-blocking copy into it, record_stream on the copy stream, and
    # in-place device work on a copy of the ids first.
    def __init__(self, model_runner_output, sampled_token_ids, logprobs_tensors,
                 invalid_req_indices, async_output_copy_stream, vocab_size):
        ids = sampled_token_ids.clone()
        ids.masked_fill_(ids >= vocab_size, PLACEHOLDER_TOKEN_ID)
        super().__init__(model_runner_output, ids, logprobs_tensors, invalid_req_indices,
                         async_output_copy_stream, vocab_size)
        staged = torch.empty_like(ids, device="cpu", pin_memory=True)
        with torch.npu.stream(async_output_copy_stream):
            staged.copy_(ids, non_blocking=True)
            ids.record_stream(async_output_copy_stream)
            self._copied.record()
        self._sampled_cpu = staged


class RunnerBound(NPUAsyncModelRunnerOutput):
    def __init__(self, runner, model_runner_output):
        self.runner = runner


class NPUSampler:
    @staticmethod
    def gather_logprobs(logprobs, num_logprobs, token_ids):
        token_ids = token_ids.unsqueeze(-1)
        token_logprobs = logprobs.gather(-1, token_ids)
        top_logprobs, top_ids = torch.topk(logprobs, num_logprobs, dim=-1)
        ranks = (logprobs > token_logprobs).sum(-1)  # a tie is not counted against it
        ids = torch.cat((token_ids, top_ids), dim=1).to(torch.int32)
        return LogprobsTensors(ids, torch.cat((token_logprobs, top_logprobs), dim=1), ranks)


class NPURunner:
    def gather_logprobs(self, logits, sampled_tokens):
        return LogprobsTensors(sampled_tokens, logits, sampled_tokens)


class ClassSampler:
    @classmethod
    def gather_logprobs(cls, logprobs, max_num_logprobs, token_ids):
        token_ids = token_ids.unsqueeze(-1)
        token_logprobs = logprobs.gather(-1, token_ids)
        top_logprobs, top_ids = torch.topk(logprobs, max_num_logprobs, dim=-1)
        ranks = (logprobs >= token_logprobs).sum(-1)
        ids = torch.cat((token_ids, top_ids), dim=1).to(torch.int32)
        return LogprobsTensors(ids, torch.cat((token_logprobs, top_logprobs), dim=1), ranks)


async def awaited_gather(logprobs, num_logprobs, token_ids):
    return LogprobsTensors(token_ids, logprobs, token_ids)
"""
    files = {
        "pyproject.toml": '[project]\nname = "npu-run"\nversion = "1.0"\n'
        'dependencies = ["vllm==0.12.0"]\n',
        "npu_run/__init__.py": "",
        "npu_run/worker.py": worker,
        "npu_run/tpu.py": "import jax\nfrom vllm.v1.outputs import AsyncModelRunnerOutput\n\n\n"
        "class JaxOutput(AsyncModelRunnerOutput):\n    def get_output(self):\n"
        "        return jax.device_get(self.output)\n",
        "npu_run/kernels.py": "from vllm.triton_utils import triton\n"
        "from vllm.v1.outputs import LogprobsTensors\n\n\n"
        "def fused_gather(logits, num_logprobs, token_ids):\n"
        "    return LogprobsTensors(token_ids, logits, token_ids)\n",
    }
    for name, text in files.items():
        (folder / name).parent.mkdir(parents=True, exist_ok=True)
        (folder / name).write_text(text, encoding="utf-8")
    return folder


def test_a_correct_output_passes_a_hasty_one_fails_and_the_others_say_why(tmp_path, monkeypatch):
    monkeypatch.setenv("OUTPUTS_VLLM_RELEASES", str(RELEASES))
    source = plugin_source(str(_plugin(tmp_path)))
    runs = run_producers(source, read_plugin(source.files), "0.12.0")
    ran = " ".join(runs.ran)
    assert "NPUAsyncModelRunnerOutput (npu_run/worker.py:22): run at 0.12.0" in ran
    assert "HastyOutput" in ran
    assert "StagedOutput (npu_run/worker.py:" in ran
    failing = {(f.kind, f.member, f.vllm_change.split(":", 2)[0] + ":" + f.vllm_change.split(":", 2)[1])
               for f in runs.findings}  # fmt: skip
    assert (
        "run-fails",
        "HastyOutput.get_output",
        "producer.async_output:waits-for-device",
    ) in failing
    assert not any(
        f.member.startswith(("NPUAsyncModelRunnerOutput", "StagedOutput")) for f in runs.findings
    )
    not_run = " | ".join(runs.not_run)
    assert "StagedOutput" not in not_run
    assert "RunnerBound (npu_run/worker.py:" in not_run
    assert "its constructor takes what vLLM's runner never hands over (runner)" in not_run
    assert "JaxOutput (npu_run/tpu.py:5): not run, written in JAX" in not_run
    assert runs.executed[:1] == ["npu_run.worker"]


def test_a_plugins_gatherings_run_on_cpu_where_vllms_runner_could_call_them(tmp_path, monkeypatch):
    monkeypatch.setenv("OUTPUTS_VLLM_RELEASES", str(RELEASES))
    source = plugin_source(str(_plugin(tmp_path)))
    runs = run_producers(source, read_plugin(source.files), "0.12.0")
    ran = " | ".join(runs.ran)
    assert "gather_logprobs (npu_run/worker.py:71): run at 0.12.0 on CPU" in ran
    assert "NPUSampler.gather_logprobs (npu_run/worker.py:" in ran
    assert "ClassSampler.gather_logprobs (npu_run/worker.py:" in ran  # a classmethod
    gathering = {(f.member, f.vllm_change.split(":")[0]) for f in runs.findings
                 if "gather" in f.member}  # fmt: skip
    assert gathering == {("NPUSampler.gather_logprobs", "producer.gather_logprobs")}
    not_run = " | ".join(runs.not_run)
    assert (
        "NPURunner.gather_logprobs (npu_run/worker.py:" in not_run
        and "its parameters (logits, sampled_tokens) are not what vLLM's runner passes" in not_run
    )
    assert "fused_gather (npu_run/kernels.py:5): not run, written in Triton" in not_run
    assert "awaited_gather (npu_run/worker.py:" in not_run and "an async def" in not_run
    assert "ClassSampler" not in not_run


def test_a_check_that_raised_beside_stand_ins_is_not_judged() -> None:
    from conformance.crater.producer_run import _raise_of, _raised

    at_line = ("make_async_output(<step race-k5>): raised RuntimeError at plugin/p/w.py:467 "
               "(`x.record_stream(copy_stream)`): unknown parameter type")  # fmt: skip
    assert _raised(at_line) and _raised("get_output(): raised AttributeError: 'X' has no 'y'")
    assert _raise_of(at_line).startswith("RuntimeError at plugin/p/w.py:467")
    assert not _raised("get_output().sampled_token_ids[0]: expected 1 items, found 2")


def test_only_what_the_plugin_imports_is_stood_in_for() -> None:
    from conformance.crater.producer_run import _StubFinder

    finder = _StubFinder("npu_run.worker", "import torch_npu\nfrom vllm.x import y\nimport torch\n")
    stood_in = {
        name
        for name in ("torch_npu", "torch_npu.ops", "vllm.config", "npu_run.envs", "flint", "os",
                     "torch._C_missing", "npu_run.worker")
        if finder.find_spec(name, None) is not None
    }  # fmt: skip
    # sympy tries ``flint`` and expects an ImportError where it is absent; torch is real.
    assert stood_in == {"torch_npu", "torch_npu.ops", "vllm.config", "npu_run.envs"}


SAMPLER = """
import torch
from vllm.v1.outputs import LogprobsTensors


class NPUSampler:
    def forward(self, logits, sampling_metadata):
        if sampling_metadata.max_num_logprobs == -1:
            return LogprobsTensors(torch.empty(0), logits, torch.empty(0))
        return self.gather_logprobs(logits, 5, sampling_metadata.ids)

    @staticmethod
    def gather_logprobs(logits, num_logprobs, token_ids):
        top = torch.topk(logits, num_logprobs)
        return LogprobsTensors(top.indices, top.values, token_ids)
"""

JAX_GATHERING = """
import jax
import torch
from vllm.v1.outputs import LogprobsTensors


def gather_logprobs(logprobs, token_ids, num_logprobs):
    return LogprobsTensors(jax.numpy.asarray(logprobs), token_ids, num_logprobs)


class TorchRunner:
    def gather_logprobs(self, logits, sampled_tokens):
        return LogprobsTensors(torch.log_softmax(logits, -1), sampled_tokens, sampled_tokens)
"""


def test_a_gathering_is_found_once_and_one_in_jax_is_named_so(tmp_path, monkeypatch) -> None:
    from conformance.crater.producer_run import gatherings

    monkeypatch.setenv("OUTPUTS_VLLM_RELEASES", str(RELEASES))
    package = tmp_path / "npu_once"
    package.mkdir()
    (tmp_path / "pyproject.toml").write_text(
        '[project]\nname = "npu-once"\nversion = "1"\ndependencies = ["vllm==0.12.0"]\n'
    )
    (package / "__init__.py").write_text("")
    (package / "sampler.py").write_text(SAMPLER)
    (package / "tpu.py").write_text(JAX_GATHERING)
    source = plugin_source(str(tmp_path))
    # The sampler's forward gathers through its own gathering: one producer, not two.
    assert sorted(g.name for g in gatherings(source)) == [
        "NPUSampler.gather_logprobs",
        "TorchRunner.gather_logprobs",
        "gather_logprobs",
    ]
    runs = run_producers(source, read_plugin(source.files), "0.12.0", timeout=60)
    # Its language is why it is not run, whatever its parameters; a torch gathering
    # beside it in the same module is torch, not run for its parameters.
    assert "gather_logprobs (npu_once/tpu.py:7): not run, written in JAX" in runs.not_run
    [torch_one] = [n for n in runs.not_run if n.startswith("TorchRunner.gather_logprobs")]
    assert "its parameters" in torch_one and "JAX" not in torch_one


HELPED_GATHERING = """
import torch
import npu_hw  # its hardware runtime: absent here
from npu_helped.ops.ranks import count_greater
from vllm.v1.outputs import LogprobsTensors


class NPUSampler:
    @staticmethod
    def gather_logprobs(logprobs, num_logprobs, token_ids):
        token_ids = token_ids.unsqueeze(-1)
        token_logprobs = logprobs.gather(-1, token_ids)
        top_logprobs, top_ids = torch.topk(logprobs, num_logprobs, dim=-1)
        ranks = count_greater(logprobs, token_logprobs)
        ids = torch.cat((token_ids, top_ids), dim=1).to(torch.int32)
        return LogprobsTensors(ids, torch.cat((token_logprobs, top_logprobs), dim=1), ranks)
"""

RANKS = """
import torch
import npu_hw.compile  # fails alone; the helper does not need it


def count_greater(logprobs, token_logprobs):
    return (logprobs >= token_logprobs).sum(-1)
"""


def test_a_helper_of_its_own_package_runs_a_stand_in_result_is_not_judged(
    tmp_path, monkeypatch
) -> None:
    # vllm-rbln's gathering ranks with its own ops module's function: that module runs
    # from its text. Where the helper is missing, its stand-in's result is not the
    # plugin's fault: not judged, not a failure.
    monkeypatch.setenv("OUTPUTS_VLLM_RELEASES", str(RELEASES))
    (tmp_path / "pyproject.toml").write_text(
        '[project]\nname = "npu-helped"\nversion = "1"\ndependencies = ["vllm==0.12.0"]\n'
    )
    for name, text in {"__init__.py": "", "sampler.py": HELPED_GATHERING,
                       "ops/__init__.py": "", "ops/ranks.py": RANKS}.items():  # fmt: skip
        (tmp_path / "npu_helped" / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / "npu_helped" / name).write_text(text)
    source = plugin_source(str(tmp_path))
    runs = run_producers(source, read_plugin(source.files), "0.12.0", timeout=120)
    assert runs.executed == ["npu_helped.sampler", "npu_helped.ops.ranks"]
    assert not runs.findings and "NPUSampler.gather_logprobs (npu_helped/sampler.py:" in (
        " ".join(runs.ran)
    )
    # Through its package (``from npu_helped.ops import ranks``), beside a helper that
    # ends its own import with sys.exit().
    (tmp_path / "npu_helped" / "ops" / "quits.py").write_text("import sys\nsys.exit(3)\n")
    (tmp_path / "npu_helped" / "sampler.py").write_text(
        HELPED_GATHERING.replace(
            "from npu_helped.ops.ranks import count_greater",
            "from npu_helped.ops import quits, ranks\ncount_greater = ranks.count_greater",
        )
    )
    source = plugin_source(str(tmp_path))
    runs = run_producers(source, read_plugin(source.files), "0.12.0", timeout=120)
    assert "npu_helped.ops.ranks" in runs.executed and not runs.findings
    assert "NPUSampler.gather_logprobs (npu_helped/sampler.py:" in " ".join(runs.ran)
    (tmp_path / "npu_helped" / "ops" / "ranks.py").unlink()
    (tmp_path / "npu_helped" / "sampler.py").write_text(HELPED_GATHERING)
    source = plugin_source(str(tmp_path))
    runs = run_producers(source, read_plugin(source.files), "0.12.0", timeout=120)
    assert not runs.findings
    assert "its result holds a stand-in for its hardware or imports" in " ".join(runs.not_run)


def test_a_run_whose_checks_were_inconclusive_says_so_beside_its_pass() -> None:
    from conformance.crater.producer_run import PluginProducer, ProducerRuns, _take

    runs = ProducerRuns()
    producer = PluginProducer("async-output", "npu/worker.py", 12, "NPUAsyncOutput")
    outcome = {
        "failed": {},
        "inconclusive": {
            "producer.async_output:waits-for-device": "race check inconclusive: the device "
            "was already idle when make_async_output returned (it may block)"
        },
    }
    _take(runs, producer, outcome, "run at 0.11.0", "")
    assert runs.findings == []
    assert runs.not_run == [
        "NPUAsyncOutput (npu/worker.py:12): run at 0.11.0, 1 behaviours inconclusive on the "
        "simulated runtime (race check inconclusive: the device was already idle when "
        "make_async_output returned (it may block))"
    ]


def test_an_attribute_the_producer_never_sets_is_its_own_failure() -> None:
    from conformance.crater.producer_run import PluginProducer, ProducerRuns, _take

    text = (
        "class NPUAsyncOutput:\n"
        "    def __init__(self, out):\n"
        "        # self._ready = torch.npu.Event()\n"
        "        self._copied: bool = True\n"
        "    def get_output(self):\n"
        "        self._ready.synchronize()\n"
    )
    raised = "get_output(): raised AttributeError at npu/worker.py:6 (`{}`): 'NPUAsyncOutput' "
    outcome = {
        "failed": {
            "producer.async_output": raised.format("self._ready.synchronize()")
            + "object has no attribute '_ready'",
            "producer.async_output:waits-for-device": raised.format("self._copied")
            + "object has no attribute '_copied'",
        }
    }
    runs = ProducerRuns()
    _take(
        runs,
        PluginProducer("async-output", "npu/worker.py", 1, "NPUAsyncOutput"),
        outcome,
        "run",
        text,
    )
    # '_ready' is set nowhere but in a comment: it fails on any device. '_copied' is set,
    # so its absence comes of what stood in: not judged.
    assert [f.vllm_change.partition(":")[0] for f in runs.findings] == ["producer.async_output"]
    assert "1 behaviours not judged" in runs.not_run[0]
    # Handed to a stand-in, or on a base the module does not define, the instance may
    # have been given '_ready' by what stood in: not judged either.
    mixed_in = "from npu_runtime import EventMixin\n" + text.replace(
        "NPUAsyncOutput:", "NPUAsyncOutput(EventMixin):"
    )
    # vLLM's modules other than those whose texts the run has are stand-ins too.
    vllm_mixin = mixed_in.replace("from npu_runtime", "from vllm.distributed.npu_state")
    updated = text.replace("self._copied: bool = True", "self.__dict__.update(state())")
    others = (text.replace("self._copied: bool = True", "attach_ready(self)"), mixed_in)
    for other in (*others, vllm_mixin, updated):
        runs = ProducerRuns()
        producer = PluginProducer("async-output", "npu/worker.py", 1, "NPUAsyncOutput")
        first = dict(list(outcome["failed"].items())[:1])
        _take(runs, producer, {"failed": first}, "run", other)
        assert runs.findings == [] and "1 behaviours not judged" in runs.not_run[0]


POOLING = """
import torch
from vllm.v1.outputs import AsyncModelRunnerOutput


class NPUPoolingOutput(AsyncModelRunnerOutput):
    def __init__(self, model_runner_output, raw_pooler_output, finished_mask,
                 async_output_copy_stream):
        self._output = model_runner_output
        self._raw = raw_pooler_output
        self._ready = torch.npu.Event()
        computing = torch.npu.current_stream()
        with torch.npu.stream(async_output_copy_stream):
            async_output_copy_stream.wait_stream(computing)
            self._output.pooler_output = [
                row.to("cpu", non_blocking=True) if done else None
                for row, done in zip(raw_pooler_output, finished_mask)
            ]
            self._ready.record()

    def get_output(self):
        self._ready.synchronize()
        del self._raw
        return self._output


class HastyPoolingOutput(NPUPoolingOutput):
    def get_output(self):
        return self._output


class PinnedCopyOutput(AsyncModelRunnerOutput):
    # Copies block only where vLLM finds no pinned memory: never on the device's machine.
    def __init__(self, model_runner_output, raw_pooler_output, finished_mask,
                 async_output_copy_stream):
        from vllm.utils.torch_utils import PIN_MEMORY

        self._output = model_runner_output
        computing = torch.npu.current_stream()
        with torch.npu.stream(async_output_copy_stream):
            async_output_copy_stream.wait_stream(computing)
            self._output.pooler_output = [
                row.to("cpu", non_blocking=PIN_MEMORY) if done else None
                for row, done in zip(raw_pooler_output, finished_mask)
            ]

    def get_output(self):
        return self._output
"""


def test_a_pooling_async_output_is_judged_by_the_pooling_checks(tmp_path, monkeypatch) -> None:
    monkeypatch.setenv("OUTPUTS_VLLM_RELEASES", str(RELEASES))
    files = {
        "pyproject.toml": '[project]\nname = "npu-pool"\nversion = "1.0"\n'
        'dependencies = ["vllm==0.32.0"]\n',
        "npu_pool/__init__.py": "",
        "npu_pool/worker.py": POOLING,
    }
    for name, text in files.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text, encoding="utf-8")
    source = plugin_source(str(tmp_path))
    runs = run_producers(source, read_plugin(source.files), "0.32.0")
    # Given a sampling step, both raised and went unjudged; on pooling steps the one that
    # returns before its copies arrived fails, the one that waits passes.
    # A copy made with non_blocking=PIN_MEMORY is as late as on the device's machine.
    assert [r.split(" (")[0] for r in runs.ran] == [
        "NPUPoolingOutput",
        "HastyPoolingOutput",
        "PinnedCopyOutput",
    ]
    assert runs.not_run == []
    failed = {(f.member, f.vllm_change.split(": ", 1)[0]) for f in runs.findings}
    waits = "producer.pooling_output:waits-for-device"
    assert ("HastyPoolingOutput.get_output", waits) in failed
    assert ("PinnedCopyOutput.get_output", waits) in failed
    assert not any(member.startswith("NPUPoolingOutput") for member, _ in failed)


def test_a_from_import_failing_on_one_name_binds_the_others() -> None:
    # The pin's gpu_model_runner is laid out in part: the plugin's
    # ``from ... import EMPTY_MODEL_RUNNER_OUTPUT, AsyncGPUModelRunnerOutput`` fails on the
    # first, yet its async output class rests on the second and must define.
    from conformance.crater.producer_run import _run_each_statement

    text = "from json import not_in_json, JSONDecoder\n\n\nclass Mine(JSONDecoder):\n    pass\n"
    tree = ast.parse(text)
    namespace: dict[str, object] = {"__name__": "plugin_module"}
    failed = _run_each_statement(tree, namespace, "plugin_module.py")
    assert [type(e) for e in failed.values()] == [ImportError]
    assert "JSONDecoder" in namespace and isinstance(namespace["Mine"], type)


def test_a_raise_of_the_plugins_own_line_with_no_stand_in_at_hand_is_its_own(
    tmp_path, monkeypatch
) -> None:
    import importlib.util

    from conformance.oracle import failing
    from conformance.oracle.stand_ins import OWN_RAISE

    (tmp_path / "own_code.py").write_text(
        "class _Stub:\n    pass\n\n\n"
        "def own(rows):\n    return rows[len(rows)]\n\n\n"
        "def beside(rows):\n    helper = _Stub()\n    return rows[len(rows)]\n\n\n"
        "def in_library(rows):\n    import json\n\n    return json.loads('x')\n\n\n"
        "MODULE_STUB = _Stub()\nUNUSED_STUB = _Stub()\n\n\n"
        "def from_a_global(rows):\n    return rows[len(rows) + (MODULE_STUB is None)]\n"
    )
    spec = importlib.util.spec_from_file_location("own_code", tmp_path / "own_code.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)

    def said(function) -> str:
        try:
            function([1, 2])
        except Exception as error:
            return failing.raised_at(error)
        raise AssertionError("no raise")

    assert OWN_RAISE not in said(module.own)  # no stand-ins in this run: nothing said
    monkeypatch.setattr(failing, "stand_in_type", "_Stub")
    assert said(module.own).endswith(f"own_code.py:6 (`return rows[len(rows)]`) {OWN_RAISE}")
    assert OWN_RAISE not in said(module.beside)  # a stand-in at hand: not told
    assert OWN_RAISE not in said(module.in_library)  # raised in a library it called
    # A module-level stand-in the raising code names is at hand too; one it never names
    # (UNUSED_STUB, beside it in the module) leaves own() its own.
    assert OWN_RAISE not in said(module.from_a_global)
    assert said(module.own).endswith(OWN_RAISE)


def test_a_run_raising_by_its_own_code_is_a_finding_and_beside_a_stand_in_is_not() -> None:
    from conformance.crater.producer_run import PluginProducer, ProducerRuns, _take
    from conformance.oracle.stand_ins import OWN_RAISE

    producer = PluginProducer("async-output", "npu/worker.py", 12, "NPUAsyncOutput")
    at = "make_async_output(<step discarded-rows>).get_output(): raised IndexError at npu/worker.py:29"
    own = f"{at} (`valid[len(valid) + i].clear()`) {OWN_RAISE}: list index out of range"
    runs = ProducerRuns()
    _take(runs, producer, {"failed": {"producer.async_output": own}}, "run at 0.11.0", "")
    assert [f.kind for f in runs.findings] == ["run-fails"] and runs.not_run == []
    runs = ProducerRuns()
    other = f"{at} (`valid[len(valid) + i].clear()`): list index out of range"
    _take(runs, producer, {"failed": {"producer.async_output": other}}, "run at 0.11.0", "")
    assert runs.findings == [] and "behaviours not judged" in runs.not_run[0]


def test_a_runs_failures_are_said_as_the_conformance_run_says_them() -> None:
    # One cause a line, without its behaviour's name twice; what follows from it counted.
    from conformance.crater.producer_run import _causes

    raised = (
        "make_async_output(<step one>).get_output(): raised AttributeError at "
        "plugin/my_plugin/worker.py:57 (`self.x.y`): no attribute y"
    )
    behaviours = ["producer.async_output", "producer.async_output:rows-as-lists", "x:nan-counts"]
    tests = [
        {
            "nodeid": f"checks::t{i}[npu-simulated]",
            "behaviour": behaviour,
            "outcome": "failed",
            "message": f"[{behaviour}] {raised}",
            "device": "npu-simulated",
            "producer": "make_async_output",
        }
        for i, behaviour in enumerate(behaviours[:2])
    ]
    assert _causes({"tests": tests}) == {
        "producer.async_output": raised.replace(" at plugin/", " at ")
        + " (and 1 more check(s) that follow from it)"
    }
