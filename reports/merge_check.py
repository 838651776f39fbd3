"""``python -m reports.merge_check MERGED REPORT...``: a merged matrix holds exactly
what the separate runs held.

``MERGED`` is a folder ``python -m reports --conformance`` wrote (its
``conformance-matrix.csv``); each ``REPORT`` (a file or a folder of them) is one
shard's run, read alone.  Every cell of every shard must be in the merged matrix with
the same outcome counts and failing behaviours, and the merged matrix must hold no
cell that no shard has.  One line per shard; exit 0 when everything holds, 1 when
not, 4 for a bad report (as ``python -m reports``).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

import pandas as pd

from reports import conformance_matrix
from reports.conformance_loader import load_conformance
from reports.errors import ConformanceInputError

#: What a cell holds; ``report`` is left out (the merged folder holds copies).
COMPARED = tuple(
    c for c in conformance_matrix.cells(pd.DataFrame()).columns if c not in ("report",)
)
MATRIX_FILE = "conformance-matrix.csv"
EXIT_SAME, EXIT_DIFFERENT, EXIT_BAD_REPORT = 0, 1, 4


def as_text(table: pd.DataFrame) -> set[tuple[str, ...]]:
    """A cell table as a set of rows of text (a CSV read back gives text)."""
    return {tuple(str(v) for v in row) for row in table[list(COMPARED)].itertuples(index=False)}


def read_matrix(folder: Path) -> pd.DataFrame:
    path = folder / MATRIX_FILE
    if not path.is_file():
        raise ConformanceInputError(
            f"no {MATRIX_FILE} here",
            path=folder,
            fix="pass the folder `python -m reports --conformance ... --out FOLDER` wrote",
        )
    # As text: a revision such as 2025.10 must not become the number 2025.1.
    return pd.read_csv(path, dtype=str, keep_default_na=False)


def alone(path: str) -> pd.DataFrame:
    """The cells of one shard's report(s), as the merged matrix would show them."""
    frame, _ = conformance_matrix.newest_per_key(conformance_matrix.keyed(load_conformance(path)))
    return conformance_matrix.cells(frame)


def check(merged: pd.DataFrame, shards: dict[str, pd.DataFrame]) -> tuple[list[str], bool]:
    """Lines saying, per shard, whether the merged matrix holds its cells as they are;
    and whether it holds exactly theirs."""
    held = as_text(merged)
    lines, same, every = [], True, set()
    for name, table in shards.items():
        cells = as_text(table)
        every |= cells
        missing = cells - held
        same &= not missing
        lines.append(
            f"{name}: {len(cells)} cell(s), "
            + ("all in the merged matrix as they are" if not missing else f"{len(missing)} not")
        )
    extra = held - every
    if extra:
        same = False
        lines.append(f"the merged matrix holds {len(extra)} cell(s) no shard has")
    lines.append(
        f"merged matrix: {len(held)} cell(s) = the shards' {len(every)}"
        if same
        else "merged matrix: DIFFERS from the separate runs"
    )
    return lines, same


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m reports.merge_check",
        description="Check that a merged conformance matrix holds exactly what the separate "
        "runs (shards) held: every cell with the same counts and failing behaviours, none else.",
    )
    parser.add_argument("merged", metavar="MERGED", help="folder python -m reports wrote")
    parser.add_argument("shards", metavar="REPORT", nargs="+", help="each shard's report")
    args = parser.parse_args(argv)
    try:
        merged = read_matrix(Path(args.merged))
        shards = {shard: alone(shard) for shard in args.shards}
    except ConformanceInputError as exc:
        print(f"python -m reports.merge_check: error: {exc}", file=sys.stderr)
        return EXIT_BAD_REPORT
    lines, same = check(merged, shards)
    for line in lines:
        print(line)
    return EXIT_SAME if same else EXIT_DIFFERENT


if __name__ == "__main__":
    sys.exit(main())
