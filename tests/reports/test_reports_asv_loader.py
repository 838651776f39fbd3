"""load_results on results a real asv run wrote (see conftest.asv_project)."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest

from reports import ReportInputError, load_results
from reports.asv_loader import BASE_COLUMNS, parse_param


@pytest.fixture(scope="module")
def frame(asv_project) -> pd.DataFrame:
    return load_results(asv_project.results, asv_project.root / "asv.conf.json")


def test_columns_are_the_documented_ones_then_one_per_parameter(frame):
    assert list(frame.columns[: len(BASE_COLUMNS)]) == list(BASE_COLUMNS)
    assert set(frame.columns[len(BASE_COLUMNS) :]) == {
        "backend",
        "num_reqs",
        "num_tokens",
        "num_logprobs",
    }


def test_one_row_per_benchmark_parameter_combination_commit_and_machine(frame, asv_project):
    # Unpad: 4 benchmarks x 1 backend x 2 devices x 2 sizes; ToLists: 1 x 2 x 2; time_plain: 1.
    per_run = 4 * 2 * 2 + 2 * 2 + 1
    runs = frame.groupby(["machine", "commit"]).size().to_dict()
    assert runs == {
        ("m1", asv_project.commit_1): per_run,
        ("m1", asv_project.commit_2): per_run,
        ("m2", asv_project.commit_2): per_run,
    }
    keys = ["benchmark", "params", "commit", "machine", "env"]
    assert not frame.duplicated(keys).any()


def test_parameter_columns_hold_python_values_not_asv_repr_strings(frame):
    assert frame["num_reqs"].dtype == "Int64"
    assert set(frame["num_reqs"].dropna()) == {16, 256}
    assert set(frame["device"]) == {"cpu", "cuda"}  # not "'cpu'"
    assert set(frame["backend"].dropna()) == {"reference"}
    # A benchmark without the parameter has a missing value there, and the
    # integer column stays integer.
    plain = frame[frame["benchmark"] == "bench_tiny.time_plain"]
    assert plain["num_reqs"].isna().all()
    assert (plain["device"] == "cpu").all()  # no device parameter: runs on the host


def test_track_values_and_units_come_through_exactly(frame, asv_project):
    rows = frame[
        (frame["benchmark"] == "bench_tiny.Unpad.track_bandwidth")
        & (frame["device"] == "cpu")
        & (frame["commit"] == asv_project.commit_1)
    ]
    assert dict(zip(rows["num_reqs"], rows["value"], strict=True)) == {16: 1.0, 256: 16.0}
    assert set(rows["unit"]) == {"GB/s"}
    assert set(rows["type"]) == {"track"}
    times = frame[frame["benchmark"] == "bench_tiny.time_plain"]
    assert set(times["unit"]) == {"seconds"} and (times["value"] > 0).all()


def test_skipped_combinations_are_marked_not_left_as_bare_nan(frame):
    cuda = frame[frame["device"] == "cuda"]
    assert len(cuda) > 0
    assert set(cuda["status"]) == {"skipped"}
    assert cuda["value"].isna().all()
    cpu = frame[frame["device"] == "cpu"]
    assert set(cpu["status"]) == {"ok"}
    assert cpu["value"].notna().all()


def test_results_of_an_edited_benchmark_are_flagged(frame, asv_project):
    edited = frame[frame["version_mismatch"]]
    assert set(edited["benchmark"]) == {"bench_tiny.time_plain"}
    assert set(edited["commit"]) == {asv_project.commit_1}


def test_stats_asv_keeps_are_columns(frame, asv_project):
    full_run = frame[
        (frame["commit"] == asv_project.commit_1)
        & (frame["benchmark"] == "bench_tiny.Unpad.time_unpad_sampled_token_ids")
        & (frame["status"] == "ok")
    ]
    assert (full_run["repeat"] >= 1).all()
    assert (full_run["q_25"] <= full_run["q_75"]).all()
    assert full_run["date"].dt.tz is not None


def test_machines_and_their_descriptions_merge_into_one_frame(frame):
    assert set(frame["machine"]) == {"m1", "m2"}
    assert set(frame.attrs["machines"]) == {"m1", "m2"}


def test_results_dir_can_come_from_the_asv_config(asv_project, monkeypatch):
    monkeypatch.chdir(asv_project.root)
    frame = load_results(None, "asv.conf.json")
    assert set(frame["machine"]) == {"m1", "m2"}


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("'cuda'", "cuda"),
        ("1024", 1024),
        ("0.5", 0.5),
        ("None", None),
        ("torch.float32", "torch.float32"),
    ],
)
def test_parse_param_reads_asv_reprs(text, value):
    assert parse_param(text) == value


def test_missing_folder_names_the_folder_and_the_fix(tmp_path):
    with pytest.raises(ReportInputError, match=r"does not exist.*nox -s bench") as info:
        load_results(tmp_path / "nope", None)
    assert info.value.path == tmp_path / "nope"


def test_empty_folder_is_an_error(tmp_path):
    with pytest.raises(ReportInputError, match="holds no asv results"):
        load_results(tmp_path, None)


def test_truncated_results_file_is_named(results_copy: Path):
    victim = sorted((results_copy / "m2").glob("*-existing*.json"))[0]
    victim.write_text(victim.read_text()[:200], encoding="utf-8")
    with pytest.raises(ReportInputError, match="corrupt or truncated") as info:
        load_results(results_copy, None)
    assert info.value.path == victim
    assert victim.name in str(info.value)


def test_results_file_missing_keys_is_named(results_copy: Path):
    victim = sorted((results_copy / "m1").glob("*-existing*.json"))[0]
    data = json.loads(victim.read_text())
    del data["results"]
    victim.write_text(json.dumps(data), encoding="utf-8")
    with pytest.raises(ReportInputError, match="corrupt or truncated") as info:
        load_results(results_copy, None)
    assert info.value.path == victim


def test_missing_benchmark_list_is_an_error(results_copy: Path):
    (results_copy / "benchmarks.json").unlink()
    with pytest.raises(ReportInputError, match=r"benchmarks\.json is missing"):
        load_results(results_copy, None)
