"""DraftTokenIds.draft_token_ids is called draft_tokens."""

from dataclasses import dataclass

from broken_backends._reference import *  # noqa: F403


@dataclass
class DraftTokenIds:
    req_ids: list[str]
    draft_tokens: list[list[int]]
