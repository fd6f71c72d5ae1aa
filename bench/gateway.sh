#!/usr/bin/env bash
# Gateway overhead: the same unary call (hashicorp.vagrant.Vagrant/GetVersionInfo, answered
# from memory by services/gateway/internal/benchtarget) made with ghz directly against the
# backend and through the gateway, in one run, on the same machine. Prints p50/p99 latency and
# calls/s for both and the p99 ratio (goal: gateway p99 <= 1.5 x direct). vagrant-server's
# route is "Own" (no Plinth token), so no auth, Postgres or NATS is needed; a token route adds
# one cached token lookup (a hash and a map read) per call.
# Needs bin/ghz (`make tools-ghz`). Knobs: TOTAL (default 20000), CONCURRENCY (default 16),
# CONNECTIONS (default 4).
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
total="${TOTAL:-20000}"
concurrency="${CONCURRENCY:-16}"
connections="${CONNECTIONS:-4}"
die() { printf 'bench/gateway.sh: %s\n' "$*" >&2; exit 1; }
ghz="${PLINTH_GHZ:-$root/bin/ghz}"
[ -x "$ghz" ] || die "ghz not found: run \`make tools-ghz\`"
command -v jq >/dev/null || die "jq not found: apt-get install jq"

work="$(mktemp -d /tmp/gateway-bench-XXXXXX)"
pids=()
cleanup() {
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
	wait 2>/dev/null || true
	rm -rf "$work"
}
trap cleanup EXIT

echo "building the gateway and the benchmark backend..." >&2
(cd "$root/services/gateway" && go build -o "$work/gateway" ./cmd/gateway && go build -o "$work/benchtarget" ./internal/benchtarget)

"$work/benchtarget" -addr 127.0.0.1:0 >"$work/backend.addr" &
pids+=($!)
for _ in $(seq 50); do [ -s "$work/backend.addr" ] && break; sleep 0.1; done
backend="$(head -1 "$work/backend.addr")"
[ -n "$backend" ] || die "the backend did not start"

port="$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')"
gateway="127.0.0.1:$port"
PLINTH_GRPC_ADDR="$gateway" PLINTH_ADMIN_ADDR=off PLINTH_LOG_FORMAT=json PLINTH_LOG_LEVEL=warn \
	PLINTH_GATEWAY_BACKEND_VAGRANT_SERVER="$backend" "$work/gateway" 2>"$work/gateway.log" &
pids+=($!)
for _ in $(seq 100); do
	"$ghz" --insecure --call grpc.health.v1.Health/Check -n 1 -c 1 "$gateway" >/dev/null 2>&1 && break
	sleep 0.1
done

run() { # name target
	"$ghz" --insecure --call hashicorp.vagrant.Vagrant/GetVersionInfo -d '{}' \
		-n "$total" -c "$concurrency" --connections "$connections" --skipFirst 500 \
		--format json "$2" >"$work/$1.json" || die "ghz against $1 failed: $(cat "$work/gateway.log")"
	jq -r --arg name "$1" '
		def pct(p): (.latencyDistribution[] | select(.percentage == p) | .latency / 1000);
		"\($name)\tp50 \(pct(50) | floor) µs\tp99 \(pct(99) | floor) µs\t\(.rps | floor) calls/s\terrors \((.statusCodeDistribution // {}) | to_entries | map(select(.key != "OK") | .value) | add // 0)"
	' "$work/$1.json"
}
echo "GetVersionInfo, $total calls, $concurrency workers on $connections connections:"
run direct "$backend"
run gateway "$gateway"
jq -rn --slurpfile d "$work/direct.json" --slurpfile g "$work/gateway.json" '
	def p99(x): (x.latencyDistribution[] | select(.percentage == 99) | .latency);
	"p99 gateway / direct = \((p99($g[0]) / p99($d[0]) * 100 | floor) / 100) (goal <= 1.5)"'
