"""Annotation normalisation: runtime objects, strings and typing spellings compare equal."""

from __future__ import annotations

import typing

import numpy as np
import pytest
import torch

from conformance.oracle.annotations import normalise
from reference import LogprobsTensors


@pytest.mark.parametrize(
    ("annotation", "expected"),
    [
        (list[int] | None, "list[int] | None"),
        ("Optional[List[int]]", "list[int] | None"),
        (typing.Optional[typing.List[int]], "list[int] | None"),  # noqa: UP006, UP045 - the point
        ("None | set[str]", "set[str] | None"),
        (torch.Tensor, "torch.Tensor"),
        ("torch.Tensor", "torch.Tensor"),
        (LogprobsTensors | None, "LogprobsTensors | None"),
        ("reference.outputs.LogprobsTensors", "LogprobsTensors"),
        ('"LogprobsTensors"', "LogprobsTensors"),
        (dict[str, LogprobsTensors | None], "dict[str, LogprobsTensors | None]"),
        (list[np.ndarray], "list[np.ndarray]"),
        ("list[numpy.ndarray]", "list[np.ndarray]"),
        ("Union[Optional[List[int]], str]", "list[int] | str | None"),
    ],
)
def test_normalise(annotation: object, expected: str) -> None:
    assert normalise(annotation) == expected


def test_different_annotations_stay_different() -> None:
    assert normalise(list[list[int]]) != normalise("list[np.ndarray]")
    assert normalise("set[int]") != normalise("set[str]")


def test_a_string_naming_a_class_imported_bare_reads_as_the_class() -> None:
    # ``from torch import Tensor`` under ``from __future__ import annotations``
    namespace = {"Tensor": torch.Tensor, "ndarray": np.ndarray, "Tensors": LogprobsTensors}
    assert normalise("Tensor | None", namespace) == normalise(torch.Tensor | None)
    assert normalise("list[ndarray]", namespace) == "list[np.ndarray]"
    assert normalise("Tensors", namespace) == "Tensors"  # a class of no qualified module


def test_a_field_annotated_with_a_bare_tensor_string_reads_as_torch_tensor() -> None:
    import dataclasses
    import sys
    import types

    from conformance.oracle.annotations import globals_declaring

    module = types.ModuleType("bare_tensor_outputs")
    sys.modules[module.__name__] = module  # a dataclass looks its module up
    try:
        exec(  # a module as a backend writes it, string annotations and all
            "from __future__ import annotations\nimport dataclasses\nfrom torch import Tensor\n"
            "@dataclasses.dataclass\nclass SamplerOutput:\n    sampled_token_ids: Tensor\n",
            module.__dict__,
        )
        cls = module.SamplerOutput
        [field] = dataclasses.fields(cls)
        assert field.type == "Tensor"
        namespace = globals_declaring(cls, "sampled_token_ids")
        assert normalise(field.type, namespace) == "torch.Tensor"
    finally:
        del sys.modules[module.__name__]
