"""ModelRunnerOutput drops num_nans_in_logits when pickled."""

import dataclasses

from broken_backends._reference import *  # noqa: F403
from broken_backends._reference import ModelRunnerOutput as _ModelRunnerOutput


@dataclasses.dataclass
class ModelRunnerOutput(_ModelRunnerOutput):
    def __reduce__(self):
        fields = {f.name: getattr(self, f.name) for f in dataclasses.fields(self)}
        fields["num_nans_in_logits"] = None
        return (_rebuild, (fields,))


def _rebuild(fields: dict) -> ModelRunnerOutput:
    return ModelRunnerOutput(**fields)
