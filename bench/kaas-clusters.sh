#!/usr/bin/env bash
# kaas clusters on the local vagrant provider, as `make up` runs them: the time from
# CreateCluster to RUNNING, to kubectl-Ready nodes, and from DeleteCluster to the cluster gone,
# for CLUSTERS consecutive 1+1 clusters (one control-plane machine, one worker pool of one),
# first alone, then each beside N user jobs of USER_JOB_SECONDS, for each N in USER_JOBS
# (a Vagrant client's `exec sleep 60` on a netns machine of its own, queued for any runner
# and running when CreateCluster is called; 4 fill every general slot of the default runner). Prints one line per cluster and, per phase, the median and worst.
#
# The suite is the launcher's (deploy/cmd/plinth-up) in a scratch home: `-infra-only` on a
# private Postgres cluster and an embedded NATS, then `-run` auth, vagrant-server, kaas and
# vagrant-runner with exactly the environment `make up` gives them (kaas targets the runner id
# reserved for it, the runner registers it beside its general slots). The other services do
# not take part in cluster provisioning and stay off.
#
# AFTER=<git ref> measures that revision instead of the working tree. BEFORE=<git ref> first
# measures that revision the same way (its tree from `git archive`, on
# ports and a bridge of its own; CLUSTERS_BEFORE clusters per phase, default CLUSTERS, beside
# USER_JOBS_BEFORE user jobs, default 1), so
# the figures of both builds come from one run on one machine.
#
# Needs root (netns machines), iproute2, bin/kube-apiserver-<v>, bin/kube-controller-manager-<v>
# and bin/kwok (`make tools-k8s`), /usr/bin/etcd (etcd-server), kubectl, grpcurl (bin/grpcurl:
# `make tools`), jq, curl. Machines live on a bridge of the benchmark's own (BRIDGE, SUBNET).
# Knobs: CLUSTERS (10), USER_JOBS ("1 4": one user job, then one in every general slot of the
# default runner), USER_JOB_SECONDS (60), VERSION (v1.33.13), PORT_OFFSET (21000: ports below the kernel's ephemeral range, which starts at 32768), KEEP=1
# keeps the scratch home.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
clusters="${CLUSTERS:-10}"
user_jobs="${USER_JOBS:-1 4}"
user_secs="${USER_JOB_SECONDS:-60}"
version="${VERSION:-v1.33.13}"
offset="${PORT_OFFSET:-21000}"
die() { printf 'bench/kaas-clusters.sh: %s\n' "$*" >&2; exit 1; }
[ "$(id -u)" = 0 ] || die "netns machines need root"
grpcurl="${PLINTH_GRPCURL:-$root/bin/grpcurl}"
[ -x "$grpcurl" ] || die "grpcurl not found: run \`make tools\`"
for c in jq kubectl ip; do command -v "$c" >/dev/null || die "$c not found"; done
for b in "kube-apiserver-$version" "kube-controller-manager-$version" kwok; do
	[ -x "$root/bin/$b" ] || die "bin/$b missing: run \`make tools-k8s\`"
done
[ -x /usr/bin/etcd ] || die "/usr/bin/etcd missing: apt-get install etcd-server"

# tree REF: a scratch copy of revision REF (sharing this checkout's bin/), printed.
tree() {
	local t
	t="$(mktemp -d /tmp/kaas-bench-tree-XXXXXX)"
	git -C "$root" archive "$1" | tar -x -C "$t"
	ln -s "$root/bin" "$t/bin"
	echo "$t"
}
if [ -n "${BEFORE:-}" ]; then
	t="$(tree "$BEFORE")"
	echo "== $BEFORE (before):"
	BEFORE= AFTER= SRC_ROOT="$t" LABEL=before CLUSTERS="${CLUSTERS_BEFORE:-$clusters}" USER_JOBS="${USER_JOBS_BEFORE:-1}" PORT_OFFSET=$((offset + 500)) \
		BRIDGE="plbench$(((offset + 500) % 1000))" SUBNET=10.213.202.0/24 "$0" || echo "the $BEFORE run failed" >&2
	rm -rf "$t"
	echo "== ${AFTER:-this tree} (after):"
	LABEL="${LABEL:-after}"
fi
if [ -n "${AFTER:-}" ]; then # a committed revision instead of the working tree
	t="$(tree "$AFTER")"
	BEFORE= AFTER= SRC_ROOT="$t" "$0" && status=0 || status=$?
	rm -rf "$t"
	exit "$status"
fi
# The tree whose launcher and services are measured (BEFORE points it at the old one).
src="${SRC_ROOT:-$root}"
label="${LABEL:+$LABEL }"

work="$(mktemp -d /tmp/kaas-bench-XXXXXX)"
chmod 755 "$work" # the private Postgres cluster runs as the postgres user
home="$work/home"
pids=()
cleanup() {
	# Clusters a stopped run left are deleted first: stopping kaas would leave their machines.
	if [ -n "${token:-}" ]; then
		for c in $(kc GetClusterList '{}' 2>/dev/null | jq -r '.clusters[]?.name'); do kc DeleteCluster "{\"name\":\"$c\"}" >/dev/null 2>&1 || true; done
		for _ in $(seq 120); do [ -z "$(kc GetClusterList '{}' 2>/dev/null | jq -r '.clusters[]?.name')" ] && break; sleep 0.5; done
	fi
	for ((i = ${#pids[@]} - 1; i >= 0; i--)); do # the services, then the infrastructure
		kill "${pids[i]}" 2>/dev/null || true
		wait "${pids[i]}" 2>/dev/null || true
	done
	[ -n "${bridge:-}" ] && ip link del "$bridge" 2>/dev/null || true
	if [ "${KEEP:-}" = 1 ]; then echo "kept $work" >&2; else rm -rf "$work"; fi
}
trap cleanup EXIT
trap 'exit 143' INT TERM

now() { date +%s.%N; }
since() { awk -v a="$1" -v b="$(now)" 'BEGIN { printf "%.1f", b - a }'; }
wait_ready() { # ADMIN_PORT NAME
	for _ in $(seq 900); do
		curl -fsS "http://127.0.0.1:$(($1 + offset))/readyz" >/dev/null 2>&1 && return 0
		sleep 0.2
	done
	die "$2 did not become ready: $(tail -5 "$work/$2.log")"
}

echo "building the launcher and the services..." >&2
(cd "$src" && go build -o "$work/plinth-up" ./deploy/cmd/plinth-up)
password="$(head -c 12 /dev/urandom | od -An -tx1 | tr -d ' \n')"
# No dev Ceph: nothing in cluster provisioning uses it, and it would cost the cores.
export PLINTH_ADMIN_PASSWORD="$password" PLINTH_LOG_LEVEL=info PLINTH_KAAS_VERSIONS="$version" \
	PLINTH_KAAS_VAGRANT_KUBE_BIN_DIR="$root/bin" PLINTH_NO_CEPH=1
# The runner's machines on a bridge and subnet of the benchmark's own, so a `make up` or a
# test on this host neither meets its machines nor counts as its leftovers.
bridge="${BRIDGE:-plbench$((offset % 1000))}"
export PLINTH_VAGRANT_NETNS_BRIDGE="$bridge" PLINTH_VAGRANT_NETNS_SUBNET="${SUBNET:-10.213.201.0/24}"
# Run in the background (its subshell becomes plinth-up, so the cleanup's kill reaches it).
up() { exec "$work/plinth-up" -root "$src" -home "$home" -port-offset "$offset" "$@"; }
up -private-postgres -infra-only >"$work/infra.log" 2>&1 &
pids+=($!)
for _ in $(seq 3000); do [ -s "$home/infra.json" ] && break; sleep 0.2; done
[ -s "$home/infra.json" ] || die "plinth-up -infra-only did not start: $(tail -5 "$work/infra.log")"
for s in auth:7101 vagrant-server:7104 kaas:7103 vagrant-runner:7107; do
	up -run "${s%%:*}" >"$work/${s%%:*}.log" 2>&1 &
	pids+=($!)
	wait_ready "${s##*:}" "${s%%:*}"
done

auth="127.0.0.1:$((7001 + offset))"
kaas="127.0.0.1:$((7003 + offset))"
vagrant="127.0.0.1:$((7004 + offset))"
token="$("$grpcurl" -plaintext -d "{\"username\":\"admin\",\"password\":\"$password\"}" "$auth" services.auth.AuthService/Login | jq -r .token)"
[ -n "$token" ] && [ "$token" != null ] || die "could not log in as admin"
kc() { "$grpcurl" -plaintext -H "authorization: Bearer $token" -d "$2" "$kaas" "cnct.kaas.api.Cluster/$1"; }
for _ in $(seq 300); do [ -s "$home/vagrant-runner/token" ] && break; sleep 0.2; done
vtoken="$(tr -d '\n' <"$home/vagrant-runner/token")"
vc() { "$grpcurl" -plaintext -H 'client-api-protocol: 1,1' -H "authorization: $vtoken" -d "$2" "$vagrant" "hashicorp.vagrant.Vagrant/$1"; }
curl -fsS "http://127.0.0.1:$((7107 + offset))/readyz" | sed 's/^/runner: /' >&2

# A Vagrant user's machine, for the user's long jobs.
basis="$(vc UpsertBasis '{"basis":{"name":"bench-user","path":"/bench-user"}}' | jq -r .basis.resourceId)"
project="$(vc UpsertProject "{\"project\":{\"name\":\"site\",\"path\":\"/bench-user/site\",\"basis\":{\"resourceId\":\"$basis\"}}}" | jq -r .project.resourceId)"
target="$(vc UpsertTarget "{\"target\":{\"name\":\"user-vm\",\"provider\":\"netns\",\"project\":{\"resourceId\":\"$project\"}}}" | jq -r .target.resourceId)"
user_job() { # COMMAND [ARGS JSON]: queues a job for any runner, prints its id
	vc QueueJob "{\"expiresIn\":\"10m\",\"job\":{\"target\":{\"resourceId\":\"$target\"},\"targetRunner\":{\"any\":{}},\"command\":{\"command\":\"$1\",\"cliArgs\":{\"args\":${2:-[]}}}}}" | jq -r .jobId
}
job_state() { vc GetJob "{\"jobId\":\"$1\"}" | jq -r .state; }
await_job() { # ID STATE...: until the job is in one of the states
	local id="$1" st
	shift
	for _ in $(seq 600); do
		st="$(job_state "$id")"
		for want in "$@"; do [ "$st" = "$want" ] && return 0; done
		case "$st" in SUCCESS | ERROR) die "user job $id ended $st while waiting for $*" ;; esac
		sleep 0.2
	done
	die "user job $id is $st, not $*"
}
await_job "$(user_job up)" SUCCESS
# The netns of a vagrant target's machine: plinth-<first 10 hex digits of sha256(target id)>.
netns_of() { printf 'plinth-%s' "$(printf '%s' "$1" | sha256sum | cut -c1-10)"; }

results="$work/results.tsv"
: >"$results"
one_cluster() { # PHASE N
	local phase="$1" name="b$2-$RANDOM" t0 st msg="" running="" ready="" deleted="" kubeconfig="$work/kubeconfig"
	t0="$(now)"
	kc CreateCluster "{\"name\":\"$name\",\"k8sVersion\":\"$version\",\"controlPlaneNodes\":{\"count\":1},\"workerNodePools\":[{\"name\":\"workers\",\"count\":1}]}" >/dev/null
	while :; do
		local c
		c="$(kc GetCluster "{\"name\":\"$name\"}")"
		st="$(jq -r .cluster.status <<<"$c")"
		msg="$(jq -r '.cluster.statusMessage // ""' <<<"$c")"
		if [ "$st" = RUNNING ]; then
			running="$(since "$t0")"
			jq -r .cluster.kubeconfig <<<"$c" >"$kubeconfig"
			break
		fi
		[ "$st" = ERROR ] && break
		awk -v a="$t0" -v b="$(now)" 'BEGIN { exit !(b - a > 1800) }' && { st=TIMEOUT; break; }
		sleep 0.5
	done
	if [ -n "$running" ]; then
		for _ in $(seq 600); do
			if kubectl --kubeconfig "$kubeconfig" --request-timeout 5s get nodes -o json 2>/dev/null |
				jq -e '[.items[] | select(any(.status.conditions[]; .type == "Ready" and .status == "True"))] | length == 2' >/dev/null; then
				ready="$(since "$t0")"
				break
			fi
			sleep 0.5
		done
	fi
	local machines
	machines="$(kc GetClusterNodesStatus "{\"clusterName\":\"$name\"}" | jq -r '.machines[]?.maasSystemId // empty')"
	local d0 out
	d0="$(now)"
	kc DeleteCluster "{\"name\":\"$name\"}" >/dev/null
	for _ in $(seq 3600); do
		# Gone: NotFound, or (as upstream answers) ok false.
		if ! out="$(kc GetCluster "{\"name\":\"$name\"}" 2>/dev/null)" || [ "$(jq -r '.ok // false' <<<"$out")" != true ]; then
			deleted="$(since "$d0")"
			break
		fi
		sleep 0.5
	done
	local left=0 m
	for m in $machines; do ip netns list | grep -q "^$(netns_of "$m")\b" && left=$((left + 1)); done
	[ -n "$machines" ] || left="?"
	printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$phase" "$name" "${running:--}" "${ready:--}" "${deleted:--}" "$left" "${st}${msg:+: $msg}" | tee -a "$results"
}

printf 'phase\tcluster\trunning_s\tready_s\tdeleted_s\tnetns_left\tstatus\n'
for i in $(seq "$clusters"); do one_cluster "${label}alone" "$i"; done
for n in $user_jobs; do
	for i in $(seq "$clusters"); do
		jobs=()
		for _ in $(seq "$n"); do jobs+=("$(user_job exec "[\"sleep\",\"$user_secs\"]")"); done
		# The user's jobs run (the first of them, where a runner runs one job at a time).
		await_job "${jobs[0]}" RUNNING
		one_cluster "${label}beside-$n-user-jobs" "$i"
		for j in "${jobs[@]}"; do vc CancelJob "{\"jobId\":\"$j\"}" >/dev/null; done
		for j in "${jobs[@]}"; do await_job "$j" SUCCESS ERROR 2>/dev/null || true; done
	done
done

await_job "$(user_job destroy)" SUCCESS
echo
echo "${label}jobs, by client and by the runner id that ran them:"
vc _ListJobs '{}' | jq -r '[.jobs[] | {by: (.labels["plinth.dev/by"] // "user"), runner: (.assignedRunner.id // "-")}]
	| group_by([.by, .runner])[] | "  \(.[0].by) jobs on \(.[0].runner): \(length)"'

echo
echo "summary (seconds; median / worst of the clusters that got there; ok = RUNNING, kubectl-Ready, deleted, no netns left):"
awk -F'\t' '
	function stat(phase, col,    n, i, j, v, t, a) {
		n = 0
		for (i = 1; i <= rows; i++) if (ph[i] == phase && val[i, col] != "-") a[++n] = val[i, col] + 0
		for (i = 1; i <= n; i++) for (j = i + 1; j <= n; j++) if (a[j] < a[i]) { t = a[i]; a[i] = a[j]; a[j] = t }
		if (n == 0) return "-"
		v = (n % 2) ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2
		return sprintf("%.1f / %.1f", v, a[n])
	}
	{ rows++; ph[rows] = $1; val[rows, 3] = $3; val[rows, 4] = $4; val[rows, 5] = $5
	  phases[$1] = 1; total[$1]++; if ($3 != "-" && $4 != "-" && $5 != "-" && $6 == 0) ok[$1]++ }
	END {
		for (p in phases) printf "%-36s ok %d/%d  to RUNNING %s  to Ready %s  delete %s\n", p, ok[p] + 0, total[p], stat(p, 3), stat(p, 4), stat(p, 5)
	}' "$results"
