"""The one table of options and environment variables (docs/settings.md): generated, and whole."""

from __future__ import annotations

import re
from pathlib import Path

from conformance.cli import settings_table
from conformance.settings import ENVIRONMENT

ROOT = Path(settings_table.__file__).resolve().parents[2]
#: Where the project reads its environment (the example plugin's nox and CI included).
SOURCES = ("conformance", "reference", "reference_speedups", "benchmarks", "reports",
           "examples/npu_plugin/src")  # fmt: skip
FILES = ("noxfile.py", "vllm_outputs_suite_plugin.py", "examples/npu_plugin/noxfile.py",
         "tests/conftest.py", ".ci/run")  # fmt: skip
#: A quoted name read from the environment, or one set in a shell script.
_READ = re.compile(
    r"""["'](OUTPUTS_[A-Z0-9_]+|CONFORMANCE_[A-Z0-9_]+)["']|^export (OUTPUTS_\w+)=""", re.M
)


def _read_names() -> set[str]:
    paths = [p for folder in SOURCES for p in (ROOT / folder).rglob("*.py")]
    paths += [ROOT / name for name in FILES]
    found: set[str] = set()
    for path in paths:
        for match in _READ.finditer(path.read_text(encoding="utf-8")):
            found.add(match[1] or match[2])
    return found


def test_every_variable_the_project_reads_is_in_the_table() -> None:
    read = _read_names()
    assert {"OUTPUTS_BACKEND", "OUTPUTS_VLLM_RELEASES", "OUTPUTS_BENCH_DEVICES"} <= read
    listed = {v.name for v in ENVIRONMENT}
    assert read - listed == set(), "add these to conformance/settings.py"
    # Other tools' variables the project honours: its caches' places.
    others = {"XDG_CACHE_HOME", "HYPOTHESIS_STORAGE_DIRECTORY"}
    assert listed - read - others == set(), "no longer read: drop them"


def test_the_settings_page_holds_the_table_as_generated() -> None:
    page = (ROOT / "docs" / "settings.md").read_text(encoding="utf-8")
    assert settings_table.page_with_table(page) == page, (
        "run python -m conformance.cli.settings_table"
    )


def test_every_option_of_the_command_line_is_a_row() -> None:
    from conformance.cli.main import build_parser

    table = settings_table.settings_markdown()
    for action in build_parser()._actions:
        if action.option_strings and "-h" not in action.option_strings:
            assert f"| `{action.option_strings[-1]}" in table
    assert "%(" not in table
