"""A plugin's own producers run, not only read: ``crater --run-producers`` (opt-in).

Reading a plugin is safe by construction; running its producer executes third-party
code from the package index, so it happens only when asked, each producer in a worker
process of its own with a time limit, and the record names every module executed.
In the worker, the pin's vLLM is laid out from its texts (as ``--vllm-release`` lays
it out) first on the import path, the plugin module that defines the producer and the
modules of its own package it imports are loaded from their text, and every other
import that is not there (its hardware runtime, its packages' ``__init__``, the rest of
vLLM) is a stub.  Producers are
found by what they are (:mod:`conformance.releases.discovery`, as vLLM's own are):

* an **async output** class is built from each step with
  :func:`conformance.constructed_like_vllm` and judged by the suite's async output
  checks at the pin (the race check included) on the simulated device runtime;
* a **gathering** in torch that vLLM's runner could call, ``(logprobs, num_logprobs,
  token_ids)``, a function or a sampler's method, is judged by the gathering checks
  at the pin, on CPU.

What cannot be run says why in one phrase: written in JAX, MLX or Triton, a
constructor or parameters that take what vLLM's runner never hands over, a module that
does not load with its hardware stubbed.
"""

from __future__ import annotations

import ast
import importlib.abc
import importlib.machinery
import json
import os
import re
import subprocess
import sys
import tempfile
import types
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import cast

from conformance.crater.sources import PluginSource
from conformance.crater.syntax import decorated
from conformance.crater.uses import Reading, Use
from conformance.crater.verdicts import Finding
from conformance.crater.vllm_names import ASYNC_BASE, JUDGED_MODULES, VLLM_ASYNC_OUTPUTS
from conformance.crater.world import module_name
from conformance.oracle.stand_ins import OWN_RAISE
from conformance.run.failure_lines import shortened

#: A class's run may take this long (its steps on the simulated runtime, the race).
RUN_TIMEOUT_S = 240.0
#: The checks each kind of producer is judged by.
CHECKS = {
    "async-output": "conformance.checks.test_producer_async_output",
    "gathering": "conformance.checks.test_producer_gather_logprobs",
}
#: The checks of a pooling step's async output, and the key that names other checks.
POOLING_CHECKS = "conformance.checks.test_producer_pooling_output"
CHECKS_KEY = "checks"
#: Never stand-ins: the suite itself and what it runs on.
_NEVER_STUBBED = frozenset({"conformance", "reference", "reports", "torch", "numpy", "pytest"})
#: Frameworks a producer may be written in that the simulated runtime does not run.
_NOT_TORCH = {"jax": "JAX", "mlx": "MLX"}
#: A gathering whose module writes kernels: they run on the plugin's device only.
_TRITON = re.compile(r"^\s*(import triton|from triton\b|from \S*triton\S* import)", re.MULTILINE)
#: The second parameter of a gathering vLLM's runner could call: how many top logprobs.
_COUNT = re.compile(r"num|logprobs|top_?k|^k$|^n$")


@dataclass
class ProducerRuns:
    """What running a plugin's async outputs found."""

    findings: list[Finding] = field(default_factory=list)
    not_run: list[str] = field(default_factory=list)
    ran: list[str] = field(default_factory=list)  #: classes judged on the simulated runtime
    executed: list[str] = field(default_factory=list)  #: the plugin's modules run


def async_output_classes(reading: Reading) -> list[Use]:
    """The plugin's concrete async output classes (its subclasses of vLLM's)."""
    return [
        u
        for u in reading.uses
        if u.kind == "subclass"
        and not u.abstract
        and (u.target == ASYNC_BASE or u.module in VLLM_ASYNC_OUTPUTS)
    ]


@dataclass(frozen=True)
class PluginProducer:
    """One producer of the plugin's to run."""

    kind: str  #: ``async-output`` or ``gathering``
    file: str
    line: int
    name: str  #: ``NPUAsyncOutput``, ``npu_gather``, ``NPUSampler.gather_logprobs``

    @property
    def where(self) -> str:
        return f"{self.name} ({self.file}:{self.line})"

    @property
    def judged_member(self) -> str:
        """What a finding names: the async output's ``get_output``, the gathering."""
        return f"{self.name}.get_output" if self.kind == "async-output" else self.name


def gatherings(source: PluginSource) -> list[PluginProducer]:
    """The plugin's gatherings, found by what they are (as vLLM's own are found)."""
    from conformance.releases.discovery import find_producers

    found: list[tuple[PluginProducer, ast.stmt | None]] = []
    for producer in find_producers(source.files):
        if producer.kind == "gathering":
            text = source.files[producer.path]
            definition = _definition(ast.parse(text).body, producer.name)
            line = definition.lineno if definition is not None else 1
            found.append(
                (PluginProducer("gathering", producer.path, line, producer.name), definition)
            )
    return [p for p, definition in found if not _calls_a_sibling(p, definition, found)]


def _calls_a_sibling(
    producer: PluginProducer,
    definition: ast.stmt | None,
    found: list[tuple[PluginProducer, ast.stmt | None]],
) -> bool:
    """A sampler's ``forward`` that gathers by calling its class's own gathering
    (``self.gather_logprobs(...)``): the one gathering, found twice."""
    owner, _, _ = producer.name.rpartition(".")
    siblings = {
        other.name.rpartition(".")[2]
        for other, _ in found
        if other.file == producer.file
        and other.name != producer.name
        and other.name.rpartition(".")[0] == owner
    }
    if not owner or not siblings or definition is None:
        return False
    return any(
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and node.func.attr in siblings
        and isinstance(node.func.value, ast.Name)
        and node.func.value.id in ("self", "cls", owner.rpartition(".")[2])
        for node in ast.walk(definition)
    )


def run_producers(
    source: PluginSource, reading: Reading, pin: str, timeout: float = RUN_TIMEOUT_S
) -> ProducerRuns:
    """Each concrete async output class and each gathering of ``source`` judged at
    ``pin``."""
    from conformance.releases.fetch import FetchError, release_outputs

    runs = ProducerRuns()
    try:
        outputs_text = release_outputs(pin)
    except FetchError as error:
        runs.not_run.append(f"the pin's texts: {error}")
        return runs
    producers = [
        PluginProducer("async-output", u.file, u.line, u.member)
        for u in async_output_classes(reading)
    ] + gatherings(source)
    for producer in producers:
        text = source.files.get(producer.file, "")
        # Its language first: a JAX gathering is not run whatever its parameters.
        language = _language_of(text, producer.name)
        if language is None and producer.kind == "gathering" and _TRITON.search(text):
            language = "Triton"
        if language is not None:
            runs.not_run.append(f"{producer.where}: not run, written in {language}")
            continue
        unfit = _unfit_gathering(text, producer.name) if producer.kind == "gathering" else None
        if unfit is not None:
            runs.not_run.append(f"{producer.where}: not run, {unfit}")
            continue
        outcome = _run_in_worker(producer, source, pin, outputs_text, timeout)
        judged_at, why = pin, ""
        if "refit" in outcome:
            judged_at = outcome["refit"]
            why = f" (its constructor takes what vLLM {judged_at}'s runner hands over, not {pin}'s)"
            try:
                outcome = _run_in_worker(
                    producer, source, judged_at, release_outputs(judged_at), timeout, fitted=True
                )
            except FetchError as error:
                outcome = {"not_run": f"the texts of {judged_at}: {error}"}
        _take(runs, producer, outcome, f"run at {judged_at}{why}", text)
    return runs


def _take(runs: ProducerRuns, producer: PluginProducer, outcome: dict, how: str, text: str) -> None:
    """What one producer's run found, into ``runs`` (``text``: the producer's module)."""
    if "not_run" in outcome:
        runs.not_run.append(f"{producer.where}: not run, {outcome['not_run']}")
        return
    runs.executed += [m for m in outcome.get("executed", []) if m not in runs.executed]
    failed: dict[str, str] = outcome.get("failed", {})
    raised = {
        b: m
        for b, m in failed.items()
        if _raised(m) and not _never_set(m, producer, text) and OWN_RAISE not in m
    }
    if raised:
        # An exception may come from a stand-in of the plugin's hardware or imports:
        # the plugin's own fault or not, it is not judged, unless its own line raised it
        # with no stand-in at hand (an index past a list of its own).
        first = next(iter(raised.values()))
        runs.not_run.append(
            f"{producer.where}: {how}, {len(raised)} behaviours not judged: its run "
            f"raised where stand-ins replace its hardware and imports ({_raise_of(first)})"
        )
    # A result holding a stand-in (a helper of its own package, stubbed) is the
    # stand-in's, not the plugin's: not judged either.
    handed = {b: m for b, m in failed.items() if b not in raised and _STAND_IN in m}
    if handed:
        runs.not_run.append(
            f"{producer.where}: {how}, {len(handed)} behaviours not judged: its result "
            f"holds a stand-in for its hardware or imports ({next(iter(handed.values()))[:120]})"
        )
    raised |= handed
    runtime = "the simulated runtime" if producer.kind == "async-output" else "CPU"
    inconclusive: dict[str, str] = {
        b: m for b, m in outcome.get("inconclusive", {}).items() if b not in failed
    }
    if inconclusive:
        # Judged neither way: a device would tell (a pass would say more than was seen).
        runs.not_run.append(
            f"{producer.where}: {how}, {len(inconclusive)} behaviours inconclusive on "
            f"{runtime} ({next(iter(inconclusive.values()))[:160]})"
        )
    passed = not failed and not inconclusive
    runs.ran.append(f"{producer.where}: {how} on {runtime}" + (", passed" if passed else ""))
    for behaviour, message in failed.items():
        if behaviour not in raised:
            runs.findings.append(
                Finding(
                    "run-fails",
                    producer.file,
                    producer.line,
                    producer.judged_member,
                    f"{behaviour}: {message}",
                )
            )


def _run_in_worker(
    producer: PluginProducer,
    source: PluginSource,
    pin: str,
    outputs_text: Path,
    timeout: float,
    fitted: bool = False,
) -> dict:
    with tempfile.TemporaryDirectory(prefix="crater-run-") as scratch:
        folder = Path(scratch)
        module = module_name(producer.file)
        # The plugin's modules, each where its name puts it: those the producer's module
        # imports of its own package are run from their text, not stood in for.
        if not module:
            return {"not_run": f"{producer.file} is no module of a package"}
        modules: dict[str, str] = {}
        # The producer's own file first: another file of the same module name (an
        # ``src/`` copy, ``a.py`` beside ``a/__init__.py``) never replaces its text.
        ordered = sorted(source.files.items(), key=lambda item: item[0] != producer.file)
        for path, text in ordered:
            name = module_name(path)
            if not name or name in modules or (name != module and path.endswith("__init__.py")):
                continue
            placed = folder / "plugin" / (name.replace(".", "/") + ".py")
            placed.parent.mkdir(parents=True, exist_ok=True)
            placed.write_text(text, encoding="utf-8")
            modules[name] = str(placed)
        target = Path(modules[module])
        job = {
            "module": module,
            "modules": modules,
            "file": str(target),
            "kind": producer.kind,
            "name": producer.name,
            "pin": pin,
            "outputs_text": str(outputs_text),
            "report": str(folder / "report.json"),
            "fitted": fitted,
        }

        # A file, not an argument: a large plugin's module list passes the limit of one.
        job_file = folder / "job.json"
        job_file.write_text(json.dumps(job), encoding="utf-8")
        environment = {**os.environ, "PYTHONDONTWRITEBYTECODE": "1"}
        environment.pop("PYTEST_ADDOPTS", None)
        try:
            done = subprocess.run(
                [sys.executable, "-m", "conformance.crater.producer_run", str(job_file)],
                cwd=folder,
                env=environment,
                capture_output=True,
                text=True,
                timeout=timeout,
            )
        except subprocess.TimeoutExpired:
            return {"not_run": f"its run passed the time limit of {timeout:.0f} s"}
        answer = done.stdout.strip().splitlines()
        try:
            result: dict = json.loads(answer[-1]) if answer else {}
        except ValueError:
            result = {}
        if not result:
            last = [line for line in done.stderr.splitlines() if line.strip()]
            return {
                "not_run": f"its worker ended without a verdict ({last[-1] if last else done.returncode})"
            }
        return result


# --- the worker -----------------------------------------------------------------------


def _worker(job: dict) -> dict:

    import pytest

    from conformance.oracle import failing
    from conformance.releases.runs import installed_as_vllm

    failing.stand_in_type = _STAND_IN
    with installed_as_vllm(job["pin"], Path(job["outputs_text"])):
        if job["kind"] == "async-output":
            _as_on_the_device()
        text = Path(job["file"]).read_text(encoding="utf-8")
        own = _OwnModuleFinder(job["module"], job.get("modules", {}))
        sys.meta_path.append(own)
        sys.meta_path.append(_StubFinder(job["module"], text, frozenset(own.modules)))
        module = type(sys)(job["module"])
        module.__file__ = job["file"]
        sys.modules[job["module"]] = module
        problem = _load_definition(module, text, job["name"].split(".")[0])
        if problem is not None:
            return {"not_run": problem}

        from vllm.v1 import outputs  # the pin's, laid out above

        from conformance import Backend

        made = (_async_output if job["kind"] == "async-output" else _gathering)(module, job)
        if not isinstance(made, dict):
            return {made[0]: made[1]}
        checks = made.pop(CHECKS_KEY, CHECKS[job["kind"]])
        backend = Backend(
            name=f"crater:{job['name']}",
            module=outputs,
            spec_revision=job["pin"],
            **made,
        )
        holder = type(sys)("crater_backend")
        holder.BACKEND = backend  # type: ignore[attr-defined]
        sys.modules["crater_backend"] = holder
        code = pytest.main(
            [
                "-q",
                "-p",
                "no:cacheprovider",
                "-W",
                "ignore::pytest.PytestAssertRewriteWarning",
                "--pyargs",
                checks,
                "--conformance-backend=crater_backend:BACKEND",
                f"--conformance-revision={job['pin']}",
                f"--conformance-report={job['report']}",
            ]
        )
        executed = [job["module"], *own.loaded]
    report_path = Path(job["report"])
    if not report_path.is_file():
        return {"not_run": f"the suite gave no report (pytest exit {int(code)})"}
    report = json.loads(report_path.read_text(encoding="utf-8"))
    inconclusive: dict[str, str] = {}
    for record in report.get("tests", []):
        if record.get("skip_cause") == "inconclusive":
            # Its middle left out where long: what failed and the fix both stay.
            message = shortened((str(record.get("message") or "").splitlines() or [""])[0], 400)
            inconclusive.setdefault(str(record.get("behaviour")), _LAID_OUT.sub("", message))
    return {"failed": _causes(report), "inconclusive": inconclusive, "executed": executed}


#: A line of the conformance run's failures: its behaviour, and what it says.
_FAIL_LINE = re.compile(r"FAIL \[(?P<behaviour>[^\]]+)\] \d+ check\(s\)[^:]*: (?P<said>.*)")
_FOLLOWERS_LINE = re.compile(r"\s+and (?P<count>\d+) more check\(s\)")


def _causes(report: dict) -> dict[str, str]:
    """``{behaviour: what it says}`` of each failing behaviour of a conformance report, as
    the run's own lines say them: one line a cause, the checks following from it counted
    (``and 9 more check(s) that follow from it``), not said again."""
    from conformance.run.failure_lines import failures_by_behaviour

    fields = ("nodeid", "behaviour", "outcome", "message", "device", "producer")
    records = [
        types.SimpleNamespace(**{name: record.get(name) for name in fields})
        for record in report.get("tests", [])
    ]
    found: dict[str, str] = {}
    behaviour = None
    for line in failures_by_behaviour(records):
        # the plugin's files are laid out under plugin/: name them as it ships them
        line = _LAID_OUT.sub("", line)
        if (failing := _FAIL_LINE.match(line)) is not None:
            behaviour = failing["behaviour"]
            found[behaviour] = failing["said"]
        elif (following := _FOLLOWERS_LINE.match(line)) is not None and behaviour in found:
            found[behaviour] += f" (and {following['count']} more check(s) that follow from it)"
    return found


def _as_on_the_device() -> None:
    """vLLM's ``PIN_MEMORY`` as vLLM computes it on a machine with the device: True.
    An async output copies with ``non_blocking=PIN_MEMORY`` (vllm-omni's): with the stub's
    False (what vLLM computes without one) its copies would block, and the race check
    would judge copies the hardware never makes. The simulated runtime pins host memory."""
    try:
        torch_utils = importlib.import_module("vllm.utils.torch_utils")
    except ImportError:
        return  # a release whose texts import no PIN_MEMORY
    torch_utils.PIN_MEMORY = True  # type: ignore[attr-defined]


def _async_output(module: types.ModuleType, job: dict) -> dict | tuple[str, str]:
    """The Backend's fields judging the async output class ``job`` names, or why not
    (``("not_run", phrase)``, or ``("refit", release)`` for an older vLLM's copy)."""
    from conformance import AsyncOutputProducer, constructed_like_vllm
    from conformance.backends.vllm_producers import async_output_kind

    cls = getattr(module, job["name"])
    try:
        make = constructed_like_vllm(cls)
    except TypeError as error:
        return ("not_run", _not_fitting(error))
    if not job.get("fitted"):
        fits = _release_fitting(cls, job["pin"])
        if fits is not None:
            return ("refit", fits)
    device = _device_of(Path(job["file"]).read_text(encoding="utf-8"))
    if async_output_kind(cls) == "pooling":
        # A pooling step's output (its constructor takes pooler outputs): the pooling
        # checks judge it, on pooling steps.
        pooling = AsyncOutputProducer(
            f"{make.runner}-pooling",
            make,
            kind="pooling",
            judged_class=f"{job['module']}.{job['name']}",
            runner=make.runner,
        )
        return {"devices": (device,), "other_async_outputs": (pooling,), CHECKS_KEY: POOLING_CHECKS}
    return {"devices": (device,), "make_async_output": make}


def _gathering(module: types.ModuleType, job: dict) -> dict | tuple[str, str]:
    """The Backend's fields judging the gathering ``job`` names, on CPU."""
    from conformance.backends.vllm_producers import gathering_method

    owner_name, _, member = job["name"].rpartition(".")
    if owner_name:
        return {
            "devices": ("cpu",),
            "gather_logprobs": gathering_method(getattr(module, owner_name), member),
        }
    return {"devices": ("cpu",), "gather_logprobs": getattr(module, member)}


def _unfit_gathering(text: str, name: str) -> str | None:
    """Why vLLM's runner could not call the gathering ``name`` of ``text`` as it calls
    its own, with three arguments in order (scores, how many top logprobs, the sampled
    ids); None where it could."""
    found = _definition(ast.parse(text).body, name)
    if isinstance(found, ast.AsyncFunctionDef):
        return "an async def: vLLM's runner never awaits a gathering"
    if not isinstance(found, ast.FunctionDef):
        return f"{name} is not defined at the top of its module or its class"
    arguments = found.args
    parameters = [a.arg for a in (*arguments.posonlyargs, *arguments.args)]
    if "." in name and not decorated(found, "staticmethod"):
        parameters = parameters[1:]  # self, or a classmethod's cls
    required = len(parameters) - len(arguments.defaults)
    takes_three = len(parameters) >= 3 or arguments.vararg is not None
    if (
        not takes_three
        or required > 3
        or (len(parameters) > 1 and not _COUNT.search(parameters[1]))
    ):
        return (
            f"its parameters ({', '.join(parameters)}) are not what vLLM's runner passes a "
            "gathering (logprobs, num_logprobs, token_ids)"
        )
    return None


class _OwnModuleFinder:
    """The plugin's own modules (not its packages' ``__init__``) run from their text, as
    its module defining the producer is: a pure torch helper it imports computes what
    it computes.  Each top-level statement runs on its own (one importing its hardware
    fails alone), and a name none of them defined is a stand-in."""

    def __init__(self, own: str, modules: dict[str, str]) -> None:
        self.own = own
        # Only its own package's: a file of another top-level name could shadow a library.
        top = own.split(".")[0]
        self.modules = {n: f for n, f in modules.items() if n.split(".")[0] == top}
        self.loaded: list[str] = []  #: what ran, for the record

    def find_spec(
        self, name: str, path: object, target: object = None
    ) -> importlib.machinery.ModuleSpec | None:
        if name == self.own or name not in self.modules:
            return None
        return importlib.machinery.ModuleSpec(
            name, _OwnModuleLoader(self.modules[name], self.loaded), origin=self.modules[name]
        )


class _OwnModuleLoader(importlib.abc.Loader):
    def __init__(self, file: str, loaded: list[str]) -> None:
        self.file = file
        self.loaded = loaded

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> None:
        return None

    def exec_module(self, module: types.ModuleType) -> None:
        module.__file__ = self.file
        tree = ast.parse(Path(self.file).read_text(encoding="utf-8"))
        self.loaded.append(module.__name__)
        # What needs its hardware or set-up fails when used, not here.
        _run_each_statement(tree, module.__dict__, self.file)
        module.__dict__["__getattr__"] = _stand_ins(module.__name__)


class _StubFinder:
    """Any module the loaded plugin imports and this environment lacks is a stub (its
    hardware runtime, its own package's other modules, vLLM beyond the pin's texts).

    Only those: an optional dependency that an installed library tries (sympy tries
    ``flint``) stays missing, as the library expects; a stand-in would answer its
    questions with nonsense."""

    def __init__(self, own: str, text: str, own_modules: frozenset[str] = frozenset()) -> None:
        self.own_modules = own_modules

        self.own = own
        self.stubbed = {own.split(".")[0], "vllm"}
        for node in ast.walk(ast.parse(text)):
            if isinstance(node, ast.Import):
                self.stubbed |= {alias.name.split(".")[0] for alias in node.names}
            elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
                self.stubbed.add(node.module.split(".")[0])
        self.stubbed -= _NEVER_STUBBED | set(sys.stdlib_module_names)

    def find_spec(
        self, name: str, path: object, target: object = None
    ) -> importlib.machinery.ModuleSpec | None:
        if name == self.own or name.split(".")[0] not in self.stubbed:
            # What this platform's Python lacks (``_winapi``) stays missing too: the
            # standard library chooses its paths by trying those imports.
            return None

        return importlib.machinery.ModuleSpec(name, _StubLoader(self.own_modules), is_package=True)


class _StubLoader(importlib.abc.Loader):
    """Makes the stand-in module (:func:`conformance.releases.texts.stub_module_source`).
    A stood-in package hands out its own modules that run from their text
    (``from vllm_ascend import envs``): asked for such a name, it imports it."""

    def __init__(self, own_modules: frozenset[str] = frozenset()) -> None:
        self.own_modules = own_modules

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> None:
        return None

    def exec_module(self, module: types.ModuleType) -> None:
        from conformance.releases.texts import stub_module_source

        name = module.__name__
        namespace = module.__dict__
        module.__path__ = []
        exec(stub_module_source(name), namespace)
        answer = namespace["__getattr__"]
        made: dict[str, type] = {}

        def stand_in(attribute: str) -> object:
            if f"{name}.{attribute}" in self.own_modules:
                import importlib

                return importlib.import_module(f"{name}.{attribute}")
            # A class name may be subclassed or used in annotations: a class that takes
            # anything; any other name the stub object that absorbs what is done with it.
            if attribute[:1].isupper() and not attribute.isupper():
                if attribute not in made:
                    made[attribute] = type(attribute, (), {"__init__": _takes_anything})
                return made[attribute]
            return answer(attribute)

        namespace["__getattr__"] = stand_in


def _takes_anything(self: object, *args: object, **kwargs: object) -> None:
    """The constructor of a stand-in class."""


def main() -> int:
    job = json.loads(Path(sys.argv[1]).read_text(encoding="utf-8"))
    try:
        result = _worker(job)
    except Exception as error:
        result = {"not_run": f"the worker failed ({type(error).__name__}: {str(error)[:160]})"}
    sys.stdout.write("\n" + json.dumps(result) + "\n")
    sys.stdout.flush()
    return 0


def _language_of(text: str, name: str) -> str | None:
    """``JAX`` or ``MLX`` where the producer ``name`` itself uses a name its module binds
    to that framework (``jnp.take``); None for torch. A torch gathering in a module that
    also imports JAX is torch."""
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError):
        return None
    frameworks: dict[str, str] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                top = alias.name.split(".")[0]
                if top in _NOT_TORCH:
                    frameworks[alias.asname or top] = _NOT_TORCH[top]
        elif isinstance(node, ast.ImportFrom) and not node.level and node.module:
            top = node.module.split(".")[0]
            if top in _NOT_TORCH:
                for alias in node.names:
                    frameworks[alias.asname or alias.name] = _NOT_TORCH[top]
    found = _definition(tree.body, name)
    used = {n.id for n in ast.walk(found) if isinstance(n, ast.Name)} if found else set()
    return next((frameworks[n] for n in sorted(used) if n in frameworks), None)


def _definition(body: list[ast.stmt], qualified: str) -> ast.stmt | None:
    """The statement of ``body`` (a module's) defining ``name`` or ``Class.method``."""
    found: ast.stmt | None = None
    for part in qualified.split("."):
        found = next((n for n in body if getattr(n, "name", None) == part), None)
        body = getattr(found, "body", [])
    return found


def _load_definition(module: object, text: str, name: str) -> str | None:
    """Run the module's top-level statements one by one, each on its own (an import of
    hardware that fails, module-level set-up that needs the device: passed over), then
    make every global name the class or function ``name`` uses and nothing defined a
    stub.  None when it stands; else why it could not be made, in one phrase."""
    import builtins

    namespace = module.__dict__
    filename = namespace["__file__"]
    tree = ast.parse(text)
    target = _definition(tree.body, name)
    if not isinstance(target, (ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
        return f"{name} is not defined at the top of its module"
    error = _run_each_statement(tree, namespace, filename).get(id(target))
    if error is not None:
        first = (str(error).splitlines() or [""])[0][:160]
        return f"it does not define with its hardware stubbed ({type(error).__name__}: {first})"
    stand_in = _stand_ins(namespace["__name__"])
    for inner in ast.walk(target):
        if (
            isinstance(inner, ast.Name)
            and inner.id not in namespace
            and not hasattr(builtins, inner.id)
        ):
            namespace[inner.id] = stand_in(inner.id)
    return None


def _run_each_statement(
    tree: ast.Module, namespace: dict[str, object], filename: str
) -> dict[int, BaseException]:
    """Run a module's top-level statements one by one, each on its own (an import of
    hardware that is absent, set-up that needs the device, a ``sys.exit()``: it alone
    fails); what each that failed raised, by the statement's id."""
    failed: dict[int, BaseException] = {}
    for node in tree.body:
        error = _run_statement(node, namespace, filename)
        if (
            isinstance(error, ImportError)
            and isinstance(node, ast.ImportFrom)
            and str(error).startswith("cannot import name")  # the module ran; a name is not
        ):
            # ``from vllm... import A, B, C`` where the pin's module is laid out in part
            # (its producer classes, not what else it binds): each name that imports
            # is bound, so a class resting on A still defines.
            for alias in node.names:
                _run_statement(
                    ast.ImportFrom(node.module, [alias], node.level), namespace, filename
                )
        if error is not None:
            failed[id(node)] = error
    return failed


def _run_statement(
    node: ast.stmt, namespace: dict[str, object], filename: str
) -> BaseException | None:
    module = ast.fix_missing_locations(ast.Module([node], type_ignores=[]))
    try:
        exec(compile(module, filename, "exec"), namespace)
    except KeyboardInterrupt:
        raise
    except BaseException as error:
        return error
    return None


def _stand_ins(module: str) -> Callable[[str], object]:
    """What answers a name ``module`` does not define: its stand-in (a stub object)."""
    from conformance.releases.texts import stub_module_source

    stubs: dict[str, object] = {}
    exec(stub_module_source(module), stubs)
    return cast("Callable[[str], object]", stubs["__getattr__"])


def _release_fitting(cls: type, pin: str) -> str | None:
    """A first-runner-shaped class whose constructor lacks what the pin's runner hands
    over (``logprobs_tensors``, ``vocab_size``: a copy of an older vLLM's class) is
    judged at the newest release up to the pin whose runner hands over just what it
    takes: its own runner keeps that release's contract.  None: the pin fits."""
    import inspect

    from packaging.version import Version

    from reference.revisions import canonical_name, known_releases, revision

    try:
        named = set(inspect.signature(cls).parameters)
    except (TypeError, ValueError):
        return None
    pinned = revision(canonical_name(pin)).async_output.runner_arguments
    if set(pinned) <= named or not named & set(pinned):
        return None
    for release in sorted(known_releases(), key=Version, reverse=True):
        if Version(release) > Version(pin):
            continue
        arguments = set(revision(canonical_name(release)).async_output.runner_arguments)
        if arguments <= named:
            return release
    return None


#: How the suite's checks name a value of a stand-in's (:func:`stub_module_source`).
_STAND_IN = "_Stub"
#: ``raised AttributeError: ...`` and ``raised RuntimeError at file.py:12 (`code`): ...``
_RAISED = re.compile(r"\braised (\w+\b.*)$")


#: Where a worker lays the plugin's modules out, as its messages name them.
_LAID_OUT = re.compile(r"(?<=[ (`'])plugin/")
#: ``raised AttributeError ...: 'Class' object has no attribute 'name'``
_MISSING_ATTRIBUTE = re.compile(r"raised AttributeError\b.*'(\w+)' object has no attribute '(\w+)'")


def _raised(message: str) -> bool:
    return _RAISED.search(message) is not None


def _never_set(message: str, producer: PluginProducer, text: str) -> bool:
    """Whether a raise is the producer reading an attribute of its own that nothing can
    set (``self._event.synchronize()`` where ``self._event = ...`` is commented out):
    that fails on any hardware, stand-ins or not.  Only where the class and its bases in
    its module set it nowhere, rest on vLLM's classes alone (a stand-in base, or one of
    another module, might set it) and hand ``self`` to no call but ``super()``'s (a
    stand-in handed the instance might have set it)."""
    found = _MISSING_ATTRIBUTE.search(message)
    if found is None or found[1] != producer.name.rpartition(".")[2]:
        return False
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError):
        return False
    classes = {n.name: n for n in tree.body if isinstance(n, ast.ClassDef)}
    # vLLM's modules whose texts the run has: any other of vLLM's is a stand-in too
    from_vllm = {
        alias.asname or alias.name
        for node in tree.body
        if isinstance(node, ast.ImportFrom) and node.module in JUDGED_MODULES
        for alias in node.names
    }
    chain, todo = [], [found[1]]
    while todo:
        cls = classes.get(todo.pop())
        if cls is None or cls in chain:
            continue
        chain.append(cls)
        for base in cls.bases:
            name = base.id if isinstance(base, ast.Name) else None
            if name in classes:
                todo.append(name)
            elif name not in from_vllm:
                return False
    if not chain:
        return False
    for node in (n for cls in chain for n in ast.walk(cls)):
        if (
            isinstance(node, ast.Attribute)
            and node.attr == found[2]
            and isinstance(node.ctx, (ast.Store, ast.Del))
        ):
            return False
        if isinstance(node, ast.Attribute) and node.attr == "__dict__":
            return False  # self.__dict__.update(...) sets any attribute
        if isinstance(node, ast.Call) and not _calls_super(node):
            handed = [*node.args, *(k.value for k in node.keywords)]
            if any(isinstance(a, ast.Name) and a.id == "self" for a in handed):
                return False  # setattr(self, ...), vars(self), a stand-in given self
            if isinstance(node.func, ast.Name) and node.func.id == "setattr":
                return False
    return True


def _calls_super(node: ast.Call) -> bool:
    """``super().m(...)`` or ``super(C, self).m(...)``."""
    return (
        isinstance(node.func, ast.Attribute)
        and isinstance(node.func.value, ast.Call)
        and isinstance(node.func.value.func, ast.Name)
        and node.func.value.func.id == "super"
    ) or (isinstance(node.func, ast.Name) and node.func.id == "super")


def _raise_of(message: str) -> str:
    found = _RAISED.search(message)
    return found[1][:240] if found else message[:240]


def _not_fitting(error: TypeError) -> str:
    """``constructed_like_vllm``'s refusal as one phrase: the parameters it lacks."""
    found = re.search(r"parameter\(s\) (.+?) are not what", str(error))
    if found:
        return f"its constructor takes what vLLM's runner never hands over ({found[1]})"
    return f"its constructor does not fit vLLM's runner ({str(error)[:120]})"


def _device_of(text: str) -> str:
    """The device runtime the class's module drives (``torch.npu``...; ``cuda`` else):
    the one the suite simulates for it."""
    found = re.findall(r"\btorch\.(npu|xpu|hpu|mlu|musa|cuda)\b", text)
    return max(set(found), key=found.count) if found else "cuda"


if __name__ == "__main__":
    sys.exit(main())
