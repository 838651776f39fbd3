"""The building blocks of a report, as data both renderers understand.

:mod:`reports.content` decides what the report says and builds it from these;
:mod:`reports.render_markdown` and :mod:`reports.render_html` only decide how it
looks.  Text in paragraphs, verdicts and table cells may use two inline marks,
the same in both outputs: ```code``` and ``**bold**``; a bold ``PASS`` or
``FAIL`` is a verdict.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd

#: Verdict words, marked up; the renderers recognise them to colour them.
PASS = "**PASS**"
FAIL = "**FAIL**"
NO_DATA = "no data"
#: A target whose verdict one run cannot decide (a ratio at its limit).
UNDECIDED = "**TOO CLOSE**"


@dataclass(frozen=True)
class Paragraph:
    text: str


@dataclass(frozen=True)
class Heading:
    """A sub-heading inside a section (one level below the section's)."""

    text: str


@dataclass(frozen=True)
class Bullets:
    items: tuple[str, ...]


@dataclass(frozen=True)
class Verdict:
    """One line of the verdict list: ``subject: PASS (detail)``.

    ``status`` is :data:`PASS`, :data:`FAIL`, :data:`NO_DATA`, or empty for a
    line that states a fact (a best transfer rate, a warning) without a verdict.
    """

    subject: str
    status: str
    detail: str

    @property
    def failed(self) -> bool:
        return self.status == FAIL


@dataclass(frozen=True)
class Verdicts:
    items: tuple[Verdict, ...]


@dataclass(frozen=True, eq=False)
class Table:
    """A pandas frame of display strings; ``flagged`` marks rows that failed
    (coloured in HTML), one bool per row."""

    frame: pd.DataFrame
    flagged: tuple[bool, ...] = ()

    @classmethod
    def of(
        cls,
        columns: Sequence[str],
        rows: Sequence[Sequence[object]],
        flagged: Sequence[bool] = (),
    ) -> Table:
        frame = pd.DataFrame([[str(c) for c in row] for row in rows], columns=list(columns))
        return cls(frame, tuple(flagged))


@dataclass(frozen=True)
class GridCell:
    """One cell of a :class:`Grid`: its text, whether it failed, and the lines behind it
    (one click away in HTML, one line under the table in Markdown)."""

    text: str
    failing: bool = False
    details: tuple[str, ...] = ()


@dataclass(frozen=True)
class Grid:
    """A matrix whose columns are named on several levels (``revision``, ``device``,
    ``machine``): header rows in HTML, joined with `` · `` in Markdown.  Each row is
    its names (one per ``row_head``) and a cell per column, None where it has none."""

    row_head: tuple[str, ...]
    levels: tuple[str, ...]
    columns: tuple[tuple[str, ...], ...]
    rows: tuple[tuple[tuple[str, ...], tuple[GridCell | None, ...]], ...]


@dataclass(frozen=True)
class Plot:
    """A PNG of the report folder; ``path`` is None when it had no data."""

    file: str
    description: str
    path: Path | None


Block = Paragraph | Heading | Bullets | Verdicts | Table | Grid | Plot


@dataclass
class Section:
    """One part of the report; ``key`` names it for links and tests."""

    key: str
    title: str
    blocks: list[Block] = field(default_factory=list)


@dataclass
class Report:
    title: str
    sections: list[Section]

    def section(self, key: str) -> Section:
        return next(s for s in self.sections if s.key == key)

    def tables(self) -> list[Table]:
        return [b for s in self.sections for b in s.blocks if isinstance(b, Table)]
