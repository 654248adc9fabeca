#!/usr/bin/env bash
# Builds <challenge>-evaluation (./build.sh) and runs it the way grand-challenge.org does:
#   1. on the example submission <example>/input/ with the ground truth baked into the image: the
#      metrics.json written must equal <example>/expected_metrics.json byte for byte;
#   2. the same with the ground truth uploaded on the phase instead: the .tar.gz that ./export.sh
#      writes, unpacked and mounted at /opt/ml/input/data/ground_truth as the platform does; the
#      run must use it and write the same bytes;
#   3. on every invalid submission <example>/invalid/<name>/input/ (if any): exit code 1, no
#      metrics.json, and the last non-empty stderr line (what the participant sees) must equal
#      <example>/invalid/<name>/expected_error.txt.
#
#   ./test.sh <challenge> [--example DIR] [--ground-truth DIR]
#
# --example DIR       the example folder (default test/<challenge>); make one for your own ground
#                     truth with: python -m evaluation.examples <challenge> --ground-truth ground-truth/<challenge> --output DIR
# --ground-truth DIR  test a ground truth you will upload on the phase rather than bake in: steps 2
#                     and 3 use it, and step 1 (the baked-in ground-truth/<challenge>) is skipped.
# BASE_IMAGE / PIP_INSTALL_ARGS are passed on to build.sh. MEMORY_GIB (default 8, the platform's default
# machine) is the evaluation machine's memory: the container gets it as a cgroup limit (--memory) and,
# as the platform's runtime sets it, every process a data rlimit of that minus 1 GiB (--ulimit data).
set -euo pipefail
cd "$(dirname "$0")"
root="$PWD"

source scripts/docker-common.sh
docker_script_start test.sh "$@"
shift
example="test/$challenge"
uploaded_source="ground-truth/$challenge"
baked=1
while [ $# -gt 0 ]; do
    case "$1" in
        --example) [ $# -ge 2 ] || die "--example needs a folder"; example="$2"; shift 2 ;;
        --ground-truth) [ $# -ge 2 ] || die "--ground-truth needs a folder"; uploaded_source="$2"; baked=0; shift 2 ;;
        *) die "unknown argument '$1' (usage: ./test.sh <challenge> [--example DIR] [--ground-truth DIR])" ;;
    esac
done
example="$(cd "$example" 2>/dev/null && pwd)" || die "no example folder: $example not found"
[ -d "$uploaded_source" ] || die "no ground-truth folder: $uploaded_source not found"
expected="$example/expected_metrics.json"
[ -d "$example/input" ] || die "no example submission: folder $example/input/ not found"
[ -f "$expected" ] || die "no expected result: $expected not found"

./build.sh "$challenge"

# The platform refuses images that run as root; check before relying on the image's USER below.
user="$(docker image inspect --format '{{.Config.User}}' "$image")"
case "$user" in
    "" | root | 0 | 0:* | root:*) die "image $image runs as root (USER '$user'); grand-challenge.org requires a non-root USER" ;;
esac

memory_gib="${MEMORY_GIB:-8}"
[[ "$memory_gib" =~ ^[1-9][0-9]*$ ]] && [ "$memory_gib" -ge 2 ] \
    || die "MEMORY_GIB must be a whole number of GiB, 2 or more (got '$memory_gib')"
data_limit=$(((memory_gib - 1) * 1024 * 1024 * 1024))

tmp="$(mktemp -d)"
cleanup() {
    # Files written by the container belong to uid 1000; if we cannot delete them as ourselves,
    # let the image's own user empty the (world-writable) output folders first.
    if ! rm -rf "$tmp" 2>/dev/null; then
        docker run --rm --network none -v "$tmp/out:/scratch" --entrypoint sh "$image" \
            -c 'rm -rf /scratch/*/* /scratch/*/.[!.]*' >/dev/null 2>&1 || true
        rm -rf "$tmp" || echo "test.sh: could not remove $tmp" >&2
    fi
}
trap cleanup EXIT

# run_image <input folder> <output folder>: the restrictions of a grand-challenge.org evaluation run,
# with the uploaded ground truth mounted where the platform puts it when $uploaded is set.
# The memory: the machine's as a cgroup limit, and the platform's own cap, RLIMIT_DATA (the machine's
# memory minus 1 GiB, per process, inherited by the worker processes).
restrictions=(
    --network none
    --read-only --tmpfs /tmp
    --cap-drop ALL --security-opt no-new-privileges
    --memory "${memory_gib}g" --memory-swap "${memory_gib}g" --ulimit "data=$data_limit:$data_limit"
    --pids-limit 256 --shm-size 128m
)
uploaded=""
run_image() {
    local mounts=(-v "$1:/input:ro" -v "$2:/output")
    [ -z "$uploaded" ] || mounts+=(-v "$uploaded:/opt/ml/input/data/ground_truth:ro")
    docker run --rm "${restrictions[@]}" "${mounts[@]}" "$image"
}

# The data rlimit must reach the evaluation's processes, a worker process's included, as on the platform.
limits="$(docker run --rm "${restrictions[@]}" --entrypoint python "$image" -c '
import multiprocessing, resource
with multiprocessing.get_context("spawn").Pool(1) as pool:
    print(*resource.getrlimit(resource.RLIMIT_DATA), *pool.apply(resource.getrlimit, (resource.RLIMIT_DATA,)))')" \
    || die "could not read the data rlimit inside $image"
[ "$limits" = "$data_limit $data_limit $data_limit $data_limit" ] \
    || die "the data rlimit inside $image is '$limits', expected $data_limit (soft and hard, main and worker process)"
echo "Memory: cgroup ${memory_gib} GiB, data rlimit $((memory_gib - 1)) GiB ($data_limit bytes) in every process"

# new_output <name>: an empty output folder the image's user (uid 1000) can write to.
new_output() {
    mkdir -p "$tmp/out/$1"
    chmod 0777 "$tmp/out/$1"
    echo "$tmp/out/$1"
}

# run_example <name> <what>: the example submission, its metrics.json compared byte for byte.
run_example() {
    local name="$1" what="$2" out status start
    echo
    echo "== $image on $example/input ($what) =="
    out="$(new_output "$name")"
    start=$SECONDS
    status=0
    run_image "$example/input" "$out" >"$tmp/stdout-$name" || status=$?
    cat "$tmp/stdout-$name"
    echo "(container exited with $status after $((SECONDS - start)) s)"
    if [ "$status" -ne 0 ]; then
        echo "FAIL: $image exited with $status on the example submission ($what)" >&2
        exit 1
    fi
    if [ ! -f "$out/metrics.json" ]; then
        echo "FAIL: $image exited with 0 but wrote no /output/metrics.json ($what)" >&2
        exit 1
    fi
    echo "-- metrics.json --"
    cat "$out/metrics.json"
    echo
    if cmp -s "$expected" "$out/metrics.json"; then
        echo "OK: metrics.json equals $expected byte for byte ($what)"
    else
        echo "FAIL: metrics.json differs from $expected ($what; diff expected -> actual):" >&2
        diff -u --label "$expected" --label metrics.json "$expected" "$out/metrics.json" >&2 || true
        # diff says nothing when only the final newline or invisible bytes differ
        cmp "$expected" "$out/metrics.json" >&2 || true
        exit 1
    fi
}

# ---- 1. the example, ground truth baked into the image ---------------------------------------------
if [ "$baked" = 1 ]; then
    run_example example "ground truth baked into the image"
fi

# ---- 2. the example, ground truth uploaded on the phase -------------------------------------------
# The archive ./export.sh writes, unpacked as the platform does, mounted over the baked-in one.
make_ground_truth_archive "$uploaded_source" "$tmp/ground_truth.tar.gz"
mkdir -p "$tmp/uploaded"
tar -xzf "$tmp/ground_truth.tar.gz" -C "$tmp/uploaded"
chmod -R a+rX "$tmp/uploaded"
uploaded="$tmp/uploaded"
run_example uploaded "ground truth uploaded as $(basename "$uploaded_source")/ in a .tar.gz, at /opt/ml/input/data/ground_truth"
grep -q "^Ground truth: /opt/ml/input/data/ground_truth" "$tmp/stdout-uploaded" \
    || { echo "FAIL: the run did not use the uploaded ground truth at /opt/ml/input/data/ground_truth" >&2; exit 1; }
[ "$baked" = 1 ] || echo "(invalid submissions below also run with the uploaded ground truth)"
[ "$baked" = 0 ] || uploaded=""

# ---- 2. invalid submissions (optional) -------------------------------------------------------------
failures=0
checked=0
for case_dir in "$example"/invalid/*/; do
    [ -d "$case_dir" ] || continue           # no invalid/ folder: the glob stays unexpanded
    case_dir="${case_dir%/}"
    name="$(basename "$case_dir")"
    checked=$((checked + 1))
    echo
    echo "== $image on $case_dir/input (invalid submission) =="
    if [ ! -d "$case_dir/input" ] || [ ! -f "$case_dir/expected_error.txt" ]; then
        echo "FAIL: $case_dir needs both input/ and expected_error.txt" >&2
        failures=$((failures + 1))
        continue
    fi
    out="$(new_output "invalid-$name")"
    status=0
    run_image "$case_dir/input" "$out" >"$tmp/stdout-$name" 2>"$tmp/stderr-$name" || status=$?
    # What the participant sees: the last non-empty stderr line, compared with surrounding blanks trimmed.
    trim() { sed -e 's/^[[:space:]]*//' -e 's/[[:space:]]*$//'; }
    got="$(awk 'NF { last = $0 } END { print last }' "$tmp/stderr-$name" | trim)"
    want="$(tr -d '\r' <"$case_dir/expected_error.txt" | awk 'NF' | trim)"
    problems=()
    [ "$status" -eq 1 ] || problems+=("exit code $status, expected 1")
    [ ! -e "$out/metrics.json" ] || problems+=("metrics.json was written")
    [ "$got" = "$want" ] || problems+=("last stderr line differs")
    if [ ${#problems[@]} -eq 0 ]; then
        echo "OK: exit 1, no metrics.json, stderr ends with: $got"
    else
        failures=$((failures + 1))
        {
            echo "FAIL: $name: $(printf '%s; ' "${problems[@]}" | sed 's/; $//')"
            echo "  expected last stderr line: $want"
            echo "  actual last stderr line:   $got"
            echo "  -- stdout (last 20 lines) --"; tail -n 20 "$tmp/stdout-$name" | sed 's/^/  /'
            echo "  -- stderr (last 20 lines) --"; tail -n 20 "$tmp/stderr-$name" | sed 's/^/  /'
        } >&2
    fi
done

echo
if [ "$failures" -ne 0 ]; then
    echo "test.sh $challenge: FAILED ($failures of $checked invalid submission(s) misbehaved)" >&2
    exit 1
fi
echo "test.sh $challenge: OK (example matches $expected with the ground truth $([ "$baked" = 1 ] && echo "baked in and uploaded" || echo "uploaded"); $checked invalid submission(s) rejected as expected)"
