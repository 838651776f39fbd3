"""asv's output with the skips folded: each skip reason once, with a count, at the end.

``asv run --show-stderr`` prints a block per skipped parameter combination
(``For parameters: ...`` then ``asv: skipped: NotImplementedError(...)``); on a
CPU-only machine every cuda, xpu and mps combination skips, hundreds of blocks
that bury the one failure that matters.  :class:`SkipFolder` passes every other
line through unchanged (failures, tracebacks, result tables, status lines) and
counts the pure-skip blocks by reason for :meth:`SkipFolder.summary`.

Not a benchmark (asv imports this module while discovering and finds none here).
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable, Iterator

# "[ 50.00%] ···· For parameters: 'reference', 'cuda', 64, 5" or the same, indented only.
_BLOCK_START = re.compile(r"^(?:\[\s*[\d.]+%\] ····\s+|\s+)For parameters: ")
_SKIP = re.compile(r"^asv: skipped: (?:\w+\()?(?P<reason>.*?)\)?$")
#: Skip reasons that name who lacks what (benchmarks.backends), folded into one line
#: per missing thing listing who lacks it, and the words that line starts with.
_LACKING = (
    # "vllm-release:0.12.0 (revision 0.12.0) lacks LogprobsTensors.cat"
    (re.compile(r"^.+? \(revision (?P<who>[^)]+)\) lacks (?P<what>.+)$"), "the revision lacks"),
    # "backend 'vllm-release:0.12.0' provides no pad_sampled_token_ids"
    (re.compile(r"^backend '(?P<who>[^']+)' provides no (?P<what>.+)$"), "the backend provides no"),
)


class SkipFolder:
    """Feed asv's output line by line; get it back without the pure-skip blocks."""

    def __init__(self) -> None:
        self.reasons: Counter[str] = Counter()
        self.lacking: dict[str, list[str]] = {}
        self._block: list[str] = []

    def feed(self, line: str) -> Iterator[str]:
        """The lines to print now (a block is held back until it is complete)."""
        if self._block and (_BLOCK_START.match(line) or not line[:1].isspace()):
            yield from self._close()
        if _BLOCK_START.match(line) or self._block:
            self._block.append(line)
            return
        yield line

    def finish(self) -> Iterator[str]:
        """The held-back lines at the end of the output."""
        yield from self._close()

    def _close(self) -> Iterator[str]:
        block, self._block = self._block, []
        body = [text.strip() for text in block[1:] if text.strip()]
        skip = _SKIP.match(body[0]) if len(body) == 1 else None
        if skip:
            reason = skip["reason"].strip("'\"")
            for pattern, words in _LACKING:
                if match := pattern.match(reason):
                    # One line per missing operation, not per backend that lacks it.
                    reason = f"{words} {match['what']}"
                    self.lacking.setdefault(reason, []).append(match["who"])
                    break
            self.reasons[reason] += 1
            return
        yield from block

    def summary(self) -> str:
        """Each skip reason once, most frequent first ('' when nothing skipped)."""
        if not self.reasons:
            return ""
        lines = [
            f"asv skipped {sum(self.reasons.values())} parameter combination(s) "
            "(NotImplementedError in setup), by reason:"
        ]
        for reason, count in self.reasons.most_common():
            revisions = ", ".join(dict.fromkeys(self.lacking.get(reason, [])))
            lines.append(f"  {count:5d}  {reason}" + (f" ({revisions})" if revisions else ""))
        return "\n".join(lines) + "\n"


def fold_skips(lines: Iterable[str]) -> tuple[list[str], str]:
    """All of ``lines`` through a :class:`SkipFolder`: the kept lines and the summary."""
    folder = SkipFolder()
    kept = [out for line in lines for out in folder.feed(line)]
    kept += list(folder.finish())
    return kept, folder.summary()
