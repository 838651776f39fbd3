"""A plugin file parsed by this interpreter even where a line is a newer Python's
syntax (PEP 701 f-strings, PEP 695 type parameters): such a line is read as a
placeholder that keeps the file's blocks, so the rest of the file is still judged."""

from __future__ import annotations

import ast
import re

#: How many lines one file may have replaced before it counts as not Python at all.
_MOST_REPLACED = 20
_DEFINITION = re.compile(r"(?:async\s+)?def\b|class\b")
_KEYWORD = re.compile(r"[a-z]+\b")
#: The statements whose placeholder must do to the flow what they do.
_FLOW = {"return": "return None", "raise": "raise RuntimeError", "yield": "yield None",
         "elif": "elif True:"}  # fmt: skip


def parse_leniently(text: str) -> tuple[ast.Module, tuple[int, ...]] | None:
    """The module and the lines read as placeholders, or None where replacing lines
    does not make it parse (a file that is no Python of any version)."""
    # A byte-order mark, which Python skips (texts kept by older runs still carry it).
    lines = text.removeprefix("\ufeff").split("\n")
    replaced: list[int] = []
    for _ in range(_MOST_REPLACED + 1):
        try:
            return ast.parse("\n".join(lines)), tuple(replaced)
        except ValueError:
            return None  # a NUL byte: not a Python file
        except SyntaxError as error:
            number = error.lineno
            if not number or number > len(lines) or number in replaced:
                return None
            lines[number - 1] = _placeholder(lines[number - 1])
            replaced.append(number)
    return None


def _placeholder(line: str) -> str:
    """A line that parses where ``line`` stood and keeps what it does to the flow: a
    ``return`` still returns (the code after it stays unreached), a ``raise`` raises, an
    ``elif`` stays one branch of its ``if``, a block's header still opens a block (a
    def's body stays a function's); anything else is ``pass``."""
    stripped = line.strip()
    indent = line[: len(line) - len(line.lstrip())]
    keyword = _KEYWORD.match(stripped)
    flow = _FLOW.get(keyword[0]) if keyword else None
    if flow is not None:
        return f"{indent}{flow}"
    if not stripped.endswith(":"):
        return f"{indent}pass"
    if _DEFINITION.match(stripped):
        return f"{indent}def _unparsed_definition():"
    return f"{indent}if True:"
