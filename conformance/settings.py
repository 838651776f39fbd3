"""Every environment variable the project reads, said once.

The table of options and environment variables (docs/settings.md) is generated from
this and from the command line's own parser (:mod:`conformance.cli.settings_table`); a
test fails when a variable the code reads is missing here, or the table is stale.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Variable:
    """One environment variable: its name, what reads it, and what it does."""

    name: str
    read_by: str
    what: str
    #: Set by the project itself for its own processes; listed, never set by hand.
    internal: bool = False


CONFORMANCE = "`python -m conformance`"
SUITE = "`nox -s suite`"
BENCHMARKS = "the benchmarks"
PLUGIN = "the example plugin's nox"

ENVIRONMENT: tuple[Variable, ...] = (
    Variable("OUTPUTS_BACKEND", f"{CONFORMANCE}, {SUITE}", "the backend, when `--backend` is not given (default `reference`)"),
    Variable("OUTPUTS_VLLM_RELEASES", CONFORMANCE, "a folder of vLLM texts read instead of the cache (nothing is fetched into it)"),
    Variable("XDG_CACHE_HOME", CONFORMANCE, "where the suite's cache lives (`~/.cache` by default): fetched vLLM texts and plugins, and the `vllm` trees laid out from the texts (`trees/`, one per distinct text, removed after 30 days unused)"),
    Variable("HYPOTHESIS_STORAGE_DIRECTORY", CONFORMANCE, "where Hypothesis keeps its files (default: the suite's cache, never the working directory)"),
    Variable("OUTPUTS_MACHINE", f"{CONFORMANCE}, {BENCHMARKS}", "the machine's name in the reports (default: the host name)"),
    Variable("OUTPUTS_RUN_ID", CONFORMANCE, "the run's id in the report (default: made per run)"),
    Variable("OUTPUTS_SUITE_OUT", SUITE, "where the report folder is written (default `suite-out/`)"),
    Variable("OUTPUTS_SUITE_CONSTRAINTS", "`nox`", "the constraints file every install uses (default the CPU torch one)"),
    Variable("OUTPUTS_RELEASES_OUT", "`nox -s bench-releases`", "where its report folder is written"),
    Variable("OUTPUTS_CRATER_OUT", "`nox -s crater`", "where its report folder is written (default `crater-out/`)"),
    Variable("OUTPUTS_BENCH_CRATER", "the benchmarks", "`1`: the crater's benchmark runs (it reads the package index; `nox -s bench-crater` sets it)"),
    Variable("OUTPUTS_BENCH_DEVICES", f"{BENCHMARKS}, {SUITE}", "the devices benchmarked (comma-separated; default every device present)"),
    Variable("OUTPUTS_BENCH_BACKENDS", BENCHMARKS, "the backends benchmarked (comma-separated; default `$OUTPUTS_BACKEND`)"),
    Variable("OUTPUTS_BENCH_INSTALL", "`nox -s bench`, `suite`", "a path or requirement installed first (your plugin)"),
    Variable("OUTPUTS_BENCH_SHAPES", BENCHMARKS, "`representative`: one shape per benchmark, the targets' whole grid"),
    Variable("OUTPUTS_BENCH_QUICK", BENCHMARKS, "`1`: one representative shape for every benchmark"),
    Variable("OUTPUTS_VLLM_COMPILE_BACKEND", BENCHMARKS, "the `torch.compile` backend vLLM's release code gets (its platforms': `inductor`; default `eager`, which `benchmarks/device_check.sh` sets to `inductor` for its benchmarks)"),
    Variable("OUTPUTS_BENCH_ROUNDS", BENCHMARKS, "asv rounds of each benchmark (default 2; `benchmarks/device_check.sh`'s `PLAN=limits`: 1)"),
    Variable("OUTPUTS_BENCH_DRY_RUN", BENCHMARKS, "`1`: each benchmark called once, nothing timed (the smoke run)"),
    Variable("OUTPUTS_LINK_GBPS", BENCHMARKS, "the device link's rated GB/s (default PCIe Gen5 x16)"),
    Variable("OUTPUTS_MEMORY_GBPS", BENCHMARKS, "the device memory's rated GB/s (default: known by the GPU's name)"),
    Variable("OUTPUTS_REFERENCE_COMPILE", f"the reference, {BENCHMARKS}", "`1`: the reference may build its compiled tier (the benchmarks do); `0`: never"),
    Variable("OUTPUTS_REFERENCE_SPEEDUPS", "the reference", "`0`: the reference runs its Python paths, not its C extension or Triton kernels"),
    Variable("OUTPUTS_BENCH_WARM_PEER", BENCHMARKS, "`0`: vLLM's texts are not loaded when the module is imported"),
    Variable("OUTPUTS_SUITE", PLUGIN, "the suite's requirement (default `vllm-outputs-suite[reports]`)"),
    Variable("OUTPUTS_REVISION", PLUGIN, "the revision judged (default what the backend declares)"),
    Variable("OUTPUTS_CONFORMANCE_OUT", PLUGIN, "where its report folder is written"),
    Variable("OUTPUTS_SUITE_REQUIRE_TEXTS", "`nox -s tests`", "`1`: a test that needs vLLM's texts fails instead of skipping (CI)"),
    Variable("OUTPUTS_SUITE_PIP_ARGS", PLUGIN, "pip arguments of its installs (default `-c constraints.txt --extra-index-url https://download.pytorch.org/whl/cpu`: torch a CPU build)"),
    Variable("OUTPUTS_SUITE_SELF_RUN", CONFORMANCE, "marks the run judging vLLM's own text", internal=True),
    Variable("OUTPUTS_SUITE_BUMP_SIDE", CONFORMANCE, "marks the run judging a bump's pin", internal=True),
    Variable("CONFORMANCE_COMMAND_LINE", CONFORMANCE, "messages name `python -m conformance`'s options", internal=True),
    Variable("CONFORMANCE_SUPERVISOR_DIR", CONFORMANCE, "where a supervised run keeps its journal", internal=True),
)  # fmt: skip


def variable(name: str) -> Variable | None:
    return next((v for v in ENVIRONMENT if v.name == name), None)
