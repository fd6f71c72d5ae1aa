#!/usr/bin/env bash
# Gateway overhead: the same unary call (hashicorp.vagrant.Vagrant/GetVersionInfo, answered
# from memory by services/gateway/internal/benchtarget) made with ghz directly against the
# backend and through the gateway, in one run, on the same machine, two ways:
#   saturated  as many calls as the workers can make (closed loop): the most calls/s either
#              way, and latency when the CPUs are the bottleneck — there ghz, the gateway and
#              the backend share the cores, so the p99 ratio is mostly the ratio of CPU spent;
#   at RATE    the same offered load both ways (ghz --rps, default 3000 calls/s, about a
#              tenth of what the backend alone serves here): the latency a client sees from
#              the extra hop when the machine is not the bottleneck.
# Prints p50/p99 latency and calls/s for each and the p99 ratios (goal: gateway p99 <= 1.5 x
# direct). vagrant-server's route is "Own" (no Plinth token), so no auth, Postgres or NATS is
# needed; a token route adds one cached token lookup (a hash and a map read) per call.
# Needs bin/ghz (`make tools-ghz`). Knobs: TOTAL (default 20000), CONCURRENCY (default 16),
# CONNECTIONS (default 4), RATE (default 3000; 0 skips the fixed-rate runs).
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
total="${TOTAL:-20000}"
concurrency="${CONCURRENCY:-16}"
connections="${CONNECTIONS:-4}"
rate="${RATE:-3000}"
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

run() { # name target [ghz flags...]
	local name="$1" target="$2"
	shift 2
	"$ghz" --insecure --call hashicorp.vagrant.Vagrant/GetVersionInfo -d '{}' \
		-n "$total" -c "$concurrency" --connections "$connections" --skipFirst 500 "$@" \
		--format json "$target" >"$work/$name.json" || die "ghz against $name failed: $(cat "$work/gateway.log")"
	jq -r --arg name "$name" '
		def pct(p): (.latencyDistribution[] | select(.percentage == p) | .latency / 1000);
		"\($name)\tp50 \(pct(50) | floor) µs\tp99 \(pct(99) | floor) µs\t\(.rps | floor) calls/s\terrors \((.statusCodeDistribution // {}) | to_entries | map(select(.key != "OK") | .value) | add // 0)"
	' "$work/$name.json"
}
ratio() { # direct gateway label
	jq -rn --slurpfile d "$work/$1.json" --slurpfile g "$work/$2.json" --arg what "$3" '
		def p99(x): (x.latencyDistribution[] | select(.percentage == 99) | .latency);
		"\($what): p99 gateway / direct = \((p99($g[0]) / p99($d[0]) * 100 | floor) / 100) (goal <= 1.5); calls/s \(($g[0].rps / $d[0].rps * 100 | floor))% of direct"'
}
echo "GetVersionInfo, $total calls, $concurrency workers on $connections connections, saturated:"
run direct "$backend"
run gateway "$gateway"
if [ "$rate" -gt 0 ]; then
	echo "the same at $rate calls/s:"
	run direct-rate "$backend" --rps "$rate"
	run gateway-rate "$gateway" --rps "$rate"
fi
ratio direct gateway saturated
[ "$rate" -gt 0 ] && ratio direct-rate gateway-rate "at $rate calls/s"
exit 0
