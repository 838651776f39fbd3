"""The table of options and environment variables (docs/settings.md), made from what the
code reads.

The options come from ``python -m conformance``'s own parser, the environment variables
from :data:`conformance.settings.ENVIRONMENT`.  ``python -m conformance.cli.settings_table``
rewrites the table in docs/settings.md; a test compares the two.
"""

from __future__ import annotations

import argparse
import re
from pathlib import Path

from conformance.settings import ENVIRONMENT

MARKERS = ("<!-- settings: generated -->\n", "<!-- /settings -->")
SETTINGS_PAGE = Path(__file__).resolve().parents[2] / "docs" / "settings.md"


def _short(help_text: str) -> str:
    """The help's first clause: up to its first ``;`` or parenthesis, whichever is first."""
    cut = re.split(r"; | \((?!default)", help_text, maxsplit=1)[0]
    return cut.replace("|", "\\|").strip()


def options_markdown(parser: argparse.ArgumentParser) -> list[str]:
    lines = ["| option (`python -m conformance`) | what |", "|---|---|"]
    for action in parser._actions:
        if (
            not action.option_strings
            or action.help == argparse.SUPPRESS
            or "-h" in action.option_strings
        ):
            continue
        flag = action.option_strings[-1]
        spelled = f"{flag} {action.metavar}" if action.metavar else flag
        help_text = (action.help or "") % {"default": action.default}
        lines.append(f"| `{spelled}` | {_short(help_text)} |")
    return lines


def environment_markdown() -> list[str]:
    lines = ["| environment variable | read by | what |", "|---|---|---|"]
    for variable in ENVIRONMENT:
        if not variable.internal:
            lines.append(f"| `{variable.name}` | {variable.read_by} | {variable.what} |")
    internal = ", ".join(f"`{v.name}` ({v.what})" for v in ENVIRONMENT if v.internal)
    return [*lines, "", f"The suite sets these for its own processes: {internal}."]


def settings_markdown() -> str:
    from conformance.cli.main import build_parser

    return "\n".join([*options_markdown(build_parser()), "", *environment_markdown()]) + "\n"


def page_with_table(text: str) -> str:
    start, end = MARKERS
    before, found, rest = text.partition(start)
    if not found or end not in rest:
        raise ValueError(f"docs/settings.md lacks the markers {start.strip()} ... {end}")
    return before + start + settings_markdown() + end + rest.partition(end)[2]


if __name__ == "__main__":
    if not SETTINGS_PAGE.is_file():
        import sys

        sys.exit(
            f"ERROR: {SETTINGS_PAGE} is not here: the table is regenerated in a checkout of "
            "the suite (run this from its folder, with the checkout first on the path)"
        )
    text = SETTINGS_PAGE.read_text(encoding="utf-8")
    SETTINGS_PAGE.write_text(page_with_table(text), encoding="utf-8")
    print(f"the settings table regenerated in {SETTINGS_PAGE}")
