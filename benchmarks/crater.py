"""The crater at scale: every known plugin judged against vLLM's newest release.

``time_every_known_plugin`` is the whole command (``python -m conformance crater``)
with a warm cache: nothing is read from the network, every plugin's code is read
from the cache, parsed and judged at its pin and at the target (the target is 2
minutes on 2 cores).  ``track_first_fetch_s`` fetches every known plugin's newest
release into an empty cache (the network's share; the target is 5 minutes), once per
run.  The smoke run (``OUTPUTS_BENCH_DRY_RUN``) judges two small plugins only: it
shows the command works without paying for the fetch.
"""

from __future__ import annotations

import contextlib
import io
import os
import tempfile
import time
from typing import ClassVar

from .interleaved import dry_run

#: What the smoke run judges: two small plugins, a few hundred KB read.
SMOKE_PLUGINS = ("vllm-musa", "furiosa-llm")
#: Set by ``nox -s bench-crater``: the crater's benchmark reads the package index and
#: takes minutes, so a plain ``nox -s bench`` (or the suite) leaves it out.
CRATER_ENV_VAR = "OUTPUTS_BENCH_CRATER"


def _wanted() -> None:
    if not dry_run() and os.environ.get(CRATER_ENV_VAR, "") != "1":
        raise NotImplementedError("the crater reads the package index: nox -s bench-crater runs it")


def _plugins() -> list[str]:
    from conformance.crater.known import known_plugins

    return list(SMOKE_PLUGINS) if dry_run() else [p.name for p in known_plugins()]


def _target() -> str:
    from conformance.oracle.revisions import known_releases

    return known_releases()[-1]


def _crater(arguments: list[str]) -> int:
    from conformance.crater.cli import main

    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        return main(arguments)


class Crater:
    """``python -m conformance crater NEWEST`` over every known plugin."""

    timeout = 900.0
    number = 1
    repeat = 1
    rounds = 1
    warmup_time = 0.0
    unit = "s"
    params: ClassVar[list[object]] = []

    def setup_cache(self) -> None:
        # Fill the user cache once: the timed run then reads nothing from the network.
        with contextlib.suppress(NotImplementedError):
            _wanted()
            _crater([_target(), "--plugins", *_plugins()])

    def setup(self) -> None:
        _wanted()

    def time_every_known_plugin(self) -> None:
        _crater([_target(), "--plugins", *_plugins()])

    def track_first_fetch_s(self) -> float:
        from conformance.crater.sources import plugin_source

        with tempfile.TemporaryDirectory(prefix="crater-cold-") as folder:
            before = os.environ.get("XDG_CACHE_HOME")
            os.environ["XDG_CACHE_HOME"] = folder
            try:
                started = time.perf_counter()
                with contextlib.redirect_stderr(io.StringIO()):
                    for name in _plugins():
                        plugin_source(name)
                return time.perf_counter() - started
            finally:
                if before is None:
                    del os.environ["XDG_CACHE_HOME"]
                else:
                    os.environ["XDG_CACHE_HOME"] = before
