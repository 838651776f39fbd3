"""DraftTokenIds is a @dataclass(eq=False): equal fields no longer mean equal objects."""

from dataclasses import dataclass

from broken_backends._reference import *  # noqa: F403


@dataclass(eq=False)
class DraftTokenIds:
    req_ids: list[str]
    draft_token_ids: list[list[int]]
