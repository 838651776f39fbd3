"""The known plugins (``plugins.toml``, kept with the suite): what the crater judges
when the user names none."""

from __future__ import annotations

import sys
from dataclasses import dataclass
from pathlib import Path

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

KNOWN_FILE = Path(__file__).with_name("plugins.toml")
#: A plugin that pairs with vLLM's release of its own version.
SAME_VERSION = "same-version"


@dataclass(frozen=True)
class KnownPlugin:
    name: str  #: the distribution
    pin: str | None  #: how its vLLM is found without a declared requirement
    device: str


def known_plugins(path: Path = KNOWN_FILE) -> tuple[KnownPlugin, ...]:
    data = tomllib.loads(path.read_text(encoding="utf-8"))
    return tuple(
        KnownPlugin(entry["name"], entry.get("pin"), entry.get("device", ""))
        for entry in data.get("plugin", [])
    )


def known(name: str) -> KnownPlugin | None:
    from packaging.utils import canonicalize_name

    wanted = canonicalize_name(name.partition("==")[0].strip())
    return next((p for p in known_plugins() if canonicalize_name(p.name) == wanted), None)
