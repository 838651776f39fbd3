"""vLLM texts with changes, judged: vLLM's own passes itself; a backend is judged by the change.

Each text is the 0.33.0 text with one change (``vllm_texts.VARIANTS``), or a source tree
shaped like vLLM's with one producer changed.  The suite runs in this process (the
self-run of each text, which finds the rules it supersedes, is one process per text,
cached in ``XDG_CACHE_HOME``, one cache for every xdist worker); runs are shared by the
tests that read them.
"""

from __future__ import annotations

import os
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
import suite_runner
import vllm_texts
from once_per_session import session_folder

from conformance.judged.superseding import superseded_checks
from conformance.releases.text_revision import text_revision

#: The check modules of each variant's changed type (the own runs judge those and the
#: changes; the self-run before them judged every check).
MODULES = {
    "field-added": "model_runner_output",
    "field-removed": "model_runner_output",
    "signature-changed": "logprobs_lists",
    "behaviour-changed": "logprobs_lists",
}
#: The 0.33.0 gather_logprobs, its ranks off by one: a producer whose results changed.
_RANKS = "        return LogprobsTensors(indices, logprobs, token_ranks)"


class Runs:
    """The texts of this module, their self-runs started together, and the runs made."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.texts = {name: vllm_texts.write_variant(folder, name) for name in vllm_texts.VARIANTS}
        producers = vllm_texts.producer_text()
        assert producers.count(_RANKS) == 1
        changed = producers.replace(_RANKS, "        token_ranks = token_ranks + 1\n" + _RANKS)
        self.texts["producer-changed"] = vllm_texts.write_tree(folder / "tree", producers=changed)
        self.made: dict[tuple[str, ...], suite_runner.Run] = {}
        judged = [text_revision(path) for path in self.texts.values()]
        with ThreadPoolExecutor(max_workers=2) as pool:
            list(pool.map(lambda text: superseded_checks(text, 60.0), judged))

    def judge(self, name: str, backend: str | None = None, *selection: str) -> suite_runner.Run:
        key = (name, backend or "own", *selection)
        if key not in self.made:
            path = self.texts[name]
            spec = backend or f"vllm-text:{path}"
            out = self.folder / "-".join(key).replace("/", "_").replace(" ", "_")
            out.mkdir(parents=True, exist_ok=True)
            self.made[key] = suite_runner.in_process(
                out, "--pyargs", "conformance", "--conformance-backend", spec,
                f"--conformance-revision={path}", *selection,
            )  # fmt: skip
        return self.made[key]


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory):
    from filelock import FileLock

    vllm_texts.release_text()
    # One cache for every xdist worker, filled under a lock: the self-runs are made once
    # (the cache is keyed by the texts, so each worker's copies of them hit it).
    shared = session_folder(tmp_path_factory)
    saved = os.environ.get("XDG_CACHE_HOME")
    os.environ["XDG_CACHE_HOME"] = str(shared / "text-runs-cache")
    try:
        with FileLock(str(shared / "text-runs-cache.lock")):
            made = Runs(tmp_path_factory.mktemp("texts"))
        yield made
    finally:
        if saved is None:
            os.environ.pop("XDG_CACHE_HOME", None)
        else:
            os.environ["XDG_CACHE_HOME"] = saved


def _failing(run: suite_runner.Run) -> set[str]:
    assert run.report is not None, "the run wrote no report"
    return {t["behaviour"] for t in run.report["tests"] if t["outcome"] in ("failed", "error")}


def _outcomes(run: suite_runner.Run, behaviour: str) -> set[str]:
    return {t["outcome"] for t in run.report["tests"] if t["behaviour"] == behaviour}


@pytest.mark.parametrize("name", list(vllm_texts.VARIANTS))
def test_vllm_own_text_passes_itself_with_exactly_its_change_listed(runs, name) -> None:
    run = runs.judge(name, None, "-k", f"{MODULES[name]} or vllm_changes")
    assert run.exit_code == 0, sorted(_failing(run))
    report = run.report
    _, (type_name, member, change) = vllm_texts.VARIANTS[name]
    assert [(c["type"], c["member"], c["change"]) for c in report["vllm_changes"]] == [
        (type_name, member, change)
    ]
    [entry] = report["vllm_changes"]
    assert entry["behaviour"] == f"vllm-change:{type_name}.{member}"
    assert report["vllm_text"]["headline"] == (
        f"vLLM outputs-{name}.py = nearest known 0.33.0 + 1 change"
    )
    assert report["spec_revision"] == "0.33.0"
    # The change is judged (against the text's own code), and passes.
    assert _outcomes(run, entry["behaviour"]) == {"passed"}


def test_a_check_vllm_own_text_fails_is_superseded_and_named(runs) -> None:
    run = runs.judge("field-added", None, "-k", "model_runner_output or vllm_changes")
    [skipped] = [t for t in run.report["tests"] if t["skip_cause"] == "superseded-by-vllm-change"]
    assert skipped["nodeid"].endswith("test_model_runner_output.py::test_surface[fields]")
    assert "field added ModelRunnerOutput.npu_stream_id" in skipped["message"]
    [entry] = run.report["vllm_changes"]
    assert entry["superseded_checks"] == [
        "conformance/checks/test_model_runner_output.py::surface[fields]"
    ]


def test_a_backend_whose_types_lack_the_new_field_fails_on_that_type_only(runs) -> None:
    run = runs.judge("field-added", "reference@0.33.0")
    assert run.exit_code == 1
    assert _failing(run) == {"vllm-change:ModelRunnerOutput.npu_stream_id"}
    failed = [t for t in run.report["tests"] if t["outcome"] == "failed"]
    assert {t["spec_type"] for t in failed} == {"ModelRunnerOutput"}
    assert all("field added ModelRunnerOutput.npu_stream_id" in t["message"] for t in failed)
    assert any("missing npu_stream_id" in t["message"] for t in failed)


def test_a_backend_keeping_the_old_behaviour_diverges_from_the_new_vllm(runs) -> None:
    run = runs.judge(
        "behaviour-changed", "reference@0.33.0", "-k", "logprobs_lists or vllm_changes"
    )
    assert _failing(run) == {"vllm-change:LogprobsLists.slice_request"}
    [failed] = [t for t in run.report["tests"] if t["outcome"] == "failed"]
    assert failed["check"] == "results_as_vllm[LogprobsLists.slice_request]"
    assert "body changed LogprobsLists.slice_request" in failed["message"]
    # The nearest revision's slice_request checks that vLLM's own breaks no longer judge.
    rule = [t for t in run.report["tests"] if t["behaviour"] == "LogprobsLists.slice_request"]
    assert {t["outcome"] for t in rule} <= {"passed", "skipped"}
    assert any(t["skip_cause"] == "superseded-by-vllm-change" for t in rule)


def test_a_source_tree_is_judged_with_its_own_producers(runs) -> None:
    run = runs.judge("producer-changed")
    assert run.exit_code == 0, sorted(_failing(run))
    assert [(c["type"], c["member"], c["change"]) for c in run.report["vllm_changes"]] == [
        ("Sampler", "gather_logprobs", "body changed")
    ]
    passed = {t["behaviour"] for t in run.report["tests"] if t["outcome"] == "passed"}
    # Its other producers are judged by the nearest revision's rules, and pass.
    assert {"producer.unpad_sampled_token_ids", "producer.async_output"} <= passed
    assert "vllm-change:producer.gather_logprobs" in passed
    assert _outcomes(run, "producer.gather_logprobs") == {"skipped"}


def test_a_backend_producer_is_held_to_the_trees_changed_producer(runs) -> None:
    run = runs.judge("producer-changed", "reference@0.33.0", "-k", "producer or vllm_changes")
    assert _failing(run) == {"vllm-change:producer.gather_logprobs"}
