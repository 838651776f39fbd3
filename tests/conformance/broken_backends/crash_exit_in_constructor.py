"""The async output's constructor ends the process (os._exit(1), as a failing extension does;
``STATUS_4``: with the status a CI reads as bad input)."""

import os

from broken_backends._producers import backend_with
from broken_backends._reference import *  # noqa: F403
from reference import RunnerAsyncModelRunnerOutput


class ExitsOnConstruction(RunnerAsyncModelRunnerOutput):
    def __init__(self, *args, **kwargs):
        os._exit(1)


BACKEND = backend_with(__name__, make_async_output=ExitsOnConstruction)


class ExitsWithFour(RunnerAsyncModelRunnerOutput):
    def __init__(self, *args, **kwargs):
        os._exit(4)


STATUS_4 = backend_with(__name__, make_async_output=ExitsWithFour)
