"""``python -m conformance crater``: the matrix, the report, the exit codes."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import archives
import fixture_plugins as plugins
import pytest
from vllm_release_texts import MISSING, RELEASES

from conformance.cli.main import main
from conformance.crater.report import terminal_lines
from conformance.crater.schema import FINDING_KEYS, RECORD_KEYS, REPORT_KEYS, SCHEMA

pytestmark = pytest.mark.skipif(MISSING is not None, reason=MISSING or "")

#: A file that exists and is no plugin: the checkout's own.
PYPROJECT = Path(__file__).resolve().parents[2] / "pyproject.toml"


@pytest.fixture
def offline(tmp_path, monkeypatch):
    """vLLM's texts from the folder the tests share; plugins from checkouts on disk."""
    monkeypatch.setenv("OUTPUTS_VLLM_RELEASES", str(RELEASES))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    (tmp_path / "index").mkdir()
    monkeypatch.setenv("PIP_INDEX_URL", (tmp_path / "index").as_uri())
    return tmp_path


def _checkout(files: dict[str, str], folder) -> str:
    return str(plugins.write(files, folder))


def test_a_plugin_holding_at_its_pin_and_breaking_at_the_target_exits_1(offline, capsys) -> None:
    builder = _checkout(plugins.BUILDS_OUTPUT, offline / "builder")
    platform = _checkout(plugins.USES_NONE, offline / "platform")
    report = offline / "crater.json"
    code = main(["crater", "0.34.0", "--plugins", builder, platform, "--report", str(report)])
    out, err = capsys.readouterr()
    assert code == 1
    assert "crater: npu-builder 1.0: holds at 0.33.0, breaks at 0.34.0" in err
    matrix = out.splitlines()
    assert matrix[0].split() == ["plugin", "release", "at", "its", "pin", "at", "0.34.0"]
    assert any(
        line.startswith("npu-builder")
        and "construction-raises ModelRunnerOutput.req_id_to_index" in line
        for line in matrix
    )
    assert (
        "  npu_builder/runner.py:7: construction-raises ModelRunnerOutput.req_id_to_index "
        "(field removed ModelRunnerOutput.req_id_to_index)" in matrix
    )
    assert "  npu-builder 1.0: 0.33.0 (metadata: vllm==0.33.0+npu)" in matrix
    assert "  npu-platform 0.1: unpinned (no requirement on vllm, no version guard)" in matrix
    data = json.loads(report.read_text())
    assert list(data) == list(REPORT_KEYS)
    assert (data["schema"], data["target"]) == (SCHEMA, "0.34.0")
    records = {(r["plugin"], r["role"]): r for r in data["records"]}
    assert all(set(RECORD_KEYS) <= set(r) for r in records.values())
    assert records["npu-builder", "pin"]["verdict"] == "holds"
    assert records["npu-builder", "pin"]["vllm"] == "0.33.0"
    target = records["npu-builder", "target"]
    assert target["verdict"] == "breaks"
    assert all(list(f) == list(FINDING_KEYS) for f in target["findings"])
    assert records["npu-platform", "target"]["verdict"] == "holds"
    assert records["npu-platform", "pin"]["vllm"] == "unpinned"


def test_the_same_plugins_at_their_pin_exit_0(offline, capsys) -> None:
    builder = _checkout(plugins.BUILDS_OUTPUT, offline / "builder")
    assert main(["crater", "0.33.0", "--plugins", builder]) == 0


@pytest.mark.parametrize(
    ("arguments", "says"),
    [
        (["2025.10"], "2025.10 is a spec page"),
        (["0.99.0"], "holds no outputs-0.99.0"),
        (["main"], "TARGET 'main' is not a version such as 0.13.0, nor a path: give a release"),
        (["0.34.0", "--plugins", "/no/such/plugin.whl"], "no such file or folder"),
        (["0.34.0", "--plugins", "no-such-plugin-anywhere"], "no such distribution"),
        (["0.34.0", "--plugins", str(PYPROJECT)], "a file, not a wheel, an sdist or a plugin's"),
        (["0.34.0", "--report", str(PYPROJECT.parent)], "it is a folder; give a file name"),
        ([""], "TARGET is empty: give a release such as 0.34.0"),
    ],
)
def test_bad_input_is_one_line_and_exit_4(offline, capsys, arguments, says) -> None:
    assert main(["crater", *arguments]) == 4
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and says in err[0]
    assert "no-such-plugin-anywhere: no-such-plugin-anywhere" not in err[0]


@pytest.mark.parametrize("option", ["--plugins", "--report"])
def test_an_empty_value_is_refused_before_anything_is_read(capsys, option: str) -> None:
    # An unset variable never judges the working directory, nor writes a report.
    with pytest.raises(SystemExit) as stopped:
        main(["crater", "0.34.0", option, " "])
    assert stopped.value.code == 4
    [line] = capsys.readouterr().err.strip().splitlines()
    assert f"argument {option}: given empty (an unset variable?)" in line


def test_a_file_that_is_no_crater_report_is_never_overwritten(offline, capsys, tmp_path) -> None:
    kept = tmp_path / "xfails.toml"
    kept.write_text("[xfail]\n")
    assert main(["crater", "0.34.0", "--report", str(kept)]) == 4
    assert "it exists and is no crater report" in capsys.readouterr().err
    assert kept.read_text() == "[xfail]\n"


def test_a_damaged_file_given_as_a_plugin_or_a_target_is_bad_input(
    offline, capsys, monkeypatch
) -> None:
    broken = offline / "broken.whl"
    broken.write_bytes(b"not a zip")
    builder = _checkout(plugins.BUILDS_OUTPUT, offline / "builder")
    report = offline / "crater.json"
    assert (
        main(["crater", "0.34.0", "--plugins", str(broken), builder, "--report", str(report)]) == 4
    )
    [line] = capsys.readouterr().err.strip().splitlines()
    assert "broken.whl: not a wheel (not a zip archive)" in line and "download it again" in line
    assert line.count("broken.whl") == 1  # the file named once, by its full path or name
    assert not report.exists()
    monkeypatch.chdir(offline)
    assert main(["crater", "0.34.0", "--plugins", "./broken.whl"]) == 4
    [line] = capsys.readouterr().err.strip().splitlines()
    assert line.startswith("ERROR: --plugins broken.whl: not a wheel")  # named once
    # A vLLM wheel damaged inside (its zip directory whole): no traceback either.
    damaged = offline / "vllm-0.34.0-py3-none-any.whl"
    archives.wheel(offline, "vllm", "0.34.0", {"vllm/v1/outputs.py": "x = 1\n" * 4000}, [])
    data = bytearray(damaged.read_bytes())
    start = data.index(b"vllm/v1/outputs.py") + 40
    data[start : start + 40] = bytes(40)
    damaged.write_bytes(bytes(data))
    assert main(["crater", str(damaged), "--plugins", builder]) == 4
    [line] = capsys.readouterr().err.strip().splitlines()
    assert "any.whl: a damaged wheel (Bad CRC-32" in line and "download it again" in line


def test_reports_merges_the_jobs_reports_into_one_matrix(offline, capsys) -> None:
    from reports.cli import main as reports_main

    builder = _checkout(plugins.BUILDS_OUTPUT, offline / "builder")
    for target in ("0.33.0", "0.34.0"):
        main(["crater", target, "--plugins", builder, "--report", str(offline / f"{target}.json")])
    out = offline / "out"
    assert reports_main(["--crater", str(offline / "0.33.0.json"), str(offline / "0.34.0.json"),
                         "--out", str(out), "-q"]) == 0  # fmt: skip
    merged = json.loads((out / "crater.json").read_text())
    assert merged["target"] == "0.33.0, 0.34.0"
    assert len(merged["records"]) == 3  # the pin's record once
    page = (out / "crater.html").read_text()
    assert 'id="crater-npu-builder-1.0-0.34.0-target"' in page
    assert 'href="#crater-npu-builder-1.0-0.34.0-target"' in page
    assert "npu_builder/runner.py:7" in page
    # A folder of other files is not overwritten: one line, the reports' bad-input code.
    (offline / "elsewhere").mkdir()
    (offline / "elsewhere" / "notes.txt").write_text("mine")
    capsys.readouterr()
    assert reports_main(["--crater", str(offline / "0.34.0.json"), "--out",
                         str(offline / "elsewhere"), "-q"]) == 2  # fmt: skip
    [line] = capsys.readouterr().err.strip().splitlines()
    assert "not a report folder" in line
    assert (offline / "elsewhere" / "notes.txt").read_text() == "mine"
    headline = "with a break at a target their pin does not have (npu-builder 1.0)"
    assert headline in (out / "crater.md").read_text()


def test_a_break_under_the_plugins_own_condition_names_it(offline, capsys) -> None:
    files = dict(plugins.BUILDS_OUTPUT)
    files["npu_builder/graphs.py"] = (
        "from vllm.v1.outputs import ModelRunnerOutput\n\n\n"
        "def replay(self, out: ModelRunnerOutput):\n"
        "    if self.use_npu_graph:\n"
        "        return out.req_id_to_index\n"
    )
    builder = _checkout(files, offline / "builder")
    report = offline / "crater.json"
    main(["crater", "0.34.0", "--plugins", builder, "--report", str(report)])
    assert (
        "  npu_builder/graphs.py:6 (if self.use_npu_graph): read-fails " in capsys.readouterr().out
    )
    [target] = [r for r in json.loads(report.read_text())["records"] if r["role"] == "target"]
    [graphs] = [f for f in target["findings"] if f["file"].endswith("graphs.py")]
    # The report's findings keep the contract's keys, a break on every path first: the
    # rendered cell names the first, as the terminal's row does.
    assert list(graphs) == list(FINDING_KEYS)
    assert target["findings"][0]["file"] == "npu_builder/runner.py"
    assert target["findings"][-1] == graphs


def test_a_known_plugin_given_as_its_checkout_keeps_its_pin_rule(offline, capsys) -> None:
    """tpu-inference declares no vLLM: it pairs with vLLM's release of its own version,
    given by name or as a folder (its metadata names it), not by the rule of any code."""
    files = dict(plugins.USES_NONE)
    files["pyproject.toml"] = '[project]\nname = "tpu-inference"\nversion = "0.33.0"\n'
    checkout = _checkout(files, offline / "tpu-inference")
    main(["crater", "0.34.0", "--plugins", checkout])
    assert "  tpu-inference 0.33.0: 0.33.0 (pairs with vLLM 0.33.0 (its own version))" in (
        capsys.readouterr().out.splitlines()
    )


def test_a_crater_rendering_leaves_the_conformance_report_folder_alone(
    offline, monkeypatch
) -> None:
    from reports.cli import main as reports_main

    builder = _checkout(plugins.BUILDS_OUTPUT, offline / "builder")
    main(["crater", "0.34.0", "--plugins", builder, "--report", str(offline / "crater.json")])
    monkeypatch.chdir(offline)
    (offline / "reports-out").mkdir()
    (offline / "reports-out" / ".vllm-outputs-report").write_text("")
    (offline / "reports-out" / "report.html").write_text("the conformance report")
    assert reports_main(["--crater", "crater.json", "-q"]) == 0
    assert (offline / "crater-out" / "crater.html").is_file()
    assert (offline / "reports-out" / "report.html").read_text() == "the conformance report"


def test_plugins_named_in_two_options_are_all_judged(offline, capsys) -> None:
    builder = _checkout(plugins.BUILDS_OUTPUT, offline / "builder")
    platform = _checkout(plugins.USES_NONE, offline / "platform")
    report = offline / "crater.json"
    main(["crater", "0.34.0", "--plugins", builder, platform, "--plugins", builder,
          "--report", str(report)])  # fmt: skip
    records = json.loads(report.read_text())["records"]
    judged = [(r["plugin"], r["role"]) for r in records]
    assert sorted(judged) == sorted(set(judged))  # a plugin named twice is judged once
    assert {plugin for plugin, _ in judged} == {"npu-builder", "npu-platform"}
    # Its wheel is the same code: once again. An edited copy is other code: judged apart.
    wheel = archives.wheel(offline, "npu-builder", "1.0", {p: t for p, t in
                           plugins.BUILDS_OUTPUT.items() if p.endswith(".py")}, ["vllm==0.33.0"])  # fmt: skip
    edited = {**plugins.BUILDS_OUTPUT, "npu_builder/extra.py": "x = 1\n"}
    main(["crater", "0.34.0", "--plugins", builder, str(wheel), _checkout(edited, offline / "ed"),
          "--report", str(report)])  # fmt: skip
    targets = [r for r in json.loads(report.read_text())["records"] if r["role"] == "target"]
    assert len(targets) == 2


def test_an_edited_checkout_beside_its_wheel_is_told_apart(offline, capsys) -> None:
    from reports.cli import main as reports_main

    # The published release and a checkout of the same name and version, edited since:
    # each row and record says where its code was read from, and both are rendered.
    wheel = archives.wheel(offline, "npu-builder", "1.0", {p: t for p, t in
                           plugins.BUILDS_OUTPUT.items() if p.endswith(".py")}, ["vllm==0.33.0"])  # fmt: skip
    edited = {**plugins.BUILDS_OUTPUT, "npu_builder/extra.py": "x = 1\n"}
    checkout = _checkout(edited, offline / "edited")
    report = offline / "crater.json"
    main(["crater", "0.34.0", "--plugins", str(wheel), checkout, "--report", str(report)])
    out = capsys.readouterr().out.splitlines()
    rows = [line.split()[:3] for line in out if line.startswith("npu-builder ")][:2]
    assert rows == [["npu-builder", "1.0", f"({wheel})"], ["npu-builder", "1.0", f"({checkout})"]]
    records = json.loads(report.read_text())["records"]
    assert {r["source"] for r in records} == {str(wheel), checkout}
    assert reports_main(["--crater", str(report), "--out", str(offline / "out"), "-q"]) == 0
    page = (offline / "out" / "crater.md").read_text()
    assert f"| npu-builder | 1.0 ({checkout}) |" in page
    assert f"| npu-builder | 1.0 ({wheel}) |" in page
    assert "Records read twice" not in page


@pytest.mark.parametrize(
    ("files", "says"),
    [
        ({}, "holds no Python code (a placeholder)"),
        (
            {"tests/test_npu.py": "from vllm.v1.outputs import ModelRunnerOutput\n"},
            "no Python code outside 1 test, example and docs files",
        ),
    ],
)
def test_a_release_without_code_is_unknown_not_holding(offline, capsys, files, says) -> None:
    placeholder = archives.wheel(offline, "npu-placeholder", "0.0.0", files, ["vllm==0.33.0"])
    report = offline / "crater.json"
    assert main(["crater", "0.34.0", "--plugins", str(placeholder), "--report", str(report)]) == 0
    (record,) = json.loads(report.read_text())["records"]
    assert record["verdict"] == "unknown"
    assert says in record["not_judged"][0]


def test_list_plugins_keeps_every_name_apart_from_its_device(capsys) -> None:
    from conformance.crater.known import known_plugins

    assert main(["crater", "0.34.0", "--list-plugins"]) == 0
    lines = capsys.readouterr().out.splitlines()
    listed = known_plugins()
    assert len(lines) == len(listed)
    for line, plugin in zip(lines, listed, strict=True):
        name, _, device = line.partition("  ")
        assert (name, device.strip()) == (plugin.name, plugin.device)


def test_a_plugin_pinned_at_the_target_is_said_once(offline, capsys) -> None:
    builder = _checkout(plugins.BUILDS_OUTPUT, offline / "builder")
    main(["crater", "0.33.0", "--plugins", builder])
    out, err = capsys.readouterr()
    assert "crater: npu-builder 1.0: holds at 0.33.0, the same at the target" in err
    assert "crater: 1 plugin against 0.33.0: 0 breaking" in out


def test_a_plugin_broken_at_its_pin_with_a_new_break_at_the_target_exits_1(offline, capsys) -> None:
    # Pinned at 0.33.0, where its async output lacks get_kv_connector_output; 0.34.0
    # also removes req_id_to_index, which it passes.
    files = {
        **{p: t for p, t in plugins.ASYNC_OUTPUTS.items() if p != "pyproject.toml"},
        **{p: t for p, t in plugins.BUILDS_OUTPUT.items() if p != "pyproject.toml"},
        "pyproject.toml": '[project]\nname = "npu-both"\nversion = "1.0"\n'
        'dependencies = ["vllm==0.33.0"]\n',
    }
    both = _checkout(files, offline / "both")
    assert main(["crater", "0.33.0", "--plugins", both]) == 0  # the pin's breaks only
    assert main(["crater", "0.34.0", "--plugins", both]) == 1
    out = capsys.readouterr().out
    assert "0.33.0: breaks" in out
    assert "1 breaking, 1 of them with a break their pin does not have (npu-both)" in out
    # Two releases of one plugin are named each with its version.
    older = _checkout({**files, "pyproject.toml": files["pyproject.toml"].replace('"1.0"', '"0.9"')},
                      offline / "older")  # fmt: skip
    assert main(["crater", "0.34.0", "--plugins", both, older]) == 1
    assert "2 of them with a break their pin does not have (npu-both 1.0, npu-both 0.9)" in (
        capsys.readouterr().out
    )


@pytest.mark.parametrize(
    ("code", "cell", "note"),
    [
        ("class Output:\n    sampled_token_ids: list\n", "imports nothing of vLLM",
         "imports nothing of vLLM"),
        # vLLM imported, inside a function, in a file no judged name brings to be parsed
        ("def config():\n    from vllm.config import VllmConfig\n    return VllmConfig\n",
         "uses none of the output types", "shows no use of vLLM's output types"),
    ],
)  # fmt: skip
def test_a_plugin_using_none_of_the_types_holds_and_says_why(
    offline, capsys, code, cell, note
) -> None:
    own = {
        "pyproject.toml": '[project]\nname = "npu-own"\nversion = "1.0"\n'
        'dependencies = ["vllm==0.33.0"]\n',
        "npu_own/__init__.py": "",
        "npu_own/outputs.py": code,
    }
    report = offline / "crater.json"
    argv = ["crater", "0.34.0", "--plugins", _checkout(own, offline / "own"), "--report"]
    assert main([*argv, str(report)]) == 0
    assert f"holds: {cell}" in capsys.readouterr().out
    records = json.loads(report.read_text())["records"]
    assert [r["verdict"] for r in records] == ["holds", "holds"]
    assert all(note in r["not_judged"][0] for r in records)


def test_a_version_the_index_lacks_is_bad_input(offline, monkeypatch, capsys) -> None:
    plugin = archives.wheel(offline, "npu-versioned", "1.0", {"npu_v/__init__.py": ""}, [])
    with archives.json_index({"npu-versioned": [(plugin, "2026-10-01T09:00:00Z")]}) as root:
        monkeypatch.setenv("PIP_INDEX_URL", root)
        assert main(["crater", "0.34.0", "--plugins", "npu-versioned==2.0"]) == 4
    err = capsys.readouterr().err.strip().splitlines()
    assert err == [
        "ERROR: --plugins npu-versioned==2.0: the package index has no file of it (its newest: 1.0)"
    ]


def test_a_plugin_named_where_no_index_answers_says_what_to_check(
    offline, monkeypatch, capsys
) -> None:
    monkeypatch.setenv("PIP_INDEX_URL", "http://127.0.0.1:9/simple")
    monkeypatch.setenv("PIP_RETRIES", "0")
    assert main(["crater", "0.34.0", "--plugins", "npu-nowhere"]) == 4
    [line] = capsys.readouterr().err.strip().splitlines()
    assert line.startswith("ERROR: --plugins npu-nowhere: no package index answered")
    assert line.endswith("; check your network or pip's index settings")


def _head_of_vllm(folder: Path, version: str) -> Path:
    """0.34.0's texts laid out as an unpacked wheel whose version is ``version``."""
    from conformance.releases.texts import MRV2_FOLDER, producer_sections

    files = {"vllm/v1/outputs.py": (RELEASES / "outputs-0.34.0.py.txt").read_text()}
    mrv2 = (RELEASES / MRV2_FOLDER / "producers-mrv2-0.34.0.py.txt").read_text()
    files.update((s.path, s.body) for s in producer_sections(mrv2))
    files["vllm/_version.py"] = f"__version__ = version = '{version}'\n"
    for name, text in files.items():
        (folder / name).parent.mkdir(parents=True, exist_ok=True)
        (folder / name).write_text(text)
    return folder


def test_vllms_head_is_judged_by_its_nearest_releases_rules(offline) -> None:
    # A version no release has (vLLM's main branch): its async output rules are those of
    # its nearest release, 0.34.0, whose texts it holds unchanged.
    pinned = plugins.ASYNC_OUTPUTS["pyproject.toml"].replace('"vllm>=0.31,<0.33"', '"vllm==0.11.0"')
    plugin = _checkout({**plugins.ASYNC_OUTPUTS, "pyproject.toml": pinned}, offline / "async")
    head = _head_of_vllm(offline / "head", "0.35.0.dev12+g1234abc")

    def found(target: str) -> set[tuple]:
        report = offline / "crater.json"
        main(["crater", target, "--plugins", plugin, "--report", str(report)])
        [record] = [r for r in json.loads(report.read_text())["records"] if r["role"] == "target"]
        return {(f["kind"], f["file"], f["line"], f["member"]) for f in record["findings"]}

    released = found("0.34.0")
    assert any(kind == "behaviour-changed" for kind, *_ in released)
    assert found(str(head)) == released


def test_a_lone_outputs_text_says_what_it_cannot_judge_and_is_named_by_its_path(
    offline, capsys
) -> None:
    builder = _checkout(plugins.BUILDS_OUTPUT, offline / "builder")
    text = offline / "pr-123" / "outputs.py"
    text.parent.mkdir()
    text.write_text((RELEASES / "outputs-0.34.0.py.txt").read_text())
    main(["crater", str(text), "--plugins", builder])
    out, err = capsys.readouterr()
    assert f"vLLM {text} = nearest known 0.34.0 + 0 changes is a lone outputs.py" in err
    assert "imports of its other modules and calls of its producers are not judged" in err
    assert "at vLLM vLLM" not in out
    # A release says nothing of the kind.
    main(["crater", "0.34.0", "--plugins", builder])
    assert "lone outputs.py" not in capsys.readouterr().err


def test_pins_whose_texts_no_index_answers_for_fail_the_run(offline, monkeypatch, capsys) -> None:
    # Offline with an empty cache: the target is a tree on disk, the pin's texts
    # cannot be had. The run says so and exits 4, not 0 for having judged half.
    monkeypatch.delenv("OUTPUTS_VLLM_RELEASES")
    monkeypatch.setenv("PIP_INDEX_URL", "http://127.0.0.1:9/simple")
    monkeypatch.setenv("PIP_RETRIES", "1")  # pip names the socket's error on a retry
    head = _head_of_vllm(offline / "head", "0.34.0")
    pinned = _checkout(
        {**plugins.ASYNC_OUTPUTS, "pyproject.toml": '[project]\nname = "npu-pinned"\n'
         'version = "1.0"\ndependencies = ["vllm==0.31.0"]\n'},
        offline / "pinned",
    )  # fmt: skip
    code = main(["crater", str(head), "--plugins", pinned])
    out, err = capsys.readouterr()
    assert "the package index cannot be reached ([Errno 111] Connection refused)" in out
    assert "--vllm-outputs" not in out and "set OUTPUTS_VLLM_RELEASES" in out
    assert "ERROR: crater: the package index cannot be reached for vLLM 0.31.0's texts" in err
    assert code == 4


def test_several_findings_of_one_call_read_as_one_line() -> None:
    from conformance.crater.report import _finding_lines
    from conformance.crater.verdicts import Finding

    said = "AsyncOutput of vLLM 0.34.0"
    found = [
        Finding("construction-raises", "npu/r.py", 11, "AsyncOutput.vocab_size",
                f"{said}: no parameter vocab_size"),
        Finding("construction-raises", "npu/r.py", 11, "AsyncOutput.main_stream",
                f"{said}: main_stream is required and not given"),
        Finding("read-fails", "npu/r.py", 12, "ModelRunnerOutput.req_id_to_index",
                "field removed ModelRunnerOutput.req_id_to_index"),
    ]  # fmt: skip
    assert _finding_lines(found) == [
        f"  npu/r.py:11: construction-raises AsyncOutput ({said}: no parameter vocab_size; "
        "main_stream is required and not given)",
        "  npu/r.py:12: read-fails ModelRunnerOutput.req_id_to_index (field removed "
        "ModelRunnerOutput.req_id_to_index)",
    ]
    # The matrix counts breaks as the lines read them: two, not three findings; the
    # rendered report's cell too.
    from conformance.crater.records import BREAKS, TARGET, Record
    from reports.crater import _cell

    record = Record("npu", "1.0", "0.34.0", TARGET, BREAKS, findings=found)
    assert record.first_cause().endswith("at npu/r.py:11 (+1 more)")
    cell = _cell(record.to_json())
    assert cell is not None and cell.text.endswith("AsyncOutput.vocab_size +1")
    # A break on every path names the row before one under the plugin's own condition.
    conditional = [dataclasses.replace(f, condition="self.use_npu_graph") for f in found[:2]]
    record = Record("npu", "1.0", "0.34.0", TARGET, BREAKS, findings=[*conditional, found[2]])
    assert record.first_cause() == (
        "read-fails ModelRunnerOutput.req_id_to_index at npu/r.py:12 (+1 more)"
    )
    assert _finding_lines(conditional)[0].startswith(
        "  npu/r.py:11 (if self.use_npu_graph): construction-raises AsyncOutput ("
    )
    assert all(list(f) == list(FINDING_KEYS) for f in record.to_json()["findings"])


def test_a_producer_raising_the_same_at_every_check_reads_as_the_first_and_a_count() -> None:
    from conformance.crater.report import _finding_lines
    from conformance.crater.verdicts import Finding

    cause = "raised AttributeError at npu/w.py:9 (`self._e.wait()`): no attribute '_e'"
    found = [
        Finding("run-fails", "npu/w.py", 3, "NPUAsyncOutput.get_output", f"{b}: [{b}] x(): {cause}")
        for b in ("producer.async_output", "producer.async_output:waits-for-device")
    ]
    assert _finding_lines(found) == [
        "  npu/w.py:3: run-fails NPUAsyncOutput.get_output (producer.async_output: "
        f"[producer.async_output] x(): {cause}; and 1 more behaviours raising the same)"
    ]


def test_a_holding_plugin_that_imports_a_module_the_target_lacks_says_so() -> None:
    # Its uses of the output types hold, but its worker's import fails all the same: the
    # matrix cell and the lines below say so, not a bare "holds".
    from conformance.crater.pins import Pin
    from conformance.crater.records import HOLDS, PIN, TARGET, PluginVerdict, Record

    gone = (
        "also imports 1 module the target lacks; not judged here: vllm.v1.worker.cpu_model_runner"
    )
    conditions = "3 conditions are not a version test: the code under each branch is judged"
    records = [
        Record("cpu-plugin", "1.0", "0.29.0", PIN, HOLDS, not_judged=[conditions]),
        Record("cpu-plugin", "1.0", "0.34.0", TARGET, HOLDS, not_judged=[conditions, gone]),
    ]
    verdict = PluginVerdict("cpu-plugin", "1.0", Pin("0.29.0", "metadata: vllm==0.29.0"), records)
    lines = terminal_lines("0.34.0", [verdict])
    assert lines[1].endswith("holds; also imports 1 module the target lacks")
    assert f"  not judged: {gone}" in lines
    assert not any(conditions in line for line in lines)
    assert not any("at vLLM 0.29.0" in line for line in lines)  # the pin holds, says nothing


def test_model_runner_v2s_own_sampler_output_is_judged_against_its_class(offline, capsys) -> None:
    # Model Runner V2's SamplerOutput is a class of its own module (num_sampled and
    # num_rejected beside the ids): built by a plugin, it is judged against that class.
    files = {
        "pyproject.toml": '[project]\nname = "npu-sampler"\nversion = "1.0"\n'
        'dependencies = ["vllm==0.31.0"]\n',
        "npu_sampler/__init__.py": "",
        "npu_sampler/sample.py": "from vllm.v1.worker.gpu.sample.output import SamplerOutput\n\n\n"
        "def sample(ids, counts, rejected):\n"
        "    return SamplerOutput(sampled_token_ids=ids, logprobs_tensors=None, num_nans=None,\n"
        "                         num_sampled=counts, num_rejected=rejected)\n",
    }
    checkout = _checkout(files, offline / "sampler")
    assert main(["crater", "0.31.0", "--plugins", checkout]) == 0
    assert main(["crater", "0.22.0", "--plugins", checkout]) == 1
    said = capsys.readouterr().out
    assert (
        "npu_sampler/sample.py:5: construction-raises SamplerOutput.num_rejected (field "
        "vllm.v1.worker.gpu.sample.output.SamplerOutput.num_rejected is newer than vLLM 0.22.0)"
        in said
    )
