"""make_async_output in the form before steps: (sampler_output, req_ids) -> async output."""

import sys

import reference
from broken_backends._reference import *  # noqa: F403
from conformance import Backend


def make_backend() -> Backend:
    return Backend(
        name="old-form",
        module=sys.modules[__name__],
        make_async_output=reference.DeviceAsyncModelRunnerOutput,
    )
