"""Not broken: the reference declared for CPU only (exercises module:attribute and skip causes)."""

from dataclasses import replace

from conformance.backends.known import reference_backend

BACKEND = replace(
    reference_backend(), name="reference-cpu-only", devices=("cpu",), producer_devices=None
)
