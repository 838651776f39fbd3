"""``python -m conformance``: the command line lives in :mod:`conformance.cli.main`."""

import sys

from vllm_outputs_suite_guard import exit_if_foreign

if __name__ == "__main__":
    # A conformance or reference that is not the suite's: one line, exit 4.
    exit_if_foreign("conformance")
    from conformance.cli.main import main

    sys.exit(main())
