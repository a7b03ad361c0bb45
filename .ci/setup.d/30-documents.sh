#!/usr/bin/env bash
# Output tests of tools/chart and tools/export: pdftotext (poppler-utils)
# reads generated PDFs back; DejaVu Sans (Latin, Greek, Cyrillic) and Droid
# Sans Fallback (CJK) are the TrueType fonts export_pdf embeds.
# Idempotent: does nothing when everything is installed.
set -euo pipefail

need=()
command -v pdftotext >/dev/null 2>&1 || need+=(poppler-utils)
have_font() { [ -n "$(find /usr/share/fonts /usr/local/share/fonts -name "$1" -print -quit 2>/dev/null)" ]; }
have_font DejaVuSans.ttf || need+=(fonts-dejavu-core)
have_font DroidSansFallbackFull.ttf || need+=(fonts-droid-fallback)

if [ ${#need[@]} -gt 0 ]; then
	echo "30-documents: installing ${need[*]}" >&2
	sudo=()
	if [ "$(id -u)" -ne 0 ]; then
		if command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null; then
			sudo=(sudo -n)
		else
			echo "30-documents: need root or passwordless sudo to install ${need[*]}" >&2
			exit 1
		fi
	fi
	"${sudo[@]}" apt-get update -q
	DEBIAN_FRONTEND=noninteractive "${sudo[@]}" apt-get install -y --no-install-recommends "${need[@]}"
fi

command -v pdftotext >/dev/null 2>&1 || { echo "30-documents: pdftotext still missing after install" >&2; exit 1; }
for f in DejaVuSans.ttf DroidSansFallbackFull.ttf; do
	have_font "$f" || { echo "30-documents: font $f still missing after install" >&2; exit 1; }
done
if [ -n "${BICHAT_TEST_ENV:-}" ]; then
	echo "BICHAT_TEST_FONT_DIR=/usr/share/fonts" >>"$BICHAT_TEST_ENV"
fi
