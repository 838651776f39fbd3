"""``nox -s add-release``: a synthetic release added end to end, to a copy of the checkout.

The release is the 0.33.0 text with a field added (and 0.33.0's producers), named
0.35.0 (after the newest known release, 0.34.0); the command writes its texts into a folder of release texts, its revision's
data into the copy's ``reference/revisions/releases.py``, its surface into the copy's
``known_surfaces.json`` and the README's tables, runs the matrix of the new release,
and prints what is left to review.  The copy is judged afterwards as a user would.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest
import vllm_texts
from once_per_session import once_per_session, session_folder

import conformance

CHECKOUT = Path(conformance.__file__).resolve().parents[1]


def _copy_of_checkout(folder: Path) -> Path:
    root = folder / "checkout"
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc")
    for name in ("conformance", "reference"):
        shutil.copytree(CHECKOUT / name, root / name, ignore=ignore)
    for module in ("vllm_outputs_suite_plugin.py", "vllm_outputs_suite_guard.py"):
        shutil.copy(CHECKOUT / module, root)
    return root


def _python(
    root: Path, *args: str, cache: Path, temporary: Path | None = None
) -> subprocess.CompletedProcess[str]:
    environment = {**os.environ, "PYTHONPATH": str(root), "XDG_CACHE_HOME": str(cache)}
    if temporary is not None:
        environment["TMPDIR"] = str(temporary)
    environment.pop("PYTEST_ADDOPTS", None)
    return subprocess.run(
        [sys.executable, *args], cwd=root, env=environment, capture_output=True, text=True,
        timeout=600, check=False,
    )  # fmt: skip


def _add_release(folder: Path) -> dict[str, str | int]:
    source = vllm_texts.write_variant(folder / "new", "field-added", "outputs-0.35.0.py.txt")
    (source.parent / "producers").mkdir()
    (source.parent / "producers" / "producers-0.35.0.py.txt").write_text(vllm_texts.producer_text())
    root = _copy_of_checkout(folder)
    (folder / "tmp").mkdir()
    done = _python(
        root, "-m", "conformance.cli.add_release", str(source), "--releases",
        str(folder / "releases"), "--matrix", "new", "--report-dir", str(folder / "matrix"),
        cache=folder / "cache", temporary=folder / "tmp",
    )  # fmt: skip
    return {"returncode": done.returncode, "stdout": done.stdout, "stderr": done.stderr}


@pytest.fixture(scope="module")
def added(tmp_path_factory: pytest.TempPathFactory):
    """The checkout's copy after ``add_release outputs-0.35.0.py.txt --matrix new``
    (made once for every xdist worker)."""
    vllm_texts.release_text()
    done = SimpleNamespace(**once_per_session(tmp_path_factory, "add-release", _add_release))
    folder = session_folder(tmp_path_factory) / "add-release"
    source = folder / "new" / "outputs-0.35.0.py.txt"
    return folder, folder / "checkout", folder / "releases", source, done


def test_the_texts_go_where_the_suite_reads_them(added) -> None:
    _, _, releases, source, done = added
    assert done.returncode == 0, done.stdout + done.stderr
    assert (releases / "outputs-0.35.0.py.txt").read_text() == source.read_text()
    assert (releases / "producers" / "producers-0.35.0.py.txt").read_text() == (
        vllm_texts.producer_text()
    )


def test_the_revision_is_derived_from_its_nearest_plus_the_change(added) -> None:
    folder, root, _, _, done = added
    assert "vLLM 0.35.0 = nearest known 0.33.0 + 1 change" in done.stdout
    assert "field added ModelRunnerOutput.npu_stream_id" in done.stdout
    code = (
        "from reference.revisions import revision, revision_for_vllm_version, reference_module\n"
        "r = revision('0.35.0'); old = revision('0.33.0')\n"
        "print(revision_for_vllm_version('0.35.0'), r.releases)\n"
        "print([f for f in r.types['ModelRunnerOutput'].field_names if f not in "
        "old.types['ModelRunnerOutput'].field_names])\n"
        "print(r.behaviours == old.behaviours)\n"
        "print('npu_stream_id' in reference_module('0.35.0').ModelRunnerOutput.__dataclass_fields__)\n"
    )
    shown = _python(root, "-c", code, cache=folder / "cache")
    assert shown.stdout.split("\n")[:4] == [
        "0.35.0 ('0.35.0',)", "['npu_stream_id']", "True", "True"
    ], shown.stderr  # fmt: skip


def test_the_release_is_known_to_the_copy_and_nearest_to_itself(added) -> None:
    folder, root, releases, _, _ = added
    listed = _python(root, "-m", "conformance", "--list-revisions", cache=folder / "cache")
    assert listed.stdout.splitlines()[-1].startswith("0.35.0")
    code = (
        "from conformance.releases.text_revision import text_revision\n"
        f"print(text_revision({str(releases / 'outputs-0.35.0.py.txt')!r}).headline())"
    )
    shown = _python(root, "-c", code, cache=folder / "cache")
    assert shown.stdout.strip().endswith("= nearest known 0.35.0 + 0 changes"), shown.stderr
    assert "| 0.35.0 | 0.35.0 |" in (root / "conformance" / "README.md").read_text()


def test_the_matrix_ran_and_what_to_review_is_printed(added) -> None:
    folder, _, _, _, done = added
    summary = json.loads((folder / "matrix" / "summary.json").read_text())
    assert [(r["release"], r["revision"], r["exit_code"]) for r in summary["runs"]] == [
        ("0.35.0", "0.35.0", 0)
    ]
    review = done.stdout.partition("to review:")[2]
    assert 'the summary of R_0_35_0 in reference/revisions/releases.py ("TODO")' in review


def test_the_matrix_leaves_no_temporary_folder_behind(added) -> None:
    """Its processes (the matrix run's supervised child leaves through ``os._exit``) lay
    out release trees in the cache, and the copy of the new texts goes with the run."""
    folder, _, _, _, done = added
    assert done.returncode == 0, done.stdout + done.stderr
    left = [p.name for p in (folder / "tmp").iterdir()]
    assert [name for name in left if not name.startswith("torchinductor_")] == []  # torch's own


def test_a_release_with_unchanged_types_joins_the_newest_revision(tmp_path) -> None:
    text = tmp_path / "outputs-0.34.1.py.txt"
    text.write_text(vllm_texts.release_text("0.34.0"))
    root = _copy_of_checkout(tmp_path)
    done = _python(
        root, "-m", "conformance.cli.add_release", str(text), "--releases", str(tmp_path / "r"),
        "--matrix", "none", cache=tmp_path / "cache",
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert "0.34.1 joins the releases of revision 0.34.0" in done.stdout
    shown = _python(
        root, "-c", "from reference.revisions import revision; print(revision('0.34.1').releases)",
        cache=tmp_path / "cache",
    )  # fmt: skip
    assert shown.stdout.strip() == "('0.34.0', '0.34.1')"


def test_a_changed_method_body_is_judged_against_vllms_own_code_and_ends_green(
    tmp_path,
) -> None:
    source = vllm_texts.write_variant(
        tmp_path / "new", "behaviour-changed", "outputs-0.35.0.py.txt"
    )
    (source.parent / "producers").mkdir()
    (source.parent / "producers" / "producers-0.35.0.py.txt").write_text(vllm_texts.producer_text())
    root = _copy_of_checkout(tmp_path)
    releases = tmp_path / "releases"
    done = _python(
        root, "-m", "conformance.cli.add_release", str(source), "--releases", str(releases),
        "--matrix", "new", "--report-dir", str(tmp_path / "matrix"), cache=tmp_path / "cache",
    )  # fmt: skip
    # vLLM's own 0.35.0 passes its new revision without a hand edit ...
    assert done.returncode == 0, done.stdout + done.stderr
    assert (
        "judged_by_vllm=('LogprobsLists.slice_request',)"
        in (root / "reference" / "revisions" / "releases.py").read_text()
    )
    review = done.stdout.partition("to review:")[2]
    assert "body changed LogprobsLists.slice_request: judged against vLLM's own code" in review
    # ... and the reference, which keeps 0.33.0's slice_request, fails it there.
    environment = {**os.environ, "PYTHONPATH": str(root), "OUTPUTS_VLLM_RELEASES": str(releases)}
    environment.pop("PYTEST_ADDOPTS", None)
    judged = subprocess.run(
        [sys.executable, "-m", "conformance", "--backend", "reference", "--revision", "0.35.0",
         "-q", "-p", "no:randomly", "-k", "slice_request"],
        cwd=root, env=environment, capture_output=True, text=True, timeout=600, check=False,
    )  # fmt: skip
    assert judged.returncode == 1, judged.stdout[-3000:] + judged.stderr
    assert "FAIL [vllm-change:LogprobsLists.slice_request]" in judged.stdout


@pytest.mark.parametrize(
    ("name", "expected"),
    [("outputs-0.33.0.py.txt", "is known already"), ("outputs-0.20.5.py.txt", "older than"),
     ("outputs-0.35.0.dev3.py.txt", "not a release"), ("outputs.py", "give --version")],
)  # fmt: skip
def test_bad_input_is_one_line_and_nothing_is_written(tmp_path, name, expected) -> None:
    text = tmp_path / name
    text.write_text(vllm_texts.release_text())
    releases = tmp_path / "releases"
    done = subprocess.run(
        [sys.executable, "-m", "conformance.cli.add_release", str(text), "--releases",
         str(releases), "--root", str(tmp_path / "no-checkout"), "--matrix", "none"],
        capture_output=True, text=True, timeout=300, check=False,
    )  # fmt: skip
    assert done.returncode == 4
    [line] = done.stderr.strip().splitlines()
    assert line.startswith("ERROR: ") and expected in line
    assert not releases.exists() and not (tmp_path / "no-checkout").exists()


def test_the_nox_session_runs_the_command() -> None:
    text = (CHECKOUT / "noxfile.py").read_text()
    assert '@nox.session(name="add-release"' in text
    assert '"conformance.cli.add_release"' in text
