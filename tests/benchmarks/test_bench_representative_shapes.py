"""The main job's shapes: the targets' grids whole, every other benchmark at its representative shape."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

PARAMS = """
import json
from benchmarks import gather, padding, side_by_side, tolists
print(json.dumps({
    "ToLists": tolists.ToLists.params[1:],
    "ToListsAgainstBaselines": tolists.ToListsAgainstBaselines.params[1:],
    "Unpad": padding.Unpad.params[1:],
    "UnpadBesideVllm": padding.UnpadBesideVllm.params[1:],
    "Pad": padding.Pad.params[1:],
    "GatherLogprobs": gather.GatherLogprobs.params[1:],
    "GatherLogprobsBesideVllm": gather.GatherLogprobsBesideVllm.params[1:],
    "SideBySide": side_by_side.SideBySide.params[2],
}))
"""


def _params(repo_root: Path, **env: str) -> dict[str, list]:
    environment = {k: v for k, v in os.environ.items() if not k.startswith("OUTPUTS_BENCH")}
    done = subprocess.run(
        [sys.executable, "-c", PARAMS],
        cwd=repo_root,
        env={**environment, **env},
        capture_output=True,
        text=True,
        check=True,
    )
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_the_main_job_keeps_the_targets_whole_and_narrows_the_rest(repo_root: Path) -> None:
    main = _params(repo_root, OUTPUTS_BENCH_SHAPES="representative", OUTPUTS_BENCH_DEVICES="cpu")
    assert main["ToLists"] == [[1024], [5]]
    assert main["Pad"] == [["cpu"], [256], [3]]
    assert main["GatherLogprobs"] == [["cpu"], [64], [151936], [5]]
    # The targets hold at every shape: their grids stay whole.
    assert main["ToListsAgainstBaselines"] == [[1, 64, 1024, 8192], [0, 5, 20]]
    assert main["Unpad"] == [["cpu"], [1, 4, 32, 256, 1024], [0, 3, 8]]
    # vLLM's own peer comes from the fetched texts: its target's grid stays whole too.
    assert main["GatherLogprobsBesideVllm"] == [["cpu"], [1, 64, 1024], [32000, 151936], [0, 5, 20]]
    assert main["UnpadBesideVllm"] == [["cpu"], [1, 4, 32, 256, 1024], [0, 3, 8]]
    assert len(main["SideBySide"]) == 1  # one backend: nothing to put side by side


def test_the_full_grid_is_every_shape(repo_root: Path) -> None:
    full = _params(repo_root)
    assert full["ToLists"] == [[1, 64, 1024, 8192], [0, 5, 20]]
    assert full["GatherLogprobs"][1:] == [[1, 64, 1024], [32000, 151936], [0, 5, 20]]
