#!/usr/bin/env bash
# Builds the Tilt release pinned in tools/tilt/go.mod into BIN_DIR/tilt.
#
#   tools/tilt/build.sh bin
#
# `go install github.com/tilt-dev/tilt/cmd/tilt@vX` refuses modules with replace directives, and
# Tilt's replaces (a patched apimachinery among them) only apply when Tilt is the main module.
# So: download the module through the Go proxy (go.sum here pins its hash), copy its source out
# of the read-only module cache and build it there as the main module. The web UI's compiled
# assets are not part of the Go module; a placeholder page stands in (run `tilt ci
# --web-mode=prod`, which serves the embedded assets instead of a dev server).
set -euo pipefail

[ $# -eq 1 ] || { echo "usage: $0 BIN_DIR" >&2; exit 2; }
mkdir -p "$1"
bin_dir="$(cd "$1" && pwd)"
cd "$(dirname "$0")"
export GOWORK=off

module=github.com/tilt-dev/tilt
go mod download "$module" # verified against go.sum
dir="$(go list -m -f '{{.Dir}}' "$module")"
version="$(go list -m -f '{{.Version}}' "$module")"
date="$(go list -m -f '{{.Time.UTC.Format "2006-01-02T15:04:05Z"}}' "$module")"

src="$bin_dir/.build/tilt-$version"
rm -rf "$src"
mkdir -p "$src"
cp -R "$dir/." "$src"
chmod -R u+w "$src"
cat >"$src/pkg/assets/build/index.html" <<'EOF'
<!doctype html>
<title>Tilt</title>
<p>This Tilt was built from its Go module, which does not ship the web UI. Use <code>tilt ci</code>,
<code>tilt get</code> or <code>tilt logs</code>.</p>
EOF

start=$SECONDS
cd "$src"
# -mod=mod: Tilt's go.sum may lack lines for modules only its tests or other platforms use.
# -buildvcs=false: the copy sits inside our checkout, whose commit is not Tilt's.
GOFLAGS=-mod=mod go build -trimpath -buildvcs=false \
	-ldflags "-s -w -X main.version=${version#v} -X main.date=$date" \
	-o "$bin_dir/tilt.tmp" ./cmd/tilt
mv -f "$bin_dir/tilt.tmp" "$bin_dir/tilt"
cd "$bin_dir"
rm -rf "$src"
rmdir "$bin_dir/.build" 2>/dev/null || true
echo "built $bin_dir/tilt ($version) in $((SECONDS - start))s"
