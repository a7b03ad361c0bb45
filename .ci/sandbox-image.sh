#!/usr/bin/env bash
# Builds the Docker sandbox image bichat-sandbox:$VERSION offline from
# Debian's packages: debootstrap a minimal root with python3 and the data
# stack (pandas, numpy, matplotlib, scipy, openpyxl, seaborn), add the
# non-root user "sandbox" (uid/gid 10001), then `docker import` it. Nothing
# is pulled from a registry. Does nothing when the image already exists.
#
# The mirror is the one this machine's apt uses (first deb822 URIs or
# sources.list line for the running suite); override with
# BICHAT_SANDBOX_MIRROR. The image name is printed on stdout; with
# BICHAT_TEST_ENV set, BICHAT_TEST_SANDBOX_IMAGE=<image> is appended to it.
set -euo pipefail

# Bump VERSION whenever the package list or the root's layout changes.
VERSION=1
IMAGE="${BICHAT_SANDBOX_IMAGE:-bichat-sandbox:bookworm-$VERSION}"
PACKAGES="python3,python3-pandas,python3-numpy,python3-matplotlib,python3-scipy,python3-openpyxl,python3-seaborn,fonts-dejavu-core"

log() { echo "sandbox-image: $*" >&2; }
SUDO=""
if [ "$(id -u)" != 0 ]; then
	if command -v sudo >/dev/null && sudo -n true 2>/dev/null; then SUDO="sudo"; else
		log "needs root (debootstrap, chroot) or password-less sudo"; exit 1; fi
fi
if ! command -v docker >/dev/null || ! docker version >/dev/null 2>&1; then
	log "docker is not available (no client or no running engine)"; exit 1
fi

emit() {
	echo "$IMAGE"
	if [ -n "${BICHAT_TEST_ENV:-}" ]; then echo "BICHAT_TEST_SANDBOX_IMAGE=$IMAGE" >> "$BICHAT_TEST_ENV"; fi
}
if docker image inspect "$IMAGE" >/dev/null 2>&1; then
	log "$IMAGE exists"; emit; exit 0
fi

start=$(date +%s)
if ! command -v debootstrap >/dev/null; then
	$SUDO apt-get update -qq
	DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y --no-install-recommends debootstrap >/dev/null
fi

. /etc/os-release
SUITE="${VERSION_CODENAME:-bookworm}"
MIRROR="${BICHAT_SANDBOX_MIRROR:-}"
if [ -z "$MIRROR" ]; then
	for f in /etc/apt/sources.list.d/*.sources; do
		[ -e "$f" ] || continue
		MIRROR=$(awk '/^URIs:/ {for (i=2;i<=NF;i++) if ($i !~ /security/) {print $i; exit}}' "$f")
		[ -n "$MIRROR" ] && break
	done
fi
if [ -z "$MIRROR" ] && [ -e /etc/apt/sources.list ]; then
	MIRROR=$(awk '$1=="deb" && $0 !~ /security/ {for (i=2;i<=NF;i++) if ($i ~ /^(https?|file):/) {print $i; exit}}' /etc/apt/sources.list)
fi
MIRROR="${MIRROR:-http://deb.debian.org/debian}"
log "building $IMAGE from $MIRROR ($SUITE)"

work=$(mktemp -d /tmp/bichat-sandbox-image.XXXXXX)
cleanup() { $SUDO rm -rf "$work"; }
trap cleanup EXIT
root="$work/root"
$SUDO debootstrap --variant=minbase --include="$PACKAGES" "$SUITE" "$root" "$MIRROR" >"$work/debootstrap.log" 2>&1 || {
	tail -n 30 "$work/debootstrap.log" >&2; log "debootstrap failed"; exit 1; }

# Non-root user, Agg backend, a writable work folder mount point, no caches.
$SUDO chroot "$root" /bin/sh -c '
	set -e
	groupadd -g 10001 sandbox
	useradd -u 10001 -g 10001 -d /work -M -s /usr/sbin/nologin sandbox
	mkdir -p /work && chown 10001:10001 /work
	mkdir -p /etc/matplotlib && echo "backend: Agg" > /etc/matplotlib/matplotlibrc
	python3 -c "import pandas, numpy, matplotlib, scipy, openpyxl, seaborn"
	apt-get clean
	rm -rf /var/lib/apt/lists/* /var/cache/apt/* /usr/share/doc/* /usr/share/man/* /usr/share/locale/* /var/log/*
'
$SUDO tar -C "$root" -c . | docker import \
	-c 'USER 10001:10001' -c 'WORKDIR /work' -c 'ENV MPLBACKEND=Agg PYTHONDONTWRITEBYTECODE=1' \
	-m "bichat sandbox: Debian $SUITE python3 + pandas numpy matplotlib scipy openpyxl seaborn" \
	- "$IMAGE" >/dev/null
log "built $IMAGE in $(( $(date +%s) - start ))s"
emit
