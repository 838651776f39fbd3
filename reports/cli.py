"""``python -m reports``: asv (and conformance) results -> a report folder.

Exit codes: 0 report written; 1 report written and ``--compare`` found a
regression or ``--conformance-diff`` something newly failing (so CI can gate on it);
2 bad benchmark input, 4 a bad conformance report (as ``python -m conformance``'s
usage errors); nothing written on bad input.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import NoReturn

import pandas as pd

from reports import conformance_matrix, content, invocation, plots, render_html, render_markdown
from reports.asv_loader import BASE_COLUMNS, holds_results, load_results_folders
from reports.compare import Comparison, compare
from reports.conformance_diff import ConformanceDiff, diff
from reports.conformance_loader import load_conformance
from reports.conformance_matrix import Duplicate
from reports.document import Report
from reports.errors import ConformanceInputError, ReportInputError
from reports.output import atomic_folder
from reports.sections.changes import comparison_section
from reports.sections.conformance_changes import conformance_changes_section
from reports.selection import latest_per_machine, one_environment, select
from reports.vllm_changes_loader import load_vllm_changes

EXIT_OK = 0
EXIT_REGRESSION = 1
#: ``--conformance-diff`` found a behaviour failing in NEW that did not in BASE.
EXIT_NEWLY_FAILING = 1
EXIT_BAD_INPUT = 2
#: A conformance report that is missing, corrupt, not one, or of an unknown schema.
EXIT_BAD_REPORT = 4

DEFAULT_OUT = "reports-out"
#: ``--crater``'s own default: rendering a crater run never replaces the conformance and
#: benchmark report of the same folder.
CRATER_OUT = "crater-out"


class _Parser(argparse.ArgumentParser):
    """argparse whose usage error is one line, exit 4 (as ``python -m conformance``), an
    unknown option answered with the nearest known one."""

    def error(self, message: str) -> NoReturn:
        from vllm_outputs_suite_plugin import typo_hint

        hint = typo_hint(self, message)
        self.exit(
            EXIT_BAD_REPORT, f"{invocation.command()}: error: {message}{hint} (--help lists them)\n"
        )


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog=invocation.command(),
        description=(
            "Turn asv benchmark results (and conformance reports) into one folder: "
            "results.csv (one row per benchmark, parameters, commit, machine), summary.md "
            "(targets with pass/fail, GB/s against the link limit, ns per element, median "
            "latencies), the same as one self-contained page report.html (opens offline), "
            "and PNG plots. The folder is written to a temporary place and moved "
            "into --out only when complete."
        ),
        epilog=(
            "Revisions for --compare: MACHINE (its latest commit), COMMIT (hash prefix, on every "
            "machine that has it) or MACHINE@COMMIT; a machine is only ever compared with "
            "itself. Exit codes: 0 written; 1 written, and --compare found a regression or "
            "--conformance-diff something newly failing; 2 bad benchmark input or an --out "
            "folder holding files no report wrote, 4 a bad "
            "conformance report (one line naming the file and why), nothing written."
        ),
    )
    parser.add_argument(
        "--results",
        metavar="DIR",
        nargs="+",
        default=None,
        help=f"asv results folder(s), as `asv run` wrote them (default: {DEFAULT_RESULTS}; "
        "several, e.g. one per benchmark machine: each machine's numbers side by side; with "
        "--conformance and no such folder, a report of the conformance run alone)",
    )
    parser.add_argument(
        "--config",
        metavar="FILE",
        default="asv.conf.json",
        help="the project's asv configuration; optional when --results is given (default: %(default)s)",
    )
    parser.add_argument(
        "--conformance",
        metavar="PATH",
        nargs="+",
        default=[],
        help="conformance JSON report(s) from `python -m conformance --report FILE`, or "
        "folders searched for them (e.g. every CI job's downloaded artefact): one matrix, "
        "a row per backend and version, a column per spec revision, device and machine "
        "(conformance-matrix.csv); two reports of the same key: the newer kept, both "
        "named; the reports kept are copied into the output folder",
    )
    parser.add_argument(
        "--conformance-diff",
        nargs=2,
        metavar=("BASE", "NEW"),
        help="what changed between two runs: per matrix cell, the behaviours newly failing, "
        "newly passing, newly skipped or errored, and those only in one side "
        "(conformance-diff.md, fit for a pull request comment; .html; .csv); exit 1 when "
        "something is newly failing. BASE and NEW: each a report, a folder of reports, "
        "or several of those joined by commas; without --conformance, NEW is the matrix shown",
    )
    parser.add_argument(
        "--out",
        metavar="DIR",
        default=None,
        help="report folder to write; replaced whole if it holds an earlier report, "
        f"refused if it holds anything else (default: {DEFAULT_OUT}, {CRATER_OUT} with "
        "--crater; git-ignored)",
    )
    parser.add_argument(
        "--compare",
        nargs=2,
        metavar=("REV_A", "REV_B"),
        help="also tabulate changes from REV_A to REV_B (compare.md, compare.csv) and exit 1 "
        "when any result got worse than --threshold",
    )
    parser.add_argument(
        "--threshold",
        type=float,
        default=0.10,
        metavar="FRACTION",
        help="a change worse than this fraction is a regression (default: %(default)s = 10%%)",
    )
    parser.add_argument(
        "--machine",
        metavar="NAME",
        help="describe only this machine in the summary and plots (default: every machine)",
    )
    parser.add_argument(
        "--commit",
        metavar="REV",
        help="describe this commit (hash prefix) instead of each machine's latest",
    )
    parser.add_argument(
        "--crater",
        metavar="PATH",
        nargs="+",
        default=[],
        help="crater reports from `python -m conformance crater TARGET --report FILE`, or "
        "folders searched for them (every job of a crater matrix): merged into "
        "crater.json, and crater.md and crater.html (plugins by vLLM, each red cell's first "
        "cause, every finding at the plugin's file and line); nothing else is written",
    )
    parser.add_argument("-q", "--quiet", action="store_true", help="no progress messages on stderr")
    return parser


DEFAULT_RESULTS = ".asv/results"


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    if args.out is None:
        args.out = CRATER_OUT if args.crater else DEFAULT_OUT
    progress = _Progress(quiet=args.quiet)
    if args.crater:
        try:
            return _crater(args, progress)
        except ConformanceInputError as exc:
            print(f"{invocation.command()}: error: {exc}", file=sys.stderr)
            return EXIT_BAD_REPORT
        except ReportInputError as exc:  # an --out that is no report folder
            print(f"{invocation.command()}: error: {exc}", file=sys.stderr)
            return EXIT_BAD_INPUT
    try:
        outcome = _run(args, progress)
    except ConformanceInputError as exc:
        print(f"{invocation.command()}: error: {exc}", file=sys.stderr)
        return EXIT_BAD_REPORT
    except ReportInputError as exc:
        print(f"{invocation.command()}: error: {exc}", file=sys.stderr)
        return EXIT_BAD_INPUT
    code = EXIT_OK
    comparison = outcome.comparison
    if comparison is not None and not comparison.regressions.empty:
        print(
            f"{invocation.command()}: {len(comparison.regressions)} regression(s) from "
            f"{comparison.rev_a} to {comparison.rev_b}; see {args.out}/compare.md",
            file=sys.stderr,
        )
        code = EXIT_REGRESSION
    changes = outcome.changes
    if changes is not None and not changes.newly_failing.empty:
        print(
            f"{invocation.command()}: {len(changes.newly_failing)} behaviour(s) newly failing from "
            f"{changes.base} to {changes.new}; see {args.out}/conformance-diff.md",
            file=sys.stderr,
        )
        code = EXIT_NEWLY_FAILING
    return code


def _crater(args: argparse.Namespace, progress: _Progress) -> int:
    """``--crater``: the crater reports merged and rendered, alone in ``--out``."""
    from reports.crater import crater_report, load_crater

    merged = load_crater(list(args.crater))
    progress(f"loaded {len(merged.records)} crater records of {', '.join(merged.targets)}")
    report = crater_report(merged)
    out = Path(args.out)
    with atomic_folder(out) as staging:
        (staging / "crater.json").write_text(
            json.dumps(merged.data(), indent=1) + "\n", encoding="utf-8"
        )
        (staging / "crater.md").write_text(render_markdown.render(report), encoding="utf-8")
        (staging / "crater.html").write_text(render_html.render(report), encoding="utf-8")
    print(f"crater report written to {out.resolve() / 'crater.html'}")
    return EXIT_OK


@dataclass(frozen=True)
class _Outcome:
    comparison: Comparison | None
    changes: ConformanceDiff | None


@dataclass(frozen=True)
class _Reports:
    """Conformance reports read and keyed: the newest of each key, and the repeats."""

    frame: pd.DataFrame
    duplicates: list[Duplicate]

    @classmethod
    def load(cls, paths: Sequence[str]) -> _Reports:
        frame, duplicates = conformance_matrix.newest_per_key(
            conformance_matrix.keyed(load_conformance(paths))
        )
        return cls(frame, duplicates)

    @property
    def files(self) -> list[str]:
        return list(dict.fromkeys(self.frame["report"]))


def _side(text: str) -> list[str]:
    """A ``--conformance-diff`` side: a path, or several joined by commas."""
    return [part for part in (p.strip() for p in text.split(",")) if part]


def _run(args: argparse.Namespace, progress: _Progress) -> _Outcome:
    # Read and check every input before the output folder is touched.
    conformance_paths = list(args.conformance)
    changes = None
    if args.conformance_diff:
        base_text, new_text = args.conformance_diff
        base = _Reports.load(_side(base_text))
        new = _Reports.load(_side(new_text))
        changes = diff(base.frame, new.frame, base_name=base_text, new_name=new_text)
        progress(f"compared {len(base.files)} report(s) of BASE with {len(new.files)} of NEW")
        conformance_paths = conformance_paths or _side(new_text)
    if args.results is None and conformance_paths and not holds_results(Path(DEFAULT_RESULTS)):
        # A backend's CI: conformance reports, no benchmarks run (or only the smoke
        # run, which saves none).
        frame = pd.DataFrame(columns=list(BASE_COLUMNS))
        frame.attrs["machines"] = {}
        source = "(no benchmark results)"
    else:
        results = args.results or [DEFAULT_RESULTS]
        frame = load_results_folders(results, args.config, progress=progress)
        source = ", ".join(map(str, results))
        progress(f"loaded {len(frame)} result rows from {source}")
    matrix = _Reports.load(conformance_paths) if conformance_paths else None
    conformance = matrix.frame if matrix is not None else None
    if matrix is not None:
        progress(f"loaded {len(matrix.files)} conformance report(s)")
        for duplicate in matrix.duplicates:
            progress(
                f"same key ({' · '.join(duplicate.key)}): kept {duplicate.kept}, set aside "
                + ", ".join(duplicate.dropped)
            )
    if args.machine or args.commit:
        current = select(frame, machine=args.machine, commit=args.commit, source=source)
        current = latest_per_machine(current) if not args.commit else one_environment(current)
    else:
        current = latest_per_machine(frame)
    comparison = (
        compare(frame, *args.compare, threshold=args.threshold, source=source)
        if args.compare
        else None
    )

    out = Path(args.out)
    with atomic_folder(out) as staging:
        progress(f"writing results.csv ({len(frame)} rows)")
        frame.to_csv(staging / "results.csv", index=False)
        drawn = []
        for name, description, draw in [
            *plots.PLOTS,
            (
                "conformance_matrix.png",
                "conformance outcome per spec type and device",
                lambda _, folder: plots.conformance_matrix(conformance, folder),
            ),
        ]:
            plotted = draw(current, staging)
            if plotted is not None:  # a plot without its results is not drawn
                progress(f"plotted {name}")
            drawn.append((name, description, plotted))
        kept = matrix.files if matrix is not None else []
        for index, path in enumerate(kept):
            name = "conformance.json" if len(kept) == 1 else f"conformance-{index + 1}.json"
            shutil.copyfile(path, staging / name)
        if conformance is not None:
            conformance_matrix.cells(conformance).to_csv(
                staging / "conformance-matrix.csv", index=False
            )
        if changes is not None:
            changes.table.to_csv(staging / "conformance-diff.csv", index=False)
            diff_page = Report(
                f"Conformance changes: {changes.base} -> {changes.new}",
                [conformance_changes_section(changes)],
            )
            (staging / "conformance-diff.md").write_text(
                render_markdown.render(diff_page), encoding="utf-8"
            )
            (staging / "conformance-diff.html").write_text(
                render_html.render(diff_page), encoding="utf-8"
            )
        if comparison is not None:
            comparison.table.to_csv(staging / "compare.csv", index=False)
            compared = Report("", [comparison_section(comparison)])
            (staging / "compare.md").write_text(render_markdown.render(compared), encoding="utf-8")
        # One content, two renderings: they cannot disagree on a row or a verdict.
        report = content.build(
            content.ReportInput(
                frame=frame,
                current=current,
                results_dir=source,
                conformance=conformance,
                plots=drawn,
                comparison=comparison,
                machines=frame.attrs.get("machines", {}),
                reference_paths=frame.attrs.get("reference_paths", {}),
                conformance_duplicates=matrix.duplicates if matrix is not None else (),
                conformance_changes=changes,
                vllm_changes=load_vllm_changes(matrix.files) if matrix is not None else (),
            )
        )
        progress("writing summary.md and report.html")
        (staging / "summary.md").write_text(render_markdown.render(report), encoding="utf-8")
        (staging / "report.html").write_text(render_html.render(report), encoding="utf-8")
    progress(f"done in {progress.elapsed():.1f} s")
    # The one line meant for stdout: where the report is.
    print(
        f"report written to {out.resolve()} (summary: {out.resolve() / 'summary.md'}; "
        f"offline page: {out.resolve() / 'report.html'})"
    )
    return _Outcome(comparison, changes)


class _Progress:
    """Timestamped progress lines on stderr, so a long run shows where it is."""

    def __init__(self, *, quiet: bool) -> None:
        self.quiet = quiet
        self.start = time.monotonic()

    def elapsed(self) -> float:
        return time.monotonic() - self.start

    def __call__(self, message: str) -> None:
        if not self.quiet:
            print(f"[reports {self.elapsed():5.1f}s] {message}", file=sys.stderr, flush=True)
