"""Constants the spec refers to."""

from typing import Final

# Pads rows of SamplerOutput.sampled_token_ids; never a real token id.
PLACEHOLDER_TOKEN_ID: Final[int] = -1
