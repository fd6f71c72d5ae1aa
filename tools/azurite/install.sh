#!/usr/bin/env bash
# Installs the Azurite that package.json and package-lock.json pin (its blob service is what
# Plinth's Azure Blob tests run against) and writes BIN_DIR/azurite-blob, a wrapper that runs it.
#
#   tools/azurite/install.sh bin
#
# `npm ci` installs exactly the lock's packages (integrity-checked) into a cache outside the
# checkout, keyed by Azurite's version (PLINTH_TOOLS_CACHE, default ~/.cache/plinth/tools): a
# fresh clone on a machine that installed it once only writes the wrapper. No node_modules in
# the checkout.
set -euo pipefail

[ $# -eq 1 ] || { echo "usage: $0 BIN_DIR" >&2; exit 2; }
mkdir -p "$1"
bin_dir="$(cd "$1" && pwd)"
here="$(cd "$(dirname "$0")" && pwd)"
node="$(command -v node)" || { echo "$0: node is not on PATH (Azurite is a Node.js program)" >&2; exit 1; }
command -v npm >/dev/null || { echo "$0: npm is not on PATH" >&2; exit 1; }

version="$("$node" -p 'require(process.argv[1]).dependencies.azurite' "$here/package.json")"
cache="${PLINTH_TOOLS_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/plinth/tools}"
dest="$cache/azurite-$version"
entry="$dest/node_modules/azurite/dist/src/blob/main.js"
# The marker holds the lock's hash: it is written last, so an interrupted install is redone,
# and a lock that changed (a dependency bumped under the same Azurite) installs again.
lock_sum="$(sha256sum "$here/package-lock.json" | cut -d' ' -f1)"

start=$SECONDS
if [ -f "$entry" ] && [ "$(cat "$dest/.plinth-installed" 2>/dev/null)" = "$lock_sum" ]; then
	echo "azurite $version: from $dest"
else
	mkdir -p "$cache"
	tmp="$(mktemp -d "$cache/.azurite-$version.XXXXXX")"
	trap 'rm -rf "$tmp"' EXIT
	cp "$here/package.json" "$here/package-lock.json" "$tmp/"
	# --ignore-scripts: the one install script in the lock (protobufjs's postinstall) only
	# checks versions; npm 11 skips unapproved scripts anyway, older npm would run it.
	(cd "$tmp" && npm ci --omit=dev --no-audit --no-fund --ignore-scripts --loglevel=warn)
	[ -f "$tmp/node_modules/azurite/dist/src/blob/main.js" ] || { echo "$0: npm ci installed no azurite-blob entry point" >&2; exit 1; }
	echo "$lock_sum" >"$tmp/.plinth-installed"
	rm -rf "$dest"
	mv "$tmp" "$dest"
	trap - EXIT
	echo "azurite $version: installed in $((SECONDS - start))s (cached in $dest)"
fi

# Written beside the target and renamed: make never sees a half-written wrapper.
cat >"$bin_dir/azurite-blob.tmp" <<WRAPPER
#!/bin/sh
# Azurite $version's blob service, installed by tools/azurite/install.sh.
exec "$node" "$entry" "\$@"
WRAPPER
chmod 0755 "$bin_dir/azurite-blob.tmp"
mv -f "$bin_dir/azurite-blob.tmp" "$bin_dir/azurite-blob"
