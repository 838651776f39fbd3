"""``python -m reports``; see :mod:`reports.cli`."""

from __future__ import annotations

import sys

from reports.cli import main

if __name__ == "__main__":
    sys.exit(main())
