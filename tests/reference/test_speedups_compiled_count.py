"""The rank count's run-time compiled tier: only where allowed, never a compile on the
caller's thread, the same counts.

The mechanism is tested on CPU with the C extension set aside (so calls reach the
tier) and a stand-in ``torch.compile`` backend (it records its thread and can be
slow or fail); inductor is built for real and its counts compared with the eager
ones over ties, infinities, NaNs and the states a caller counts in.  The extension's
own count: ``test_speedups_extension.py``.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import textwrap
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import torch

import reference_speedups
from reference.logprobs_ops import pessimistic_ranks
from reference_speedups import compiled_count as compiled_ranks
from reference_speedups import hot_build

ROOT = Path(__file__).resolve().parents[2]
#: Large enough to count as hot: 8 rows over a 32768 vocabulary.
ROWS, VOCAB = 8, 1 << 15
#: How long a gated compile waits: a caller that waited for it would wait this long.
GATE_TIMEOUT = 30.0
HAS_CXX_COMPILER = any(shutil.which(name) for name in ("c++", "g++", "clang++"))


def eager_ranks(logprobs: torch.Tensor, token_logprobs: torch.Tensor) -> list[int]:
    return [
        sum(1 for x in row if x >= v)
        for row, v in zip(logprobs.tolist(), token_logprobs.reshape(-1).tolist(), strict=True)
    ]


class StandIn:
    """A ``torch.compile`` backend that records the thread it compiles on; with a gate,
    it compiles only once the gate opens (or its timeout passes), saying which."""

    def __init__(self, gate: threading.Event | None = None, fail: bool = False) -> None:
        self.gate, self.fail = gate, fail
        self.threads: list[threading.Thread] = []
        self.opened_by_gate: list[bool] = []

    def __call__(self, graph: torch.fx.GraphModule, example_inputs: list) -> object:
        self.threads.append(threading.current_thread())
        if self.gate is not None:
            self.opened_by_gate.append(self.gate.wait(timeout=GATE_TIMEOUT))
        if self.fail:
            raise RuntimeError("no C++ compiler found")
        return graph.forward


@pytest.fixture
def fresh_tiers(monkeypatch: pytest.MonkeyPatch) -> Iterator[dict]:
    """No device hot yet, run-time builds allowed, the CPU's extension set aside;
    compiled with inductor unless a test sets a stand-in."""
    tiers: dict = {}
    monkeypatch.setattr(compiled_ranks, "_TIERS", tiers)
    monkeypatch.delenv(compiled_ranks.SWITCH, raising=False)
    monkeypatch.setattr(hot_build, "_allowed", True)
    monkeypatch.setattr(reference_speedups, "_EXT", None)
    yield tiers
    compiled_ranks.settle(timeout=60)
    torch._dynamo.reset()  # each test's compiled code goes, not counting towards dynamo's limit


def use_stand_in(monkeypatch: pytest.MonkeyPatch, stand_in: object) -> None:
    """``torch.compile`` with ``stand_in``."""
    monkeypatch.setattr(compiled_ranks, "_BACKEND", stand_in)


def heat_and_settle(
    logprobs: torch.Tensor, token_logprobs: torch.Tensor, timeout: float = 60
) -> dict[str, str]:
    """Count often enough for the device's compile to start; wait for it; its states."""
    for _ in range(compiled_ranks.HOT_CALLS):
        pessimistic_ranks(logprobs, token_logprobs)
    return compiled_ranks.settle(timeout=timeout)


def batch(rows: int = ROWS, vocab: int = VOCAB, seed: int = 0) -> tuple[torch.Tensor, torch.Tensor]:
    generator = torch.Generator().manual_seed(seed)
    logprobs = (torch.randn(rows, vocab, generator=generator) * 4).log_softmax(-1)
    token_ids = torch.randint(0, vocab, (rows, 1), generator=generator)
    return logprobs, logprobs.gather(-1, token_ids)


def test_calls_stay_eager_until_hot_and_the_compile_runs_off_the_callers_thread(
    fresh_tiers: dict, monkeypatch: pytest.MonkeyPatch
) -> None:
    gate = threading.Event()
    stand_in = StandIn(gate=gate)
    use_stand_in(monkeypatch, stand_in)
    logprobs, token_logprobs = batch()
    wanted = pessimistic_ranks(logprobs, token_logprobs).tolist()
    for _ in range(compiled_ranks.HOT_CALLS - 2):
        pessimistic_ranks(logprobs, token_logprobs)
    assert compiled_ranks.states() == {
        "cpu": f"eager ({compiled_ranks.HOT_CALLS - 1} of {compiled_ranks.HOT_CALLS} hot calls)"
    }

    assert pessimistic_ranks(logprobs, token_logprobs).tolist() == wanted  # the hot call
    assert pessimistic_ranks(logprobs, token_logprobs).tolist() == wanted  # while compiling
    # The compile cannot end before the gate opens: had a caller waited for it, the
    # gate's timeout would have passed and the compile said so.
    assert compiled_ranks.states() == {"cpu": "compiling"}
    gate.set()
    assert compiled_ranks.settle(timeout=60) == {"cpu": "compiled (torch.compile)"}
    assert stand_in.threads and threading.main_thread() not in stand_in.threads
    assert all(stand_in.opened_by_gate), "a caller waited for the compile"
    compiled = compiled_ranks.compiled_count(logprobs, token_logprobs)
    assert compiled is not None and compiled.dtype == torch.int64
    assert compiled.tolist() == wanted == eager_ranks(logprobs, token_logprobs)


def test_a_failed_compile_leaves_the_device_eager_and_says_why(
    fresh_tiers: dict, monkeypatch: pytest.MonkeyPatch
) -> None:
    use_stand_in(monkeypatch, StandIn(fail=True))
    logprobs, token_logprobs = batch()
    for _ in range(compiled_ranks.HOT_CALLS):
        counts = pessimistic_ranks(logprobs, token_logprobs)
    state = compiled_ranks.settle(timeout=60)["cpu"]
    assert state.startswith("eager: compile failed (") and "no C++ compiler found" in state
    assert compiled_ranks.compiled_count(logprobs, token_logprobs) is None
    assert pessimistic_ranks(logprobs, token_logprobs).tolist() == counts.tolist()


@pytest.mark.parametrize(
    "shape",
    [(1, 1 << 20), (4, 1000)],
    ids=["one row (dynamo specialises size 1)", "below MIN_ELEMENTS"],
)
def test_one_row_and_small_counts_never_heat_up_torch_compile(
    fresh_tiers: dict, monkeypatch: pytest.MonkeyPatch, shape: tuple[int, int]
) -> None:
    use_stand_in(monkeypatch, StandIn())
    logprobs, token_logprobs = batch(*shape)
    for _ in range(compiled_ranks.HOT_CALLS + 1):
        pessimistic_ranks(logprobs, token_logprobs)
    assert compiled_ranks.states() == {}


def test_the_switch_keeps_every_call_eager(
    fresh_tiers: dict, monkeypatch: pytest.MonkeyPatch
) -> None:
    use_stand_in(monkeypatch, StandIn())
    monkeypatch.setenv(compiled_ranks.SWITCH, "0")
    logprobs, token_logprobs = batch()
    for _ in range(compiled_ranks.HOT_CALLS + 1):
        pessimistic_ranks(logprobs, token_logprobs)
    assert compiled_ranks.states() == {}


def test_a_process_that_does_not_allow_builds_never_compiles(
    fresh_tiers: dict, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A conformance run: the checks need the rules, not the speed.
    stand_in = StandIn()
    use_stand_in(monkeypatch, stand_in)
    monkeypatch.setattr(hot_build, "_allowed", False)
    logprobs, token_logprobs = batch()
    for _ in range(compiled_ranks.HOT_CALLS + 1):
        assert pessimistic_ranks(logprobs, token_logprobs).tolist() == eager_ranks(
            logprobs, token_logprobs
        )
    assert compiled_ranks.states() == {} and stand_in.threads == []
    # $OUTPUTS_REFERENCE_COMPILE=1 allows them without the call.
    monkeypatch.setenv(compiled_ranks.SWITCH, "1")
    assert heat_and_settle(logprobs, token_logprobs) == {"cpu": "compiled (torch.compile)"}


def test_a_state_the_compile_was_not_warmed_for_counts_eagerly(
    fresh_tiers: dict, monkeypatch: pytest.MonkeyPatch
) -> None:
    use_stand_in(monkeypatch, StandIn())
    logprobs, token_logprobs = batch()
    assert heat_and_settle(logprobs, token_logprobs) == {"cpu": "compiled (torch.compile)"}
    # Warmed for tensors without autograd: one that requires grad misses the
    # compiled code, and run-only mode must not compile it on this thread.
    tracked = logprobs.clone().requires_grad_()
    assert compiled_ranks.compiled_count(tracked, token_logprobs) is None
    assert pessimistic_ranks(tracked, token_logprobs).tolist() == eager_ranks(
        logprobs, token_logprobs
    )


@pytest.mark.skipif(not HAS_CXX_COMPILER, reason="inductor needs a C++ compiler")
def test_the_compiled_count_equals_the_eager_one(fresh_tiers: dict) -> None:
    logprobs, token_logprobs = batch()
    assert heat_and_settle(logprobs, token_logprobs, timeout=600) == {
        "cpu": "compiled (torch.compile)"
    }

    odd = logprobs.clone()
    odd[0, :100] = odd[0, 5]  # a hundred-way tie with the token
    odd[1, 7] = float("inf")  # the token is +inf: only itself counts
    odd[2, ::3] = float("-inf")
    odd[3, 11] = float("nan")  # a NaN token: nothing is >= it
    odd[4, 200:300] = float("nan")  # NaN entries count for no token
    token_ids = torch.tensor([[5], [7], [9], [11], [0], [VOCAB - 1], [250], [3]])
    odd_tokens = odd.gather(-1, token_ids)
    cases = {
        "random": (logprobs, token_logprobs),
        "ties, infinities, NaNs": (odd, odd_tokens),
        "another shape": batch(rows=17, vocab=151936 // 8, seed=3),
        "a width no vector divides": batch(rows=3, vocab=(1 << 18) + 13, seed=4),
    }
    for name, (rows, tokens) in cases.items():
        wanted = eager_ranks(rows, tokens)
        for state, mode in [
            ("plain", torch.enable_grad),
            ("no_grad", torch.no_grad),
            ("inference_mode", torch.inference_mode),
        ]:
            with mode():
                counts = compiled_ranks.compiled_count(rows, tokens)
            assert counts is not None, f"{name}, {state}: the compiled code missed"
            assert counts.tolist() == wanted, f"{name}, {state}"

    # Tensors made in inference mode (vLLM's runner), and ones another compiled
    # caller marked dynamic (vLLM's own rank count does), still hit.
    with torch.inference_mode():
        made_there = logprobs.clone()
        counts = compiled_ranks.compiled_count(made_there, token_logprobs.clone())
    assert counts is not None and counts.tolist() == eager_ranks(logprobs, token_logprobs)
    marked = logprobs.clone()
    torch._dynamo.mark_dynamic(marked, 0)
    counts = compiled_ranks.compiled_count(marked, token_logprobs)
    assert counts is not None and counts.tolist() == eager_ranks(logprobs, token_logprobs)


def test_the_process_exits_cleanly_while_a_compile_runs() -> None:
    script = textwrap.dedent(
        f"""
        import time, torch
        import reference_speedups
        from reference.logprobs_ops import pessimistic_ranks
        from reference_speedups import compiled_count as compiled_ranks, hot_build

        def slow(graph, inputs):
            time.sleep(60)
            return graph.forward

        compiled_ranks._BACKEND = slow
        hot_build.allow()
        reference_speedups._EXT = None
        logprobs = torch.randn({ROWS}, {VOCAB})
        for _ in range(compiled_ranks.HOT_CALLS):
            pessimistic_ranks(logprobs, logprobs[:, :1].contiguous())
        deadline = time.monotonic() + 60
        while compiled_ranks.states()["cpu"] != "compiling" and time.monotonic() < deadline:
            time.sleep(0.05)
        print(compiled_ranks.states()["cpu"])
        """
    )
    started = time.monotonic()
    done = subprocess.run(
        [sys.executable, "-c", script], cwd=ROOT, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "compiling"
    assert "Traceback" not in done.stderr
    assert time.monotonic() - started < 55, "exit waited for the compile"
