"""A copy stream that never waits: the race check's self-tests put it where a class under
test takes its copy stream, as if that class never called ``wait_stream``."""

from __future__ import annotations


class StreamThatNeverWaits:
    """The copy stream, but ``wait_stream`` does nothing: as if the class never called it."""

    def __init__(self, stream):
        self._stream = stream

    def wait_stream(self, other):
        return None

    def __getattr__(self, name):
        return getattr(self._stream, name)
