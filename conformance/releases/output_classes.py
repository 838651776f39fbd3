"""The classes ``vllm/v1/outputs.py`` defined in any known release.

Read from the shipped surfaces file itself, not through :mod:`.known_surfaces`, which
reads texts with :mod:`.sources`: the reader of a tree needs these names to tell a type
``outputs.py`` re-exports from one of its imports.
"""

from __future__ import annotations

import functools
import json
from pathlib import Path

from conformance.oracle.text_surface import OUTPUTS_MODULE

#: Every known release's surfaces (:mod:`conformance.releases.known_surfaces`).
KNOWN_FILE = Path(__file__).with_name("known_surfaces.json")


@functools.cache
def output_classes() -> frozenset[str]:
    """The classes ``vllm/v1/outputs.py`` defines in any known release (not its aliases):
    a member row is ``[module, owner, name, ...]``, a class's own with no name."""
    rows = json.loads(KNOWN_FILE.read_text(encoding="utf-8"))["members"]
    return frozenset(row[1] for row in rows if row[0] == OUTPUTS_MODULE and row[1] and not row[2])
