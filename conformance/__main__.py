"""``python -m conformance``: the command line lives in :mod:`conformance.cli.main`."""

import sys

if __name__ == "__main__":
    try:
        from vllm_outputs_suite_guard import exit_if_foreign
    except ImportError:  # an editable install made before it existed maps only older names
        pass
    else:
        exit_if_foreign("conformance")  # not the suite's conformance or reference: exit 4
    from conformance.cli.main import main

    sys.exit(main())
