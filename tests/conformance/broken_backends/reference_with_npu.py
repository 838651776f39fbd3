"""Not broken: the reference declared for cpu and npu (a PrivateUse1 device absent here),
as the README declares a plugin: ``devices=("cpu", "npu")`` and no ``producer_devices``."""

from dataclasses import replace

from conformance.backends.known import reference_backend

BACKEND = replace(
    reference_backend(), name="reference-npu", devices=("cpu", "npu"), producer_devices=None
)
