#!/usr/bin/env bash
# Builds the evaluation image <challenge>-evaluation with that challenge's ground truth baked in.
#
#   ./build.sh <challenge> [extra docker build arguments...]
#
# Environment (each passed to the Dockerfile only when set and non-empty):
#   BASE_IMAGE        base image instead of python:3.11-slim (CI: local/bookworm-python)
#   PIP_INSTALL_ARGS  pip arguments, e.g. "--no-index --find-links /opt/app/build" with ./wheels/ filled
set -euo pipefail
cd "$(dirname "$0")"

source scripts/docker-common.sh
docker_script_start build.sh "$@"
shift
[ -d "ground-truth/$challenge" ] \
    || die "no ground truth for '$challenge': folder ground-truth/$challenge/ not found (have: $(ls ground-truth 2>/dev/null | paste -sd ' ' -))"

args=(--tag "$image" --build-arg "CHALLENGE=$challenge")
if [ -n "${BASE_IMAGE:-}" ]; then args+=(--build-arg "BASE_IMAGE=$BASE_IMAGE"); fi
if [ -n "${PIP_INSTALL_ARGS:-}" ]; then args+=(--build-arg "PIP_INSTALL_ARGS=$PIP_INSTALL_ARGS"); fi

# grand-challenge.org runs linux/amd64 only. On other hosts (e.g. Apple silicon) cross-build with buildx.
if [ "$(uname -m)" != x86_64 ]; then
    if docker buildx version >/dev/null 2>&1; then
        echo "Building $image for linux/amd64 with buildx (host is $(uname -m))"
        exec docker buildx build --platform linux/amd64 --load "${args[@]}" "$@" .
    fi
    echo "WARNING: host is $(uname -m) and docker buildx is missing: the image will not be linux/amd64" \
         "and export.sh will refuse it." >&2
fi

echo "Building $image"
exec docker build "${args[@]}" "$@" .
