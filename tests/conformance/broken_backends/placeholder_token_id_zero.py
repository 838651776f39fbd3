"""PLACEHOLDER_TOKEN_ID is 0 instead of -1."""

from broken_backends._reference import *  # noqa: F403

PLACEHOLDER_TOKEN_ID = 0
