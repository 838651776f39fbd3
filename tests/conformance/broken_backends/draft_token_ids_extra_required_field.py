"""DraftTokenIds has an extra required field."""

from dataclasses import dataclass

from broken_backends._reference import *  # noqa: F403


@dataclass
class DraftTokenIds:
    req_ids: list[str]
    draft_token_ids: list[list[int]]
    num_draft_tokens: int
