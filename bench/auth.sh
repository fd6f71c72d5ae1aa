#!/usr/bin/env bash
# Auth benchmarks: CheckToken through the shared authn interceptor with a warm cache and with no
# cache (every call asks auth, one Postgres lookup), and Login at the production argon2id
# parameters. Prints ns/op plus p50/p99 latency in µs. Needs Postgres (TEST_DATABASE_URL, or a
# private cluster is started) and NATS (TEST_NATS_URL, or an embedded server).
set -euo pipefail
cd "$(dirname "$0")/../services/auth"
exec go test -run '^$' -bench "${BENCH:-.}" -benchtime "${BENCHTIME:-3s}" -count "${COUNT:-1}" ./internal/app/ ./internal/identity/
