"""A Python file's bytes read as the interpreter reads them (PEP 263 and 3120): a UTF-8
byte-order mark and a coding declaration decide the text, and any newline convention
reads as ``\\n``. A plugin's files are judged as the text Python would run."""

from __future__ import annotations

import importlib.util


def python_text(data: bytes) -> str | None:
    """The source text, or None where Python itself could not read it (bytes its
    declared coding cannot decode, a coding Python does not know)."""
    try:
        return importlib.util.decode_source(data)
    except (SyntaxError, UnicodeDecodeError, LookupError):
        return None


def any_text(data: bytes) -> str:
    """A file's text for reading alone: a Python file as Python reads it, anything
    else (or a Python file Python cannot read) as UTF-8 with what fails to decode
    replaced."""
    return python_text(data) or data.decode("utf-8", errors="replace")
