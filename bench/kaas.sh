#!/usr/bin/env bash
# kaas benchmarks, against real Postgres and NATS and the in-process MAAS test server:
# - GetCluster / GetClusterList latency (p50/p99 µs, calls/s) from parallel clients while kaas
#   keeps 1,000 clusters (its reconciler resyncing them in the background);
# - the time from 100 CreateCluster calls (a control-plane machine and two workers each) to all
#   100 RUNNING.
# Needs Postgres (TEST_DATABASE_URL, or a private cluster is started) and NATS (TEST_NATS_URL,
# or an embedded server); builds auth, which checks every call's token.
set -euo pipefail
cd "$(dirname "$0")/../services/kaas"
go test -run '^$' -bench 'BenchmarkAPIWith1000Clusters' -benchtime "${BENCHTIME:-3s}" -count "${COUNT:-1}" -timeout 30m ./internal/app/
exec go test -run '^$' -bench 'BenchmarkReconcile100Clusters' -benchtime 1x -count "${COUNT:-1}" -timeout 30m ./internal/app/
