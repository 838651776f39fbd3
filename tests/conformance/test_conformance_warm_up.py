"""The warm-up: every declared producer is called once before the checks."""

from __future__ import annotations

from types import SimpleNamespace

from conformance import AsyncOutputProducer, Backend
from conformance.producers.warm_up import warm_up
from reference.revisions import reference_module, revision


def test_every_declared_async_output_is_warmed_up_on_a_step_of_its_kind() -> None:
    """A Model Runner V2 class declared beside the first runner's that compiles on its
    first call must pay that before the checks, as ``make_async_output`` does: else its
    first check runs out of time under an unrelated behaviour."""
    called: list[tuple[str, bool]] = []

    def maker(name: str):
        def make(step):
            called.append((name, step.pooler_output is not None))
            return SimpleNamespace(get_output=lambda: None)

        return make

    backend = Backend(
        name="warmed",
        module=reference_module("0.32.0"),
        devices=("cpu",),
        spec_revision="0.32.0",
        make_async_output=maker("first"),
        other_async_outputs=(
            AsyncOutputProducer("mrv2", maker("mrv2")),
            AsyncOutputProducer("pooling", maker("pooling"), kind="pooling"),
        ),
    )
    result = warm_up(backend, revision("0.32.0"), check_timeout=30)
    assert called == [("first", False), ("mrv2", False), ("pooling", True)]
    assert list(result.seconds) == [
        "make_async_output",
        "other_async_outputs mrv2",
        "other_async_outputs pooling",
    ]
    assert result.errors == {}
