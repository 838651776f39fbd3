"""``python -m reports``; see :mod:`reports.cli`."""

from __future__ import annotations

import importlib.util
import sys

#: What ``python -m reports`` needs beyond the suite: the ``reports`` extra.
NEEDED = ("pandas", "matplotlib", "asv")


def missing_packages() -> list[str]:
    return [name for name in NEEDED if not _importable(name)]


def _importable(name: str) -> bool:
    try:
        return importlib.util.find_spec(name) is not None
    except (ImportError, ValueError):  # a module blocked in sys.modules
        return False


if __name__ == "__main__":
    try:
        from vllm_outputs_suite_guard import exit_if_foreign
    except ImportError:  # an editable install made before it existed maps only older names
        pass
    else:
        exit_if_foreign("reports")  # a reports that is not the suite's: one line, exit 4
    missing = missing_packages()
    if missing:
        # Installed without the extra (a plain wheel install): say so in one line, with
        # the code of bad input (1 means a regression to scripts comparing runs).
        from reports.invocation import command

        print(
            f"{command()} needs {', '.join(missing)}: install the reports extra from "
            "the suite's checkout or wheel (the distribution is on no index), pip install "
            "'/path/to/vllm-outputs-suite[reports]' or 'vllm_outputs_suite-<version>.whl[reports]'",
            file=sys.stderr,
        )
        sys.exit(2)
    from reports.cli import main

    sys.exit(main())
