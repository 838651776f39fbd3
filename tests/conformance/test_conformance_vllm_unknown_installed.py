"""An installed vLLM the suite does not know (a dev build, a fork) is judged by its own text.

Each "installation" is a tree laid out from the 0.33.0 texts with a version of its own,
put first on ``PYTHONPATH``, as an unpacked wheel would be.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import suite_runner
import vllm_texts

from conformance.releases.texts import write_tree

_CHOICE = (
    "from conformance.backends.known import vllm_backend\n"
    "from conformance.judged import choose_revision\n"
    "backend = vllm_backend()\n"
    "choice = choose_revision(None, backend)\n"
    "print(backend.version)\n"
    "print(choice.source, choice.name)\n"
    "print(choice.detail)\n"
)


def _installed(folder: Path, version: str, outputs: str) -> Path:
    return write_tree(outputs, version, folder, vllm_texts.producer_text())


def _judge_installed(tmp_path: Path, tree: Path, checks: str) -> suite_runner.Run:
    """``python -m conformance --backend vllm -k CHECKS`` with ``tree`` as the installed vLLM."""
    return suite_runner.subprocess_run(
        tmp_path, "--backend", "vllm", "-k", checks, module="conformance",
        env={"PYTHONPATH": str(tree), "XDG_CACHE_HOME": str(tmp_path / "cache")},
    )  # fmt: skip


def _choice(tree: Path) -> list[str]:
    done = subprocess.run(
        [sys.executable, "-c", _CHOICE],
        env={**os.environ, "PYTHONPATH": str(tree)}, capture_output=True, text=True,
        timeout=300, check=True,
    )  # fmt: skip
    return done.stdout.splitlines()


def test_a_dev_build_is_judged_as_its_nearest_release_instead_of_refused(tmp_path) -> None:
    tree = _installed(tmp_path / "site", "0.34.0.dev3+g1a2b3c4", vllm_texts.release_text())
    run = _judge_installed(tmp_path, tree, "draft_token_ids")
    assert run.exit_code == 0, run.output[-3000:]
    assert run.report["backend"]["version"] == "0.34.0.dev3+g1a2b3c4"
    assert run.report["spec_revision"] == "0.33.0"
    assert run.report["spec_revision_source"] == "detected"
    assert "= nearest known 0.33.0 + 0 changes" in run.report["spec_revision_detail"]
    assert "judged against vLLM tree" in run.output


def test_a_vendor_build_of_a_release_is_judged_by_that_release_its_differences_listed(
    tmp_path,
) -> None:
    nans = "    num_nans_in_logits: dict[str, int] | None = None\n"
    text = vllm_texts.release_text().replace(nans, nans + "    npu_event_id: int = 0\n")
    tree = _installed(tmp_path / "site", "0.33.0+ascend", text)
    version, chosen, detail = _choice(tree)
    assert version == "0.33.0+ascend"
    assert chosen == "detected 0.33.0"
    assert detail == "installed vllm 0.33.0+ascend"


def test_a_broken_copy_of_a_known_release_fails_the_rule_it_breaks(tmp_path) -> None:
    """vLLM 0.11.0's text installed as 0.11.0 with KVConnectorOutput.is_empty broken: judged
    by 0.11.0's rules (never superseded), the difference named in the header."""
    rule = (
        "        return (not self.finished_sending and not self.finished_recving\n"
        "                and not self.kv_connector_stats)\n"
    )
    text = vllm_texts.release_text("0.11.0")
    assert text.count(rule) == 1
    broken = text.replace(rule, "        return False\n")
    tree = write_tree(broken, "0.11.0", tmp_path / "site", vllm_texts.producer_text("0.11.0"))
    run = _judge_installed(tmp_path, tree, "kv_connector")
    assert run.exit_code == 1, run.output[-3000:]
    assert run.report["spec_revision"] == "0.11.0"
    failed = {t["behaviour"] for t in run.report["tests"] if t["outcome"] == "failed"}
    assert failed == {"KVConnectorOutput.is_empty"}
    assert (
        "vLLM 0.11.0 deviates from the released 0.11.0: body changed KVConnectorOutput.is_empty"
        in run.output
    )
    assert not [
        t for t in run.report["tests"] if t.get("skip_cause") == "superseded-by-vllm-change"
    ]


def test_a_release_name_is_never_read_as_a_folder_in_the_working_directory(tmp_path) -> None:
    tree = _installed(tmp_path / "site", "0.33.0", vllm_texts.release_text())
    (tmp_path / "0.33.0").mkdir()  # a folder named as the release, where the run starts
    run = _judge_installed(tmp_path, tree, "draft_token_ids")
    assert run.exit_code == 0, run.output[-3000:]
    assert run.report["spec_revision"] == "0.33.0"


def test_a_known_release_installed_is_judged_by_its_version_as_before(tmp_path) -> None:
    tree = _installed(tmp_path / "site", "0.33.0", vllm_texts.release_text())
    assert _choice(tree)[1:] == ["detected 0.33.0", "installed vllm 0.33.0"]


def test_a_text_importing_vllm_modules_the_suite_does_not_know_still_loads(tmp_path) -> None:
    from conformance.releases.text_revision import text_revision

    marker = "from vllm.utils.torch_utils import PIN_MEMORY\n"
    new = (
        marker + "from vllm.logger import init_logger\nfrom vllm import envs\n"
        "from vllm.platforms import current_platform\nlogger = init_logger(__name__)\n"
        "_PINNED = current_platform.is_pin_memory_available() or envs.VLLM_PIN\n"
    )
    path = tmp_path / "outputs-main.py"
    path.write_text(vllm_texts.release_text().replace(marker, new))
    judged = text_revision(path)
    assert judged.nearest == "0.33.0"
    assert [(c.member, c.change) for c in judged.changes] == [
        ("logger", "constant added"),
        ("_PINNED", "constant added"),
    ]
    assert judged.judged == ()  # module constants: nothing a backend provides


def test_a_fetched_release_is_named_by_its_wheel_not_as_installed(tmp_path) -> None:
    # --vllm-release lays the fetched text out as the vllm imported; nothing is installed.
    from conformance.releases.fetch import store

    cache = tmp_path / "cache"
    wheel = "vllm-0.33.0-cp38-abi3-manylinux_2_28_x86_64.whl"
    store(cache, "0.33.0", {"outputs-0.33.0.py.txt": vllm_texts.release_text()}, {"wheel": wheel})
    tree = write_tree(
        vllm_texts.release_text(), "0.33.0", tmp_path / "site", vllm_texts.producer_text(),
        source_mark=str(cache / "outputs-0.33.0.py.txt"),
    )  # fmt: skip
    assert _choice(tree)[1:] == [
        "detected 0.33.0",
        f"vLLM 0.33.0's text from its wheel {wheel} (fetched, not installed)",
    ]


def test_a_text_given_by_path_is_named_by_its_path_not_as_installed(tmp_path) -> None:
    text = tmp_path / "my-outputs.py"
    text.write_text(vllm_texts.release_text(), encoding="utf-8")
    tree = write_tree(
        vllm_texts.release_text(), "0.33.0", tmp_path / "site", vllm_texts.producer_text(),
        source_mark=str(text),
    )  # fmt: skip
    assert _choice(tree)[2] == f"the vLLM text {text} (version 0.33.0, not installed)"
