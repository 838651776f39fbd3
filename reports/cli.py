"""``python -m reports``: asv (and conformance) results -> a report folder.

Exit codes: 0 report written; 1 report written and ``--compare`` found a
regression (so CI can gate on it); 2 bad input, nothing written.
"""

from __future__ import annotations

import argparse
import shutil
import sys
import time
from collections.abc import Sequence
from pathlib import Path

import pandas as pd

from reports import content, plots, render_html, render_markdown
from reports.asv_loader import BASE_COLUMNS, load_results
from reports.compare import Comparison, compare
from reports.conformance_loader import load_conformance
from reports.document import Report
from reports.errors import ReportInputError
from reports.output import atomic_folder
from reports.sections.changes import comparison_section
from reports.selection import latest_per_machine, one_environment, select
from reports.vllm_changes_loader import load_vllm_changes

EXIT_OK = 0
EXIT_REGRESSION = 1
EXIT_BAD_INPUT = 2

DEFAULT_OUT = "reports-out"


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m reports",
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
            "machine that has it) or MACHINE@COMMIT. Exit codes: 0 written; 1 written, and "
            "--compare found a regression; 2 bad input (one message naming the file and the fix), "
            "nothing written."
        ),
    )
    parser.add_argument(
        "--results",
        metavar="DIR",
        default=None,
        help=f"asv results folder, as `asv run` wrote it (default: {DEFAULT_RESULTS}; with "
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
        metavar="FILE",
        nargs="+",
        default=[],
        help="conformance JSON report(s) from `python -m conformance --report FILE`, "
        "added to the summary and drawn as a matrix; copied into the output folder",
    )
    parser.add_argument(
        "--out",
        metavar="DIR",
        default=DEFAULT_OUT,
        help="report folder to write; replaced whole if it holds an earlier report, "
        "refused if it holds anything else (default: %(default)s, git-ignored)",
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
    parser.add_argument("-q", "--quiet", action="store_true", help="no progress messages on stderr")
    return parser


DEFAULT_RESULTS = ".asv/results"


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    progress = _Progress(quiet=args.quiet)
    try:
        comparison = _run(args, progress)
    except ReportInputError as exc:
        print(f"python -m reports: error: {exc}", file=sys.stderr)
        return EXIT_BAD_INPUT
    if comparison is not None and not comparison.regressions.empty:
        print(
            f"python -m reports: {len(comparison.regressions)} regression(s) from "
            f"{comparison.rev_a} to {comparison.rev_b}; see {args.out}/compare.md",
            file=sys.stderr,
        )
        return EXIT_REGRESSION
    return EXIT_OK


def _run(args: argparse.Namespace, progress: _Progress) -> Comparison | None:
    # Read and check every input before the output folder is touched.
    if args.results is None and args.conformance and not Path(DEFAULT_RESULTS).exists():
        # A backend's CI: conformance reports, no benchmarks run.
        frame = pd.DataFrame(columns=list(BASE_COLUMNS))
        frame.attrs["machines"] = {}
        source = "(no benchmark results)"
    else:
        results = args.results or DEFAULT_RESULTS
        frame = load_results(results, args.config, progress=progress)
        source = str(results)
        progress(f"loaded {len(frame)} result rows from {results}")
    conformance = load_conformance(args.conformance) if args.conformance else None
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
        for name, description, draw in plots.PLOTS:
            progress(f"plotting {name}")
            drawn.append((name, description, draw(current, staging)))
        progress("plotting conformance_matrix.png")
        drawn.append(
            (
                "conformance_matrix.png",
                "conformance outcome per spec type and device",
                plots.conformance_matrix(conformance, staging),
            )
        )
        for index, path in enumerate(args.conformance):
            name = (
                "conformance.json"
                if len(args.conformance) == 1
                else f"conformance-{index + 1}.json"
            )
            shutil.copyfile(path, staging / name)
        if comparison is not None:
            comparison.table.to_csv(staging / "compare.csv", index=False)
            changes = Report("", [comparison_section(comparison)])
            (staging / "compare.md").write_text(render_markdown.render(changes), encoding="utf-8")
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
                vllm_changes=load_vllm_changes(args.conformance) if args.conformance else (),
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
    return comparison


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
