#!/usr/bin/env bash
# Builds the container tools pinned in tools/docker/go.mod into BIN_DIR:
#   BIN_DIR/docker-config/cli-plugins/docker-compose   Docker Compose v2 (`docker compose`)
#   BIN_DIR/docker-config/cli-plugins/docker-buildx    buildx (`docker buildx`, compose build)
#   BIN_DIR/images/dockerfile-frontend                 BuildKit's Dockerfile frontend, and
#   BIN_DIR/images/nats-server, BIN_DIR/images/grpcurl the programs of base-image stand-ins
#                                                      (tools/docker/base-images.sh)
#
#   tools/docker/build.sh bin
#
# Each module's replace/exclude directives only apply when it is the main module, so each is
# downloaded through the Go proxy (go.sum here pins its hash), copied out of the read-only
# module cache and built there. The binaries are kept in a cache outside the checkout, keyed by
# module version, package, flags and Go version (PLINTH_TOOLS_CACHE, default
# ~/.cache/plinth/tools): a fresh clone on a machine that built them once copies them (~1 s)
# instead of building them again (~12 min cold on 2 cores).
set -euo pipefail

[ $# -eq 1 ] || { echo "usage: $0 BIN_DIR" >&2; exit 2; }
mkdir -p "$1"
bin_dir="$(cd "$1" && pwd)"
cd "$(dirname "$0")"
export GOWORK=off
cache="${PLINTH_TOOLS_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/plinth/tools}"
goversion="$(go env GOVERSION)"

# build MODULE PACKAGE OUT [LDFLAGS]: OUT is built (or copied from the cache) from PACKAGE of
# MODULE at the version go.mod pins, statically (CGO_ENABLED=0), stripped.
build() {
	local module="$1" pkg="$2" out="$3" ldflags="${4:-}" version dir key cached src start
	go mod download "$module" # verified against go.sum
	version="$(go list -m -f '{{.Version}}' "$module")"
	key="$(printf '%s\n' "$module" "$version" "$pkg" "$ldflags" "$goversion" | sha256sum | cut -c1-16)"
	cached="$cache/$(basename "$out")-$version-$key"
	if [ -x "$cached" ]; then
		install -D -m 0755 "$cached" "$out"
		echo "$(basename "$out") $version: from $cached"
		return
	fi
	dir="$(go list -m -f '{{.Dir}}' "$module")"
	src="$bin_dir/.build/$(basename "$out")-$version"
	rm -rf "$src"
	mkdir -p "$src"
	cp -R "$dir/." "$src"
	chmod -R u+w "$src"
	start=$SECONDS
	# -mod=mod: a go.sum may lack lines for modules only tests or other platforms use.
	# -buildvcs=false: the copy sits inside our checkout, whose commit is not the tool's.
	(cd "$src" && CGO_ENABLED=0 GOFLAGS=-mod=mod go build -trimpath -buildvcs=false \
		-ldflags "-s -w $ldflags" -o "$out.tmp" "$pkg")
	mkdir -p "$(dirname "$out")" "$cache"
	mv -f "$out.tmp" "$out"
	cp -f "$out" "$cached.tmp" && mv -f "$cached.tmp" "$cached"
	rm -rf "$src"
	echo "$(basename "$out") $version: built in $((SECONDS - start))s (cached as $cached)"
}

plugins="$bin_dir/docker-config/cli-plugins"
compose_v="$(go list -m -f '{{.Version}}' github.com/docker/compose/v2)"
buildx_v="$(go list -m -f '{{.Version}}' github.com/docker/buildx)"
build github.com/docker/compose/v2 ./cmd "$plugins/docker-compose" \
	"-X github.com/docker/compose/v2/internal.Version=$compose_v"
# compose refuses a buildx without a version ("compose build requires buildx 0.17 or later").
build github.com/docker/buildx ./cmd/buildx "$plugins/docker-buildx" \
	"-X github.com/docker/buildx/version.Version=$buildx_v"
build github.com/moby/buildkit ./frontend/dockerfile/cmd/dockerfile-frontend "$bin_dir/images/dockerfile-frontend"
build github.com/nats-io/nats-server/v2 . "$bin_dir/images/nats-server"
build github.com/fullstorydev/grpcurl ./cmd/grpcurl "$bin_dir/images/grpcurl" \
	"-X main.version=$(go list -m -f '{{.Version}}' github.com/fullstorydev/grpcurl)"
rmdir "$bin_dir/.build" 2>/dev/null || true
