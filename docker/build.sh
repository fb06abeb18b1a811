#!/usr/bin/env bash
# Build the twin's image (default clustertwin:dev) on top of the local base image.
#
#   docker/build.sh                 # runs docker/base-image.sh first (engine + base image)
#   IMAGE=clustertwin:ci BASE_IMAGE=python:3.11-slim docker/build.sh
#   NO_CACHE=1 docker/build.sh      # from scratch (measures the cold build)
#
# The build context is streamed as a tar of only what the image needs (no .venv, .git, run dirs;
# symlinked entries, as in the README test's scratch checkout, are followed),
# so an unchanged tree hits the layer cache for every step and a rebuild takes seconds; an edit
# under emulator/, services/ or workloads/ rebuilds only the project layer, a pin change the dependency layer.
set -euo pipefail
cd "$(dirname "$0")/.."

IMAGE=${IMAGE:-clustertwin:dev}
export BASE_IMAGE=${BASE_IMAGE:-clustertwin-base:bookworm}

if [ "$BASE_IMAGE" = clustertwin-base:bookworm ] || ! docker info >/dev/null 2>&1; then
    docker/base-image.sh
fi

# pip inside the build verifies TLS against the same CA bundle as pip on this host.
ca=${PIP_CERT:-$(pip config get global.cert 2>/dev/null || true)}
[ -n "$ca" ] || ca=/etc/ssl/certs/ca-certificates.crt
extra=$(mktemp -d)
trap 'rm -rf "$extra"' EXIT
mkdir -p "$extra/docker"
[ -f "$ca" ] && cp "$ca" "$extra/docker/pip-ca.crt"

old=$(docker image inspect -f '{{.Id}}' "$IMAGE" 2>/dev/null || true)
start=$(date +%s)
tar -c --dereference --exclude=__pycache__ --exclude='*.pyc' --exclude='*.egg-info' \
    pyproject.toml requirements.lock emulator services workloads protos/gen topologies \
    docker/Dockerfile docker/twin-serve.py -C "$extra" docker |
    DOCKER_BUILDKIT=0 docker build -q ${NO_CACHE:+--no-cache} --network host -f docker/Dockerfile \
        --build-arg BASE_IMAGE="$BASE_IMAGE" ${PIP_INDEX_URL:+--build-arg PIP_INDEX_URL="$PIP_INDEX_URL"} \
        -t "$IMAGE" - >/dev/null
# The image this build replaced, if nothing else uses it (keeps the engine from filling up).
new=$(docker image inspect -f '{{.Id}}' "$IMAGE")
[ -n "$old" ] && [ "$old" != "$new" ] && docker rmi "$old" >/dev/null 2>&1 || true
echo "build: $IMAGE built in $(($(date +%s) - start))s, $(docker image inspect -f '{{.Size}}' "$IMAGE" | awk '{printf "%.0f MB", $1/1e6}')" >&2
