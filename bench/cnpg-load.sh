#!/usr/bin/env bash
# WAL archiving under load on CloudNativePG's own operator (#24): pgbench at the highest rate
# the node sustains, for DURATION seconds, on a Cluster's primary on `make kube-up`'s cluster
# (after `make kube-demo`: pg-example, 2 instances, WAL through cnpgi-plugin's sidecar into the
# in-cluster S3), then until the archive has caught up. Every 2 s it records, from the primary:
# the WAL written (pg_current_wal_lsn), pg_stat_archiver's archived and failed counts, and the
# segments waiting (.ready files in pg_wal/archive_status: the archive lag); and the CPU time
# of the plugin's sidecar container (its cgroup) and of PostgreSQL's archiver process with
# everything its archive_command ran (the archiver's cutime+cstime: CloudNativePG's
# `/controller/manager wal-archive`, the gRPC client of the plugin, once per segment).
#
# It prints the lag over time (per 30 s: segments written and archived per second, the most
# segments waiting) and the totals: segments written vs archived per second, the most segments
# ever waiting, how long the archive took to catch up after pgbench stopped, and CPU per
# archived segment — the plugin's, and everything archiving cost (plugin + archive_command).
#
# ARCHIVER=barman runs the same on a Cluster that archives with barman-cloud-wal-archive as
# CloudNativePG's in-tree archive_command instead (spec.backup.barmanObjectStore, Debian's
# barman-cli-cloud in an operand image built here on deploy/docker/postgresql's, into the same
# in-cluster S3); its CPU is all in the archiver's children (the manager and barman's Python
# process per segment). Needs a Docker engine (tools/docker/dockerd.sh start) to build it.
#
# MODE=tpcb is pgbench's own TPC-B-like transactions (scale SCALE), where the commit rate,
# not the WAL, is the limit; MODE=wal is what stresses an archiver: each transaction updates
# 1,000 rows of ~1 KB (a 10,000-row table, autovacuum keeps it small), ~1 MiB of WAL each.
# The sidecar's CPU while idle (20 s before pgbench) is measured too, and its CPU per segment
# is given above that baseline as well.
#
# Needs: root, `make kube-up` and `make kube-demo` done (KUBECONFIG, default
# /var/lib/plinth-kube/kubeconfig). Knobs: DURATION (300), CLIENTS (8), SCALE (20),
# MODE (tpcb | wal), ARCHIVER (plinth | barman).
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
duration="${DURATION:-300}"
clients="${CLIENTS:-8}"
scale="${SCALE:-20}"
archiver="${ARCHIVER:-plinth}"
mode="${MODE:-tpcb}"
export KUBECONFIG="${KUBECONFIG:-/var/lib/plinth-kube/kubeconfig}"

die() { printf 'bench/cnpg-load.sh: %s\n' "$*" >&2; exit 1; }
[ "$(id -u)" -eq 0 ] || die "run as root: it reads the containers' cgroups"
[ -r "$KUBECONFIG" ] || die "no cluster ($KUBECONFIG): run \`make kube-up\` and \`make kube-demo\`"
kubectl="$(ls "$root"/bin/kubectl-v* 2>/dev/null | sort -V | tail -1)"
[ -x "$kubectl" ] || die "no kubectl in bin/: run \`make tools-k8s\`"
k() { "$kubectl" -n plinth "$@"; }
work="$(mktemp -d)"
trap 'kill $(jobs -p) 2>/dev/null || true; rm -rf "$work"' EXIT

case "$archiver" in
plinth)
	cluster=pg-example
	k get cluster "$cluster" >/dev/null 2>&1 || die "no Cluster $cluster: run \`make kube-demo\`"
	;;
barman)
	cluster=pg-barman
	image=plinth.local/postgresql-barman:15
	dir="$(cat /run/plinth-kube.dir 2>/dev/null || true)"
	[ -S "$dir/containerd/containerd.sock" ] || die "no containerd socket of make kube-up's node under '$dir'"
	if ! ctr -a "$dir/containerd/containerd.sock" -n k8s.io images ls -q | grep -qx "$image"; then
		docker version >/dev/null 2>&1 || die "no Docker engine to build $image: tools/docker/dockerd.sh start"
		printf 'building %s (barman-cli-cloud on the operand image)\n' "$image"
		docker build -q -t "$image" - >/dev/null <<'EOF'
FROM plinth.local/postgresql:15
USER root
RUN apt-get update -q && DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends barman-cli-cloud \
    && rm -rf /var/lib/apt/lists/* && barman-cloud-wal-archive --version
USER 26:26
EOF
		docker save "$image" | ctr -a "$dir/containerd/containerd.sock" -n k8s.io images import - >/dev/null
	fi
	k apply -f - >/dev/null <<EOF
apiVersion: postgresql.cnpg.io/v1
kind: Cluster
metadata: {name: $cluster}
spec:
  instances: 1
  imageName: $image
  imagePullPolicy: IfNotPresent
  storage: {size: 2Gi}
  backup:
    barmanObjectStore:
      destinationPath: s3://plinth-pg-archive/barman
      endpointURL: http://s3:7070
      s3Credentials:
        accessKeyId: {name: plinth-cnpgi-sidecar, key: S3_ACCESS_KEY_ID}
        secretAccessKey: {name: plinth-cnpgi-sidecar, key: S3_SECRET_ACCESS_KEY}
      wal: {compression: gzip}
EOF
	k wait "cluster/$cluster" --for=condition=Ready --timeout=6m >/dev/null
	;;
*) die "ARCHIVER is plinth or barman, not $archiver" ;;
esac

primary="$(k get cluster "$cluster" -o jsonpath='{.status.currentPrimary}')"
[ -n "$primary" ] || die "Cluster $cluster has no primary"
psql() { k exec "$primary" -c postgres -- psql -X -A -t -v ON_ERROR_STOP=1 -d postgres "$@"; }

# A container's cumulative CPU in nanoseconds, from its cgroup (v1 cpuacct or v2 cpu.stat).
container_id() { # container_id NAME: the container's id in the primary pod, init containers too
	k get pod "$primary" -o jsonpath="{range .status.initContainerStatuses[?(@.name==\"$1\")]}{.containerID}{end}{range .status.containerStatuses[?(@.name==\"$1\")]}{.containerID}{end}" | sed 's|.*://||'
}
cgroup_of() {
	local id="$1" d
	for d in /sys/fs/cgroup/cpu,cpuacct /sys/fs/cgroup/cpuacct /sys/fs/cgroup; do
		[ -d "$d" ] || continue
		find "$d" -maxdepth 8 -type d -name "*$id*" 2>/dev/null | head -1 && return
	done
}
cpu_ns() {
	[ -n "$1" ] || { echo 0; return; }
	if [ -r "$1/cpuacct.usage" ]; then
		cat "$1/cpuacct.usage"
	else
		awk '$1 == "usage_usec" { printf "%d\n", $2 * 1000 }' "$1/cpu.stat"
	fi
}
sidecar_cg=""
if [ "$archiver" = plinth ]; then
	id="$(container_id plinth-cnpgi)"
	[ -n "$id" ] || die "no plinth-cnpgi sidecar in $primary"
	sidecar_cg="$(cgroup_of "$id")"
	[ -n "$sidecar_cg" ] || die "no cgroup for the sidecar container $id"
fi

case "$mode" in
tpcb)
	printf 'pgbench -i -s %s on %s (%s)\n' "$scale" "$primary" "$cluster"
	k exec "$primary" -c postgres -- pgbench -i -q -s "$scale" postgres >/dev/null 2>&1
	load=(pgbench -c "$clients" -j 2 -T "$duration" -n postgres)
	;;
wal)
	printf 'bench_wal: 10,000 rows of ~1 KB on %s (%s)\n' "$primary" "$cluster"
	psql -c "DROP TABLE IF EXISTS bench_wal" -c "CREATE TABLE bench_wal (id int PRIMARY KEY, n int, v text)" \
		-c "INSERT INTO bench_wal SELECT g, 0, repeat(md5(random()::text), 30) FROM generate_series(1, 10000) g" >/dev/null
	printf '%s\n' '\set lo random(1, 9000)' 'UPDATE bench_wal SET n = n + 1 WHERE id BETWEEN :lo AND :lo + 999;' |
		k exec -i "$primary" -c postgres -- sh -c 'cat > /controller/bench_wal.sql'
	load=(pgbench -f /controller/bench_wal.sql -c "$clients" -j 2 -T "$duration" -n postgres)
	;;
*) die "MODE is tpcb or wal, not $mode" ;;
esac
psql -c "CHECKPOINT" >/dev/null
sleep 5

# Samples, every 2 s: epoch, WAL bytes written, archived, failed, .ready files, archiver
# children's CPU ticks (in the pod); sidecar CPU ns (here).
k exec "$primary" -c postgres -- bash -c '
	for d in /proc/[0-9]*; do
		case "$(tr "\0" " " < "$d/cmdline" 2>/dev/null)" in "postgres: "*archiver*) pid="${d#/proc/}";; esac
	done
	[ -n "$pid" ] || { echo "no archiver process" >&2; exit 1; }
	while :; do
		row="$(psql -X -A -t -F " " -d postgres -c "SELECT extract(epoch FROM clock_timestamp())::numeric(14,2), pg_current_wal_lsn() - '\''0/0'\''::pg_lsn, archived_count, failed_count, (SELECT count(*) FROM pg_ls_archive_statusdir() WHERE name LIKE '\''%.ready'\'') FROM pg_stat_archiver")"
		read -r -a st < "/proc/$pid/stat"
		echo "$row ${st[15]} ${st[16]}"
		sleep 2
	done' >"$work/pg" 2>"$work/pg.err" &
while :; do
	printf '%s %s\n' "$(date +%s.%N)" "$(cpu_ns "$sidecar_cg")"
	sleep 2
done >"$work/cpu" &
sleep 3
[ -s "$work/pg" ] || die "the sampler in $primary says: $(cat "$work/pg.err")"
sleep 20 # the idle baseline

start="$(date +%s)"
printf '%s (unthrottled: the highest rate the node sustains)\n' "${load[*]}"
k exec "$primary" -c postgres -- "${load[@]}" >"$work/pgbench" 2>&1 ||
	{ cat "$work/pgbench"; die "pgbench failed"; }
stop="$(date +%s)"
printf 'pgbench done; waiting for the archive to catch up\n'
for _ in $(seq 1 300); do
	ready="$(tail -1 "$work/pg" | awk '{ print $5 }')"
	[ "$ready" = 0 ] && break
	sleep 2
done
sleep 4
kill $(jobs -p) 2>/dev/null || true
wait 2>/dev/null || true

tps="$(awk '/^tps/ { print $3; exit }' "$work/pgbench")"
hz="$(getconf CLK_TCK)"
printf '\n%s archiving, %s, MODE=%s, %s clients, %s s, %s CPUs\n' "$archiver" "$cluster" "$mode" "$clients" "$duration" "$(nproc)"
printf 'pgbench: %s tps\n\n' "$tps"
awk -v start="$start" -v stop="$stop" -v hz="$hz" -v archiver="$archiver" '
	FNR == NR { cpu_t[FNR] = $1; cpu_v[FNR] = $2; ncpu = FNR; next }
	{ t[FNR] = $1; lsn[FNR] = $2; arch[FNR] = $3; failed[FNR] = $4; ready[FNR] = $5; kids[FNR] = ($6 + $7) / hz; n = FNR }
	END {
		seg = 16 * 1048576
		printf "%8s %14s %14s %12s\n", "t (s)", "written seg/s", "archived seg/s", "most ready"
		w0 = 1
		for (i = 2; i <= n; i++) {
			if (t[i] - t[w0] >= 30 || i == n) {
				most = 0
				for (j = w0; j <= i; j++) if (ready[j] > most) most = ready[j]
				dt = t[i] - t[w0]
				printf "%8.0f %14.2f %14.2f %12d\n", t[i] - start, (lsn[i] - lsn[w0]) / seg / dt, (arch[i] - arch[w0]) / dt, most
				w0 = i
			}
		}
		most = 0; over = 0
		for (i = 1; i <= n; i++) { if (ready[i] > most) most = ready[i]; if (ready[i] > 2) over++ }
		# the load phase: samples within [start, stop]
		for (i = 1; i <= n; i++) { if (t[i] >= start && !a) a = i; if (t[i] <= stop) b = i }
		dt = t[b] - t[a]
		written = (lsn[n] - lsn[1]) / seg; archived = arch[n] - arch[1]
		caught = t[n] - stop
		printf "\nduring pgbench: %.2f segments written/s, %.2f archived/s\n", (lsn[b] - lsn[a]) / seg / dt, (arch[b] - arch[a]) / dt
		printf "whole run: %.1f segments written, %d archived, %d failed archive calls\n", written, archived, failed[n] - failed[1]
		printf "archive lag: at most %d segments waiting (.ready); above 2 in %d of %d samples; caught up %.0f s after pgbench stopped\n", most, over, n, caught
		# the first 20 s of samples are the idle baseline; archived counts from the load on
		for (i = 1; i <= n; i++) if (t[i] < start) a0 = i
		for (i = 1; i <= ncpu; i++) if (cpu_t[i] < start) c0 = i
		idle = (cpu_v[c0] - cpu_v[1]) / 1e9 / (cpu_t[c0] - cpu_t[1])
		sidecar = (cpu_v[ncpu] - cpu_v[c0]) / 1e9
		children = kids[n] - kids[a0]
		archived = arch[n] - arch[a0]
		if (archived > 0) {
			if (archiver == "plinth") {
				printf "plugin sidecar idle: %.1f ms CPU per second\n", 1000 * idle
				printf "CPU per archived segment: plugin sidecar %.1f ms (%.1f above idle); archive_command (the manager, gRPC client) %.1f ms; all archiving %.1f ms\n", 1000 * sidecar / archived, 1000 * (sidecar - idle * (cpu_t[ncpu] - cpu_t[c0])) / archived, 1000 * children / archived, 1000 * (sidecar + children) / archived
			}
			else
				printf "CPU per archived segment: archive_command (the manager and barman-cloud-wal-archive) %.1f ms\n", 1000 * children / archived
		}
	}' "$work/cpu" "$work/pg"
if [ "$archiver" = barman ] && [ "${KEEP:-}" != 1 ]; then
	k delete cluster "$cluster" --wait=false >/dev/null
fi
