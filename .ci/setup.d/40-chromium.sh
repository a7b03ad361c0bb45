#!/usr/bin/env bash
# The browser test of examples/server: Debian's chromium, driven headless by
# github.com/chromedp/chromedp. Installs it with apt-get when missing and
# appends BICHAT_TEST_CHROMIUM to "$BICHAT_TEST_ENV". Idempotent: does
# nothing but write the line when chromium is already installed.
#
# Set BICHAT_TEST_CHROMIUM yourself to use another Chrome or Chromium; the
# script then only passes it on.
set -euo pipefail

: "${BICHAT_TEST_ENV:?BICHAT_TEST_ENV must name the file that collects test environment lines}"
log() { echo "40-chromium: $*" >&2; }

if [ -n "${BICHAT_TEST_CHROMIUM:-}" ]; then
	[ -x "$BICHAT_TEST_CHROMIUM" ] || { log "BICHAT_TEST_CHROMIUM=$BICHAT_TEST_CHROMIUM is not an executable"; exit 1; }
	echo "BICHAT_TEST_CHROMIUM=$BICHAT_TEST_CHROMIUM" >>"$BICHAT_TEST_ENV"
	exit 0
fi

BIN=/usr/bin/chromium
if [ ! -x "$BIN" ]; then
	sudo=()
	if [ "$(id -u)" -ne 0 ]; then
		if command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null; then
			sudo=(sudo -n)
		else
			log "need root or password-less sudo to install chromium (or set BICHAT_TEST_CHROMIUM)"
			exit 1
		fi
	fi
	log "installing chromium"
	"${sudo[@]}" apt-get update -q
	DEBIAN_FRONTEND=noninteractive "${sudo[@]}" apt-get install -y --no-install-recommends chromium >/dev/null
fi
[ -x "$BIN" ] || { log "$BIN still missing after install"; exit 1; }
if ! "$BIN" --headless --no-sandbox --disable-gpu --dump-dom about:blank >/dev/null 2>&1; then
	log "warning: $BIN does not start headless here; the browser test will fail"
fi
echo "BICHAT_TEST_CHROMIUM=$BIN" >>"$BICHAT_TEST_ENV"
