#!/usr/bin/env bash
# A GPU day in two commands: what to carry, prepared here, and the one run there.
#
#   benchmarks/device_day.sh prepare        # here, with network: .whl/ and .texts/
#   benchmarks/device_day.sh run OUT_FILE   # there, offline: device_check.sh, one archive
#   benchmarks/device_day.sh keep OUT_FILE [LABEL]  # here again: kept in docs/examples/
#
# The lent GPU machine (one H200, Python 3.12 with CUDA torch, pandas, matplotlib,
# pytest, hypothesis; no network, no asv) gets a copy of the working tree and the
# ignored paths named to carry, and gives back at most 8 files.  So:
#
# prepare  downloads asv and what it needs that the machine lacks, as Python 3.12
#          x86-64 wheels, into .whl/, and copies the vLLM release texts the checks
#          read (fetched into the user cache, or $VLLM_TEXTS) into .texts/;
#          both are listed in .git/info/exclude, never committed.  Carry both.
# run      installs .whl/ into /tmp/site (nothing of the machine's own is replaced),
#          runs benchmarks/device_check.sh into a scratch folder with the texts of
#          .texts/ (at most DEVICE_CHECK_LIMIT seconds, default 360), and packs that
#          folder into OUT_FILE (a .tar.gz): one file back.  Its exit status is
#          device_check.sh's (124 when it was cut at the limit).  The check's PLAN is
#          ``limits`` unless set (the reference at the hardware's limits: every shape
#          of the gathering, unpadding and decode-step grids, the link; ``PLAN=full``:
#          every group, the race check included).  A group the call's time cut off is
#          a second call's: ``LIMITS_GROUPS="gather-vllm" benchmarks/device_day.sh run
#          OUT_FILE2`` (status.txt names what was cut).
# keep     unpacks OUT_FILE into docs/examples/DEVICE/DATE/ ($EXAMPLES_DIR/DEVICE/DATE/
#          where set; DEVICE from the GPU's name
#          in its env.txt, DATE the archive's day, DATE-LABEL where a LABEL is given:
#          a second call's run of the same day, such as ``rerun``; earlier runs are kept
#          beside it, an existing folder is never overwritten) and makes the report
#          again there from the run's results and conformance report.  An archive cut
#          short (the command killed while packing) keeps what it holds, said so.
#
# The device tool's call, e.g. (timeout_s 400: the check's 360 and the archive; a second
# call for what status.txt names as cut or not run fits in the 15 minutes where the
# machine is still warm; the kind named, or the first call gets an H100):
#   run(command="benchmarks/device_day.sh run $OUT/device-check.tar.gz",
#       carry=[".whl", ".texts"], kind="nvidia-h200", timeout_s=400)
set -uo pipefail
cd "$(dirname "$0")/.."

# asv and what it needs beyond the machine's image (KINDS.md lists that image).
WHEELS=(asv asv_runner json5 pympler "importlib-metadata<8.8" virtualenv distlib
    python-discovery platformdirs)

prepare() {
    local exclude=.git/info/exclude
    for path in /.whl/ /.texts/; do
        grep -qxF "$path" "$exclude" 2>/dev/null || echo "$path" >>"$exclude"
    done
    rm -rf .whl && mkdir -p .whl
    python3 -m pip download --quiet --no-deps --only-binary=:all: --python-version 3.12 \
        --implementation cp --platform manylinux_2_28_x86_64 --platform manylinux_2_17_x86_64 \
        --platform manylinux2014_x86_64 --platform any -d .whl "${WHEELS[@]}" || return 1
    local texts="${VLLM_TEXTS:-}"
    if [[ -z $texts ]]; then
        python3 -m conformance.cli.fetch_releases --all || return 1
        texts="$(python3 -c 'from conformance.releases.fetch import texts_folder; print(texts_folder())')"
    fi
    if [[ ! -d $texts ]]; then
        echo "prepare: no release texts in $texts. Fix: set VLLM_TEXTS to the folder" >&2
        return 1
    fi
    rm -rf .texts && cp -r "$texts" .texts && rm -rf .texts/__pycache__
    du -sh .whl .texts
    echo "carry: .whl .texts (in all under the 64 MiB the tree may be)"
}

run() {
    local archive="$1" scratch
    scratch="$(mktemp -d)/device-check"
    if [[ ! -d .whl ]] && ! python3 -c "import asv" 2>/dev/null; then
        echo "device_day run: no .whl/ here and no asv installed. Fix: run 'benchmarks/device_day.sh prepare' where the index is reachable and carry .whl and .texts" >&2
        return 1
    fi
    if [[ -d .whl ]]; then
        python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir \
            --upgrade --target /tmp/site .whl/*.whl || return 1
        export PYTHONPATH="/tmp/site${PYTHONPATH:+:$PYTHONPATH}"
        export ASV_PYTHONPATH="/tmp/site:$(pwd)"
    fi
    # Bounded, so that the archive is made even when a step runs long: the device
    # tool returns nothing of a command it had to kill.
    # The check keeps its steps within its budget and names what it had no time for;
    # the limit here is the backstop (its TERM stops the step in flight, said so).
    local limit="${DEVICE_CHECK_LIMIT:-360}"
    PLAN="${PLAN:-limits}" VLLM_TEXTS="${VLLM_TEXTS:-$(pwd)/.texts}" \
        CHECK_BUDGET="${CHECK_BUDGET:-$((limit - 20))}" timeout --kill-after=20 \
        "$limit" benchmarks/device_check.sh "$scratch"
    local rc=$?
    # What the groups saved, also when the check was cut before it copied them.
    mkdir -p "$scratch/asv-results" && cp -r .asv/results/. "$scratch/asv-results/" 2>/dev/null
    # env.txt first: an archive cut short while packing still names its GPU.
    local first=()
    [[ -f $scratch/env.txt ]] && first=(device-check/env.txt)
    tar czf "$archive" -C "$(dirname "$scratch")" "${first[@]}" device-check
    echo "device_day: device_check.sh exited $rc; everything it wrote is in $archive"
    return $rc
}

keep() {
    local archive="$1" label="${2:-}" unpacked device day folder
    local not_a_run="keep: $archive is not an archive of device_day.sh run (no device-check/ in it). Fix: name the file the run brought back"
    unpacked="$(mktemp -d)"
    # An archive cut short still holds what was packed before the cut: kept, said so.
    if ! tar xzf "$archive" -C "$unpacked" 2>/dev/null && [[ -d $unpacked/device-check ]]; then
        echo "keep: $archive is cut short (its end is missing): keeping what it holds" >&2
    fi
    if [[ ! -d $unpacked/device-check ]]; then
        echo "$not_a_run" >&2
        return 1
    fi
    if [[ ! -f $unpacked/device-check/env.txt ]]; then
        echo "keep: the run wrote no env.txt: its GPU is not named, so it is kept under ${EXAMPLES_DIR:-docs/examples}/device/" >&2
    fi
    # The GPU's name as torch printed it (e.g. "NVIDIA H200" -> h200).
    device="$(grep -m1 -oiE '^NVIDIA [A-Z0-9]+' "$unpacked/device-check/env.txt" 2>/dev/null |
        awk '{print tolower($2)}')"
    day="$(date -u -r "$archive" +%Y-%m-%d)"
    folder="${EXAMPLES_DIR:-docs/examples}/${device:-device}/$day${label:+-$label}"
    if [[ -e $folder ]]; then
        echo "keep: $folder exists already; nothing overwritten. Fix: move it away first, or name this run: $0 keep $archive LABEL" >&2
        return 1
    fi
    mkdir -p "$folder" && cp -r "$unpacked/device-check/." "$folder/" || return 1
    rm -rf "$folder/html" "$folder/report"
    local conformance=()
    [[ -f $folder/conformance.json ]] && conformance=(--conformance "$folder/conformance.json")
    if ! python3 -m reports --results "$folder/asv-results" "${conformance[@]}" --out "$folder/report"; then
        echo "keep: kept in $folder, but its report could not be made (above). Fix: look at what the run brought back there" >&2
        return 1
    fi
    echo "kept in $folder (report: $folder/report/summary.md)"
}

case "${1:-}" in
prepare) prepare ;;
keep)
    if [[ $# -ne 2 && $# -ne 3 ]] || [[ ${3:-x} =~ [^A-Za-z0-9_.-] ]]; then
        echo "usage: $0 keep OUT_FILE [LABEL] (a LABEL of letters, digits, . _ -)" >&2
        exit 64
    fi
    keep "$2" "${3:-}"
    ;;
run)
    if [[ $# -ne 2 ]]; then
        echo "usage: $0 run OUT_FILE" >&2
        exit 64
    fi
    run "$2"
    ;;
*)
    echo "usage: $0 prepare | run OUT_FILE | keep OUT_FILE [LABEL]" >&2
    exit 64
    ;;
esac
