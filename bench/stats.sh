#!/usr/bin/env bash
# stats benchmarks: GetClusterStats and GetClusterRadar under concurrent load with the token
# check on, driven by ghz (an outside gRPC client), beside a raw grpc-go server returning the
# same answers as constants — the ratio is what stats's middleware (auth, metrics, logging,
# tracing, recovery) and its conversion cost. stats answers from a recorded report of the test
# cluster, served through the dashboard API. Then the in-process Go benchmarks.
#   GHZ_CONCURRENCY=50 GHZ_REQUESTS=20000 bench/stats.sh
# Needs Postgres (TEST_DATABASE_URL, or a private cluster is started) and NATS (embedded).
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
mkdir -p "$root/bin"
make -C "$root" --no-print-directory tools-ghz >/dev/null
export PATH="$root/bin:$PATH"
cd "$root/services/stats"
go test -run '^$' -bench '^BenchmarkGHZ$' -benchtime 1x -timeout 20m ./internal/app/
go test -run '^$' -bench '^BenchmarkGetCluster' -benchtime "${BENCHTIME:-3s}" -count "${COUNT:-1}" -timeout 20m ./internal/app/
