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
``shared/spec/vllm-releases/``) or any ``outputs.py`` with the version given.
"""

from __future__ import annotations

import importlib.util
import re
import sys
import types
from importlib.machinery import SourceFileLoader
from pathlib import Path

#: vLLM modules a release's outputs.py imports at run time, and what stands in for them.
#: (module, name, source of the stub); PIN_MEMORY is what vLLM computes without CUDA.
STUBS: tuple[tuple[str, str, str], ...] = (
    ("vllm.v1.core.sched.output", "SchedulerOutput", "class SchedulerOutput:\n    pass\n"),
    ("vllm.compilation.cuda_graph", "CUDAGraphStat", "class CUDAGraphStat:\n    pass\n"),
    ("vllm.utils.torch_utils", "PIN_MEMORY", "PIN_MEMORY = False\n"),
)

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
                f"{path}: no files named outputs-<version>.py.txt in this folder; point to the "
                "folder of release texts (e.g. shared/spec/vllm-releases) or to one file"
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


def write_stub_tree(outputs_text: Path, version: str, folder: Path) -> Path:
    """Lay out an importable ``vllm`` package of this release in ``folder``; return ``folder``."""
    package = folder / "vllm"
    modules = {"vllm.v1.outputs": outputs_text.read_text(encoding="utf-8")}
    modules.update({module: source for module, _, source in STUBS})
    for module, source in modules.items():
        parts = module.split(".")
        for depth in range(1, len(parts)):
            init = folder.joinpath(*parts[:depth], "__init__.py")
            init.parent.mkdir(parents=True, exist_ok=True)
            if not init.exists():
                init.write_text(_package_source(parts[:depth], version), encoding="utf-8")
        folder.joinpath(*parts[:-1], parts[-1] + ".py").write_text(source, encoding="utf-8")
    info = folder / f"vllm-{version}.dist-info"
    info.mkdir(exist_ok=True)
    (info / "METADATA").write_text(
        f"Metadata-Version: 2.1\nName: vllm\nVersion: {version}\n", encoding="utf-8"
    )
    (info / "top_level.txt").write_text("vllm\n", encoding="utf-8")
    assert package.is_dir()
    return folder


def _package_source(parts: list[str], version: str) -> str:
    note = '"""Stand-in for vLLM (only what outputs.py imports), made by vllm-outputs-suite."""\n'
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
