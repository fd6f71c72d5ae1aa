#!/usr/bin/env bash
# vagrant-server end to end, as operated: a real vagrant-server process and real
# vagrant-runner processes (1, 4 and 16) on a private Postgres cluster with durable settings
# and an embedded NATS, driven over gRPC. Reports burst jobs/s, steady-rate QueueJob →
# assignment/ack p50/p99, and per job: Postgres commits, write transactions, WAL syncs and the
# CPU time of each process group (services/vagrant-server/bench/jobbench).
#
#   bench/vagrant.sh                       # this tree
#   BEFORE=<git ref> bench/vagrant.sh      # also <ref>'s binaries, alternating, in one run
#   RUNNERS=16 BURST=4000 RATE=100 STEADY=20s bench/vagrant.sh
#   GO_BENCH=1 bench/vagrant.sh            # then the in-process Go benchmarks as well
#   BENCH_FLAGS=-statements bench/vagrant.sh   # print what costs Postgres most per job
# BUILD_FLAGS are passed to go build (e.g. -tags), SERVER_ENV and RUNNER_ENV (comma-separated
# NAME=value) to the processes; KEEP=1 keeps the scratch directory with every process's log.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
work="$(mktemp -d /tmp/vagrant-bench.XXXXXX)"
chmod 755 "$work" # the private Postgres cluster runs as the postgres user
[ -n "${KEEP:-}" ] || trap 'rm -rf "$work"' EXIT

build() { # label source-tree
	(cd "$2" && go build ${BUILD_FLAGS:-} -o "$work/$1/" ./services/vagrant-server/cmd/vagrant-server ./services/vagrant-server/cmd/vagrant-runner)
}
builds=""
if [ -n "${BEFORE:-}" ]; then
	mkdir -p "$work/src-before"
	git -C "$root" archive "$BEFORE" | tar -x -C "$work/src-before"
	build before "$work/src-before"
	builds="before=$work/before,"
fi
label=current
[ -n "${BEFORE:-}" ] && label=after
build "$label" "$root"
builds="${builds}$label=$work/$label"

cd "$root/services/vagrant-server"
go run ./bench/jobbench -work "$work" -builds "$builds" -runners "${RUNNERS:-1,4,16}" \
	-burst "${BURST:-2000}" -rate "${RATE:-100}" -steady "${STEADY:-10s}" -server-env "${SERVER_ENV:-}" -runner-env "${RUNNER_ENV:-}" ${BENCH_FLAGS:-}

if [ -n "${GO_BENCH:-}" ]; then
	go test -run '^$' -bench GRPCEndToEnd -benchtime 1000x -timeout 20m ./internal/app/
	go test -run '^$' -bench EndToEnd -benchtime 1000x -timeout 20m ./internal/jobqueue/
fi
