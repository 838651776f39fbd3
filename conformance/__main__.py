"""``python -m conformance``: the command line lives in :mod:`conformance.cli.main`."""

import sys

from conformance.cli.main import main

if __name__ == "__main__":
    sys.exit(main())
