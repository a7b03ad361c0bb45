#!/usr/bin/env bash
# The Python sandbox: bubblewrap and Debian's Python data stack for
# sandbox/bwrap (the embedded default), and the Docker image for
# sandbox/docker (built offline by .ci/sandbox-image.sh when a Docker
# engine runs here). Idempotent; quick when everything is installed.
set -euo pipefail
cd "$(dirname "$0")/../.."
log() { echo "20-sandbox: $*" >&2; }
SUDO=""
if [ "$(id -u)" != 0 ]; then
	if command -v sudo >/dev/null && sudo -n true 2>/dev/null; then SUDO="sudo"; else SUDO="none"; fi
fi

need=()
command -v bwrap >/dev/null || need+=(bubblewrap)
[ -x /usr/bin/python3 ] || need+=(python3)
if [ -x /usr/bin/python3 ] && /usr/bin/python3 -c 'import pandas, numpy, matplotlib, scipy, openpyxl' 2>/dev/null; then
	:
elif [ -x /usr/bin/python3 ]; then
	/usr/bin/python3 -c 'import pandas' 2>/dev/null || need+=(python3-pandas)
	/usr/bin/python3 -c 'import numpy' 2>/dev/null || need+=(python3-numpy)
	/usr/bin/python3 -c 'import matplotlib' 2>/dev/null || need+=(python3-matplotlib)
	/usr/bin/python3 -c 'import scipy' 2>/dev/null || need+=(python3-scipy)
	/usr/bin/python3 -c 'import openpyxl' 2>/dev/null || need+=(python3-openpyxl)
else
	need+=(python3-pandas python3-numpy python3-matplotlib python3-scipy python3-openpyxl)
fi
if [ ${#need[@]} -gt 0 ]; then
	if [ "$SUDO" = none ]; then
		log "missing ${need[*]} and no root or password-less sudo to install them"; exit 1
	fi
	log "installing ${need[*]}"
	$SUDO apt-get update -qq
	DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y --no-install-recommends "${need[@]}" >/dev/null
fi
if ! bwrap --unshare-all --die-with-parent --ro-bind / / true 2>/dev/null; then
	log "warning: bwrap cannot create namespaces here (unprivileged user namespaces disabled?)"
fi

if command -v docker >/dev/null && docker version >/dev/null 2>&1; then
	bash .ci/sandbox-image.sh >/dev/null
else
	log "no running Docker engine: the sandbox/docker tests will skip (or fail under BICHAT_REQUIRE_INTEGRATION=1)"
fi
