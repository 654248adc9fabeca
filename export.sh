#!/usr/bin/env bash
# Writes the two files to upload to grand-challenge.org:
#   <challenge>-evaluation.tar.gz    the image built by ./build.sh <challenge> (one image, linux/amd64,
#                                    docker save + gzip): the phase's evaluation method;
#   <challenge>-ground_truth.tar.gz  ground-truth/<challenge>/ (config.json and case-mapping.json
#                                    included), for a phase that takes its ground truth as an upload
#                                    (unpacked into /opt/ml/input/data/ground_truth; ./test.sh checks that route).
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
trap 'rm -f "$file.partial" "$challenge-ground_truth.tar.gz.partial"' EXIT
# pigz compresses on all cores when available; the result is ordinary gzip either way.
if command -v pigz >/dev/null; then gz=(pigz -6); else gz=(gzip -6); fi
docker save "$image" | "${gz[@]}" >"$file.partial"
mv "$file.partial" "$file"
echo "Wrote $file ($(du -h "$file" | cut -f1)); upload it as a new method of the phase on grand-challenge.org"

ground_truth="$challenge-ground_truth.tar.gz"
make_ground_truth_archive "ground-truth/$challenge" "$ground_truth"
echo "Wrote $ground_truth ($(du -h "$ground_truth" | cut -f1), $(tar -tzf "$ground_truth" | grep -vc '/$') files of ground-truth/$challenge);" \
     "upload it as the phase's ground truth if you do not bake it into the image"
