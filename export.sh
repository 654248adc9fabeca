#!/usr/bin/env bash
# Saves the image built by ./build.sh <challenge> as <challenge>-evaluation.tar.gz, the file to upload
# to grand-challenge.org (one image, linux/amd64, docker save + gzip).
#
#   ./export.sh <challenge>
set -euo pipefail
cd "$(dirname "$0")"

source scripts/docker-common.sh
docker_script_start export.sh "$@"
file="$image.tar.gz"

docker image inspect "$image" >/dev/null 2>&1 || die "image $image not found: run ./build.sh $challenge first"
platform="$(docker image inspect --format '{{.Os}}/{{.Architecture}}' "$image")"
[ "$platform" = linux/amd64 ] \
    || die "image $image is $platform, but grand-challenge.org runs linux/amd64 only (build on x86_64 or with docker buildx)"

echo "Saving $image ($platform) to $file"
# Write next to the target and rename, so an interrupted export never leaves a truncated upload behind.
trap 'rm -f "$file.partial"' EXIT
# pigz compresses on all cores when available; the result is ordinary gzip either way.
if command -v pigz >/dev/null; then gz=(pigz -6); else gz=(gzip -6); fi
docker save "$image" | "${gz[@]}" >"$file.partial"
mv "$file.partial" "$file"
echo "Wrote $file ($(du -h "$file" | cut -f1)); upload it as a new method of the phase on grand-challenge.org"
