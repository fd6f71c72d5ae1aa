#!/usr/bin/env bash
# Gateway overhead: the same unary call (hashicorp.vagrant.Vagrant/GetVersionInfo) made with
# ghz directly against a backend and through the gateway, in one run, on the same machine,
# against two backends:
#   bare            services/gateway/bench/benchtarget: the call answered from memory by a
#                   grpc-go server with nothing else, so what the gateway adds is laid bare
#                   (the worst case: the cheapest call there is);
#   vagrant-server  the real service as `make up` runs it (interceptors for logs, metrics,
#                   traces, recovery and tokens; Postgres and NATS behind it), started with
#                   `plinth-up -infra-only` on a private Postgres cluster and an embedded NATS
#                   in a scratch home, then `plinth-up -run vagrant-server`;
# each two ways:
#   saturated  as many calls as the workers can make (closed loop): the most calls/s either
#              way, and latency when the CPUs are the bottleneck — there ghz, the gateway and
#              the backend share the cores, so the p99 ratio is mostly the ratio of CPU spent;
#   at RATE    the same offered load both ways (ghz --rps, default 3000 calls/s): the latency
#              a client sees from the extra hop when the load is fixed.
# Prints p50/p99 latency and calls/s for each and the p99 ratios (goal: gateway p99 <= 1.5 x
# direct). vagrant-server's GetVersionInfo route is "Own" (no Plinth token), so the gateway
# calls no auth; a token route adds one cached token lookup (a hash and a map read) per call.
# Needs bin/ghz (`make tools-ghz`); the vagrant-server backend needs PostgreSQL's binaries
# (the launcher's private cluster). Knobs: BACKENDS (default "bare vagrant-server"), TOTAL
# (default 20000), CONCURRENCY (default 16), CONNECTIONS (default 4), RATE (default 3000; 0
# skips the fixed-rate runs), PORT_OFFSET (the launcher's, default 31000).
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
chmod 755 "$work" # a private Postgres cluster runs as the postgres user
pids=()
cleanup() {
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
	wait 2>/dev/null || true
	rm -rf "$work"
}
trap cleanup EXIT

backends="${BACKENDS:-bare vagrant-server}"
offset="${PORT_OFFSET:-31000}"
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
# wait_grpc ADDR WHAT: until ADDR answers the benchmark's call, or fail naming WHAT and its log.
wait_grpc() {
	for _ in $(seq 600); do
		"$ghz" --insecure --call hashicorp.vagrant.Vagrant/GetVersionInfo -d '{}' -n 1 -c 1 "$1" >/dev/null 2>&1 && return 0
		sleep 0.1
	done
	die "$2 did not answer on $1: $(tail -5 "$work/$2.log" 2>/dev/null)"
}

echo "building the gateway and the benchmark backend..." >&2
(cd "$root/services/gateway" && go build -o "$work/gateway" ./cmd/gateway && go build -o "$work/benchtarget" ./bench/benchtarget)

# start_bare and start_vagrant_server set backend to the address of the backend they start.
start_bare() {
	"$work/benchtarget" -addr 127.0.0.1:0 >"$work/bare.addr" 2>"$work/bare.log" &
	pids+=($!)
	for _ in $(seq 50); do [ -s "$work/bare.addr" ] && break; sleep 0.1; done
	backend="$(head -1 "$work/bare.addr")"
}
start_vagrant_server() {
	local home="$work/home"
	(cd "$root" && go build -o "$work/plinth-up" ./deploy/cmd/plinth-up)
	"$work/plinth-up" -root "$root" -home "$home" -port-offset "$offset" -private-postgres -infra-only >"$work/infra.log" 2>&1 &
	pids+=($!)
	for _ in $(seq 1200); do [ -s "$home/infra.json" ] && break; sleep 0.1; done
	[ -s "$home/infra.json" ] || die "plinth-up -infra-only did not start: $(tail -5 "$work/infra.log")"
	PLINTH_LOG_LEVEL=warn "$work/plinth-up" -root "$root" -home "$home" -port-offset "$offset" -run vagrant-server >"$work/vagrant-server.log" 2>&1 &
	pids+=($!)
	backend="127.0.0.1:$((7004 + offset))"
}

run() { # name target [ghz flags...]
	local name="$1" target="$2"
	shift 2
	"$ghz" --insecure --call hashicorp.vagrant.Vagrant/GetVersionInfo -d '{}' \
		-n "$total" -c "$concurrency" --connections "$connections" --skipFirst 500 "$@" \
		--format json "$target" >"$work/$name.json" || die "ghz against $name failed: $(tail -5 "$work/gateway.log")"
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

summary=()
for b in $backends; do
	backend=""
	case "$b" in
	bare) start_bare ;;
	vagrant-server) start_vagrant_server ;;
	*) die "unknown backend $b (BACKENDS: bare, vagrant-server)" ;;
	esac
	[ -n "$backend" ] || die "the $b backend did not start"
	wait_grpc "$backend" "$b"
	gateway="127.0.0.1:$(free_port)"
	PLINTH_GRPC_ADDR="$gateway" PLINTH_ADMIN_ADDR=off PLINTH_LOG_FORMAT=json PLINTH_LOG_LEVEL=warn \
		PLINTH_GATEWAY_BACKEND_VAGRANT_SERVER="$backend" "$work/gateway" 2>"$work/gateway.log" &
	gwpid=$!
	pids+=($gwpid)
	wait_grpc "$gateway" gateway
	echo "== $b: GetVersionInfo, $total calls, $concurrency workers on $connections connections, saturated:"
	run "$b-direct" "$backend"
	run "$b-gateway" "$gateway"
	summary+=("$(ratio "$b-direct" "$b-gateway" "$b, saturated")")
	if [ "$rate" -gt 0 ]; then
		echo "== $b: the same at $rate calls/s:"
		run "$b-direct-rate" "$backend" --rps "$rate"
		run "$b-gateway-rate" "$gateway" --rps "$rate"
		summary+=("$(ratio "$b-direct-rate" "$b-gateway-rate" "$b, at $rate calls/s")")
	fi
	kill "$gwpid" 2>/dev/null || true
	wait "$gwpid" 2>/dev/null || true
done
printf '%s\n' "${summary[@]}"
exit 0
