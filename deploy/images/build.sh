#!/usr/bin/env bash
# Atoll's container images with podman on a host that reaches no image registry (as in CI
# here): the base images are made from Debian's packages, and the repository's Dockerfile is
# built on them with every Python package installed offline from a folder of wheels.
#
#   deploy/images/build.sh base          Debian bookworm (debootstrap), then Python 3.11,
#                                        Redis and PostgreSQL images on it
#   deploy/images/build.sh atoll [TAG]   the base images, the wheels, then the Dockerfile
#                                        (TAG defaults to localhost/atoll:latest)
#   deploy/images/build.sh device [TAG]  a device: Flower's SuperNode, PyTorch and
#                                        Fashion-MNIST from device.Dockerfile, on the same
#                                        base and wheels (TAG: localhost/atoll-device:latest)
#   deploy/images/build.sh clean         removes all of the above and the wheel folder
#
# It reuses what it built before. Each base image carries a label with a hash of what it is
# made from (its recipe, the Debian mirror, the image below it) and is kept while that hash
# matches; ATOLL_IMAGES_REBUILD=1 rebuilds them anyway (to take in Debian's updates). The
# wheels are kept per hash of the project's requirements; the Dockerfile's steps come from
# podman's layer cache.
#
# Needs podman, debootstrap (for the Debian image) and a Python 3.11 with pip ($PYTHON,
# default python3): the wheels are fetched with the host's pip configuration, so that the
# Dockerfile's build itself needs no package index.
# Prints the tags it built or kept, one a line, on stdout; everything else goes to stderr.
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
REPO="$(cd "$HERE/../.." && pwd)"
PREFIX="${ATOLL_IMAGES_PREFIX:-localhost/atoll-base}"
SUITE=bookworm
DEBIAN_IMAGE="$PREFIX/debian:$SUITE"
PYTHON_IMAGE="$PREFIX/python:3.11-$SUITE"
REDIS_IMAGE="$PREFIX/redis:7.0-$SUITE"
POSTGRES_IMAGE="$PREFIX/postgres:15-$SUITE"
KEY_LABEL=org.atoll.images.key
TORCH_VERSION="${TORCH_VERSION:-2.13.0}"
PYTHON="${PYTHON:-python3}"
WHEELS_CACHE="${ATOLL_WHEELS_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/atoll/wheels}"

log() { printf 'build.sh: %s\n' "$*" >&2; }
die() { log "$*"; exit 1; }

# The mirror apt already uses for a suite (apt-get indextargets lists each configured
# source), so that the images come from where the host's packages come from.
apt_mirror() {  # SUITE FALLBACK
    local uri=""
    if command -v apt-get >/dev/null; then
        # shellcheck disable=SC2016  # $(FIELD) is apt's template, not the shell's
        uri="$(apt-get indextargets --format '$(CODENAME) $(REPO_URI)' 'Identifier: Packages' \
            | awk -v suite="$1" '$1 == suite { print $2; exit }')"
    fi
    echo "${uri:-$2}"
}
DEBIAN_MIRROR="${DEBIAN_MIRROR:-$(apt_mirror "$SUITE" http://deb.debian.org/debian/)}"
SECURITY_MIRROR="${DEBIAN_SECURITY_MIRROR:-$(apt_mirror "$SUITE-security" http://deb.debian.org/debian-security/)}"

hash_of() { sha256sum | cut -c1-16; }

image_key() { podman image inspect --format "{{ index .Labels \"$KEY_LABEL\" }}" "$1" 2>/dev/null || true; }
image_id() { podman image inspect --format '{{.Id}}' "$1" 2>/dev/null || true; }

# True when TAG exists with KEY, so that it is kept.
current() {  # TAG KEY
    [ "${ATOLL_IMAGES_REBUILD:-0}" != 1 ] && [ "$(image_key "$1")" = "$2" ]
}

# After TAG was built again, the image it replaced is no longer needed (unless a container
# still uses it, when podman refuses and it stays).
drop_replaced() {  # TAG OLD_ID
    if [ -n "$2" ] && [ "$2" != "$(image_id "$1")" ]; then
        podman rmi "$2" >/dev/null 2>&1 || true
    fi
}

build_debian() {
    local key rootfs old
    # The recipe is this function itself: editing it, or another mirror, rebuilds the image.
    key="$( { declare -f build_debian; echo "$SUITE $DEBIAN_MIRROR $SECURITY_MIRROR"; } | hash_of)"
    if current "$DEBIAN_IMAGE" "$key"; then
        log "$DEBIAN_IMAGE is current"
        return
    fi
    command -v debootstrap >/dev/null || die "debootstrap is missing: apt-get install -y debootstrap"
    log "$DEBIAN_IMAGE: debootstrap $SUITE from $DEBIAN_MIRROR"
    old="$(image_id "$DEBIAN_IMAGE")"
    rootfs="$(mktemp -d /var/tmp/atoll-debian.XXXXXX)"
    # shellcheck disable=SC2064  # the folder is known now
    trap "rm -rf '$rootfs'" EXIT
    debootstrap --variant=minbase "$SUITE" "$rootfs" "$DEBIAN_MIRROR" >&2
    cat >"$rootfs/etc/apt/sources.list" <<EOF
deb $DEBIAN_MIRROR $SUITE main
deb $DEBIAN_MIRROR $SUITE-updates main
deb $SECURITY_MIRROR $SUITE-security main
EOF
    # What a registry image also leaves out: downloaded packages and package lists.
    rm -rf "$rootfs"/var/cache/apt/archives/*.deb "$rootfs"/var/lib/apt/lists/*
    tar -C "$rootfs" -c . \
        | podman import --change "LABEL $KEY_LABEL=$key" --change 'CMD ["bash"]' - "$DEBIAN_IMAGE" >&2
    rm -rf "$rootfs"
    trap - EXIT
    drop_replaced "$DEBIAN_IMAGE" "$old"
}

build_on_debian() {  # TAG DOCKERFILE [FILE...]: an image of deploy/images on the Debian one
    local tag="$1" dockerfile="$2" key old file
    local files=("$HERE/$dockerfile")
    for file in "${@:3}"; do files+=("$HERE/$file"); done
    key="$( { image_key "$DEBIAN_IMAGE"; cat "${files[@]}"; } | hash_of)"
    if current "$tag" "$key"; then
        log "$tag is current"
        return
    fi
    log "$tag: building $dockerfile"
    old="$(image_id "$tag")"
    podman build --format docker --build-arg "DEBIAN_IMAGE=$DEBIAN_IMAGE" \
        --label "$KEY_LABEL=$key" --file "$HERE/$dockerfile" --tag "$tag" "$HERE" >&2
    drop_replaced "$tag" "$old"
}

build_base() {
    build_debian
    build_on_debian "$PYTHON_IMAGE" python.Dockerfile
    build_on_debian "$REDIS_IMAGE" redis.Dockerfile
    build_on_debian "$POSTGRES_IMAGE" postgres.Dockerfile postgres-entrypoint.sh
    printf '%s\n' "$DEBIAN_IMAGE" "$PYTHON_IMAGE" "$REDIS_IMAGE" "$POSTGRES_IMAGE"
}

# What the image installs, as wheels, into WHEELS_CACHE/<hash>: torch, the project's
# dependencies and its build backend, resolved by the Python image's own interpreter (pip
# picks dependencies by environment markers, e.g. the Python version) in a container that
# reaches the packages with the host's pip configuration (host_pip.py). Prints the folder.
build_wheels() {
    local requirements key folder partial pip_args
    requirements="$("$PYTHON" - "$REPO/pyproject.toml" "$TORCH_VERSION" <<'EOF'
import sys
import tomllib

with open(sys.argv[1], "rb") as f:
    pyproject = tomllib.load(f)
print(f"torch=={sys.argv[2]}")
print("\n".join(pyproject["build-system"]["requires"] + pyproject["project"]["dependencies"]))
EOF
)"
    key="$(printf '%s\n' "$requirements" "$(image_key "$PYTHON_IMAGE")" | hash_of)"
    folder="$WHEELS_CACHE/$key"
    if [ -f "$folder/.complete" ]; then
        log "wheels are current in $folder"
    else
        log "wheels: resolving with $PYTHON_IMAGE into $folder"
        partial="$folder.partial"
        rm -rf "$partial"
        mkdir -p "$partial"
        printf '%s\n' "$requirements" >"$partial/requirements.txt"
        mapfile -t pip_args < <("$PYTHON" "$HERE/host_pip.py")
        # The host's network, as the host's pip configuration may name a proxy on loopback.
        podman run --rm --network host "${pip_args[@]}" --volume "$partial:/wheels" \
            "$PYTHON_IMAGE" sh -c 'python -m venv /tmp/venv \
                && /tmp/venv/bin/pip wheel --quiet --wheel-dir /wheels -r /wheels/requirements.txt' >&2
        touch "$partial/.complete"
        # Other keys are folders of older requirements: only the current one is kept.
        find "$WHEELS_CACHE" -mindepth 1 -maxdepth 1 ! -name "$key" ! -name "$key.partial" \
            -exec rm -rf {} +
        rm -rf "$folder"
        mv "$partial" "$folder"
    fi
    echo "$folder"
}

# An image of DOCKERFILE on the Python image, every Python package from the wheels.
build_on_python() {  # TAG DOCKERFILE CONTEXT
    local tag="$1" wheels
    build_base >/dev/null
    wheels="$(build_wheels)"
    log "$tag: building $2 on $PYTHON_IMAGE"
    podman build --format docker \
        --build-arg "PYTHON_IMAGE=$PYTHON_IMAGE" \
        --build-arg "TORCH_VERSION=$TORCH_VERSION" \
        --build-arg WHEELS=/wheels --volume "$wheels:/wheels:ro" \
        --file "$2" --tag "$tag" "$3" >&2
    echo "$tag"
}

build_atoll() { build_on_python "$1" "$REPO/Dockerfile" "$REPO"; }  # TAG

build_device() { build_on_python "$1" "$HERE/device.Dockerfile" "$HERE"; }  # TAG

clean() {
    local tag
    for tag in "$POSTGRES_IMAGE" "$REDIS_IMAGE" "$PYTHON_IMAGE" "$DEBIAN_IMAGE" "${1:-localhost/atoll:latest}" localhost/atoll-device:latest; do
        if podman rmi "$tag" >/dev/null 2>&1; then log "removed $tag"; fi
    done
    rm -rf "$WHEELS_CACHE"
}

case "${1:-}" in
    base) build_base ;;
    atoll) build_atoll "${2:-localhost/atoll:latest}" ;;
    device) build_device "${2:-localhost/atoll-device:latest}" ;;
    clean) clean "${2:-}" ;;
    *) die "usage: $0 base | atoll [TAG] | device [TAG] | clean [TAG]" ;;
esac
