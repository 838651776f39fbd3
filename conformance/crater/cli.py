"""``python -m conformance crater TARGET [--plugins NAME_OR_PATH ...] [--report PATH]``.

Every known plugin's newest release (or the plugins named) judged at its own pin and at
``TARGET`` (anything ``--revision`` takes that has vLLM's text: a release, a text, a
tree, a wheel), read from its published code, never installed, never imported.
Exit 0: no plugin has a break at the target that its pin does not have; 1: one does; 4:
bad input (an unknown plugin, an unreachable index, a target that names no vLLM), one line.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import TYPE_CHECKING, NoReturn

from vllm_outputs_suite_plugin import given

if TYPE_CHECKING:
    from conformance.crater.records import PluginVerdict
    from conformance.crater.sources import PluginSource, PluginSourceError

USAGE_ERROR = 4
#: Plugins fetched at once (network-bound; the judging itself is one process's work).
FETCH_THREADS = 4


class _Parser(argparse.ArgumentParser):
    """A usage error is one line and exit 4, as for ``python -m conformance``."""

    def error(self, message: str) -> NoReturn:
        self.exit(USAGE_ERROR, f"ERROR: {message} ({self.prog} --help)\n")


#: How the command is named in its usage and messages; the console command names itself.
PROG = "python -m conformance crater"


def build_parser(prog: str = PROG) -> argparse.ArgumentParser:
    parser = _Parser(
        prog=prog,
        description="Judge every known vLLM plugin's published code (or the plugins named) "
        "at its own pin and at TARGET, without installing or running it.",
    )
    parser.add_argument(
        "target",
        metavar="TARGET",
        help="the vLLM judged: a release (0.34.0), or a path to vLLM's outputs.py, a checkout "
        "(main, a pull request's branch) or a wheel",
    )
    parser.add_argument(
        "--plugins",
        nargs="+",
        action="extend",
        type=given,  # "$PLUGIN_DIR" unset would judge the working directory
        metavar="NAME_OR_PATH",
        help="the plugins judged instead of every known one: a distribution (NAME for its "
        "newest release, NAME==VERSION), a wheel, an sdist or a checkout folder; may be "
        "given more than once",
    )
    parser.add_argument(
        "--report", type=given, metavar="PATH", help="write the crater-report/1 JSON"
    )
    parser.add_argument(
        "--run-producers",
        action="store_true",
        help="also run each plugin's torch producers at its pin: async output classes on the "
        "simulated device, gatherings on CPU (this executes the plugin's code, from the "
        "package index: each producer in a worker process with a time limit, its hardware "
        "imports stubbed; the report names every module executed)",
    )
    parser.add_argument(
        "--list-plugins", action="store_true", help="print the known plugins, then exit"
    )
    return parser


def main(argv: Sequence[str], prog: str = PROG) -> int:
    from conformance.crater.known import known, known_plugins
    from conformance.crater.records import judged_plugin, unknown_plugin
    from conformance.crater.report import (
        progress_line,
        report_data,
        terminal_lines,
        write_report,
    )
    from conformance.crater.sources import (
        INDEX_FIX,
        PluginSource,
        PluginSourceError,
        plugin_source,
        project_of,
    )
    from conformance.crater.vllm_side import VllmViewError, view_of
    from conformance.releases.remote_wheel import INDEX_UNREACHABLE

    if "--list-plugins" in argv:
        listed = known_plugins()
        width = max(len(plugin.name) for plugin in listed) + 2
        for plugin in listed:
            print(f"{plugin.name:<{width}}{plugin.device}")
        return 0
    args = build_parser(prog).parse_args(argv)
    if args.report:
        from conformance.crater.schema import SCHEMA
        from conformance.report.writer import unwritable

        # Before the plugins are fetched and judged, not after.
        problem = unwritable(Path(args.report), SCHEMA)
        if problem is not None:
            print(f"ERROR: --report {args.report}: {problem}", file=sys.stderr)
            return USAGE_ERROR
    started = time.perf_counter()
    try:
        target = view_of(args.target)
    except VllmViewError as error:
        print(f"ERROR: crater target: {error}", file=sys.stderr)
        return USAGE_ERROR
    if target.origin == "text" and target.modules is None:
        print(
            f"crater: {target.label} is a lone outputs.py: which modules vLLM has and its "
            "producers are not known, so imports of its other modules and calls of its "
            "producers are not judged; give a checkout or a wheel to judge them",
            file=sys.stderr,
        )
    named = list(dict.fromkeys(args.plugins or [p.name for p in known_plugins()]))

    for spec in named:
        folder = Path(spec).expanduser()
        if folder.is_dir() and project_of(folder) != folder:
            print(
                f"crater: {spec} is a package of the project {project_of(folder)}: that "
                "project is judged (its pin, and its imports of its own package)",
                file=sys.stderr,
            )

    def fetched(spec: str) -> PluginSource | PluginSourceError:
        try:
            return plugin_source(spec)
        except PluginSourceError as error:
            return error

    with ThreadPoolExecutor(FETCH_THREADS) as pool:
        sources = list(pool.map(fetched, named))
    named, sources = _once_each(named, sources)
    for spec, source in zip(named, sources, strict=True):
        if isinstance(source, PluginSourceError) and source.bad_input and args.plugins:
            said = str(source)  # most messages name the plugin already (a path as read)
            names_it = said.startswith((spec, str(Path(spec)), Path(spec).name))
            print(f"ERROR: --plugins {said if names_it else f'{spec}: {said}'}", file=sys.stderr)
            return USAGE_ERROR
    if all(isinstance(s, PluginSourceError) and s.bad_input for s in sources):
        said = str(sources[0])
        fix = "" if INDEX_FIX in said else f"; {INDEX_FIX}"
        print(f"ERROR: {said}{fix}", file=sys.stderr)
        return USAGE_ERROR
    verdicts: list[PluginVerdict] = []
    for spec, source in zip(named, sources, strict=True):
        # A known plugin keeps its rule however it is given: by name, or as its wheel,
        # its sdist or a checkout (the name its metadata declares).
        known_as = known(spec) or (known(source.name) if isinstance(source, PluginSource) else None)
        rule = known_as.pin if known_as is not None else None
        if isinstance(source, PluginSourceError):
            name, _, version = spec.partition("==")
            verdict = unknown_plugin(name, version or "?", target, f"cannot be read: {source}")
        else:
            try:
                verdict = judged_plugin(source, target, rule, run=args.run_producers)

            except RecursionError:
                verdict = unknown_plugin(
                    source.name,
                    source.version,
                    target,
                    "its code nests too deep to read",
                )
        print(progress_line(verdict), file=sys.stderr, flush=True)
        verdicts.append(verdict)
    print("\n".join(terminal_lines(target.label, verdicts)))
    if args.report:
        write_report(Path(args.report), report_data(target.label, verdicts))
    print(f"crater: done in {time.perf_counter() - started:.1f} s", file=sys.stderr)
    if any(v.regressed for v in verdicts):
        return 1
    unreached = _pins_unreached(verdicts)
    if unreached:
        # An offline job must not pass for having judged nothing at the pins.
        print(
            f"ERROR: crater: {INDEX_UNREACHABLE} for vLLM {', '.join(unreached)}'s texts, so "
            "plugins pinned there were not judged at their pin; check your network or pip's "
            "index settings, or set OUTPUTS_VLLM_RELEASES to a folder of vLLM's texts",
            file=sys.stderr,
        )
        return USAGE_ERROR
    return 0


def _once_each(
    named: list[str], sources: list[PluginSource | PluginSourceError]
) -> tuple[list[str], list[PluginSource | PluginSourceError]]:
    """One row per plugin release: ``vllm-spyre`` and ``vllm-spyre==1.10.0`` (or its
    wheel) name the same code.  A checkout edited since is other code, and is kept."""
    from conformance.crater.sources import PluginSource

    kept: list[tuple[str, PluginSource | PluginSourceError]] = []
    for spec, source in zip(named, sources, strict=True):
        same = any(
            isinstance(source, PluginSource)
            and isinstance(other, PluginSource)
            and (other.name, other.version, other.files)
            == (source.name, source.version, source.files)
            for _, other in kept
        )
        if not same:
            kept.append((spec, source))
    return [spec for spec, _ in kept], [source for _, source in kept]


def _pins_unreached(verdicts: Sequence[PluginVerdict]) -> list[str]:
    """The pins whose texts no index answered for."""
    from packaging.version import Version

    from conformance.crater.records import PIN
    from conformance.releases.remote_wheel import INDEX_UNREACHABLE

    found = {
        r.vllm
        for v in verdicts
        for r in v.records
        if r.role == PIN and any(INDEX_UNREACHABLE in why for why in r.not_judged)
    }
    return sorted(found, key=Version)
