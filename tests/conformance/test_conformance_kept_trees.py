"""Release trees are laid out once into the cache and shared, never left in ``$TMPDIR``.

A process that leaves through ``os._exit`` (the supervised run's child, asv's forks)
runs no ``atexit``: a tree in a temporary folder per process was left behind by each.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from conformance.releases.kept_trees import MOST_TREES, UNUSED_DAYS, kept_tree, trees_folder


@pytest.fixture
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.setenv("TMPDIR", str(tmp_path / "tmp"))
    (tmp_path / "tmp").mkdir()
    monkeypatch.setattr("tempfile.tempdir", None)  # TMPDIR read again
    return tmp_path


def _writing(text: str):
    def lay_out(folder: Path) -> None:
        (folder / "vllm").mkdir()
        (folder / "vllm" / "__init__.py").write_text(text)

    return lay_out


def test_the_same_texts_give_the_same_tree_and_other_texts_another(cache: Path) -> None:
    first = kept_tree("vllm-9.9.9-producers", _writing("A = 1\n"))
    again = kept_tree("vllm-9.9.9-producers", _writing("A = 1\n"))
    other = kept_tree("vllm-9.9.9-producers", _writing("A = 2\n"))
    assert first == again != other
    assert first.parent == trees_folder() == cache / "cache" / "vllm-outputs-suite" / "trees"
    assert (other / "vllm" / "__init__.py").read_text() == "A = 2\n"
    assert sorted(p.name for p in trees_folder().iterdir()) == sorted([first.name, other.name])
    assert list((cache / "tmp").iterdir()) == []


def test_a_process_leaving_through_os_exit_leaves_nothing_in_tmpdir(cache: Path) -> None:
    code = (
        "import os\n"
        "from pathlib import Path\n"
        "from conformance.releases.kept_trees import kept_tree\n"
        "def lay_out(folder):\n"
        "    (folder / 'm.py').write_text('X = 1')\n"
        "print(kept_tree('vllm-9.9.9-producers', lay_out))\n"
        "os._exit(0)\n"
    )
    runs = [
        subprocess.run(
            [sys.executable, "-c", code], env=dict(os.environ), capture_output=True, text=True,
            check=True,
        ).stdout.strip()
        for _ in range(2)
    ]  # fmt: skip
    assert runs[0] == runs[1] and Path(runs[0]).parent == trees_folder()
    assert list((cache / "tmp").iterdir()) == []


def test_an_unwritable_cache_lays_the_tree_out_in_a_temporary_folder(
    cache: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (cache / "not-a-folder").write_text("")
    monkeypatch.setenv("XDG_CACHE_HOME", str(cache / "not-a-folder"))
    folder = kept_tree("vllm-9.9.9-producers", _writing("A = 1\n"))
    assert folder.parent == cache / "tmp"
    assert (folder / "vllm" / "__init__.py").read_text() == "A = 1\n"


def test_a_tree_unused_for_long_and_a_dead_staging_folder_are_removed(cache: Path) -> None:
    used = kept_tree("vllm-9.9.9-producers", _writing("A = 1\n"))
    old = kept_tree("vllm-9.9.8-producers", _writing("A = 1\n"))
    staging = trees_folder() / ".vllm-9.9.9-producers-dead"
    staging.mkdir()
    long_ago = time.time() - (UNUSED_DAYS + 1) * 86400
    for folder in (used, old, staging):
        os.utime(folder, (long_ago, long_ago))
    assert kept_tree("vllm-9.9.9-producers", _writing("A = 1\n")) == used
    assert [p.name for p in trees_folder().iterdir()] == [used.name]


def test_a_tree_another_process_kept_first_is_taken(
    cache: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    kept = kept_tree("vllm-9.9.9-producers", _writing("A = 1\n"))
    looks: list[Path] = []
    is_dir = Path.is_dir

    def there_only_at_the_second_look(self: Path) -> bool:
        if self == kept:
            looks.append(self)
            if len(looks) == 1:
                return False  # the other process renames its tree in right after
        return is_dir(self)

    monkeypatch.setattr(Path, "is_dir", there_only_at_the_second_look)
    assert kept_tree("vllm-9.9.9-producers", _writing("A = 1\n")) == kept
    assert len(looks) == 2
    assert [p.name for p in trees_folder().iterdir()] == [kept.name]


def test_beyond_the_most_trees_the_least_recently_used_go(cache: Path) -> None:
    day_ago = time.time() - 2 * 86400
    trees = []
    for n in range(MOST_TREES + 2):
        tree = kept_tree("vllm-9.9.9-producers", _writing(f"A = {n}\n"))
        os.utime(tree, (day_ago + n, day_ago + n))  # the first made, the least recently used
        trees.append(tree)
    newest = kept_tree("vllm-9.9.9-producers", _writing("A = 'new'\n"))
    left = set(trees_folder().iterdir())
    assert newest in left and len(left) == MOST_TREES
    assert not {trees[0], trees[1], trees[2]} & left


def test_a_name_from_a_texts_version_stays_one_folder_name(cache: Path) -> None:
    tree = kept_tree("vllm-0.35.0.dev1/../x y-producers", _writing("A = 1\n"))
    assert tree.parent == trees_folder()
    assert tree.name.startswith("vllm-0.35.0.dev1_.._x_y-producers-")
