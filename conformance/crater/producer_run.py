"""A plugin's own async output run, not only read: ``crater --run-producers`` (opt-in).

Reading a plugin is safe by construction; running its producer executes third-party
code from the package index, so it happens only when asked, each class in a worker
process of its own with a time limit, and the record names every module executed.
In the worker, the pin's vLLM is laid out from its texts (as ``--vllm-release`` lays
it out) first on the import path, the plugin module that defines the class is loaded
from its text, and every other import it makes that is not there (its hardware
runtime, its own package's other modules, the rest of vLLM) is a stub.  The class is
then built from each step with :func:`conformance.constructed_like_vllm` and judged by
the suite's async output checks at the pin (the race check included) on the
simulated device runtime.  What cannot be run says why in one phrase: written in
JAX or MLX, a constructor that takes what vLLM's runner never hands over, a module
that does not load with its hardware stubbed.
"""

from __future__ import annotations

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
from conformance.crater.uses import ASYNC_BASE, VLLM_ASYNC_OUTPUTS, Reading, Use, module_name
from conformance.crater.verdicts import Finding

#: A class's run may take this long (its steps on the simulated runtime, the race).
RUN_TIMEOUT_S = 240.0
#: The checks a plugin's async output is judged by.
CHECKS = "conformance.checks.test_producer_async_output"
#: Never stand-ins: the suite itself and what it runs on.
_NEVER_STUBBED = frozenset({"conformance", "reference", "reports", "torch", "numpy", "pytest"})
_NOT_TORCH = {
    "JAX": re.compile(r"^\s*(import jax|from jax\b)", re.MULTILINE),
    "MLX": re.compile(r"^\s*(import mlx|from mlx\b)", re.MULTILINE),
}


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


def run_producers(
    source: PluginSource, reading: Reading, pin: str, timeout: float = RUN_TIMEOUT_S
) -> ProducerRuns:
    """Each concrete async output class of ``source`` judged at ``pin``."""
    from conformance.releases.fetch import FetchError, release_outputs

    runs = ProducerRuns()
    try:
        outputs_text = release_outputs(pin)
    except FetchError as error:
        runs.not_run.append(f"the pin's texts: {error}")
        return runs
    for use in async_output_classes(reading):
        text = source.files.get(use.file, "")
        where = f"{use.member} ({use.file}:{use.line})"
        language = next((n for n, p in _NOT_TORCH.items() if p.search(text)), None)
        if language is not None:
            runs.not_run.append(f"{where}: not run, written in {language}")
            continue
        outcome = _run_in_worker(use, text, pin, outputs_text, timeout)
        judged_at, why = pin, ""
        if "refit" in outcome:
            judged_at = outcome["refit"]
            why = f" (its constructor takes what vLLM {judged_at}'s runner hands over, not {pin}'s)"
            try:
                outcome = _run_in_worker(
                    use, text, judged_at, release_outputs(judged_at), timeout, fitted=True
                )
            except FetchError as error:
                outcome = {"not_run": f"the texts of {judged_at}: {error}"}
        if "not_run" in outcome:
            runs.not_run.append(f"{where}: not run, {outcome['not_run']}")
            continue
        runs.executed += [m for m in outcome.get("executed", []) if m not in runs.executed]
        failed: dict[str, str] = outcome.get("failed", {})
        raised = {b: m for b, m in failed.items() if _raised(m)}
        if raised:
            # An exception may come from a stand-in of the plugin's hardware or imports:
            # the plugin's own fault or not, it is not judged.
            first = next(iter(raised.values()))
            runs.not_run.append(
                f"{where}: run at {judged_at}, {len(raised)} behaviours not judged: its run "
                f"raised where stand-ins replace its hardware and imports ({_raise_of(first)})"
            )
        runs.ran.append(f"{where}: run at {judged_at}{why} on the simulated runtime")
        for behaviour, message in failed.items():
            if behaviour in raised:
                continue

            runs.findings.append(
                Finding(
                    "run-fails",
                    use.file,
                    use.line,
                    f"{use.member}.get_output",
                    f"{behaviour}: {message}",
                )
            )
    return runs


def _run_in_worker(
    use: Use, text: str, pin: str, outputs_text: Path, timeout: float, fitted: bool = False
) -> dict:
    with tempfile.TemporaryDirectory(prefix="crater-run-") as scratch:
        folder = Path(scratch)
        module = module_name(use.file)
        target = folder / "plugin" / (module.replace(".", "/") + ".py")
        target.parent.mkdir(parents=True)
        target.write_text(text, encoding="utf-8")
        job = {
            "module": module,
            "file": str(target),
            "class": use.member,
            "pin": pin,
            "outputs_text": str(outputs_text),
            "report": str(folder / "report.json"),
            "fitted": fitted,
        }

        environment = {**os.environ, "PYTHONDONTWRITEBYTECODE": "1"}
        environment.pop("PYTEST_ADDOPTS", None)
        try:
            done = subprocess.run(
                [sys.executable, "-m", "conformance.crater.producer_run", json.dumps(job)],
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

    from conformance.releases.runs import installed_as_vllm

    with installed_as_vllm(job["pin"], Path(job["outputs_text"])):
        finder = _StubFinder(job["module"])
        sys.meta_path.append(finder)
        module = type(sys)(job["module"])
        module.__file__ = job["file"]
        sys.modules[job["module"]] = module
        problem = _load_class(module, Path(job["file"]).read_text(encoding="utf-8"), job["class"])
        if problem is not None:
            return {"not_run": problem}

        from vllm.v1 import outputs  # the pin's, laid out above

        from conformance import Backend, constructed_like_vllm

        cls = getattr(module, job["class"])
        try:
            make = constructed_like_vllm(cls)
        except TypeError as error:
            return {"not_run": _not_fitting(error)}

        if not job.get("fitted"):
            fits = _release_fitting(cls, job["pin"])
            if fits is not None:
                return {"refit": fits}

        backend = Backend(
            name=f"crater:{job['class']}",
            module=outputs,
            devices=(_device_of(Path(job["file"]).read_text(encoding="utf-8")),),
            spec_revision=job["pin"],
            make_async_output=make,
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
                CHECKS,
                "--conformance-backend=crater_backend:BACKEND",
                f"--conformance-revision={job['pin']}",
                f"--conformance-report={job['report']}",
            ]
        )
        executed = [job["module"]]
    report_path = Path(job["report"])
    if not report_path.is_file():
        return {"not_run": f"the suite gave no report (pytest exit {int(code)})"}
    report = json.loads(report_path.read_text(encoding="utf-8"))
    failed: dict[str, str] = {}
    for record in report.get("tests", []):
        if record.get("outcome") in ("failed", "error"):
            message = (str(record.get("message") or "").splitlines() or [""])[0][:200]
            failed.setdefault(str(record.get("behaviour")), message)
    return {"failed": failed, "executed": executed}


class _StubFinder:
    """Any module the loaded plugin imports and this environment lacks is a stub (its
    hardware runtime, its own package's other modules, vLLM beyond the pin's texts)."""

    def __init__(self, own: str) -> None:
        self.own = own

    def find_spec(
        self, name: str, path: object, target: object = None
    ) -> importlib.machinery.ModuleSpec | None:
        top = name.split(".")[0]
        if name == self.own or top in _NEVER_STUBBED or top in sys.stdlib_module_names:
            # What this platform's Python lacks (``_winapi``) stays missing: the standard
            # library chooses its paths by trying those imports.
            return None

        return importlib.machinery.ModuleSpec(name, _StubLoader(), is_package=True)


class _StubLoader(importlib.abc.Loader):
    """Makes the stand-in module (:func:`conformance.releases.texts.stub_module_source`)."""

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
    job = json.loads(sys.argv[1])
    try:
        result = _worker(job)
    except Exception as error:
        result = {"not_run": f"the worker failed ({type(error).__name__}: {str(error)[:160]})"}
    sys.stdout.write("\n" + json.dumps(result) + "\n")
    sys.stdout.flush()
    return 0


def _load_class(module: object, text: str, name: str) -> str | None:
    """Run the module's top-level statements one by one, each on its own (an import of
    hardware that fails, module-level set-up that needs the device: passed over), then
    make every global name the class uses and nothing defined a stub.  None when the
    class stands; else why it could not be made, in one phrase."""
    import ast
    import builtins

    namespace = module.__dict__
    filename = namespace["__file__"]
    tree = ast.parse(text)
    target = next((n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == name), None)
    if target is None:
        return f"its class {name} is not at the top of its module"
    for node in tree.body:
        code = compile(ast.Module([node], type_ignores=[]), filename, "exec")
        try:
            exec(code, namespace)
        except Exception as error:
            if node is target:
                first = (str(error).splitlines() or [""])[0][:160]
                return f"its class does not define with its hardware stubbed ({type(error).__name__}: {first})"
    from conformance.releases.texts import stub_module_source

    stubs: dict[str, object] = {}
    exec(stub_module_source(namespace["__name__"]), stubs)
    for inner in ast.walk(target):
        if (
            isinstance(inner, ast.Name)
            and inner.id not in namespace
            and not hasattr(builtins, inner.id)
        ):
            namespace[inner.id] = cast("Callable[[str], object]", stubs["__getattr__"])(inner.id)
    return None


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


#: ``raised AttributeError: ...`` and ``raised RuntimeError at file.py:12 (`code`): ...``
_RAISED = re.compile(r"\braised (\w+\b.*)$")


def _raised(message: str) -> bool:
    return _RAISED.search(message) is not None


def _raise_of(message: str) -> str:
    found = _RAISED.search(message)
    return found[1][:120] if found else message[:120]


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
