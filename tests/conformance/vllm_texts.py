"""vLLM texts made for the tests from the shared release texts: one change each.

The release texts (fetched into the user cache) are read, never copied into the
repository; each variant is written into a test's own folder.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from vllm_release_texts import RELEASES, SKIP_REASON

BASE = "0.33.0"


def release_text(version: str = BASE) -> str:
    path = RELEASES / f"outputs-{version}.py.txt"
    if not path.is_file():
        pytest.skip(SKIP_REASON)
    return path.read_text(encoding="utf-8")


def producer_text(version: str = BASE) -> str:
    path = RELEASES / "producers" / f"producers-{version}.py.txt"
    if not path.is_file():
        pytest.skip(SKIP_REASON)
    return path.read_text(encoding="utf-8")


def _replaced(text: str, old: str, new: str) -> str:
    assert text.count(old) == 1, f"the {BASE} text no longer holds {old!r}"
    return text.replace(old, new)


_NANS = "    num_nans_in_logits: dict[str, int] | None = None\n"
_SLICE_REQUEST = "    def slice_request(self, req_idx: int, num_positions: int):\n"
_END = "        end_idx = req_idx + num_positions\n        return LogprobsLists("

#: name -> (how to make it from the 0.33.0 text, the one change it makes: (type, member, change))
VARIANTS = {
    "field-added": (
        lambda t: _replaced(t, _NANS, _NANS + "    npu_stream_id: int = 0\n"),
        ("ModelRunnerOutput", "npu_stream_id", "field added"),
    ),
    "field-removed": (
        lambda t: _replaced(t, _NANS, ""),
        ("ModelRunnerOutput", "num_nans_in_logits", "field removed"),
    ),
    "signature-changed": (
        lambda t: _replaced(
            t,
            _SLICE_REQUEST,
            _SLICE_REQUEST.replace("num_positions: int", "num_positions: int = 1"),
        ),
        ("LogprobsLists", "slice_request", "signature changed"),
    ),
    "behaviour-changed": (
        lambda t: _replaced(t, _END, _END.replace("num_positions\n", "num_positions + 1\n")),
        ("LogprobsLists", "slice_request", "body changed"),
    ),
}


def write_variant(folder: Path, name: str, file_name: str | None = None) -> Path:
    """The 0.33.0 text with one change, as ``folder/<file_name>`` (any name)."""
    make, _ = VARIANTS[name]
    path = folder / (file_name or f"outputs-{name}.py")
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(make(release_text()), encoding="utf-8")
    return path


def write_tree(folder: Path, outputs: str | None = None, producers: str | None = None) -> Path:
    """A source tree shaped like vLLM's: ``vllm/v1/outputs.py`` and the producers' files at
    their real paths (laid out as :mod:`conformance.releases.texts` lays them out)."""
    from conformance.releases.texts import write_tree as lay_out

    lay_out(
        outputs if outputs is not None else release_text(),
        BASE,
        folder,
        producers if producers is not None else producer_text(),
    )
    return folder
