#!/usr/bin/env bash
# The WordNet 3.0 database (Debian's wordnet-base) that kb.LoadWordNet
# reads for the catalog's lexicon: the kb tests and the Spider benchmark
# use it from /usr/share/wordnet. Idempotent: does nothing when installed.
set -euo pipefail

dir=/usr/share/wordnet
have() { [ -s "$dir/data.noun" ] && [ -s "$dir/index.noun" ] && [ -s "$dir/data.verb" ] && [ -s "$dir/data.adj" ]; }
if ! have; then
	echo "50-wordnet: installing wordnet-base" >&2
	sudo=()
	if [ "$(id -u)" -ne 0 ]; then
		if command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null; then
			sudo=(sudo -n)
		else
			echo "50-wordnet: need root or passwordless sudo to install wordnet-base" >&2
			exit 1
		fi
	fi
	"${sudo[@]}" apt-get update -q
	DEBIAN_FRONTEND=noninteractive "${sudo[@]}" apt-get install -y --no-install-recommends wordnet-base
fi
have || { echo "50-wordnet: $dir still incomplete after install" >&2; exit 1; }
