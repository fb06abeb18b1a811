#!/usr/bin/env bash
# Make a Docker engine and the local base image available on a machine with no image registry.
#
#   docker/base-image.sh            # idempotent; quick when everything is already there
#
# 1. installs Debian's docker.io and debootstrap when missing (root, apt);
# 2. starts dockerd in the background when `docker info` fails (no systemd on these machines),
#    its log in $DOCKERD_LOG (default /var/log/dockerd.log);
# 3. builds $BASE_IMAGE (default clustertwin-base:bookworm) with debootstrap + `docker import`
#    when the engine does not have it yet: a minbase Debian 12 with python3, python3-venv and
#    ca-certificates, its apt pointed at the same mirror as this machine's.
#
# Users with a registry do not need this: docker/Dockerfile defaults to python:3.11-slim.
set -euo pipefail

BASE_IMAGE=${BASE_IMAGE:-clustertwin-base:bookworm}
rootfs=
SUITE=${SUITE:-bookworm}
DOCKERD_LOG=${DOCKERD_LOG:-/var/log/dockerd.log}
DOCKER_WAIT=${DOCKER_WAIT:-60}

log() { printf 'base-image: %s\n' "$*" >&2; }
die() { log "error: $*"; exit 1; }

apt_install() {
    local missing=()
    for p in "$@"; do dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p"); done
    [ ${#missing[@]} -eq 0 ] && return 0
    [ "$(id -u)" -eq 0 ] || die "need root to install: ${missing[*]}"
    log "installing ${missing[*]}"
    export DEBIAN_FRONTEND=noninteractive
    apt-get install -y -q --no-install-recommends "${missing[@]}" >/dev/null 2>&1 ||
        { apt-get update -q >/dev/null && apt-get install -y -q --no-install-recommends "${missing[@]}" >/dev/null; }
}

# The first Debian archive in this machine's apt sources (deb822 or one-line), else the default.
debian_mirror() {
    local m
    m=$(grep -rhoE 'https?://[^ ]+/debian/?( |$)' /etc/apt/sources.list /etc/apt/sources.list.d/ 2>/dev/null |
        grep -v -- '-security' | head -n1 | tr -d ' ' || true)
    echo "${m:-http://deb.debian.org/debian}"
}

start_dockerd() {
    if docker info >/dev/null 2>&1; then return 0; fi
    if ! pgrep -x dockerd >/dev/null; then
        [ "$(id -u)" -eq 0 ] || die "dockerd is not running and starting it needs root"
        mkdir -p "$(dirname "$DOCKERD_LOG")" 2>/dev/null || DOCKERD_LOG=$(mktemp -d)/dockerd.log
        log "starting dockerd (log: $DOCKERD_LOG)"
        setsid nohup dockerd >>"$DOCKERD_LOG" 2>&1 </dev/null &
    fi
    local t=0
    until docker info >/dev/null 2>&1; do
        t=$((t + 1))
        if [ "$t" -gt "$DOCKER_WAIT" ]; then
            tail -n 20 "$DOCKERD_LOG" >&2 2>/dev/null || true
            die "docker info did not answer within ${DOCKER_WAIT}s (dockerd log: $DOCKERD_LOG)"
        fi
        sleep 1
    done
    log "docker engine ready ($(docker info --format '{{.ServerVersion}}' 2>/dev/null))"
}

build_base() {
    if docker image inspect "$BASE_IMAGE" >/dev/null 2>&1; then
        log "$BASE_IMAGE present"
        return 0
    fi
    local mirror start
    mirror=$(debian_mirror)
    rootfs=$(mktemp -d /var/tmp/clustertwin-rootfs.XXXXXX)
    trap 'rm -rf "${rootfs:-}"' EXIT
    start=$(date +%s)
    log "debootstrap $SUITE from $mirror into $rootfs"
    debootstrap --variant=minbase --include=python3,python3-venv,ca-certificates \
        "$SUITE" "$rootfs" "$mirror" >"$rootfs.log" 2>&1 ||
        { tail -n 30 "$rootfs.log" >&2; die "debootstrap failed (log: $rootfs.log)"; }
    # Keep the image small: no apt lists, caches, docs or man pages.
    chroot "$rootfs" apt-get clean
    rm -rf "$rootfs"/var/lib/apt/lists/* "$rootfs"/var/cache/apt/*.bin "$rootfs"/usr/share/doc/* \
        "$rootfs"/usr/share/man/* "$rootfs"/usr/share/locale/* "$rootfs"/var/log/*.log "$rootfs"/tmp/*
    tar -C "$rootfs" -c . | docker import \
        -c 'ENV LANG=C.UTF-8 PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
        -c 'CMD ["/bin/bash"]' - "$BASE_IMAGE" >/dev/null
    rm -f "$rootfs.log"
    log "built $BASE_IMAGE in $(($(date +%s) - start))s ($(docker image inspect -f '{{.Size}}' "$BASE_IMAGE" | awk '{printf "%.0f MB", $1/1e6}'))"
}

command -v docker >/dev/null && command -v dockerd >/dev/null && command -v debootstrap >/dev/null ||
    apt_install docker.io debootstrap
start_dockerd
build_base
