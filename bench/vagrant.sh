#!/usr/bin/env bash
# vagrant-server benchmarks: whole jobs through the gRPC API (QueueJob → RunnerJobStream
# assignment → ack → output → complete) with 1, 4 and 16 runners, reporting jobs/s and the
# p50/p99 time from QueueJob to the runner receiving the assignment; then the same cycle
# against the job queue alone (no gRPC), for comparison. Needs Postgres (TEST_DATABASE_URL, or
# a private cluster is started) and NATS (TEST_NATS_URL, or an embedded server).
#   BENCHTIME=2000x bench/vagrant.sh
set -euo pipefail
cd "$(dirname "$0")/../services/vagrant-server"
benchtime="${BENCHTIME:-1000x}"
go test -run '^$' -bench "${BENCH:-GRPCEndToEnd}" -benchtime "$benchtime" -count "${COUNT:-1}" -timeout 20m ./internal/app/
go test -run '^$' -bench EndToEnd -benchtime "$benchtime" -count "${COUNT:-1}" -timeout 20m ./internal/jobqueue/
