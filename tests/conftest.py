"""Settings shared by all of the project's own tests.

Hypothesis profiles, chosen with the ``HYPOTHESIS_PROFILE`` environment variable:

``ci`` (default)
    derandomized, so a CI run tests the same examples every time and a red build
    is reproducible; no deadline, because timing on shared runners is noise and
    the tests here assert behaviour, not speed; no example database on disk.
``dev``
    random examples and the local database, for finding new failures while working.
``thorough``
    many more random examples, for an occasional long hunt.
"""

from __future__ import annotations

import os

from hypothesis import settings

settings.register_profile("ci", derandomize=True, deadline=None, database=None, max_examples=50)
settings.register_profile("dev", deadline=None, max_examples=50)
settings.register_profile("thorough", deadline=None, max_examples=1000)

settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))
