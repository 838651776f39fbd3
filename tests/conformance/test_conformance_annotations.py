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
