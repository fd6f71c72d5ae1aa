#!/usr/bin/env bash
# cnpgi-plugin WAL benchmark: per-segment archive and restore latency and throughput for
# 16 MiB segments, serial and parallel, Plinth's `cnpgi-plugin wal-archive` / `wal-restore`
# (through a running plugin, as PostgreSQL's archive_command and restore_command call it)
# side by side with barman-cloud-wal-archive / -restore (Debian's barman-cli-cloud, what
# plugin-barman-cloud runs), both gzip, against the same versitygw S3 server.
#
# Needs: Go, versitygw (`make tools-s3` or PLINTH_VERSITYGW), barman-cli-cloud, psql and a
# Postgres for the plugin's catalog (TEST_DATABASE_URL, default the local one; a temporary
# database is created and dropped). Knobs: SEGMENTS (default 32), PARALLEL (default 8).
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
segments="${SEGMENTS:-32}"
parallel="${PARALLEL:-8}"
db_url="${TEST_DATABASE_URL:-postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable}"

die() { printf 'bench/cnpgi.sh: %s\n' "$*" >&2; exit 1; }
vgw="${PLINTH_VERSITYGW:-$root/bin/versitygw}"
[ -x "$vgw" ] || vgw="$(command -v versitygw || true)"
[ -n "$vgw" ] || die "versitygw not found: run \`make tools-s3\` or set PLINTH_VERSITYGW"
command -v barman-cloud-wal-archive >/dev/null || die "barman-cloud-wal-archive not found: apt-get install barman-cli-cloud"
command -v psql >/dev/null || die "psql not found: apt-get install postgresql-client"

work="$(mktemp -d /tmp/cnpgi-bench-XXXXXX)"
chmod 755 "$work"
bench_db="plinth_bench_$$"
pids=()
cleanup() {
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
	wait 2>/dev/null || true
	psql -q "$db_url" -c "DROP DATABASE IF EXISTS $bench_db" >/dev/null 2>&1 || true
	rm -rf "$work"
}
trap cleanup EXIT

echo "building cnpgi-plugin..." >&2
(cd "$root/services/cnpgi-plugin" && go build -o "$work/cnpgi-plugin" ./cmd/cnpgi-plugin)
bin="$work/cnpgi-plugin"

# S3: versitygw's posix backend serves each directory as a bucket.
port=$((20000 + RANDOM % 10000))
mkdir -p "$work/s3/bench"
export AWS_ACCESS_KEY_ID=bench-key AWS_SECRET_ACCESS_KEY=bench-secret-key AWS_DEFAULT_REGION=us-east-1
ROOT_ACCESS_KEY_ID=$AWS_ACCESS_KEY_ID ROOT_SECRET_ACCESS_KEY=$AWS_SECRET_ACCESS_KEY \
	"$vgw" --port "127.0.0.1:$port" posix "$work/s3" >"$work/vgw.log" 2>&1 &
pids+=($!)
endpoint="http://127.0.0.1:$port"

psql -q "$db_url" -c "CREATE DATABASE $bench_db" >/dev/null
plugin_db="$(printf '%s' "$db_url" | sed -E "s#/[^/?]+(\?|$)#/$bench_db\1#")"

# Segments: half random, half text, so that gzip has about as much to do as with real WAL.
echo "writing $segments segments of 16 MiB..." >&2
mkdir -p "$work/pg_wal/archive_status" "$work/restore"
names=()
for i in $(seq 1 "$segments"); do
	name="$(printf '000000010000000%09X' "$i")"
	names+=("$name")
	{ head -c 8388608 /dev/urandom; head -c 8388608 < <(yes "INSERT INTO t VALUES ($i, 'plinth bench row'); "); } >"$work/pg_wal/$name"
done

start_plugin() { # start_plugin NAME MAXPARALLEL
	local dir="$work/plugin-$1"
	mkdir -p "$dir/plugins"
	cat >"$dir/config.yaml" <<YAML
stores:
  s3:
    s3: {endpoint: "$endpoint", bucket: bench, pathStyle: true, accessKeyId: {env: AWS_ACCESS_KEY_ID}, secretAccessKey: {env: AWS_SECRET_ACCESS_KEY}}
    wal: {compression: gzip, maxParallel: $2}
YAML
	PLINTH_DATABASE_URL="$plugin_db" PLINTH_ADMIN_ADDR=off PLINTH_LOG_LEVEL=warn PLINTH_CNPGI_PLUGIN_DIR="$dir/plugins" \
		PLINTH_CNPGI_CONFIG="$dir/config.yaml" PLINTH_CNPGI_SPOOL_DIR="$dir/spool" "$bin" serve >"$dir/log" 2>&1 &
	pids+=($!)
	for _ in $(seq 1 200); do [ -S "$dir/plugins/cnpgi.plinth.dev" ] && return; sleep 0.05; done
	die "plugin $1 did not start: $(cat "$dir/log")"
}
start_plugin serial 1
start_plugin ahead "$parallel"

# Each command is timed on its own; a run prints one duration (ns) per segment, then its
# wall time on the last line.
timed() { local t0; t0=$(date +%s%N); "$@" >/dev/null 2>>"$work/errors" || { echo "FAILED $*"; return 0; }; echo $(($(date +%s%N) - t0)); }
export -f timed
export work

run() { # run MODE(serial|parallel) COMMAND-TEMPLATE: {} is the segment name
	local t0 out; t0=$(date +%s%N)
	if [ "$1" = serial ]; then
		out=$(for n in "${names[@]}"; do bash -c "timed ${2//\{\}/$n}"; done)
	else
		out=$(printf '%s\n' "${names[@]}" | xargs -P "$parallel" -I{} bash -c "timed $2")
	fi
	printf '%s\n%s\n' "$out" $(($(date +%s%N) - t0))
}

table=()
row() { # row TOOL OPERATION MODE OUTPUT
	if grep -q FAILED <<<"$4"; then
		die "$(grep -m1 FAILED <<<"$4"): $(tail -5 "$work/errors")"
	fi
	local wall sorted stats
	wall=$(tail -1 <<<"$4")
	sorted=$(head -n -1 <<<"$4" | sort -n)
	stats=$(awk -v n="$segments" -v wall="$wall" '
		{ v[NR] = $1; sum += $1 } END {
			p50 = v[int(NR * 0.5) + 1]; p95 = v[int(NR * 0.95) > 0 ? int(NR * 0.95) : 1]
			printf "%8.1f %8.1f %8.1f %9.1f", sum / NR / 1e6, p50 / 1e6, p95 / 1e6, n * 16 / (wall / 1e9)
		}' <<<"$sorted")
	table+=("$(printf '%-8s %-8s %-22s %s' "$1" "$2" "$3" "$stats")")
}

plugin_flags() { echo "-socket=$work/plugin-$1/plugins/cnpgi.plinth.dev -object-store=s3"; }
barman_flags="--endpoint-url $endpoint -z s3://bench/barman"

echo "archiving ($segments segments per run)..." >&2
row plinth archive serial "$(run serial "$bin wal-archive $(plugin_flags serial) -server-name=p-serial $work/pg_wal/{}")"
row barman archive serial "$(run serial "barman-cloud-wal-archive $barman_flags b-serial $work/pg_wal/{}")"
row plinth archive "parallel ($parallel commands)" "$(run parallel "$bin wal-archive $(plugin_flags serial) -server-name=p-par $work/pg_wal/{}")"
row barman archive "parallel ($parallel commands)" "$(run parallel "barman-cloud-wal-archive $barman_flags b-par $work/pg_wal/{}")"
# PostgreSQL calls archive_command one file at a time; with maxParallel the plugin ships the
# other .ready files alongside the first and answers their calls at once.
for n in "${names[@]}"; do : >"$work/pg_wal/archive_status/$n.ready"; done
row plinth archive "serial, maxParallel $parallel" "$(run serial "$bin wal-archive $(plugin_flags ahead) -server-name=p-ahead $work/pg_wal/{}")"

echo "restoring..." >&2
row plinth restore serial "$(run serial "$bin wal-restore $(plugin_flags serial) -server-name=p-serial {} $work/restore/{}")"
row barman restore serial "$(run serial "barman-cloud-wal-restore --endpoint-url $endpoint s3://bench/barman b-serial {} $work/restore/{}")"
row plinth restore "parallel ($parallel commands)" "$(run parallel "$bin wal-restore $(plugin_flags serial) -server-name=p-serial {} $work/restore/{}")"
row barman restore "parallel ($parallel commands)" "$(run parallel "barman-cloud-wal-restore --endpoint-url $endpoint s3://bench/barman b-serial {} $work/restore/{}")"
row plinth restore "serial, read-ahead $parallel" "$(run serial "$bin wal-restore $(plugin_flags ahead) -server-name=p-serial {} $work/restore/{}")"

for n in "${names[@]}"; do cmp -s "$work/pg_wal/$n" "$work/restore/$n" || die "restored $n differs from the original"; done

printf '\n16 MiB WAL segments, gzip, versitygw on 127.0.0.1, %d segments per run, %s CPUs\n' "$segments" "$(nproc)"
printf '%-8s %-8s %-22s %8s %8s %8s %9s\n' tool op mode "mean ms" "p50 ms" "p95 ms" "MiB/s"
printf '%s\n' "${table[@]}"
