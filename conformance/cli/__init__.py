"""``python -m conformance``: start at :func:`conformance.cli.main.main`.

:mod:`.revision_listing` lists the revisions (``--list-revisions``) and makes the
README's tables of them; :mod:`.draft_release` drafts a new release's revision data
from its ``outputs.py``.
"""
