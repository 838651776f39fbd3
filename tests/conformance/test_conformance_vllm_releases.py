"""The real vLLM releases, loaded from their ``outputs.py`` with stubs, judged as ``--backend vllm``.

Each release from 0.10.2 on passes its own revision; judged against a neighbouring
revision it fails in exactly the types that differ.  The texts are read from
the release texts fetched into the user cache; without them these
tests skip.  Releases whose texts are byte for byte identical run once, under the
first version that ships the text (the others map to the same revision, which the
registry tests check).

The whole matrix is long (a process per run, about 60 runs): the newest release's runs
are part of ``nox -s tests``; every other release's are marked ``long`` and run in
``nox -s tests-long``, which CI runs too.
"""

from __future__ import annotations

import hashlib
from dataclasses import replace
from pathlib import Path

import pytest
import suite_runner
from once_per_session import once_per_session
from vllm_release_texts import RELEASES, SKIP_REASON

from conformance.oracle import revisions
from conformance.releases.texts import (
    mrv2_text_beside,
    producer_text_beside,
    release_texts,
    write_stub_tree,
)

pytestmark = pytest.mark.skipif(not RELEASES.is_dir(), reason=SKIP_REASON)


def _distinct_texts() -> dict[str, Path]:
    """One version per distinct supported text, oldest first."""
    if not RELEASES.is_dir():
        return {}
    seen: set[str] = set()
    distinct = {}
    for version, path in release_texts(RELEASES).items():
        digest = hashlib.sha256(path.read_bytes()).hexdigest()
        try:
            revisions.revision_for_vllm_version(version)
        except revisions.UnsupportedReleaseError:
            continue
        if digest not in seen:
            seen.add(digest)
            distinct[version] = path
    return distinct


DISTINCT = _distinct_texts()
#: The release whose runs stay in the quick session: the newest, which backends move to.
QUICK = max(DISTINCT, key=lambda v: tuple(map(int, v.split("."))), default="")


def _quick_or_long(values: list) -> list:
    """Each value as a parameter; all but those of the newest release marked ``long``."""
    params = []
    for value in values:
        version = value[0] if isinstance(value, tuple) else value
        marks = () if version == QUICK else (pytest.mark.long,)
        params.append(pytest.param(*(value if isinstance(value, tuple) else (value,)), marks=marks))
    return params


def _judge(tmp_path: Path, path: Path, *options: str) -> suite_runner.Run:
    return suite_runner.subprocess_run(
        tmp_path, "--vllm-outputs", str(path), *options, module="conformance"
    )


def _matrix_run(item: pytest.Item) -> tuple[str, list[str]] | None:
    """The run of the release matrix a test of this module reads: ``(label, argv)``."""
    params = getattr(item, "callspec", None)
    if Path(str(item.path)) != Path(__file__) or params is None:
        return None
    name, version = item.originalname, params.params.get("version")
    if name == "test_release_passes_its_own_revision":
        return f"own-{version}", ["--vllm-outputs", str(DISTINCT[version])]
    if name == "test_release_own_producers_pass_their_revision":
        path = str(DISTINCT_PRODUCERS[version])
        return f"producers-{version}", ["--vllm-outputs", path, "-k", PRODUCER_CHECKS]
    if (
        name
        == "test_release_judged_by_a_neighbouring_revision_fails_in_exactly_the_types_that_differ"
    ):
        judged = params.params["judged"]
        argv = ["--vllm-outputs", str(DISTINCT[version]), "--revision", judged]
        return f"{version}-as-{judged}", argv
    return None


@pytest.fixture(scope="module")
def matrix(request: pytest.FixtureRequest, tmp_path_factory) -> dict[str, suite_runner.Run]:
    """Every run of the release matrix this session's tests read, made once (for every
    xdist worker) before the first of them: ``python -m conformance --vllm-outputs ...``,
    each in a process of its own forked from a warm parent (``warm_runs.py``)."""
    argvs = dict(filter(None, map(_matrix_run, request.session.items)))

    def run_all(folder: Path) -> dict[str, list]:
        made = suite_runner.warm_runs(folder, argvs)
        return {label: [r.exit_code, r.report, r.output] for label, r in made.items()}

    made = once_per_session(tmp_path_factory, "release-matrix", run_all)
    return {label: suite_runner.Run(*made[label]) for label in argvs}


def _matrix(matrix: dict[str, suite_runner.Run], request: pytest.FixtureRequest):
    label, _ = _matrix_run(request.node)
    return matrix[label]


@pytest.mark.parametrize("version", _quick_or_long(list(DISTINCT)))
def test_release_passes_its_own_revision(matrix, request, version: str) -> None:
    run = _matrix(matrix, request)
    assert run.exit_code == 0, run.output[-3000:]
    report = run.report
    assert report is not None
    revision = revisions.revision(revisions.revision_for_vllm_version(version))
    assert report["spec_revision"] == revision.name
    assert report["spec_revision_source"] == "detected"
    assert report["backend"] == {
        "name": "vllm",
        "module": "vllm.v1.outputs",
        "version": version,
        "devices_declared": ["cpu", "cuda"],
        "steps_declared": None,  # every kind of step the release's runner builds
    }
    summary = report["summary"]
    assert summary["failed"] == summary["errors"] == summary["xpassed"] == 0
    assert summary["passed"] >= 100
    ran = _judged(report)
    assert sorted(revision.all_behaviours - ran) == []
    # vLLM's own producers of the release (its texts lie beside) are judged too, and its
    # async output waits for the (simulated) device.
    if producer_text_beside(DISTINCT[version], version) is not None:
        _assert_own_producers_pass(report, revision, version)


def _assert_own_producers_pass(report: dict, revision, version: str) -> None:
    passed = _judged(report)
    assert sorted(revision.producer_behaviours - passed - UNDECLARED_BY_VLLM - TRITON_ONLY) == []
    race = [t for t in report["tests"] if t["behaviour"].endswith(":waits-for-device")]
    # One busy step, and one with rows of several tokens where the runner hands them over,
    # per runner's async output (Model Runner V2's only on the steps its runner builds).
    judged = [t for t in race if t["outcome"] != "skipped"]
    assert {(t["device"], t["outcome"]) for t in judged} == {("cuda-simulated", "passed")}
    assert all("not applicable" in t["message"] for t in race if t["outcome"] == "skipped")
    first = [
        t
        for t in judged
        if "(gpu-model-runner)" in str(t["producer"])
        and t["behaviour"] == "producer.async_output:waits-for-device"
    ]
    assert len(first) == (2 if revision.async_output.multi_token_rows else 1)
    # Each pooling async output's pooled rows are raced once: the first runner's from
    # 0.14.0 (its own copy helper in a release text the suite's stand-in), Model Runner
    # V2's from 0.17.0.
    pooling = {
        str(t["producer"]).rsplit(".", 1)[-1]
        for t in judged
        if t["behaviour"] == "producer.pooling_output:waits-for-device"
    }
    expected = set()
    if _version(version) >= (0, 14):
        expected.add("AsyncGPUPoolingModelRunnerOutput (gpu-model-runner)")
    if _version(version) >= (0, 17):
        expected.add("AsyncPoolingOutput (model-runner-v2)")
    assert pooling == expected
    if _version(version) >= (0, 12):
        assert any(
            "gpu.async_utils.AsyncOutput (model-runner-v2)" in str(t["producer"]) for t in judged
        )


def _version(text: str) -> tuple[int, ...]:
    return tuple(int(part) for part in text.split("."))


#: The checks of a run of vLLM's own producers alone.
PRODUCER_CHECKS = "producer or get_kv_connector"
#: vLLM has no standalone padding producer.
UNDECLARED_BY_VLLM = {"producer.pad_sampled_token_ids"}
#: Judged only where Triton runs, and only from 0.19.0 (Model Runner V2's rejection
#: sampler): test_conformance_triton_speculative_logprobs.py runs vLLM's own there.
TRITON_ONLY = {"producer.gather_logprobs:speculative-rows"}


def _judged(report: dict) -> set[str]:
    """Behaviours that passed, or caught a known defect of vLLM's own release (named)."""
    return {
        t["behaviour"]
        for t in report["tests"]
        if t["outcome"] == "passed"
        or (t["outcome"] == "xfailed" and "known defect of vLLM" in t["message"])
    }


def _distinct_producers() -> dict[str, Path]:
    """One version per distinct pair of outputs.py and producers text whose producers changed
    alone: the first version of each outputs.py text has its producers judged by its own run
    (:func:`test_release_passes_its_own_revision`), the same checks on the same texts."""
    if not RELEASES.is_dir():
        return {}
    seen: set[str] = set()
    distinct = {}
    for version, path in release_texts(RELEASES).items():
        producers = producer_text_beside(path, version)
        if producers is None or version not in revisions.known_releases():
            continue
        body = producers.read_text(encoding="utf-8").split("\n# ---- ", 1)[-1]
        runner_v2 = mrv2_text_beside(path, version)
        if runner_v2 is not None:  # Model Runner V2's producers are judged with them
            body += runner_v2.read_text(encoding="utf-8").split("\n# ---- ", 1)[-1]
        digest = hashlib.sha256(path.read_bytes() + body.encode()).hexdigest()
        if digest not in seen:
            seen.add(digest)
            if version not in DISTINCT:
                distinct[version] = path
    return distinct


DISTINCT_PRODUCERS = _distinct_producers()


@pytest.mark.long
@pytest.mark.parametrize("version", list(DISTINCT_PRODUCERS))
def test_release_own_producers_pass_their_revision(matrix, request, version: str) -> None:
    run = _matrix(matrix, request)
    assert run.exit_code == 0, run.output[-3000:]
    revision = revisions.revision(revisions.revision_for_vllm_version(version))
    _assert_own_producers_pass(run.report, revision, version)


@pytest.mark.parametrize("version", ["0.11.0", "0.32.0"])
def test_release_async_output_without_synchronize_fails_the_race_check(
    tmp_path, version: str
) -> None:
    tree = write_stub_tree(RELEASES / f"outputs-{version}.py.txt", version, tmp_path / "tree")
    run = suite_runner.subprocess_run(
        tmp_path,
        "--backend",
        "vllm_without_synchronize:make",
        "-k",
        "waits_for_the_device",
        module="conformance",
        env={"PYTHONPATH": str(tree)},
    )
    race = run.report["tests"]
    assert race and all(r["outcome"] == "failed" for r in race), run.output[-2000:]
    # It names the copy read (or returned) before the copy arrived.
    assert all("sampled_token_ids" in r["message"] for r in race), race
    assert all("before its copy arrived" in r["message"] for r in race), race


def _unmet(judged, release) -> bool:
    """True when the release's type lacks something the judged revision's type states.

    Extra methods or types of the release are no deviation (a newer release keeps
    an older revision's contract where it only adds); anything missing or changed is.
    """
    if release is None:
        return True
    if (judged.kind, judged.fields, judged.dataclass_flags) != (
        release.kind,
        release.fields,
        release.dataclass_flags,
    ):
        return True
    if judged.abstract_methods != release.abstract_methods:
        return True
    return any(release.method_named(m.name) != m for m in judged.methods)


def _differing_spec_types(release_revision: str, judged: str) -> set[str]:
    """The spec types (held types under their holder) whose judged contract the release breaks."""
    own, other = revisions.revision(release_revision), revisions.revision(judged)
    broken = {name for name, t in other.types.items() if _unmet(t, own.types.get(name))}
    broken |= {b.partition(".")[0] for b in other.behaviours - own.behaviours}
    # vLLM's own async output of the release (its producer text lies beside) keeps the
    # contract of its own release: judged by another contract, it fails.
    # (Model Runner V2's pooling class joining is no change of the other contracts, and
    # the NaN counts and routed experts are asked only of a class that takes them: a
    # release's own class takes them where its own runner hands them over.  Every
    # release's own reads the KV output when asked, whenever its runner sets it.)
    handed_over = {
        "pooling_output": False,
        "nan_counts": False,
        "nan_counts_mrv2": False,
        "routed_experts": False,
        "sampling_masks": False,
        "sampling_masks_listed": "request-slots",
        "kv_after_building": False,
    }
    if replace(own.async_output, **handed_over) != replace(other.async_output, **handed_over):
        broken.add("AsyncModelRunnerOutput")
    # Sampling masks are asked of every Model Runner V2 shape (its sampler output holds
    # them): a release whose own hands none over fails a contract that asks for them, and
    # one that lists them by another release's tolists() fails its call.
    if other.async_output.sampling_masks and (
        not own.async_output.sampling_masks
        or own.async_output.sampling_masks_listed != other.async_output.sampling_masks_listed
    ):
        broken.add("AsyncModelRunnerOutput")
    # Model Runner V2's own maps its sampler's NaN counts from 0.13.0: an older one fails
    # a contract that asks it of that runner's shape.
    if other.async_output.nan_counts_mrv2 and not own.async_output.nan_counts_mrv2:
        broken.add("AsyncModelRunnerOutput")
    held = {t.name: t.spec_type for r in (own, other) for t in r.types.values()}
    return {held.get(name, name) for name in broken} - {"module"}


def _neighbour_pairs() -> list[tuple[str, str]]:
    """(release, a revision next to its own) for each distinct text, both directions."""
    names = revisions.known_revisions()
    pairs = []
    for version in DISTINCT:
        i = names.index(revisions.revision_for_vllm_version(version))
        pairs += [(version, names[j]) for j in (i - 1, i + 1) if 0 <= j < len(names)]
    return pairs


@pytest.mark.parametrize(("version", "judged"), _quick_or_long(_neighbour_pairs()))
def test_release_judged_by_a_neighbouring_revision_fails_in_exactly_the_types_that_differ(
    matrix, request, version: str, judged: str
) -> None:
    run = _matrix(matrix, request)
    report = run.report
    assert report is not None and report["spec_revision_source"] == "given"
    failing = [t for t in report["tests"] if t["outcome"] in ("failed", "error")]
    expected = _differing_spec_types(revisions.revision_for_vllm_version(version), judged)
    shown = {t["nodeid"]: t["message"][:300] for t in failing}
    # A check of another type that builds the runner's ModelRunnerOutput fails where that
    # type's fields differ (0.34.0 dropped req_id_to_index): it says so.
    built = {
        t["spec_type"]
        for t in failing
        if t["spec_type"] not in expected
        and "ModelRunnerOutput" in expected
        and "ModelRunnerOutput" in t["message"]
    }
    assert {t["spec_type"] for t in failing} - built == expected, shown
    assert run.exit_code == (1 if expected else 0), run.output[-3000:]
    for record in failing:
        assert record["behaviour"], record
        assert record["message"].startswith(f"[{record['behaviour']}]"), record["message"]


def _assert_one_usage_error(run: suite_runner.Run, words: str) -> None:
    assert run.exit_code == pytest.ExitCode.USAGE_ERROR, run.output[-2000:]
    errors = [line for line in run.output.splitlines() if line.startswith("ERROR:")]
    assert len(errors) == 1 and words in errors[0], run.output[-2000:]
    assert "Traceback" not in run.output and "INTERNALERROR" not in run.output


def _types_not_applicable(report: dict) -> dict[str, set[str]]:
    """Per spec type, the outcomes of its checks (``type-absent`` for a skip of that cause)."""
    found: dict[str, set[str]] = {}
    for test in report["tests"]:
        outcome = test.get("skip_cause") or test["outcome"]
        found.setdefault(test["spec_type"], set()).add(outcome)
    return found


def _removed(report: dict) -> set[str]:
    return {c["type"] for c in report["vllm_changes"] if c["change"] == "type removed"}


def test_a_release_older_than_0_10_2_is_judged_on_the_types_it_has(tmp_path) -> None:
    run = _judge(tmp_path, RELEASES / "outputs-0.10.1.py.txt")
    assert run.exit_code == 0, run.output[-3000:]
    assert "nearest known 0.10.2" in run.output
    assert _removed(run.report) == {"AsyncModelRunnerOutput", "DraftTokenIds"}
    outcomes = _types_not_applicable(run.report)
    assert outcomes["AsyncModelRunnerOutput"] == {"type-absent"}
    assert outcomes["DraftTokenIds"] == {"type-absent"}
    assert "passed" in outcomes["KVConnectorOutput"] and "passed" in outcomes["LogprobsTensors"]


def _without_class(text: str, name: str) -> str:
    """``text`` with the class ``name`` (and its decorators) cut out."""
    import ast

    lines = text.splitlines(keepends=True)
    [node] = [n for n in ast.parse(text).body if isinstance(n, ast.ClassDef) and n.name == name]
    start = min([node.lineno, *(d.lineno for d in node.decorator_list)]) - 1
    return "".join(lines[:start] + lines[node.end_lineno :])


def test_a_fork_that_dropped_a_spec_type_is_judged_on_the_types_it_has(tmp_path) -> None:
    fork = tmp_path / "outputs.py"
    newest = (RELEASES / f"outputs-{QUICK}.py.txt").read_text(encoding="utf-8")
    fork.write_text(_without_class(newest, "AsyncModelRunnerOutput"), encoding="utf-8")
    run = _judge(tmp_path, fork)
    assert run.exit_code == 0, run.output[-3000:]
    assert "type removed AsyncModelRunnerOutput" in run.output
    assert _removed(run.report) == {"AsyncModelRunnerOutput"}
    outcomes = _types_not_applicable(run.report)
    assert outcomes["AsyncModelRunnerOutput"] == {"type-absent"}
    assert "passed" in outcomes["DraftTokenIds"]
    # Judged at that revision, the reference is held to the types the fork has.
    reference = suite_runner.subprocess_run(
        tmp_path, "--backend", "reference", "--revision", str(fork), module="conformance"
    )
    assert reference.exit_code == 0, reference.output[-3000:]
    assert _types_not_applicable(reference.report)["AsyncModelRunnerOutput"] == {"type-absent"}


def test_a_release_newer_than_the_newest_known_is_judged_by_its_own_text(tmp_path) -> None:
    future = tmp_path / "outputs-0.35.0.py.txt"
    future.write_bytes((RELEASES / "outputs-0.34.0.py.txt").read_bytes())
    run = _judge(tmp_path, future)
    assert run.exit_code == 0, run.output[-2000:]
    assert (
        "judged against vLLM outputs-0.35.0.py.txt = nearest known 0.34.0 + 0 changes"
        in (run.report["spec_revision_detail"])
    )
    # ... and judging it against a release explicitly still works:
    run = _judge(tmp_path, future, "--revision", "0.34.0")
    assert run.exit_code == 0, run.output[-2000:]
    assert run.report["spec_revision_source"] == "given"


def test_a_folder_gives_a_report_per_release_and_the_matrix(tmp_path) -> None:
    folder = tmp_path / "releases"
    folder.mkdir()
    for version in ("0.10.1", "0.11.2", "0.12.0"):
        name = f"outputs-{version}.py.txt"
        (folder / name).write_bytes((RELEASES / name).read_bytes())
    # The releases' own runs above judge them whole; here a few checks each show the folder.
    run = suite_runner.subprocess_run(
        tmp_path,
        "--vllm-outputs",
        str(folder),
        "--report-dir",
        "out",
        "-k",
        "draft_token_ids",
        module="conformance",
        report=False,
    )
    assert run.exit_code == 0, run.output[-3000:]
    out = tmp_path / "out"
    assert sorted(p.name for p in out.glob("report-*.json")) == [
        "report-0.11.2.json",
        "report-0.12.0.json",
    ]
    summary = (out / "summary.md").read_text()
    assert "| 0.11.2 | 0.11.1 (own) | pass |" in summary
    assert "| 0.10.1 | - | unsupported |" in summary
