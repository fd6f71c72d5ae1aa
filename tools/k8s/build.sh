#!/usr/bin/env bash
# Builds every Kubernetes command one tools module (tools/k8s/v1.NN/go.mod) lists as a `tool`
# — kube-apiserver and kube-controller-manager for each version; kube-scheduler, kubelet and
# kube-proxy too for the one `make kube-up` runs — from the k8s.io/kubernetes version it pins, into
# BIN_DIR/<name>-<version>, stamped the way upstream's hack/lib/version.sh stamps them, so
# /version and `--version` tell the truth.
#
#   tools/k8s/build.sh tools/k8s/v1.33 bin [COMMAND...]   (default: every tool of the module)
#
# Everything comes through the Go module proxy; go.sum pins every byte. The binaries are kept
# in a cache outside the checkout, keyed by command, version, flags and Go version
# (PLINTH_TOOLS_CACHE, default ~/.cache/plinth/tools): a fresh clone on a machine that built
# them once copies them (~1 s each) instead of building them again (~20 min cold on 2 cores).
set -euo pipefail

[ $# -ge 2 ] || { echo "usage: $0 MODULE_DIR BIN_DIR [COMMAND...]" >&2; exit 2; }
module_dir="$1"
mkdir -p "$2"
bin_dir="$(cd "$2" && pwd)"
shift 2
only=("$@")
cd "$module_dir"
export GOWORK=off CGO_ENABLED=0
cache="${PLINTH_TOOLS_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/plinth/tools}"
goversion="$(go env GOVERSION)"

version="$(go list -m -f '{{.Version}}' k8s.io/kubernetes)" # e.g. v1.33.13
# The commit time of the release, not the build time: two builds of one pin are identical.
build_date="$(go list -m -f '{{.Time.UTC.Format "2006-01-02T15:04:05Z"}}' k8s.io/kubernetes)"
IFS=. read -r major minor _ <<<"${version#v}"

ldflags=(-s -w) # upstream strips release binaries too
for pkg in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
	ldflags+=(
		"-X $pkg.gitVersion=$version"
		"-X $pkg.gitMajor=$major"
		"-X $pkg.gitMinor=$minor"
		"-X $pkg.gitTreeState=clean"
		"-X $pkg.buildDate=$build_date"
	)
done

# The module's tool block: one k8s.io/kubernetes/cmd/<name> per line.
mapfile -t cmds < <(go mod edit -json | awk -F'"' '$2 == "Path" && $4 ~ /^k8s.io\/kubernetes\/cmd\// { sub(/.*\//, "", $4); print $4 }')
[ ${#cmds[@]} -gt 0 ] || { echo "$module_dir/go.mod lists no k8s.io/kubernetes/cmd tool" >&2; exit 1; }
if [ ${#only[@]} -gt 0 ]; then
	for c in "${only[@]}"; do
		printf '%s\n' "${cmds[@]}" | grep -qx "$c" || { echo "$module_dir/go.mod has no tool $c" >&2; exit 1; }
	done
	cmds=("${only[@]}")
fi

# What the cache holds is copied; what it lacks is built in one `go build` (several commands:
# each shared package compiled once, the links run side by side), next to the targets and
# renamed, so an interrupted build never leaves a half binary make would take for up to date.
key() { printf '%s\n' "$1" "$version" "${ldflags[*]}" "$goversion" | sha256sum | cut -c1-16; }
missing=()
for cmd in "${cmds[@]}"; do
	cached="$cache/$cmd-$version-$(key "$cmd")"
	if [ -x "$cached" ]; then
		install -m 0755 "$cached" "$bin_dir/$cmd-$version.tmp" && mv -f "$bin_dir/$cmd-$version.tmp" "$bin_dir/$cmd-$version"
		echo "$cmd $version: from $cached"
	else
		missing+=("$cmd")
	fi
done
[ ${#missing[@]} -gt 0 ] || exit 0
start=$SECONDS
tmp="$(mktemp -d "$bin_dir/.k8s-build.XXXXXX")"
trap 'rm -rf "$tmp"' EXIT
go build -trimpath -ldflags "${ldflags[*]}" -o "$tmp/" "${missing[@]/#/k8s.io/kubernetes/cmd/}"
mkdir -p "$cache"
for cmd in "${missing[@]}"; do
	mv -f "$tmp/$cmd" "$bin_dir/$cmd-$version"
	cached="$cache/$cmd-$version-$(key "$cmd")"
	cp -f "$bin_dir/$cmd-$version" "$cached.tmp" && mv -f "$cached.tmp" "$cached"
done
echo "${missing[*]} $version: built in $((SECONDS - start))s (cached in $cache)"
