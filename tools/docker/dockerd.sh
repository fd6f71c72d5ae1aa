#!/usr/bin/env bash
# Starts or stops a Docker engine on a machine without systemd (CI, a bare container), as root:
#
#   tools/docker/dockerd.sh start   # no-op when an engine answers already
#   tools/docker/dockerd.sh stop    # only the engine this script started
#
# Its data root (images, build cache) is a fixed path outside any checkout, so the next run
# finds the images it built: PLINTH_DOCKER_ROOT, default /var/lib/plinth-docker. Logs go to
# ROOT/dockerd.log. Before starting, IPv4 forwarding is turned on here: dockerd sets the
# iptables FORWARD policy to DROP only when it has to turn forwarding on itself, and a DROP
# would cut the network namespaces other tests route between. Stopping removes the NAT and
# filter chains dockerd added, so the machine is left as before but for ip_forward.
set -euo pipefail

root="${PLINTH_DOCKER_ROOT:-/var/lib/plinth-docker}"
pidfile="$root/dockerd.pid"
say() { printf '[dockerd] %s\n' "$*"; }
die() { printf '[dockerd] ERROR: %s\n' "$*" >&2; exit 1; }

answers() { docker version --format '{{.Server.Version}}' 2>/dev/null; }

start() {
	local v i
	if v="$(answers)"; then
		say "a Docker engine answers already (server $v)"
		return
	fi
	[ "$(id -u)" -eq 0 ] || die "starting dockerd needs root"
	command -v dockerd >/dev/null || die "no dockerd: apt-get install docker.io"
	mkdir -p "$root/data" "$root/exec"
	sysctl -q -w net.ipv4.ip_forward=1
	setsid dockerd --data-root "$root/data" --exec-root "$root/exec" --pidfile "$pidfile" \
		-H unix:///var/run/docker.sock >>"$root/dockerd.log" 2>&1 </dev/null &
	for ((i = 0; i < 600; i++)); do
		if v="$(answers)"; then
			say "dockerd $v started (data $root/data, log $root/dockerd.log)"
			return
		fi
		sleep 0.1
	done
	tail -20 "$root/dockerd.log" >&2
	die "dockerd did not answer within 60s"
}

# forget_iptables removes what dockerd added to iptables and leaves behind: the rules of the
# built-in chains that jump to its chains or name its bridges, then its chains.
forget_iptables() {
	local t c rule chains=(DOCKER DOCKER-ISOLATION-STAGE-1 DOCKER-ISOLATION-STAGE-2 DOCKER-USER)
	for t in filter nat; do
		while read -r rule; do
			# shellcheck disable=SC2086 # the rule's words are iptables arguments
			iptables -t "$t" -D ${rule#-A } 2>/dev/null || true
		done < <(iptables -t "$t" -S 2>/dev/null | grep -E -- '^-A (FORWARD|INPUT|OUTPUT|PREROUTING|POSTROUTING) .*(-j DOCKER|docker0|br-[0-9a-f]{12})' || true)
		for c in "${chains[@]}"; do iptables -t "$t" -F "$c" 2>/dev/null || true; done
		for c in "${chains[@]}"; do iptables -t "$t" -X "$c" 2>/dev/null || true; done
	done
}

stop() {
	local pid i
	[ -s "$pidfile" ] || { say "no dockerd started here"; return; }
	pid="$(cat "$pidfile")"
	kill "$pid" 2>/dev/null || true
	for ((i = 0; i < 300; i++)); do
		kill -0 "$pid" 2>/dev/null || break
		sleep 0.1
	done
	kill -9 "$pid" 2>/dev/null || true
	rm -f "$pidfile"
	forget_iptables
	ip link delete docker0 2>/dev/null || true
	say "dockerd stopped"
}

case "${1:-}" in
start) start ;;
stop) stop ;;
*) echo "usage: $0 start|stop" >&2; exit 2 ;;
esac
