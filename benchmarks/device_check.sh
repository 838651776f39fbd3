#!/usr/bin/env bash
# The GPU check CI cannot do: benchmarks and conformance on cuda, results to a folder.
#
#   benchmarks/device_check.sh OUT_DIR
#
# For a machine with a GPU and no network.  Run from anywhere; it works in the
# repository root.  It expects an interpreter (python3, or $PYTHON) whose torch
# sees the GPU, with numpy and asv installed; the project itself is installed
# (pip install --no-deps --no-build-isolation -e .) when it is not importable, and
# falls back to PYTHONPATH when even that fails.  With WHEELS=/path/to/wheels
# the missing tools (asv, pytest, pytest-xdist, hypothesis, pandas, matplotlib)
# are installed from that folder first, offline.
#
# Steps, each with its own time limit (seconds, overridable by environment), so
# the whole check fits in ~6 minutes (limits below).  Conformance and the race check
# run right after the link's group, before the other groups: what only the device can
# say is in first.
#   env         python, torch, devices, nvidia-smi            -> OUT/env.txt
#   bench-*     asv run on this interpreter, device cuda only  -> .asv/results (under HEAD)
#               in groups: the link itself (plain copies 4 KB-64 MB, pinned and
#               pageable, and the small-copy latency), transfer, padding,
#               gather_logprobs beside vLLM's way as described and beside Model Runner
#               V2's Triton gathering (its representative shape: each process
#               compiles the count), the whole decode step's host
#               side (one shape, beside 0.33.0's first runner and 0.34.0's Model
#               Runner V2) and the host-only benchmarks (tolists,
#               slice, empty_cpu: no device parameter, they run on CPU)
#   publish     asv publish                                    -> OUT/html
#   conformance python -m conformance --backend $OUTPUTS_BACKEND (default reference)
#                                                              -> OUT/conformance.json
#   race        tests/conformance/device_race.py: the race check on vLLM's own async
#               outputs of RACE_RELEASES (default: device_race.py's), each runner's,
#               from the release texts in VLLM_TEXTS (default: fetched into the user
#               cache; the step is left out, and says so, without them), on their mutants and
#               on the broken backends, each on the real device and on the simulated
#               runtime side by side; Model Runner V2's Triton kernels (its gathering,
#               its rejection sampler's speculative rows) on the real device
#                                                              -> OUT/race (race.md first)
#   report      python -m reports over the results, the conformance report and the
#               race runs' reports                             -> OUT/report
# OUT/logs/ holds each step's log, OUT/asv-results a copy of .asv/results and
# OUT/status.txt one line per step.  Exit status: 0 only if every step passed.
# Set OUTPUTS_BENCH_DEVICES to benchmark other devices (default: cuda), or
# BENCH_ARGS to run one asv run with those options instead (e.g. BENCH_ARGS="-b transfer").
# PLAN=limits runs instead what the reference's limits are judged on (every shape of
# the gathering, unpadding and decode-step grids, the targets' tracks only, one asv
# round (OUTPUTS_BENCH_ROUNDS); the link and the transfer beside a plain pinned copy;
# the gathering's conformance checks on the device; no race check, no publish, no
# report: device_day.sh keep makes it), in groups LIMITS_GROUPS may name, in this
# order: link (BENCH_LINK_LIMIT 25), conformance (CONFORMANCE_LIMIT 20), gather-floor,
# gather-mrv2 (each in two parts by vocabulary, BENCH_GATHER_LIMIT 30 a part), padding
# (two parts, BENCH_PADDING_LIMIT 25 each), decode (two parts by drafts,
# BENCH_DECODE_LIMIT 40 each: the decode step's host side on the device's own runtime),
# gather-vllm (two parts, last: its processes compile vLLM's code).  With CHECK_BUDGET
# (device_day.sh sets it) no step runs past it: a step gets what is left, and the steps
# it leaves no time for are named in status.txt ("not run"), for a second call.
# DRY_RUN=1 proves the script without a device (the project's tests run it so, on
# OUTPUTS_BENCH_DEVICES=cpu): each benchmark group is the smoke run (every benchmark
# once, nothing saved: .asv/results is left as it was), publish is left out and the
# report is made of the conformance and race reports alone.
# Limits: ENV_LIMIT 30, BENCH_LINK_LIMIT 60, BENCH_TRANSFER_LIMIT 90, BENCH_PADDING_LIMIT 60,
# BENCH_GATHER_LIMIT 90, BENCH_DECODE_LIMIT 90, BENCH_HOST_LIMIT 60 (BENCH_LIMIT 300 with
# BENCH_ARGS), PUBLISH_LIMIT 45, CONFORMANCE_LIMIT 60, RACE_LIMIT 120, REPORT_LIMIT 60:
# ~5 minutes in practice, ~12 at worst.
set -uo pipefail

if [[ $# -ne 1 ]]; then
    echo "usage: $0 OUT_DIR" >&2
    exit 64
fi
mkdir -p "$1/logs"
OUT="$(cd "$1" && pwd)"
cd "$(dirname "$0")/.."
ROOT="$(pwd)"
PYTHON="${PYTHON:-python3}"
export OUTPUTS_BENCH_DEVICES="${OUTPUTS_BENCH_DEVICES:-cuda}"
export OUTPUTS_BACKEND="${OUTPUTS_BACKEND:-reference}"
: >"$OUT/status.txt"
failed=0
race_reports=()

# Cut short (device_day.sh's limit): the step in flight is stopped and waited for, so
# that nothing writes results while they are copied and packed, and status.txt says so.
STEP_PID=
STEP_NAME=
cut_short() {
    if [[ -n $STEP_PID ]]; then
        kill -TERM "$STEP_PID" 2>/dev/null
        wait "$STEP_PID" 2>/dev/null
        echo "$STEP_NAME: cut by the run's time limit" >>"$OUT/status.txt"
    fi
    exit "$1"
}
trap 'cut_short 143' TERM
trap 'cut_short 130' INT

# step NAME LIMIT COMMAND...: run with a time limit, log to OUT/logs/NAME.log.
step() {
    local name="$1" limit="$2"
    shift 2
    local start=$SECONDS
    # Within the run's budget (CHECK_BUDGET seconds, device_day.sh's): a step gets what
    # is left of it at most, and one with no time left is named, for a second call.
    if [[ -n ${CHECK_BUDGET:-} ]]; then
        local left=$((CHECK_BUDGET - SECONDS))
        if ((left < 5)); then
            echo "$name: not run: the run's time was spent (a second call: LIMITS_GROUPS)" |
                tee -a "$OUT/status.txt"
            failed=1
            return 124
        fi
        ((limit > left)) && limit=$left
    fi
    echo "== $name (limit ${limit}s): $*"
    # In the background and waited for: a TERM to this script (device_day.sh's limit)
    # then reaches the step's own process group through its timeout (see the trap).
    timeout --kill-after=10 "$limit" "$@" >"$OUT/logs/$name.log" 2>&1 </dev/null &
    STEP_PID=$! STEP_NAME=$name
    wait "$STEP_PID"
    local rc=$?
    STEP_PID=
    local verdict=passed
    if [[ $rc -eq 124 || $rc -eq 137 ]]; then
        verdict="timed out"
    elif [[ $rc -eq 1 ]] && grep -q "No benchmarks selected" "$OUT/logs/$name.log"; then
        verdict="passed: nothing to run (no shape of the grid matches)"
    elif [[ $rc -ne 0 ]]; then
        verdict="failed (exit $rc)"
    fi
    [[ $verdict == passed* ]] || failed=1
    echo "$name: $verdict in $((SECONDS - start))s" | tee -a "$OUT/status.txt"
    tail -n 5 "$OUT/logs/$name.log"
    return $rc
}

# --- the interpreter: tools, project ---------------------------------------------
if [[ -n "${WHEELS:-}" ]]; then
    step install-tools 300 "$PYTHON" -m pip install --no-index --find-links "$WHEELS" \
        asv pytest pytest-xdist hypothesis pandas matplotlib
fi
# Installed, not merely importable from the root: the pytest plugin and the backends are
# entry points, and the race check runs from tests/ (asked from / so the root is not on
# the path).
if ! (cd / && "$PYTHON" -c "import importlib.metadata as m; m.distribution('vllm-outputs-suite')
import reference, conformance.backends.backend") >/dev/null 2>&1; then
    step install-project 120 "$PYTHON" -m pip install --no-deps --no-build-isolation \
        --no-index -e . ||
        {
            echo "installing failed: using PYTHONPATH (asv reads ASV_PYTHONPATH)"
            export PYTHONPATH="$ROOT${PYTHONPATH:+:$PYTHONPATH}" ASV_PYTHONPATH="$ROOT"
            export PYTEST_PLUGINS=vllm_outputs_suite_plugin
        }
fi

# asv needs a git repository; a bare copy of the tree gets a throwaway snapshot commit.
if ! git rev-parse HEAD >/dev/null 2>&1; then
    echo "not a git checkout: recording the tree as a local snapshot commit"
    git init -q -b main && git add -A &&
        git -c user.name=device-check -c user.email=device-check@localhost \
            commit -q -m "device_check snapshot"
fi
COMMIT="$(git rev-parse HEAD)"
# asv files results under that commit; say so where the tree measured is not it (a copy
# of a working tree whose .git lags behind, as a lent machine's may).
if [[ -n "$(git status --porcelain --untracked-files=no 2>/dev/null | head -1)" ]]; then
    COMMIT_NOTE=" (the working tree measured differs from it)"
fi

[[ ${PLAN:-full} == limits ]] && ENV_LIMIT="${ENV_LIMIT:-20}"
step env "${ENV_LIMIT:-30}" bash -c "
    echo 'commit $COMMIT${COMMIT_NOTE:-}'; echo backend \$OUTPUTS_BACKEND; echo devices \$OUTPUTS_BENCH_DEVICES
    '$PYTHON' -c 'import sys, torch, numpy; print(sys.version); print(\"torch\", torch.__version__, \"cuda\", torch.version.cuda, \"available\", torch.cuda.is_available(), torch.cuda.device_count()); print(\"numpy\", numpy.__version__); [print(torch.cuda.get_device_name(i)) for i in range(torch.cuda.device_count())]'
    '$PYTHON' -c 'import triton; print(\"triton\", triton.__version__)' || true
    '$PYTHON' -m benchmarks.device_memory || true
    '$PYTHON' -c 'import torch, reference, reference_speedups as s
d = \"cuda\" if torch.cuda.is_available() else \"cpu\"
reference.gather_logprobs(torch.randn(2, 1000, device=d).log_softmax(-1), 5, torch.tensor([1, 2], device=d))
print(\"reference paths:\", s.path())' || true
    nvidia-smi || true"
# Kept whatever the step's outcome: device_day.sh keep names the run by its GPU.
cp "$OUT/logs/env.log" "$OUT/env.txt"

# The benchmarks beside vLLM's own read the same texts as the race (no network there).
if [[ -n ${VLLM_TEXTS:-} ]]; then
    export OUTPUTS_VLLM_RELEASES="${OUTPUTS_VLLM_RELEASES:-$VLLM_TEXTS}"
fi

# --- benchmarks ----------------------------------------------------------------------
DRY_RUN="${DRY_RUN:-0}"
[[ $DRY_RUN == 1 ]] || "$PYTHON" -m asv machine --yes >"$OUT/logs/asv-machine.log" 2>&1
# asv saves a run's results only when it ends (merging them with earlier runs of
# the same commit), so the suite runs in groups: a group that times out loses only
# its own results.  A dry run is the smoke run of each group: nothing saved.
# vLLM's code beside the reference is timed as it ships: its platforms compile its
# rank count with inductor (the stand-in's default, eager, is for machines whose cores
# would take a minute to compile it).
bench() {
    local name="$1" limit="$2"
    shift 2
    if [[ $DRY_RUN == 1 ]]; then
        step "$name" "$limit" "$PYTHON" benchmarks/smoke.py "$@"
    else
        OUTPUTS_VLLM_COMPILE_BACKEND="${OUTPUTS_VLLM_COMPILE_BACKEND:-inductor}" \
            step "$name" "$limit" "$PYTHON" -m asv run --python=same \
            --set-commit-hash="$COMMIT" --show-stderr "$@"
    fi
}
# A grid in two parts, one asv run each, by its vocabulary (the representative one, then
# the other, which a grid cut to one shape lacks): a part cut by its limit loses only its
# own shapes, as asv saves a run's results only when it ends.
bench_by_vocabulary() {
    local name="$1" limit="$2" pattern="$3" vocabulary
    for vocabulary in 151936 32000; do
        bench "$name-$vocabulary" "$limit" -b "$pattern\(.*\b$vocabulary, "
    done
}
# --- conformance and the race check: run right after the link's benchmarks, so that
# what only the device can say comes back even when a later group runs long --------
judge() {
    step conformance "${CONFORMANCE_LIMIT:-60}" "$PYTHON" -m conformance \
        --backend "$OUTPUTS_BACKEND" --report "$OUT/conformance.json"

    # The race check on vLLM's own producers, real and simulated; its releases are
    # device_race.py's unless RACE_RELEASES names others.
    local releases="${RACE_RELEASES:-$("$PYTHON" tests/conformance/device_race.py --print-releases)}"
    if [[ -z ${VLLM_TEXTS:-} ]]; then
        # shellcheck disable=SC2086  # a list of versions
        "$PYTHON" -m conformance.cli.fetch_releases $releases ||
            echo "race: the release texts could not be fetched" | tee -a "$OUT/status.txt"
        VLLM_TEXTS="$("$PYTHON" -c 'from conformance.releases.fetch import texts_folder; print(texts_folder())')"
    fi
    race_reports=()
    if [[ -d $VLLM_TEXTS ]]; then
        # shellcheck disable=SC2086  # a list of versions
        step race "${RACE_LIMIT:-120}" "$PYTHON" tests/conformance/device_race.py \
            --texts "$VLLM_TEXTS" --out "$OUT/race" --releases $releases
        [[ -d $OUT/race/runs ]] && race_reports=("$OUT/race/runs")
    else
        echo "race: left out (no release texts in $VLLM_TEXTS: set VLLM_TEXTS)" |
            tee -a "$OUT/status.txt"
    fi
}

if [[ -n "${BENCH_ARGS:-}" ]]; then
    # shellcheck disable=SC2086  # BENCH_ARGS is a list of options
    bench bench "${BENCH_LIMIT:-300}" ${BENCH_ARGS}
    judge
elif [[ ${PLAN:-full} == limits ]]; then
    # The reference at the hardware's limits, every shape of each grid, the targets'
    # ratios only (each timed interleaved in its track, one asv round: the track's own
    # blocks give its interval), in parts of their own (asv saves a run's results only
    # when it ends).  The quick and sure groups first (the link, the gathering's checks),
    # then the gatherings, the unpadding and the decode step: their limits add up to what
    # the 360 s of device_day.sh leave after the install.  LIMITS_GROUPS names the groups
    # run (a rerun of what the first run's time cut off).
    export OUTPUTS_BENCH_ROUNDS="${OUTPUTS_BENCH_ROUNDS:-1}"
    groups=" ${LIMITS_GROUPS:-link conformance gather-floor gather-mrv2 padding decode gather-vllm} "
    [[ $groups == *" link "* ]] && bench bench-link "${BENCH_LINK_LIMIT:-25}" \
        -b '^(link\.(LinkBandwidth|LinkRating)|transfer\.TransferBesidePinnedCopy)\.track_'
    [[ $groups == *" conformance "* ]] && step conformance "${CONFORMANCE_LIMIT:-20}" \
        "$PYTHON" -m conformance --backend "$OUTPUTS_BACKEND" -k gather_logprobs \
        --report "$OUT/conformance.json"
    [[ $groups == *" gather-floor "* ]] && bench_by_vocabulary bench-gather-floor \
        "${BENCH_GATHER_LIMIT:-30}" \
        '^gather\.GatherAtTheMemoryLimit\.track_gather_ratio_to_bandwidth_floor'
    [[ $groups == *" gather-mrv2 "* ]] && bench_by_vocabulary bench-gather-mrv2 \
        "${BENCH_GATHER_LIMIT:-30}" '^gather\.GatherBesideModelRunnerV2\.track_\w+'
    [[ $groups == *" padding "* ]] && bench bench-padding "${BENCH_PADDING_LIMIT:-25}" \
        -b '^padding\.Unpad\.track_'
    [[ $groups == *" padding "* ]] && bench bench-padding-vllm "${BENCH_PADDING_LIMIT:-25}" \
        -b '^padding\.UnpadBesideVllm\.track_'
    # The decode step's two targets: ours over the floor, ours over 0.34.0's where that
    # is at least 2x the floor; in two parts, one token per request and speculative rows
    # (asv matches -b against each name with its parameters, the drafts last).
    if [[ $groups == *" decode "* ]]; then
        for drafts in 0 3; do
            bench "bench-decode-drafts-$drafts" "${BENCH_DECODE_LIMIT:-40}" \
                -b "^decode_step\.DecodeStepNewestTargets\.track_(decode_step_ratio_to_copies_floor_0_34|decode_step_ratio_to_vllm_0_34|vllm_0_34_ratio_to_copies_floor)\(.*, $drafts\)\$"
        done
    fi
    # vLLM's own gathering last: each of its processes compiles vLLM's rank count
    # (inductor, as vLLM ships it), the least certain time of the groups.
    [[ $groups == *" gather-vllm "* ]] && bench_by_vocabulary bench-gather-vllm \
        "${BENCH_GATHER_LIMIT:-30}" '^gather\.GatherLogprobsBesideVllm\.track_gather_ratio_to_vllm'
else
    bench bench-link "${BENCH_LINK_LIMIT:-60}" -b '^link\.'
    judge
    bench bench-transfer "${BENCH_TRANSFER_LIMIT:-90}" -b '^transfer\.'
    bench bench-padding "${BENCH_PADDING_LIMIT:-60}" -b '^padding\.'
    OUTPUTS_BENCH_SHAPES=representative \
        bench bench-gather "${BENCH_GATHER_LIMIT:-90}" \
        -b '^gather\.(GatherLogprobs|GatherBesideModelRunnerV2)\.'
    # One shape each (quick): beside 0.33.0's first runner and 0.34.0's Model Runner V2,
    # the targets' ratios timed interleaved (their tracks), not only the two times.
    OUTPUTS_BENCH_QUICK=1 bench bench-decode "${BENCH_DECODE_LIMIT:-90}" \
        -b '^decode_step\.(DecodeStep|DecodeStepTargets|DecodeStepNewestTargets)\.'
    bench bench-host "${BENCH_HOST_LIMIT:-60}" -b '^(tolists|lists_slice|empty_cpu)\.'
fi
if [[ $DRY_RUN != 1 && ${PLAN:-full} == limits ]]; then
    mkdir -p "$OUT/asv-results" && cp -r .asv/results/. "$OUT/asv-results/" 2>/dev/null
elif [[ $DRY_RUN != 1 ]]; then
    mkdir -p "$OUT/asv-results" && cp -r .asv/results/. "$OUT/asv-results/" 2>/dev/null
    step publish "${PUBLISH_LIMIT:-45}" "$PYTHON" -m asv publish &&
        rm -rf "$OUT/html" && cp -r .asv/html "$OUT/html"
fi

# --- report (the reports package may not be there yet) -------------------------------------
if [[ ${PLAN:-full} == limits ]]; then
    # Its time goes to the groups: device_day.sh keep makes the report from the results.
    echo "report: left to device_day.sh keep (PLAN=limits)"
elif "$PYTHON" -c "import importlib.util, sys; sys.exit(importlib.util.find_spec('reports.__main__') is None)" 2>/dev/null; then
    results=()
    [[ $DRY_RUN == 1 ]] || results=(--results .asv/results)
    step report "${REPORT_LIMIT:-60}" "$PYTHON" -m reports "${results[@]}" \
        --conformance "$OUT/conformance.json" "${race_reports[@]}" --out "$OUT/report"
else
    echo "report: not available (no reports.__main__)" | tee -a "$OUT/status.txt"
fi

echo "results in $OUT (status.txt, logs/, asv-results/, html/, conformance.json, race/, report/)"
exit $failed
