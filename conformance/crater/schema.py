"""The crater report's schema, owned by its writer; ``schema.json`` beside this module is
read by ``reports`` too (which never imports the suite)."""

from __future__ import annotations

import json
from pathlib import Path

SCHEMA_FILE = Path(__file__).with_name("schema.json")
_DATA = json.loads(SCHEMA_FILE.read_text(encoding="utf-8"))

SCHEMA: str = _DATA["schema"]
REPORT_KEYS: tuple[str, ...] = tuple(_DATA["report_keys"])
RECORD_KEYS: tuple[str, ...] = tuple(_DATA["record_keys"])
FINDING_KEYS: tuple[str, ...] = tuple(_DATA["finding_keys"])
ROLES: dict[str, str] = dict(_DATA["roles"])
VERDICTS: dict[str, str] = dict(_DATA["verdicts"])
#: Each finding ``kind`` and what it means.
KINDS: dict[str, str] = dict(_DATA["kinds"])
