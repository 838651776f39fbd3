"""A plugin's module that imports vLLM where no vLLM is installed (a CI job that left
its install out)."""

from vllm.v1.outputs import *  # noqa: F403
