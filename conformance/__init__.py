"""Conformance suite for backends of vllm.v1.outputs (spec 2025.10)."""
