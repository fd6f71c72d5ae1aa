#!/usr/bin/env bash
# Builds kube-apiserver and kube-controller-manager from the k8s.io/kubernetes version pinned in
# one tools module (tools/k8s/v1.NN/go.mod) into BIN_DIR/<name>-<version>, stamped the way
# upstream's hack/lib/version.sh stamps them, so /version and `--version` tell the truth.
#
#   tools/k8s/build.sh tools/k8s/v1.33 bin
#
# Everything comes through the Go module proxy; go.sum pins every byte.
set -euo pipefail

[ $# -eq 2 ] || { echo "usage: $0 MODULE_DIR BIN_DIR" >&2; exit 2; }
module_dir="$1"
mkdir -p "$2"
bin_dir="$(cd "$2" && pwd)"
cd "$module_dir"
export GOWORK=off CGO_ENABLED=0

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

for cmd in kube-apiserver kube-controller-manager; do
	out="$bin_dir/$cmd-$version"
	start=$SECONDS
	# Build next to the target and rename: an interrupted build never leaves a half binary
	# that make would take for up to date.
	go build -trimpath -ldflags "${ldflags[*]}" -o "$out.tmp" "k8s.io/kubernetes/cmd/$cmd"
	mv -f "$out.tmp" "$out"
	echo "built $out in $((SECONDS - start))s"
done
