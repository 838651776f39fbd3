"""Are the ``conformance``, ``reference`` and ``reports`` Python imports this distribution's?

Other distributions on the package index own those names too, and Python finds a
module by name: a file of the user's (``./conformance.py``, which ``python -m`` finds
first because it puts the working directory first on the import path), another
distribution's package found first on the path, or the files of two distributions that
pip installed into one folder (it overwrites another distribution's files silently)
would each make the suite fail obscurely, or run someone else's code.  Where one of
them stands in the way, the suite says so in one line naming the path and the other
distribution, and exits 4 (the code of bad input), before it imports anything of its own.

It runs at the start of ``python -m conformance``, ``python -m reports``, the console
command ``vllm-outputs-suite`` and the pytest plugin's conformance runs, and, through
``vllm_outputs_suite.pth``, as the interpreter starts ``python -m conformance`` or
``python -m reports``: a ``./conformance.py`` runs instead of the suite's ``__main__``,
so only a hook that runs before it can name it.  This module imports nothing of the
suite and nothing outside the standard library, and reads only a few small files.

A package is the suite's when its ``__init__.py`` carries the line
``__distribution__ = "vllm-outputs-suite"``, wherever it is installed: a wheel, an
editable install, a checkout on ``PYTHONPATH``.  Beside a wheel's ``RECORD`` the
package's folder holds no file the wheel did not install, and its ``__init__.py`` is the
one it installed.
"""

from __future__ import annotations

import csv
import functools
import importlib.machinery
import importlib.util
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import importlib.metadata

DISTRIBUTION = "vllm-outputs-suite"
#: The line every package of the suite has in its ``__init__.py``.
MARKER = f'__distribution__ = "{DISTRIBUTION}"'
#: The console command, which no working directory shadows.
COMMAND = "vllm-outputs-suite"
#: pytest's code for a usage error, the suite's for bad input.
USAGE_ERROR = 4

#: The names each of the suite's top-level packages needs, its own first (``reports``
#: imports neither of the others, DESIGN section 2, but reads the conformance report's
#: schema from the ``conformance`` package's folder).
IMPORTS = {
    "conformance": ("conformance", "reference"),
    "reference": ("reference",),
    "reports": ("reports", "conformance"),
}
#: Arguments only the suite's commands take: ``python -m conformance --backend ...`` is
#: a run of the suite, whatever module that name finds (tests keep them the suite's).
SUITE_ARGUMENTS = {
    "conformance": frozenset(
        {"--backend", "--revision", "--bump-to", "--xfails", "--write-xfails",
         "--list-revisions", "--vllm-release", "--vllm-outputs", "--report-dir",
         "--neighbours", "--isolate", "--check-timeout", "crater"}
    ),
    # The regression gate's --compare too; not --results, --commit, --out and the like,
    # words another project's ``python -m reports`` may take.
    "reports": frozenset({"--conformance", "--crater", "--conformance-diff", "--compare"}),
}  # fmt: skip

#: Folder entries that no wheel's RECORD lists.
_NOT_RECORDED = {"__pycache__"}


def problem(names: tuple[str, ...], working_dir: str | None = None) -> str | None:
    """One line saying which of ``names`` Python imports from somewhere not this
    distribution's, else ``None``.

    ``working_dir``: a folder searched before the import path, as ``python -m`` will
    once the interpreter has started (at start-up it is not on ``sys.path`` yet).  A
    name Python cannot find at all is no concern of this check: the import says so.
    """
    for name in names:
        found = _found(name, working_dir)
        if found is None:
            continue
        line = _not_ours(name, found) or _mixed(name, found)
        if line is not None:
            return line
    return None


def broken_install(name: str) -> str | None:
    """The one line of :func:`problem` for ``name`` only where the suite installed that
    package itself (another distribution's files mixed in, or what an uninstall left of
    it), else ``None``: a project's own package of that name is not the suite's to name."""
    found = _found(name, None)
    if found is None or _record(found.folder, name) is None:
        return None
    return problem((name,))


def exit_if_foreign(command: str) -> None:
    """The check of ``python -m COMMAND``: the one line on stderr and exit 4."""
    line = problem(IMPORTS[command])
    if line is not None:
        print(line, file=sys.stderr)
        raise SystemExit(USAGE_ERROR)


def at_startup() -> None:
    """``vllm_outputs_suite.pth``'s hook: ``python -m conformance`` (or ``reports``, or
    one of their modules) stopped with the one line where the module that would run is
    not the suite's.  Anything unexpected leaves the interpreter alone: the suite's
    ``__main__`` checks again."""
    global _started
    if _started:  # some virtualenvs list one site-packages folder twice
        return
    _started = True
    try:
        module, argv = module_and_arguments(getattr(sys, "orig_argv", []))
        top = (module or "").partition(".")[0]
        if top not in IMPORTS:
            return
        # python -m puts the working directory first, unless -P or -I said not to.
        safe = getattr(sys.flags, "safe_path", False) or sys.flags.isolated
        working_dir = None if safe else os.getcwd()
        found = _found(top, working_dir)
        if found is None:
            return
        if not _would_fail(found, top, module or "") and not _asks_for_suite(top, argv):
            # Another project's own ``python -m conformance`` (a module of its own, another
            # distribution's package that runs) is its business: only what would fail
            # anyway, or a command line of the suite's, is named here.
            return
        line = problem(IMPORTS[top], working_dir=working_dir)

    except Exception:
        return
    if line is not None:
        sys.stderr.write(line + "\n")
        sys.stderr.flush()
        # Nothing has started yet; a SystemExit here would be a fatal error of site.
        os._exit(USAGE_ERROR)


_started = False


def _asks_for_suite(top: str, argv: list[str]) -> bool:
    """Whether the module's arguments hold an option only the suite's command takes, or
    start with its subcommand (``crater``; elsewhere it may be another option's value)."""
    wanted = SUITE_ARGUMENTS.get(top, frozenset())
    options = {a.partition("=")[0] for a in argv if a.startswith("-")}
    return bool(options & wanted) or (bool(argv) and argv[0] in wanted)


def run_module(argv: list[str]) -> str | None:
    """The module ``python ... -m MODULE ...`` runs, from the interpreter's own command
    line (``sys.orig_argv``), else ``None``."""
    return module_and_arguments(argv)[0]


def module_and_arguments(argv: list[str]) -> tuple[str | None, list[str]]:
    """:func:`run_module`, and the arguments the module is given."""
    args = iter(argv[1:])
    for arg in args:
        if arg == "--check-hash-based-pycs":
            next(args, None)
            continue
        if arg.startswith("--"):
            continue
        if arg == "-" or not arg.startswith("-"):
            return None, []  # a script or stdin: what follows are its arguments
        flags = arg[1:]  # one-letter flags may be run together: -Bm conformance
        for index, flag in enumerate(flags):
            rest = flags[index + 1 :]
            if flag == "m":
                return rest or next(args, None), list(args)
            if flag == "c":
                return None, []
            if flag in "WX":
                if not rest:
                    next(args, None)
                break
    return None, []


class _Found:
    """Where Python imports a name from: a package's folder or a module's file."""

    def __init__(self, path: Path, package: bool, namespace: bool = False) -> None:
        self.path = path
        self.package = package
        self.namespace = namespace

    @property
    def folder(self) -> Path:
        """The folder on the import path that holds it."""
        return self.path.parent

    @property
    def init(self) -> Path | None:
        return self.path / "__init__.py" if self.package and not self.namespace else None


def _found(name: str, working_dir: str | None) -> _Found | None:
    module = sys.modules.get(name)
    spec = getattr(module, "__spec__", None) if module is not None else None
    if spec is None and working_dir is not None:
        spec = importlib.machinery.PathFinder.find_spec(name, [working_dir])
        if spec is not None and spec.origin in (None, "namespace"):
            spec = None  # a folder without __init__.py gives way to a package later on
    if spec is None:
        try:
            spec = importlib.util.find_spec(name)
        except (ImportError, ValueError):
            return None
    if spec is None:
        return None
    if spec.origin in (None, "namespace"):
        locations = list(spec.submodule_search_locations or [])
        if not locations:
            return None
        return _Found(Path(locations[0]).resolve(), package=True, namespace=True)
    origin = Path(spec.origin).resolve()
    if spec.submodule_search_locations is not None:
        return _Found(origin.parent, package=True)
    return _Found(origin, package=False)


def _is_ours(found: _Found) -> bool:
    init = found.init
    if init is None:
        return False
    try:
        with open(init, encoding="utf-8", errors="replace") as file:
            return any(line.rstrip() == MARKER for line in file)
    except OSError:
        return False


def _not_ours(name: str, found: _Found) -> str | None:
    if _is_ours(found):
        return None
    what = (
        "folder without __init__.py"
        if found.namespace
        else "package"
        if found.package
        else "module"
    )
    owners = _owners(name, found.folder)
    others = [owner for owner in owners if not _is_suite(owner)]
    if others and len(others) < len(owners):
        return _mixed_line(name, found, others)
    if owners and not others:
        # The suite installed it, yet its __init__.py is not the suite's (another
        # distribution that shared it was uninstalled and took it along, say).
        return _reinstall_line(name, found, None)
    if others:
        whose = f"the {what} of the distribution {_names(others)}"
        entry = _pythonpath_entry(found.folder)
        fix = (
            f"take {entry} off PYTHONPATH, which puts it first"
            if entry is not None
            else f"install the suite into an environment without {_names(others, versions=False)}"
        )
    elif found.folder == Path.cwd().resolve() and (
        ran := run_module(getattr(sys, "orig_argv", []))
    ):
        whose = f"a {what} in the working directory (python -m looks there first)"
        # ``python -m reports`` is ``vllm-outputs-suite report``.
        command = f"{COMMAND} report" if ran.split(".")[0] == "reports" else COMMAND
        fix = f"rename it, or run the suite's command {command}, which no folder shadows"
    elif found.folder == Path.cwd().resolve():
        # Not python -m: PYTHONPATH, or pytest's rootdir beside a conftest.py, put it there.
        whose = f"a {what} in the working directory, which is on the import path"
        fix = "rename it, or take the working directory off the import path (PYTHONPATH)"
    else:
        whose = f"a {what} no installed distribution owns"
        fix = f"take {found.folder} off the import path (PYTHONPATH), or rename the {what}"
    return f"ERROR: the {name} Python imports is {found.path}, {whose}, not {DISTRIBUTION}'s: {fix}"


def _pythonpath_entry(folder: Path) -> str | None:
    """The ``PYTHONPATH`` entry that puts ``folder`` (on the import path) there, or None."""
    for entry in os.environ.get("PYTHONPATH", "").split(os.pathsep):
        try:
            if entry and Path(entry).resolve() == folder.resolve():
                return entry
        except OSError:
            continue
    return None


def _mixed(name: str, found: _Found) -> str | None:
    """Files of another distribution in the suite's own folder, or the suite's
    ``__init__.py`` replaced: what a wheel's ``RECORD`` says it installed is not what
    is there."""
    init = found.init
    if init is None:
        return None
    record = _record(found.folder, name)
    if record is None:
        return None  # not installed from a wheel here: an editable install, a checkout
    entries, init_hash = record
    try:
        present = {entry for entry in os.listdir(found.path) if entry not in _NOT_RECORDED}
    except OSError:
        return None
    strangers = sorted(present - entries)
    if not strangers and (init_hash is None or _sha256(init) == init_hash):
        # Every file is the suite's, yet another distribution may have installed files of
        # the same names first: the suite's wheel overwrote them, and uninstalling either
        # takes the other's away.
        sharing = _recorded_by_others(found.folder, name)
        return _mixed_line(name, found, sharing) if sharing else None
    others = [owner for owner in _owners(name, found.folder) if not _is_suite(owner)]
    if others:
        return _mixed_line(name, found, others)
    return _reinstall_line(name, found, f"{name}/{strangers[0]}" if strangers else None)


def _reinstall_line(name: str, found: _Found, stranger: str | None) -> str:
    what = (
        f"which holds {stranger}, a file {DISTRIBUTION} did not install"
        if stranger
        else f"whose __init__.py is not the one {DISTRIBUTION} installed"
    )
    return (
        f"ERROR: the {name} Python imports is {found.path}, {what}: reinstall the suite "
        f"({reinstall_command(found.folder)})"
    )


def reinstall_command(folder: Path) -> str:
    """The pip command that puts the suite's files back as it installed them, from where
    it was installed (PEP 610's ``direct_url.json``: the suite is on no index).
    ``--no-deps`` keeps the environment's torch as it is."""
    import json
    from urllib.parse import unquote, urlparse

    source = "<the suite's checkout or wheel>"
    editable = False
    for info in folder.glob("vllm_outputs_suite-*.dist-info"):
        try:
            direct = json.loads((info / "direct_url.json").read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue
        url = urlparse(str(direct.get("url", "")))
        if url.scheme == "file":
            source = unquote(url.path)
            editable = bool(direct.get("dir_info", {}).get("editable"))
        elif url.scheme:
            source = str(direct["url"])
        break
    return f"pip install --force-reinstall --no-deps {'-e ' if editable else ''}{source}"


def _mixed_line(name: str, found: _Found, others: list[tuple[str, str]]) -> str:
    return (
        f"ERROR: the {name} Python imports is {found.path}, where files of the distribution "
        f"{_names(others)} are mixed with {DISTRIBUTION}'s (both install a package "
        f"named {name}): install the suite into an environment without "
        f"{_names(others, versions=False)}"
    )


def _record(folder: Path, name: str) -> tuple[set[str], str | None] | None:
    """The entries of ``folder/name`` the suite's wheel installed (its RECORD) and the
    sha256 of ``name/__init__.py`` there; ``None`` where no wheel of the suite was
    installed into ``folder``."""
    entries = set()
    init_hash = None
    for row in _suite_record(folder):
        parts = row[0].split("/") if row else []
        if len(parts) < 2 or parts[0] != name:
            continue
        entries.add(parts[1])
        if parts[1:] == ["__init__.py"] and len(row) > 1 and row[1].startswith("sha256="):
            init_hash = row[1].removeprefix("sha256=")
    return (entries - _NOT_RECORDED, init_hash) if entries else None


@functools.cache
def _suite_record(folder: Path) -> tuple[list[str], ...]:
    """The rows of the RECORD of the suite's wheel installed into ``folder``, if any."""
    for info in folder.glob("vllm_outputs_suite-*.dist-info"):
        try:
            with open(info / "RECORD", encoding="utf-8", newline="") as file:
                return tuple(csv.reader(file))
        except OSError:
            continue
    return ()


def _recorded_by_others(folder: Path, name: str) -> list[tuple[str, str]]:
    """(name, version) of the other distributions whose wheel's RECORD in ``folder``
    lists a file of the package ``name`` (read as bytes: a few milliseconds)."""
    wanted = f"{name}/".encode()
    found = []
    for info in folder.glob("*.dist-info"):
        if info.name.startswith("vllm_outputs_suite-"):
            continue
        try:
            data = (info / "RECORD").read_bytes()
        except OSError:
            continue
        if data.startswith(wanted) or b"\n" + wanted in data:
            distribution, _, version = info.name.removesuffix(".dist-info").partition("-")
            found.append((distribution.replace("_", "-"), version or "?"))
    return sorted(found)


def _sha256(path: Path) -> str | None:
    import base64
    import hashlib

    try:
        digest = hashlib.sha256(path.read_bytes()).digest()
    except OSError:
        return None
    return base64.urlsafe_b64encode(digest).rstrip(b"=").decode()


def _owners(name: str, folder: Path) -> list[tuple[str, str]]:
    """(name, version) of every distribution installed into ``folder`` that owns the
    top-level name ``name``.  Read only once something is amiss: it reads every
    distribution's metadata in that folder."""
    import importlib.metadata

    owners = []
    try:
        found = list(importlib.metadata.distributions(path=[str(folder)]))
    except Exception:
        return []
    for dist in found:
        try:
            if _owns(dist, name):
                owners.append((dist.metadata["Name"] or "?", dist.version or "?"))
        except Exception:
            continue
    return sorted(set(owners))


def _owns(dist: importlib.metadata.Distribution, name: str) -> bool:
    top_level = dist.read_text("top_level.txt")
    if top_level is not None and name in top_level.split():
        return True
    files = dist.files or []
    return any(
        file.parts and (file.parts[0] == name or file.parts[0] == f"{name}.py") for file in files
    )


def _is_suite(owner: tuple[str, str]) -> bool:
    return owner[0].lower().replace("_", "-").replace(".", "-") == DISTRIBUTION


def _names(owners: list[tuple[str, str]], versions: bool = True) -> str:
    return " and ".join(f"{name} {version}" if versions else name for name, version in owners)


def _would_fail(found: _Found, name: str, module: str) -> bool:
    """Whether ``python -m MODULE`` of what was found as ``NAME`` fails whatever the suite
    does: ``NAME`` itself (a submodule, ``python -m reports.cli``, is its package's own
    business), a package without ``__main__``, or a module that imports its own name
    (``from conformance import Backend`` in a plugin's ``conformance.py``: a circular
    import; a package's ``from reports.cli import main`` is an import of its own part)."""
    import re

    if module != name:
        return False
    if found.package:
        return not (found.path / "__main__.py").is_file()
    pattern = re.compile(rf"^\s*(from\s+{name}(\s|\.)|import\s+{name}\b)", re.MULTILINE)
    try:
        return pattern.search(found.path.read_text(encoding="utf-8", errors="replace")) is not None
    except OSError:
        return False
