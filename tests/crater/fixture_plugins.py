"""Small plugins written for the crater's tests: each a ``{path: text}`` of a checkout,
each showing one way plugins use vLLM's output types (or none)."""

from __future__ import annotations

from pathlib import Path

#: Builds ModelRunnerOutput every way Python allows, reads its fields, subclasses it.
BUILDS_OUTPUT = {
    "pyproject.toml": '[project]\nname = "npu-builder"\nversion = "1.0"\n'
    'dependencies = ["vllm==0.33.0+npu", "torch"]\n',
    "npu_builder/__init__.py": "",
    "npu_builder/runner.py": """
from vllm.v1.outputs import ModelRunnerOutput
from vllm.v1 import outputs as vo


def step(req_ids):
    return ModelRunnerOutput(
        req_ids=req_ids,
        req_id_to_index={r: i for i, r in enumerate(req_ids)},
        sampled_token_ids=[[1] for _ in req_ids],
    )


def by_kwargs(req_ids):
    kwargs = {"req_ids": req_ids}
    kwargs["req_id_to_index"] = {}
    return vo.ModelRunnerOutput(**kwargs)


def by_position(req_ids):
    return ModelRunnerOutput(req_ids, {}, [], None, None, {}, [], None)


def rows(output: ModelRunnerOutput) -> dict:
    return output.req_id_to_index


def own_attribute(output: ModelRunnerOutput) -> int:
    return output.not_a_field_of_any_release
""",
    "npu_builder/types.py": """
from dataclasses import dataclass

from vllm.v1.outputs import ModelRunnerOutput


@dataclass
class NPUOutput(ModelRunnerOutput):
    npu_stats: dict | None = None
""",
    "npu_builder/worker.py": """
from .types import NPUOutput


def build(req_ids):
    return NPUOutput(req_ids=req_ids, req_id_to_index={}, npu_stats={})
""",
}

#: Async outputs: one with get_output only, one with both methods, an abstract base.
ASYNC_OUTPUTS = {
    "pyproject.toml": '[project]\nname = "npu-async"\nversion = "2.0"\n'
    'dependencies = ["vllm>=0.31,<0.33"]\n',
    "npu_async/__init__.py": "",
    "npu_async/outputs.py": """
from abc import abstractmethod

import vllm.v1.outputs as vllm_outputs


class NPUAsyncOutput(vllm_outputs.AsyncModelRunnerOutput):
    def __init__(self, output):
        self._output = output

    def get_output(self):
        return self._output


class CompleteAsyncOutput(vllm_outputs.AsyncModelRunnerOutput):
    def get_output(self):
        return None

    def get_kv_connector_output(self):
        return None


class AbstractBase(vllm_outputs.AsyncModelRunnerOutput):
    @abstractmethod
    def device_name(self): ...


class FromBase(NPUAsyncOutput):
    pass
""",
}

#: Code for two vLLMs, chosen by version guards.
GUARDED = {
    "pyproject.toml": '[project]\nname = "npu-guarded"\nversion = "3.0"\n',
    "npu_guarded/__init__.py": "",
    "npu_guarded/utils.py": """
import vllm


def vllm_version_is(version):
    return vllm.__version__ == version
""",
    "npu_guarded/runner.py": """
from typing import TYPE_CHECKING

import vllm
from packaging.version import Version
from vllm.v1.outputs import ModelRunnerOutput

from npu_guarded.utils import vllm_version_is

if TYPE_CHECKING:
    from vllm.v1.worker.gpu_model_runner import AsyncGPUModelRunnerOutput

try:
    from vllm.v1.sample.rejection_sampler import RejectionSampler
except ImportError:
    RejectionSampler = None

IS_OLD = Version(vllm.__version__) < Version("0.34.0")


def step(req_ids, config):
    if vllm_version_is("0.33.0"):
        return ModelRunnerOutput(req_ids=req_ids, req_id_to_index={})
    if IS_OLD:
        return ModelRunnerOutput(req_ids=req_ids, req_id_to_index={})
    if config.debug:
        return ModelRunnerOutput(req_ids=req_ids)
    return ModelRunnerOutput(req_ids=req_ids)
""",
}

#: A plugin that never touches the output types (as furiosa-llm, vllm-musa).
USES_NONE = {
    "pyproject.toml": '[project]\nname = "npu-platform"\nversion = "0.1"\n',
    "npu_platform/__init__.py": """
from vllm.platforms import Platform


class NPUPlatform(Platform):
    device_name = "npu"
""",
    "npu_platform/outputs.py": '''
class NPUModelRunnerOutput:
    """Its own output class, not vLLM's."""

    def __init__(self, req_ids, req_id_to_index):
        self.req_ids = req_ids
        self.req_id_to_index = req_id_to_index


def build():
    return NPUModelRunnerOutput([], {})
''',
}

#: Calls of vLLM's own producers.
PRODUCER_CALLS = {
    "pyproject.toml": '[project]\nname = "npu-sampler"\nversion = "0.2"\n'
    'dependencies = ["vllm==0.33.0"]\n',
    "npu_sampler/__init__.py": "",
    "npu_sampler/sampler.py": """
from vllm.v1.sample.rejection_sampler import RejectionSampler
from vllm.v1.sample.sampler import Sampler


class NPUSampler(Sampler):
    def logprobs(self, logits, k, token_ids):
        return self.gather_logprobs(logits, k, token_ids, "one too many")


def unpad(ids, vocab_size):
    rows, logprobs, extra = RejectionSampler.parse_output(ids, vocab_size)
    return rows
""",
}


def write(files: dict[str, str], folder: Path) -> Path:
    """The plugin laid out as a checkout in ``folder``."""
    for name, text in files.items():
        path = folder / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    return folder
