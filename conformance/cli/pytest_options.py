"""Which of the options left for pytest pytest does not know, asked of pytest itself.

``python -m conformance`` hands every option it does not know to pytest, and answers an
option close to one of its own (``--backnd``) with the option meant rather than with
pytest's usage text.  An option pytest or one of its plugins knows (``--maxfail`` is close
to ``--xfails``, ``--lf``, ``-n``, ``--max-worker-restart``) is never a typo: the answer is
pytest's own parser, built with the plugins the run would load (entry points, ``-p``,
``PYTEST_PLUGINS``), without collecting or running anything.  A ``conftest.py`` is not
loaded for this (it would run the user's code twice); an option only a conftest declares
is refused only where it is also close to one of the suite's own.
"""

from __future__ import annotations

import os
from typing import Any


class _ParserCatcher:
    """A plugin whose only hook hands over pytest's parser: ``pytest_addoption`` is a
    historic hook, so registering it late still calls it."""

    parser: Any = None

    def pytest_addoption(self, parser: Any) -> None:
        self.parser = parser


def _pytest_parser(args: list[str]) -> Any | None:
    """pytest's parser with every option of the plugins a run given ``args`` loads, or
    ``None`` where pytest cannot build it (then nothing is second-guessed)."""
    try:
        from _pytest.config import get_config

        config = get_config(list(args))
        plugins = config.pluginmanager
        plugins.consider_preparse(list(args), exclude_only=False)
        if not os.environ.get("PYTEST_DISABLE_PLUGIN_AUTOLOAD"):
            plugins.load_setuptools_entrypoints("pytest11")
        plugins.consider_env()
        catcher = _ParserCatcher()
        plugins.register(catcher)
        return catcher.parser
    except Exception:  # an old or new pytest, a plugin that fails to load: pytest will say
        return None


def pytest_view(args: list[str]) -> tuple[list[str], list[str]] | None:
    """The words of ``args`` pytest's parser would not take (``--backnd``), and every
    ``--option`` pytest and its plugins know (for a hint: ``--maxfial``); ``None`` where
    pytest's parser could not be built or refuses ``args`` itself (pytest will say why)."""
    parser = _pytest_parser(args)
    if parser is None:
        return None
    try:
        _, unknown = parser.parse_known_and_unknown_args(list(args))
    except Exception:  # pytest's own usage error (a missing value): pytest will say it
        return None
    known: list[str] = []
    # Where a pytest keeps its options elsewhere, the hint names the suite's only.
    for group in [getattr(parser, "_anonymous", None), *getattr(parser, "_groups", [])]:
        for option in getattr(group, "options", []):
            known += [name for name in option.names() if name.startswith("--")]
    return [str(word) for word in unknown], known
