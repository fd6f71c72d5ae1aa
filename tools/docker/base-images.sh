#!/usr/bin/env bash
# Makes the base images deploy/docker/Dockerfile and docker-compose.yaml name, on a machine
# that cannot pull them (no Docker Hub, gcr.io or ghcr.io): for each image that is neither
# present nor pullable, a local stand-in with the same name and tag, so the committed
# Dockerfile and compose file stay exactly what a user with a registry runs.
#
#   tools/docker/base-images.sh BIN_DIR      (make base-images; needs `make tools-docker`)
#
# On a machine with Docker Hub the images are pulled and nothing is made. Stand-ins carry the
# label org.plinth.stand-in=true: never push them. What each is:
#   debian:bookworm-slim          debootstrap --variant=minbase of Debian's mirror
#   golang:1.26-bookworm          that + ca-certificates (and this machine's own CAs), git and
#                                 this machine's Go
#   postgres:15                   that + Debian's postgresql-15 + an entrypoint honouring
#                                 POSTGRES_USER/_PASSWORD/_DB/_HOST_AUTH_METHOD and PGDATA
#   busybox:1.37-musl             Debian's static busybox (1.35) and its applets
#   gcr.io/distroless/static-debian12:nonroot
#                                 passwd/group with nonroot (65532), CA bundle, /tmp
#   nats:2.11-alpine              busybox + nats-server v2.11.10 (tools/docker/go.mod)
#   fullstorydev/grpcurl:v1.9.3-alpine
#                                 busybox + grpcurl v1.9.3 (tools/docker/go.mod)
#   docker/dockerfile:1           BuildKit's Dockerfile frontend (tools/docker/go.mod), so
#                                 `# syntax=docker/dockerfile:1` resolves locally
# envoyproxy/envoy has no binary in any reachable registry: no stand-in (the Go gateway runs).
#
# PLINTH_NO_PULL=1 skips the pull attempt (CI: no registry is reachable).
set -euo pipefail

[ $# -eq 1 ] || { echo "usage: $0 BIN_DIR" >&2; exit 2; }
bin_dir="$(cd "$1" && pwd)"
images="$bin_dir/images"
say() { printf '[base-images] %s\n' "$*" >&2; }
die() { printf '[base-images] ERROR: %s\n' "$*" >&2; exit 1; }

docker info >/dev/null 2>&1 || die "no Docker engine answers (start dockerd, or run .ci/docker start)"
for p in dockerfile-frontend nats-server grpcurl; do
	[ -x "$images/$p" ] || die "$images/$p is missing: run make tools-docker"
done

work="$(mktemp -d /var/tmp/plinth-base-images.XXXXXX)"
cleanup() {
	local m
	for m in $(awk -v w="$work" '$2 ~ "^"w {print $2}' /proc/mounts | sort -r); do umount -l "$m" || true; done
	rm -rf "$work"
}
trap cleanup EXIT

label=(--change 'LABEL org.plinth.stand-in=true')

# need IMAGE: true when a stand-in must be made (neither present nor pullable).
need() {
	if docker image inspect "$1" >/dev/null 2>&1; then
		say "$1: present"
		return 1
	fi
	if [ "${PLINTH_NO_PULL:-0}" != 1 ] && timeout 60 docker pull -q "$1" >/dev/null 2>&1; then
		say "$1: pulled"
		return 1
	fi
	say "$1: making a local stand-in"
	return 0
}

# import DIR IMAGE [--change ...]: DIR's tree becomes IMAGE.
import() {
	local dir="$1" image="$2"
	shift 2
	tar --numeric-owner -C "$dir" -c . | docker import "${label[@]}" "$@" - "$image" >/dev/null
	say "$image: $(docker image inspect -f '{{.Size}}' "$image" | awk '{printf "%d MB", $1/1e6}')"
}

# chroot_apt DIR PACKAGE...: installs Debian packages into a Debian tree from this machine.
chroot_apt() {
	local dir="$1"
	shift
	cp /etc/resolv.conf "$dir/etc/resolv.conf"
	mount -t proc proc "$dir/proc"
	DEBIAN_FRONTEND=noninteractive chroot "$dir" sh -c 'apt-get update -q && apt-get install -y -q --no-install-recommends "$@"' apt "$@" >"$work/apt.log" 2>&1 ||
		{ tail -20 "$work/apt.log" >&2; die "apt-get install $* in $dir failed"; }
	umount "$dir/proc"
	slim "$dir"
}

# slim DIR: what Debian's -slim images leave out.
slim() {
	rm -rf "$1"/var/lib/apt/lists/* "$1"/var/cache/apt/*.bin "$1"/var/cache/apt/archives/*.deb \
		"$1"/usr/share/doc/* "$1"/usr/share/man/* "$1"/usr/share/info/* "$1"/var/log/*.log
	: >"$1/etc/resolv.conf"
}

mirror() {
	awk '/^URIs:/ && $2 ~ /debian\/?$/ { print $2; exit } /^deb / && $3 == "bookworm" { print $2; exit }' \
		/etc/apt/sources.list.d/*.sources /etc/apt/sources.list 2>/dev/null | head -n1
}

debian_tree() { # the minbase tree every Debian stand-in starts from, made once per run
	if [ ! -d "$work/debian" ]; then
		command -v debootstrap >/dev/null || die "debootstrap is missing (apt-get install debootstrap)"
		local m
		m="$(mirror)"
		say "debootstrap bookworm from ${m:-http://deb.debian.org/debian} (~90 s)"
		debootstrap --variant=minbase bookworm "$work/debian" "${m:-http://deb.debian.org/debian}" >"$work/debootstrap.log" 2>&1 ||
			{ tail -20 "$work/debootstrap.log" >&2; die "debootstrap failed"; }
	fi
	echo "$work/debian"
}

copy_tree() { # copy_tree NAME: a copy of the Debian tree to change
	local src
	src="$(debian_tree)"
	cp -a "$src" "$work/$1"
	echo "$work/$1"
}

busybox_tree() { # busybox_tree DIR: static busybox and its applets in DIR/bin
	command -v busybox >/dev/null && busybox --list >/dev/null 2>&1 &&
		[[ "$(ldd "$(command -v busybox)" 2>&1 || true)" == *"not a dynamic"* ]] ||
		die "a static busybox is missing (apt-get install busybox-static)"
	mkdir -p "$1/bin" "$1/etc" "$1/tmp" "$1/root"
	chmod 1777 "$1/tmp"
	cp "$(command -v busybox)" "$1/bin/busybox"
	local a
	for a in $(busybox --list); do [ "$a" = busybox ] || ln -sf busybox "$1/bin/$a"; done
	printf 'root:x:0:0:root:/root:/bin/sh\nnobody:x:65534:65534:nobody:/nonexistent:/bin/false\n' >"$1/etc/passwd"
	printf 'root:x:0:\nnobody:x:65534:\n' >"$1/etc/group"
	mkdir -p "$1/etc/ssl/certs"
	cp /etc/ssl/certs/ca-certificates.crt "$1/etc/ssl/certs/"
}

if need debian:bookworm-slim; then
	dir="$(copy_tree slim)"
	slim "$dir"
	import "$dir" debian:bookworm-slim --change 'CMD ["bash"]'
fi

if need golang:1.26-bookworm; then
	dir="$(copy_tree golang)"
	chroot_apt "$dir" ca-certificates git
	# Builds in it fetch modules over HTTPS: it trusts what this machine trusts (a machine
	# behind a TLS-inspecting egress proxy has that proxy's CA in /usr/local/share/ca-certificates).
	if compgen -G '/usr/local/share/ca-certificates/*.crt' >/dev/null; then
		cp /usr/local/share/ca-certificates/*.crt "$dir/usr/local/share/ca-certificates/"
		chroot "$dir" update-ca-certificates >/dev/null
	fi
	goroot="$(go env GOROOT)"
	mkdir -p "$dir/usr/local/go" "$dir/go"
	cp -a "$goroot/." "$dir/usr/local/go/"
	rm -rf "$dir/usr/local/go/pkg/obj" "$dir/usr/local/go/test"
	import "$dir" golang:1.26-bookworm \
		--change 'ENV GOPATH=/go' --change 'ENV GOTOOLCHAIN=local' \
		--change "ENV GOLANG_VERSION=$(go env GOVERSION | sed 's/^go//')" \
		--change 'ENV PATH=/go/bin:/usr/local/go/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
		--change 'WORKDIR /go' --change 'CMD ["bash"]'
fi

if need postgres:15; then
	dir="$(copy_tree postgres)"
	# Debian's postinst would create a cluster; the entrypoint makes PGDATA's instead.
	mkdir -p "$dir/etc/postgresql-common"
	echo 'create_main_cluster = false' >"$dir/etc/postgresql-common/createcluster.conf"
	chroot_apt "$dir" postgresql-15
	cp "$(dirname "$0")/postgres-entrypoint.sh" "$dir/usr/local/bin/docker-entrypoint.sh"
	chmod 0755 "$dir/usr/local/bin/docker-entrypoint.sh"
	import "$dir" postgres:15 \
		--change 'ENV PGDATA=/var/lib/postgresql/data' \
		--change 'ENV PATH=/usr/lib/postgresql/15/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
		--change 'ENTRYPOINT ["docker-entrypoint.sh"]' --change 'CMD ["postgres"]' --change 'EXPOSE 5432'
	# SIGINT, the official image's stop signal: a fast shutdown (SIGTERM waits for every client
	# to leave). `docker import` cannot set it; a one-line build on top can.
	printf 'FROM postgres:15\nSTOPSIGNAL SIGINT\n' | DOCKER_BUILDKIT=0 docker build -q -t postgres:15 - >/dev/null
fi

if need busybox:1.37-musl; then
	busybox_tree "$work/busybox"
	import "$work/busybox" busybox:1.37-musl --change 'CMD ["sh"]'
fi

if need gcr.io/distroless/static-debian12:nonroot; then
	dir="$work/distroless"
	mkdir -p "$dir/etc/ssl/certs" "$dir/tmp" "$dir/home/nonroot" "$dir/root"
	chmod 1777 "$dir/tmp"
	chown 65532:65532 "$dir/home/nonroot"
	printf 'root:x:0:0:root:/root:/sbin/nologin\nnobody:x:65534:65534:nobody:/nonexistent:/sbin/nologin\nnonroot:x:65532:65532:nonroot:/home/nonroot:/sbin/nologin\n' >"$dir/etc/passwd"
	printf 'root:x:0:\nnobody:x:65534:\ntty:x:5:\nstaff:x:50:\nnonroot:x:65532:\n' >"$dir/etc/group"
	cp /etc/ssl/certs/ca-certificates.crt "$dir/etc/ssl/certs/"
	import "$dir" gcr.io/distroless/static-debian12:nonroot --change 'USER 65532' --change 'WORKDIR /home/nonroot'
fi

if need nats:2.11-alpine; then
	dir="$work/nats"
	busybox_tree "$dir"
	mkdir -p "$dir/usr/local/bin" "$dir/etc/nats"
	cp "$images/nats-server" "$dir/usr/local/bin/nats-server"
	# The official image's defaults: client port 4222, monitoring 8222, cluster 6222.
	printf 'port: 4222\nhttp_port: 8222\n' >"$dir/etc/nats/nats-server.conf"
	cat >"$dir/usr/local/bin/docker-entrypoint.sh" <<'EOF'
#!/bin/sh
# As the official image's: arguments that start with '-' are nats-server's.
set -e
case "${1:-}" in -*) set -- nats-server "$@" ;; esac
exec "$@"
EOF
	chmod 0755 "$dir/usr/local/bin/docker-entrypoint.sh"
	import "$dir" nats:2.11-alpine --change 'ENV PATH=/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
		--change 'ENTRYPOINT ["docker-entrypoint.sh"]' \
		--change 'CMD ["nats-server", "--config", "/etc/nats/nats-server.conf"]' \
		--change 'EXPOSE 4222 8222 6222'
fi

if need fullstorydev/grpcurl:v1.9.3-alpine; then
	dir="$work/grpcurl"
	busybox_tree "$dir"
	cp "$images/grpcurl" "$dir/bin/grpcurl"
	echo 'grpcurl:x:1000:1000:grpcurl:/tmp:/bin/sh' >>"$dir/etc/passwd"
	echo 'grpcurl:x:1000:' >>"$dir/etc/group"
	import "$dir" fullstorydev/grpcurl:v1.9.3-alpine --change 'USER grpcurl' --change 'ENTRYPOINT ["/bin/grpcurl"]'
fi

if need docker/dockerfile:1; then
	dir="$work/frontend"
	mkdir -p "$dir/bin"
	cp "$images/dockerfile-frontend" "$dir/bin/dockerfile-frontend"
	# The labels BuildKit reads from a frontend image: it needs no network and takes inputs.
	import "$dir" docker/dockerfile:1 --change 'ENTRYPOINT ["/bin/dockerfile-frontend"]' \
		--change 'LABEL moby.buildkit.frontend.network.none="true"' \
		--change 'LABEL moby.buildkit.frontend.caps="moby.buildkit.frontend.inputs,moby.buildkit.frontend.subrequests,moby.buildkit.frontend.contexts"'
fi

say "envoyproxy/envoy: no image can be had here (no Envoy binary in any reachable registry); the Go gateway (compose profile go-gateway) runs instead"
