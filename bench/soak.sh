#!/usr/bin/env bash
# Soak: the whole suite as `make up` runs it (port offset 500, its own PLINTH_HOME and
# database), under a mixed load for DURATION: ghz against one read RPC of every service (through
# the gateway when it runs) at RPS calls/s each, vagrant noop jobs through the runner every
# 0.5 s, and (as root) lvmd volumes created and removed every 2 s, on a volume group of the soak's
# own that it removes at the end (PLINTH_LVMD_VG names one to keep). Every INTERVAL it records each
# service's RSS, goroutines and open fds; each WINDOW gives one p99 per target. It prints the
# curves' warm/end/peak values with a flat/GROWING verdict and every error, writes
# resources.tsv and latency.tsv, and exits non-zero on growth or errors.
#
#   bench/soak.sh                         # 10 minutes
#   DURATION=30m RPS=300 bench/soak.sh
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
cd "$root"
make --no-print-directory tools-ghz >/dev/null
go build -o bin/plinth-up ./deploy/cmd/plinth-up
go build -o bin/plinth-soak ./deploy/cmd/plinth-soak
home="$(mktemp -d /tmp/plinth-soak.XXXXXX)"
chmod 755 "$home"
exec bin/plinth-soak -up bin/plinth-up -ghz bin/ghz -home "$home" -duration "${DURATION:-10m}" \
	-interval "${INTERVAL:-5s}" -window "${WINDOW:-10s}" -rps "${RPS:-150}" -port-offset "${OFFSET:-500}"
