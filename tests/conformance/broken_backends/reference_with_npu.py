"""Not broken: the reference declared for cpu and npu (a PrivateUse1 device absent here)."""

from dataclasses import replace

from conformance.known_backends import reference_backend

BACKEND = replace(reference_backend(), name="reference-npu", devices=("cpu", "npu"))
