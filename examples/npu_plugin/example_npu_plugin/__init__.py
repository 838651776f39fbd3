"""An example hardware plugin for an "npu" device, pinned to vLLM 0.12.0.

Like a real plugin it writes producers, not types: an async output class built the
way vLLM 0.12.0's runner builds its own, logprobs gathering and unpadding on the
device.  ``conformance_backend.BACKEND`` declares them to vllm-outputs-suite.
"""
