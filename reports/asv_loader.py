"""asv results -> one tidy pandas DataFrame, through asv's own API.

asv keeps one JSON file per (machine, commit, environment) under
``results_dir/<machine>/`` and the benchmark metadata (parameter names,
units, code versions) in ``results_dir/benchmarks.json``.  Both are read with
asv's loaders (:class:`asv.results.Results`, :class:`asv.benchmarks.Benchmarks`,
:class:`asv.config.Config`, :func:`asv.util.load_json`) so a change of asv's
file format is asv's problem, not ours.

One row per (benchmark, parameter combination, commit, machine, environment).
"""

from __future__ import annotations

import ast
import itertools
import math
import os
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any

import pandas as pd
from asv import util as asv_util
from asv.benchmarks import Benchmarks
from asv.config import Config
from asv.machine import Machine
from asv.results import Results

from reports.errors import ReportInputError

#: How a row's measurement ended.  asv stores a skipped combination (the
#: benchmark raised NotImplementedError in setup, e.g. no such device) as NaN
#: and a failed one as null; we keep that distinction in a column instead of
#: leaving the reader to guess what a NaN means.
STATUS_OK = "ok"
STATUS_SKIPPED = "skipped"
STATUS_FAILED = "failed"

#: The statistics asv keeps per result, under the names asv uses.
STAT_COLUMNS = ("ci_99_a", "ci_99_b", "q_25", "q_75", "number", "repeat")

#: Fixed columns, in order; parameter columns follow.
BASE_COLUMNS = (
    "benchmark",
    "device",
    "value",
    "unit",
    "status",
    "type",
    "params",
    "commit",
    "date",
    "machine",
    "env",
    *STAT_COLUMNS,
    "version_mismatch",
)

#: A benchmark without a ``device`` parameter runs on the host.
HOST_DEVICE = "cpu"

FIX_RUN_ASV = (
    "run the benchmarks first (`nox -s bench`, or `asv machine --yes` then "
    "`asv run --python=same --set-commit-hash=$(git rev-parse HEAD)`), "
    "or pass --results with the folder asv wrote"
)

Progress = Callable[[str], None]


def load_results(
    results_dir: str | os.PathLike[str] | None = ".asv/results",
    config: str | os.PathLike[str] | None = "asv.conf.json",
    *,
    progress: Progress | None = None,
) -> pd.DataFrame:
    """Read every asv result under ``results_dir`` into a tidy DataFrame.

    ``config`` is the project's ``asv.conf.json``; it is only needed when
    ``results_dir`` is None (the folder is then taken from the config).  Results
    of several machines and commits merge into one frame.  Raises
    :class:`ReportInputError` for a missing or empty folder, a missing
    ``benchmarks.json`` or a corrupt results file, naming the file and the fix.

    The frame's ``attrs["machines"]`` maps each machine name to what
    ``asv machine`` recorded about it (cpu, os, ram, ...).
    """
    conf = _load_config(results_dir, config)
    root = Path(conf.results_dir)
    if not root.is_dir():
        raise ReportInputError("results folder does not exist", path=root, fix=FIX_RUN_ASV)

    files = list(_result_files(root))
    if not files:
        raise ReportInputError("results folder holds no asv results", path=root, fix=FIX_RUN_ASV)
    benchmarks = _load_benchmarks(conf, root)

    rows: list[dict[str, Any]] = []
    machines: dict[str, dict[str, Any]] = {}
    for index, (path, machine_name, machine_info) in enumerate(files, start=1):
        if progress is not None:
            progress(f"reading {path} ({index}/{len(files)})")
        machines[machine_name] = machine_info
        result = _load_result_file(path, machine_name)
        rows.extend(_rows_of(result, machine_name, benchmarks))

    frame = _to_frame(rows)
    frame.attrs["machines"] = machines
    frame.attrs["reference_paths"] = reference_paths(root)
    return frame


#: Written by ``benchmarks/run_asv.py`` beside the results: ``COMMIT<TAB>PATH`` lines.
REFERENCE_PATHS_FILE = "reference-paths.txt"


def reference_paths(root: Path) -> dict[str, str]:
    """Per commit, the path the reference's hot loops took when it was measured (the
    C extension built at install, or pure Python); empty where nothing was noted."""
    file = root / REFERENCE_PATHS_FILE
    if not file.is_file():
        return {}
    found = {}
    for line in file.read_text(encoding="utf-8").splitlines():
        commit, _, path = line.partition("\t")
        if commit and path:
            found[commit] = path
    return found


def load_results_folders(
    results_dirs: Iterable[str | os.PathLike[str]],
    config: str | os.PathLike[str] | None = "asv.conf.json",
    *,
    progress: Progress | None = None,
) -> pd.DataFrame:
    """:func:`load_results` of each folder (one per benchmark machine, as CI jobs upload
    them), as one frame: each machine's rows side by side with the others'.

    A machine found in several folders keeps its rows of every folder; a result file
    (machine, commit, environment) found twice is read from the last folder given."""
    frames = [load_results(d, config, progress=progress) for d in results_dirs]
    if len(frames) == 1:
        return frames[0]
    machines: dict[str, dict[str, Any]] = {}
    paths: dict[str, str] = {}
    for frame in frames:
        machines.update(frame.attrs.get("machines", {}))
        paths.update(frame.attrs.get("reference_paths", {}))
    merged = pd.concat(frames, ignore_index=True)
    keys = ["machine", "commit", "env", "benchmark", "params"]
    merged = merged.drop_duplicates(keys, keep="last")
    merged = merged.sort_values(["machine", "date", "commit", "benchmark", "env"], kind="stable")
    merged = merged.reset_index(drop=True)
    merged.attrs["machines"] = machines
    merged.attrs["reference_paths"] = paths
    return merged


def _load_config(
    results_dir: str | os.PathLike[str] | None, config: str | os.PathLike[str] | None
) -> Config:
    """The asv configuration, with ``results_dir`` overriding the config's own."""
    if config is not None and Path(config).is_file():
        try:
            conf = Config.load(os.fspath(config))
        except (asv_util.UserError, ValueError) as exc:
            raise ReportInputError(
                f"cannot read asv configuration ({exc})",
                path=config,
                fix="repair the JSON, or pass --config pointing at the project's asv.conf.json",
            ) from None
    elif results_dir is None:
        raise ReportInputError(
            "no results folder given and no asv configuration found",
            path=config,
            fix="pass --results DIR or run from the project root",
        )
    else:
        # Without a config file asv's defaults are fine: only the folders matter here.
        conf = Config.from_json({"repo": "."})
    if results_dir is not None:
        conf.results_dir = os.fspath(results_dir)
    return conf


def holds_results(root: Path) -> bool:
    """Whether ``root`` is a results folder with at least one run in it.

    ``asv run --quick`` (the benchmarks' smoke run) leaves ``benchmarks.json`` and a
    ``machine.json`` behind and no results: such a folder holds nothing to report.
    """
    return root.is_dir() and any(
        p.name not in {"machine.json", "benchmarks.json"} for p in root.glob("*/*.json")
    )


def _result_files(root: Path) -> Iterator[tuple[Path, str, dict[str, Any]]]:
    """Each results file with its machine, as asv lays them out (``<machine>/*.json``).

    Unlike asv's own walker, a folder with an unreadable ``machine.json`` is an
    error here rather than a warning: silently dropping a machine would make
    a report that looks complete and is not.
    """
    for machine_dir in sorted(p for p in root.iterdir() if p.is_dir()):
        candidates = sorted(
            p
            for p in machine_dir.glob("*.json")
            if p.name not in {"machine.json", "benchmarks.json"}
        )
        if not candidates:
            continue
        machine_json = machine_dir / "machine.json"
        try:
            info = asv_util.load_json(os.fspath(machine_json), api_version=Machine.api_version)
        except FileNotFoundError:
            raise ReportInputError(
                "machine folder has results but no machine.json",
                path=machine_json,
                fix="run `asv machine --yes` and re-run the benchmarks, or remove the folder",
            ) from None
        except asv_util.UserError as exc:
            raise ReportInputError(
                f"unreadable machine description ({_short(exc)})",
                path=machine_json,
                fix="re-create it with `asv machine --yes` or remove the folder",
            ) from None
        name = info.get("machine")
        if not isinstance(name, str):
            raise ReportInputError(
                "machine.json has no machine name",
                path=machine_json,
                fix="re-create it with `asv machine --yes`",
            )
        for path in candidates:
            yield path, name, dict(info)


def _load_benchmarks(conf: Config, root: Path) -> Benchmarks:
    path = root / "benchmarks.json"
    if not path.is_file():
        raise ReportInputError(
            "benchmarks.json is missing, so parameter names and units are unknown",
            path=path,
            fix="re-run `asv run` (it writes the file) or copy it from the run that made these results",
        )
    try:
        return Benchmarks.load(conf)
    except (asv_util.UserError, ValueError, KeyError, TypeError) as exc:
        raise ReportInputError(
            f"unreadable benchmark list ({_short(exc)})",
            path=path,
            fix="delete it and re-run `asv run`, which rewrites it",
        ) from None


def _load_result_file(path: Path, machine_name: str) -> Results:
    try:
        return Results.load(os.fspath(path), machine_name=machine_name)
    except (asv_util.UserError, ValueError, KeyError, TypeError, IndexError) as exc:
        raise ReportInputError(
            f"corrupt or truncated asv results file ({_short(exc)})",
            path=path,
            fix="delete the file and re-run the benchmarks for that commit",
        ) from None


def _short(exc: BaseException) -> str:
    """An exception's message without the absolute path asv repeats in it."""
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__


def _rows_of(result: Results, machine: str, benchmarks: Benchmarks) -> Iterator[dict[str, Any]]:
    date = pd.to_datetime(result.date, unit="ms", utc=True) if result.date else pd.NaT
    for key in sorted(result.get_all_result_keys()):
        meta = benchmarks.get(key)
        params = result.get_result_params(key) or []
        values = result.get_result_value(key, params)
        stats = result.get_result_stats(key, params)
        version = result.benchmark_version.get(key)
        if meta is not None:
            names = list(meta.get("param_names") or [])
            unit = meta.get("unit")
            kind = meta.get("type")
            # A result recorded by an edited benchmark measures other code than
            # the current benchmark: keep it but flag it.
            mismatch = version is not None and version != meta.get("version")
        else:
            names, unit, kind, mismatch = [], None, None, True
        names += [f"param{i + 1}" for i in range(len(names), len(params))]
        combos: Iterable[tuple[str, ...]] = itertools.product(*params) if params else [()]
        for combo, value, stat in zip(combos, values, stats, strict=True):
            typed = {name: parse_param(text) for name, text in zip(names, combo, strict=True)}
            row: dict[str, Any] = {
                "benchmark": key,
                "device": typed.get("device", HOST_DEVICE),
                "value": _value(value),
                "unit": unit,
                "status": _status(value),
                "type": kind,
                "params": ", ".join(f"{n}={t}" for n, t in zip(names, combo, strict=True)),
                "commit": result.commit_hash,
                "date": date,
                "machine": machine,
                "env": result.env_name,
                "version_mismatch": bool(mismatch),
            }
            for name in STAT_COLUMNS:
                row[name] = _finite((stat or {}).get(name))
            for name, parsed in typed.items():
                if name != "device":  # already the device column
                    row[_param_column(name)] = parsed
            yield row


def parse_param(text: str) -> Any:
    """A parameter value as Python, from the repr string asv stores.

    ``"'cuda'"`` -> ``"cuda"``, ``"1024"`` -> ``1024``.  A repr that is not a
    literal (``torch.float32``, ``<class ...>``) stays the text asv showed.
    """
    try:
        return ast.literal_eval(text)
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        return text


def _param_column(name: str) -> str:
    # A parameter called "value" or "unit" must not overwrite a fixed column.
    return f"param_{name}" if name in BASE_COLUMNS else name


def _status(value: Any) -> str:
    if value is None:
        return STATUS_FAILED
    if isinstance(value, float) and math.isnan(value):
        return STATUS_SKIPPED
    return STATUS_OK


def _value(value: Any) -> float:
    return float("nan") if value is None else float(value)


def _finite(value: Any) -> float:
    # asv writes +-inf for a confidence interval it could not compute (one
    # sample); NaN says "unknown" without poisoning means and plots.
    if value is None:
        return float("nan")
    value = float(value)
    return value if math.isfinite(value) else float("nan")


def _to_frame(rows: list[dict[str, Any]]) -> pd.DataFrame:
    if not rows:
        return pd.DataFrame(columns=list(BASE_COLUMNS))
    param_columns = list(dict.fromkeys(k for row in rows for k in row if k not in BASE_COLUMNS))
    frame = pd.DataFrame({c: [row.get(c) for row in rows] for c in BASE_COLUMNS})
    for column in param_columns:
        # Built from the Python values, not from a frame pandas already
        # coerced: a size missing from some benchmarks must not turn 1024 into 1024.0.
        frame[column] = _typed_column(pd.Series([row.get(column) for row in rows], dtype=object))
    frame["version_mismatch"] = frame["version_mismatch"].astype(bool)
    for column in ("number", "repeat"):
        frame[column] = frame[column].astype("Int64")
    keys = ["machine", "date", "commit", "benchmark", "env"]
    try:
        # Sizes in numeric order (16 before 256), which the params text is not.
        frame = frame.sort_values([*keys, *param_columns], kind="stable", na_position="first")
    except TypeError:  # a parameter mixing types across benchmarks
        frame = frame.sort_values([*keys, "params"], kind="stable")
    return frame.reset_index(drop=True)


def _typed_column(column: pd.Series) -> pd.Series:
    """Give a parameter column a real dtype when its values allow one.

    Integer sizes stay integers even where some benchmarks lack the
    parameter (nullable ``Int64``), so ``frame[frame.size == 1024]`` works.
    """
    present = column.dropna()
    if present.empty:
        return column
    kinds = {type(v) for v in present}
    if kinds == {bool}:
        return column.astype("boolean")
    if kinds == {int}:
        return column.astype("Int64")
    if kinds <= {int, float}:
        return column.astype("float64")
    return column
