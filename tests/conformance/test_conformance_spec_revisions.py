"""Spec revisions as data: the registry, aliases, version detection, behaviours and their checks."""

from __future__ import annotations

import importlib
from pathlib import Path

import pytest
import suite_runner

import reference
from conformance.oracle import revisions
from conformance.oracle.surface import surface_checks
from conformance.run.nodeids import CHECKS_DIR
from conformance.spec_names import SPEC_NAMES
from reference.revisions.behaviours import BEHAVIOURS, PRODUCER_BEHAVIOURS, is_known


def test_revisions_in_release_order_with_2025_10_between_0_11_0_and_0_11_1() -> None:
    names = revisions.known_revisions()
    assert names[:4] == ("0.10.2", "0.11.0", "2025.10", "0.11.1")
    assert names[-1] == "0.34.0"
    assert len(names) == len(set(names)) == 22
    assert revisions.DEFAULT_REVISION == "2025.10"


@pytest.mark.parametrize(
    ("release", "revision"),
    [
        ("0.11.2", "0.11.1"),
        ("0.15.1", "0.14.0"),
        ("0.19.1", "0.18.0"),
        ("0.26.0", "0.23.0"),
        ("0.33.0", "0.33.0"),
    ],
)
def test_releases_with_identical_types_share_a_revision(release: str, revision: str) -> None:
    assert revisions.canonical_name(release) == revision
    assert release in revisions.revision(release).releases


def test_every_release_from_0_10_2_on_is_covered_once() -> None:
    releases = [r for rev in revisions.all_revisions() for r in rev.releases]
    assert len(releases) == len(set(releases)) == 37
    assert releases[0] == "0.10.2" and releases[-1] == "0.34.0"


@pytest.mark.parametrize(
    ("version", "revision"),
    [
        ("0.12.0", "0.12.0"),
        ("0.12.0rc1", "0.12.0"),
        ("0.12.0+cu128", "0.12.0"),
        ("0.11.3", "0.11.1"),  # an unknown patch release: the newest known release before it
        ("0.10.2", "0.10.2"),
    ],
)
def test_installed_version_selects_its_revision(version: str, revision: str) -> None:
    assert revisions.revision_for_vllm_version(version) == revision


@pytest.mark.parametrize(
    ("version", "words"),
    [
        ("0.10.1.1", "lacks spec types"),
        ("0.9.2", "lacks spec types"),
        (
            "0.35.0",
            "newer than the newest release this suite knows (0.34.0); judge it against that one explicitly with --revision 0.34.0",
        ),
        ("not-a-version", "cannot be read"),
    ],
)
def test_versions_the_suite_cannot_judge_say_why(version: str, words: str) -> None:
    with pytest.raises(
        revisions.UnsupportedReleaseError, match=words.replace("(", r"\(").replace(")", r"\)")
    ):
        revisions.revision_for_vllm_version(version)


def test_unknown_revision_lists_the_known_ones() -> None:
    with pytest.raises(
        revisions.UnknownRevisionError,
        match=r"unknown spec revision '2099\.01'; known revisions: 0\.10\.2",
    ):
        revisions.revision("2099.01")


def test_2025_10_describes_the_seven_types_and_the_reference_matches_it() -> None:
    revision = revisions.revision("2025.10")
    assert sorted(revision.types) == sorted(SPEC_NAMES)
    deviations = [
        d
        for type_spec in revision.types.values()
        for check in surface_checks(type_spec)
        for d in check.run(getattr(reference, type_spec.name))
    ]
    assert deviations == []


def test_a_field_without_an_annotation_is_told_apart_from_a_missing_one() -> None:
    import collections

    spec = revisions.revision("2025.10").types["LogprobsTensors"]
    checks = {c.id: c for c in surface_checks(spec)}
    plain = collections.namedtuple(
        "LogprobsTensors", ["logprob_token_ids", "logprobs", "selected_token_ranks"]
    )
    assert checks["annotation[logprobs]"].run(plain) == [
        "LogprobsTensors.logprobs: expected annotation torch.Tensor, "
        "found none (the field is not annotated)"
    ]
    two = collections.namedtuple("LogprobsTensors", ["logprob_token_ids", "logprobs"])
    assert checks["annotation[selected_token_ranks]"].run(two) == [
        "LogprobsTensors.selected_token_ranks: expected annotation torch.Tensor, found no such field"
    ]


def test_every_revision_names_only_known_behaviours() -> None:
    for revision in revisions.all_revisions():
        unknown = sorted(b for b in revision.all_behaviours if not is_known(b))
        assert unknown == [], revision.name


def _check_behaviours() -> dict[str, set[str]]:
    """Behaviour -> the check modules with a check of it (from the checks' own markers)."""
    found: dict[str, set[str]] = {}
    for path in sorted(Path(CHECKS_DIR).glob("test_*.py")):
        module = importlib.import_module(f"conformance.checks.{path.stem}")
        module_marks = getattr(module, "pytestmark", [])
        module_marks = module_marks if isinstance(module_marks, list) else [module_marks]
        for name, function in vars(module).items():
            if not name.startswith("test_") or not callable(function):
                continue
            marks = [*getattr(function, "pytestmark", []), *module_marks]
            behaviour = next((m.args[0] for m in marks if m.name == "behaviour"), None)
            if behaviour is not None:
                found.setdefault(behaviour, set()).add(path.name)
            # A parametrised check may give each case its own behaviour (a kind of step).
            for mark in marks:
                if mark.name != "parametrize":
                    continue
                for param in mark.args[1]:
                    for param_mark in getattr(param, "marks", ()):
                        if param_mark.name == "behaviour":
                            found.setdefault(param_mark.args[0], set()).add(path.name)
    return found


def test_every_behaviour_has_a_check_and_every_check_a_known_behaviour() -> None:
    marked = _check_behaviours()
    unknown = sorted(b for b in marked if not is_known(b))
    assert unknown == []
    needed = set(BEHAVIOURS) | set(PRODUCER_BEHAVIOURS)
    for revision in revisions.all_revisions():
        needed |= revision.surface_behaviours
    # Producer checks of the race and surface behaviours are marked per function; the
    # async output's logprobs check takes the judged revision's rule with its cases.
    dynamic = {
        f"producer.async_output:logprobs-{r.async_output.logprobs}"
        for r in revisions.all_revisions()
    }
    assert sorted(needed - set(marked) - dynamic) == []
    assert all(is_known(b) for b in dynamic)


def test_list_revisions_prints_one_line_per_revision_with_its_releases(tmp_path) -> None:
    run = suite_runner.subprocess_run(
        tmp_path, "--list-revisions", module="conformance", report=False
    )
    assert run.exit_code == 0
    lines = run.output.strip().splitlines()
    assert [line.split()[0] for line in lines] == list(revisions.known_revisions())
    by_name = {line.split()[0]: line for line in lines}
    assert "0.14.0, 0.14.1, 0.15.0, 0.15.1" in by_name["0.14.0"]
    assert "[default]" in by_name["2025.10"]


def test_the_conformance_readme_names_every_behaviour() -> None:
    readme = (Path(CHECKS_DIR).parent / "README.md").read_text(encoding="utf-8")
    missing = [b for b in (*BEHAVIOURS, *PRODUCER_BEHAVIOURS) if f"`{b}`" not in readme]
    assert missing == []


def test_the_readme_tables_are_made_from_the_revision_data() -> None:
    from conformance.cli.revision_listing import readme_with_tables

    readme = (Path(CHECKS_DIR).parent / "README.md").read_text(encoding="utf-8")
    assert readme_with_tables(readme) == readme, (
        "conformance/README.md's release matrix or behaviour table is stale: "
        "run python -m conformance.cli.revision_listing"
    )


def test_a_release_added_to_the_data_appears_in_the_matrix(monkeypatch) -> None:
    from dataclasses import replace

    from conformance.cli import revision_listing

    *older, newest = revision_listing.all_revisions()
    grown = replace(newest, releases=(*newest.releases, "0.33.1"))
    monkeypatch.setattr(revision_listing, "all_revisions", lambda: [*older, grown])
    assert (
        f"| {newest.name} | {newest.name}, 0.33.1 |" in revision_listing.release_matrix_markdown()
    )


def test_the_guides_release_range_is_read_from_the_release_list(monkeypatch) -> None:
    from conformance.cli import revision_listing
    from conformance.oracle import revisions as oracle

    readme = (Path(CHECKS_DIR).parent / "README.md").read_text(encoding="utf-8")
    newest = oracle.known_releases()[-1]
    assert f"release from <!-- release-range -->0.10.2 to {newest}<!-- /release-range -->" in readme
    monkeypatch.setattr(oracle, "known_releases", lambda: ("0.10.2", newest, "0.99.0"))
    regenerated = revision_listing.readme_with_tables(readme)
    assert regenerated.count("<!-- release-range -->0.10.2 to 0.99.0<!-- /release-range -->") == 2


def test_filter_leaves_a_plugins_own_trailing_fields_at_their_defaults() -> None:
    from typing import NamedTuple

    import pytest
    import torch

    from conformance.checks.test_logprobs_tensors_filter import _expect_no_request_boundaries

    class LogprobsTensors(NamedTuple):
        logprob_token_ids: torch.Tensor
        logprobs: torch.Tensor
        selected_token_ranks: torch.Tensor
        cu_num_generated_tokens: list[int] | None = None
        layout: str = "rows"  # the plugin's own, with a default that is not None

    t = torch.zeros(1)
    _expect_no_request_boundaries(LogprobsTensors(t, t, t), "filter(...)")
    with pytest.raises(pytest.fail.Exception, match=r"found cu_num_generated_tokens=\[0\]"):
        _expect_no_request_boundaries(LogprobsTensors(t, t, t, [0]), "filter(...)")
