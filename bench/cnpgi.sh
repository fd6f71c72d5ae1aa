#!/usr/bin/env bash
# cnpgi-plugin WAL benchmark: archive and restore of 16 MiB segments against one versitygw S3
# server, in one run, three ways side by side:
#   ceiling  a plain PUT / GET of the already gzip-compressed segment (what any archiver must
#            at least do), by one long-running client with the plugin's S3 client;
#   plinth   the plugin as CloudNativePG's instance manager calls it: one gRPC connection to
#            the running plugin, WAL.Archive / WAL.Restore per segment (gzip);
#            "plinth cli" is the same through `cnpgi-plugin wal-archive` / `wal-restore`, a
#            process per segment, as a plain PostgreSQL's archive_command runs it;
#   barman   barman-cloud-wal-archive / -restore -z (Debian's barman-cli-cloud, what
#            plugin-barman-cloud runs), a Python process per segment;
#   floor    the work any gzip archiver adds to the ceiling: the segment, already in memory,
#            gzipped as the plugin does it; its .gz, already in memory, gunzipped into
#            nothing ("decompress") and into the segment's file ("decompress to disk": a
#            restore must leave 16 MiB on disk, the ceiling's GET writes what it fetched).
#            An archive or restore cannot take less than the larger of ceiling and floor, so
#            where floor ÷ ceiling exceeds 1.25 no archiver meets that goal.
# on two data sets: real WAL written by a real PostgreSQL (pgbench) and synthetic segments
# (half random, half text, with valid page headers). It ends with the ratios the issue asks
# for: barman ÷ plinth and plinth ÷ ceiling.
#
# Needs: Go, versitygw (`make tools-s3` or PLINTH_VERSITYGW), barman-cli-cloud, PostgreSQL 15
# server binaries and pgbench, psql, python3, and a Postgres for the plugin's catalog
# (TEST_DATABASE_URL, default the local one; a temporary database is created and dropped).
# Knobs: SEGMENTS (default 20), PARALLEL (default 8), DATASETS (default "real synthetic").
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
segments="${SEGMENTS:-20}"
parallel="${PARALLEL:-8}"
datasets="${DATASETS:-real synthetic}"
db_url="${TEST_DATABASE_URL:-postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable}"

die() { printf 'bench/cnpgi.sh: %s\n' "$*" >&2; exit 1; }
vgw="${PLINTH_VERSITYGW:-$root/bin/versitygw}"
[ -x "$vgw" ] || vgw="$(command -v versitygw || true)"
[ -n "$vgw" ] || die "versitygw not found: run \`make tools-s3\` or set PLINTH_VERSITYGW"
command -v barman-cloud-wal-archive >/dev/null || die "barman-cloud-wal-archive not found: apt-get install barman-cli-cloud"
command -v psql >/dev/null || die "psql not found: apt-get install postgresql-client"
pgbin="$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -1)"
[ -x "$pgbin/initdb" ] && [ -x "$pgbin/pgbench" ] || die "PostgreSQL server binaries and pgbench not found: apt-get install postgresql"

work="$(mktemp -d /tmp/cnpgi-bench-XXXXXX)"
chmod 755 "$work"
bench_db="plinth_bench_$$"
pids=()
as_postgres() { if [ "$(id -u)" = 0 ]; then runuser -u postgres -- "$@"; else "$@"; fi; }
cleanup() {
	[ -f "$work/pg/postmaster.pid" ] && as_postgres "$pgbin/pg_ctl" -D "$work/pg" -m immediate stop >/dev/null 2>&1 || true
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
	wait 2>/dev/null || true
	psql -q "$db_url" -c "DROP DATABASE IF EXISTS $bench_db" >/dev/null 2>&1 || true
	rm -rf "$work"
}
trap cleanup EXIT

echo "building cnpgi-plugin and the benchmark client..." >&2
(cd "$root/services/cnpgi-plugin" && go build -o "$work/cnpgi-plugin" ./cmd/cnpgi-plugin && go build -o "$work/walbench" ./bench/walbench)
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

# Real WAL: a PostgreSQL running pgbench, its completed segments copied out by archive_command.
real_wal() {
	local dir="$work/real/pg_wal" pgport=$((10000 + RANDOM % 10000))
	mkdir -p "$dir" "$work/pg" && chmod 777 "$dir" && chown postgres "$work/pg" 2>/dev/null || true
	as_postgres "$pgbin/initdb" -D "$work/pg" -U postgres --auth=trust >/dev/null
	cat >>"$work/pg/postgresql.conf" <<CONF
listen_addresses = '127.0.0.1'
port = $pgport
unix_socket_directories = '$work/pg'
archive_mode = on
archive_command = 'cp %p $dir/%f'
max_wal_size = '1GB'
CONF
	as_postgres "$pgbin/pg_ctl" -D "$work/pg" -l "$work/pg/log" -w start >/dev/null
	local url="postgres://postgres@127.0.0.1:$pgport/postgres"
	as_postgres "$pgbin/pgbench" -q -i -s 30 "$url" >/dev/null 2>&1
	while [ "$(ls "$dir" | wc -l)" -lt "$segments" ]; do
		as_postgres "$pgbin/pgbench" -n -T 3 -c 2 "$url" >/dev/null 2>&1
		psql -qAt "$url" -c "SELECT pg_switch_wal()" >/dev/null
		sleep 1
	done
	as_postgres "$pgbin/pg_ctl" -D "$work/pg" -m fast stop >/dev/null
	ls "$dir" | sort | head -n "$segments"
}

# Synthetic WAL: half random, half text, behind a valid long page header for its name.
synthetic_wal() {
	local dir="$work/synthetic/pg_wal"
	mkdir -p "$dir"
	python3 - "$dir" "$segments" <<'PY'
import os, struct, sys
d, n = sys.argv[1], int(sys.argv[2])
size = 16 << 20
text = (b"INSERT INTO t VALUES (42, 'plinth bench row'); " * (size // 2 // 40 + 1))[: size // 2]
for i in range(1, n + 1):
    name = "000000010000000%09X" % i
    log, seg = int(name[8:16], 16), int(name[16:24], 16)
    head = struct.pack("<HHIQI4xQII", 0xD110, 0x0002, 1, (log * (2**32 // size) + seg) * size, 0, 7301234567890123456, size, 8192)
    body = head + os.urandom(size // 2 - len(head)) + text
    open(os.path.join(d, name), "wb").write(body)
    print(name)
PY
}

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
		PLINTH_CNPGI_CONFIG="$dir/config.yaml" PLINTH_CNPGI_SPOOL_DIR="$dir/spool" \
		PLINTH_CNPGI_PGDATA="$work/real" PLINTH_CNPGI_EXTRA_PGDATA="$work/synthetic" "$bin" serve >"$dir/log" 2>&1 &
	pids+=($!)
	for _ in $(seq 1 200); do [ -S "$dir/plugins/cnpgi.plinth.dev" ] && return; sleep 0.05; done
	die "plugin $1 did not start: $(cat "$dir/log")"
}

# Each per-process command is timed on its own; a run prints one duration (ns) per segment,
# then its wall time on the last line (walbench prints the same).
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

declare -A mean
table=()
row() { # row DATASET TOOL OPERATION MODE OUTPUT
	if [ -z "$5" ]; then die "$1 $2 $3 $4 failed (see above)"; fi
	if grep -q FAILED <<<"$5"; then die "$(grep -m1 FAILED <<<"$5"): $(tail -5 "$work/errors")"; fi
	local wall stats
	wall=$(tail -1 <<<"$5")
	stats=$(head -n -1 <<<"$5" | sort -n | awk -v n="${#names[@]}" -v wall="$wall" '
		{ v[NR] = $1; sum += $1 } END {
			p50 = v[int(NR * 0.5) + 1]; p95 = v[int(NR * 0.95) > 0 ? int(NR * 0.95) : 1]
			printf "%8.1f %8.1f %8.1f %9.1f", sum / NR / 1e6, p50 / 1e6, p95 / 1e6, n * 16 / (wall / 1e9)
		}')
	mean["$1 $2 $3 $4"]=$(awk '{print $1}' <<<"$stats")
	table+=("$(printf '%-9s %-11s %-18s %-22s %s' "$1" "$2" "$3" "$4" "$stats")")
}
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.1f", a / b }'; }

start_plugin serial 1
start_plugin ahead "$parallel"
bench=("$work/walbench")
socket() { echo "$work/plugin-$1/plugins/cnpgi.plinth.dev"; }
summary=()
for ds in $datasets; do
	echo "preparing $segments $ds segments..." >&2
	case "$ds" in
	real) mapfile -t names < <(real_wal) ;;
	synthetic) mapfile -t names < <(synthetic_wal) ;;
	*) die "unknown data set $ds" ;;
	esac
	wal="$work/$ds/pg_wal"
	mkdir -p "$work/$ds/gz" "$work/$ds/back" "$wal/archive_status"
	for n in "${names[@]}"; do gzip -1 -c "$wal/$n" >"$work/$ds/gz/$n"; done
	ratio_pct=$(du -sb "$work/$ds/gz" "$wal" | awk 'NR==1{g=$1} NR==2{w=$1} END{printf "%.0f", 100*g/w}')
	echo "archiving ($ds, gzip to ${ratio_pct}%)..." >&2
	c="ceiling -endpoint $endpoint -bucket bench"
	row "$ds" ceiling put serial "$("${bench[@]}" $c -prefix "c-$ds" -op put -dir "$work/$ds/gz" "${names[@]}")"
	row "$ds" floor compress serial "$("${bench[@]}" floor -op compress -dir "$wal" "${names[@]}")"
	row "$ds" plinth archive serial "$("${bench[@]}" plugin -socket "$(socket serial)" -store s3 -server "p-$ds" -op archive -dir "$wal" "${names[@]}")"
	row "$ds" "plinth cli" archive serial "$(run serial "$bin wal-archive -socket=$(socket serial) -object-store=s3 -server-name=pc-$ds $wal/{}")"
	row "$ds" barman archive serial "$(run serial "barman-cloud-wal-archive --endpoint-url $endpoint -z s3://bench/barman b-$ds $wal/{}")"
	row "$ds" ceiling put "parallel ($parallel)" "$("${bench[@]}" $c -prefix "cp-$ds" -op put -dir "$work/$ds/gz" -parallel "$parallel" "${names[@]}")"
	row "$ds" plinth archive "parallel ($parallel)" "$("${bench[@]}" plugin -socket "$(socket serial)" -store s3 -server "pp-$ds" -op archive -dir "$wal" -parallel "$parallel" "${names[@]}")"
	row "$ds" barman archive "parallel ($parallel)" "$(run parallel "barman-cloud-wal-archive --endpoint-url $endpoint -z s3://bench/barman bp-$ds $wal/{}")"
	# PostgreSQL calls archive_command one file at a time; with maxParallel the plugin ships
	# the other .ready files alongside the first and answers their calls at once.
	for n in "${names[@]}"; do : >"$wal/archive_status/$n.ready"; done
	row "$ds" plinth archive "serial, maxParallel $parallel" "$("${bench[@]}" plugin -socket "$(socket ahead)" -store s3 -server "pa-$ds" -op archive -dir "$wal" "${names[@]}")"
	rm -f "$wal"/archive_status/*.ready

	echo "restoring ($ds)..." >&2
	back="$work/$ds/back"
	row "$ds" ceiling get serial "$("${bench[@]}" $c -prefix "c-$ds" -op get -dir "$back" "${names[@]}")"
	row "$ds" floor decompress serial "$("${bench[@]}" floor -op decompress -dir "$work/$ds/gz" "${names[@]}")"
	row "$ds" floor "decompress to disk" serial "$("${bench[@]}" floor -op decompress -dir "$work/$ds/gz" -out "$back" "${names[@]}")"
	row "$ds" plinth restore serial "$("${bench[@]}" plugin -socket "$(socket serial)" -store s3 -server "p-$ds" -op restore -dir "$back" "${names[@]}")"
	for n in "${names[@]}"; do cmp -s "$wal/$n" "$back/$n" || die "restored $n differs from the original"; done
	row "$ds" "plinth cli" restore serial "$(run serial "$bin wal-restore -socket=$(socket serial) -object-store=s3 -server-name=pc-$ds {} $back/{}")"
	row "$ds" barman restore serial "$(run serial "barman-cloud-wal-restore --endpoint-url $endpoint s3://bench/barman b-$ds {} $back/{}")"
	for n in "${names[@]}"; do cmp -s "$wal/$n" "$back/$n" || die "barman's restore of $n differs"; done
	row "$ds" ceiling get "parallel ($parallel)" "$("${bench[@]}" $c -prefix "cp-$ds" -op get -dir "$back" -parallel "$parallel" "${names[@]}")"
	row "$ds" plinth restore "parallel ($parallel)" "$("${bench[@]}" plugin -socket "$(socket serial)" -store s3 -server "pp-$ds" -op restore -dir "$back" -parallel "$parallel" "${names[@]}")"
	row "$ds" barman restore "parallel ($parallel)" "$(run parallel "barman-cloud-wal-restore --endpoint-url $endpoint s3://bench/barman bp-$ds {} $back/{}")"
	row "$ds" plinth restore "serial, read-ahead $parallel" "$("${bench[@]}" plugin -socket "$(socket ahead)" -store s3 -server "pa-$ds" -op restore -dir "$back" "${names[@]}")"
	for n in "${names[@]}"; do cmp -s "$wal/$n" "$back/$n" || die "restored $n differs from the original"; done

	summary+=("$(printf '%-9s archive: plinth %5.1f ms = %4sx faster than barman, %4sx the ceiling; restore: plinth %5.1f ms = %4sx faster than barman, %4sx the ceiling' "$ds" \
		"${mean[$ds plinth archive serial]}" "$(ratio "${mean[$ds barman archive serial]}" "${mean[$ds plinth archive serial]}")" \
		"$(ratio "${mean[$ds plinth archive serial]}" "${mean[$ds ceiling put serial]}")" \
		"${mean[$ds plinth restore serial]}" "$(ratio "${mean[$ds barman restore serial]}" "${mean[$ds plinth restore serial]}")" \
		"$(ratio "${mean[$ds plinth restore serial]}" "${mean[$ds ceiling get serial]}")")")
	summary+=("$(printf '%-9s floor (gzip in memory; gunzip to disk): archive %5.1f ms = %4sx the ceiling, plinth %4sx the floor; restore %5.1f ms = %4sx the ceiling, plinth %4sx the floor' "$ds" \
		"${mean[$ds floor compress serial]}" "$(ratio "${mean[$ds floor compress serial]}" "${mean[$ds ceiling put serial]}")" \
		"$(ratio "${mean[$ds plinth archive serial]}" "${mean[$ds floor compress serial]}")" \
		"${mean[$ds floor decompress to disk serial]}" "$(ratio "${mean[$ds floor decompress to disk serial]}" "${mean[$ds ceiling get serial]}")" \
		"$(ratio "${mean[$ds plinth restore serial]}" "${mean[$ds floor decompress to disk serial]}")")")
done

printf '\n16 MiB WAL segments, gzip, versitygw on 127.0.0.1, %d segments per run, %s CPUs\n' "$segments" "$(nproc)"
printf '%-9s %-11s %-18s %-22s %8s %8s %8s %9s\n' data tool op mode "mean ms" "p50 ms" "p95 ms" "MiB/s"
printf '%s\n' "${table[@]}"
printf '\nserial means (per segment):\n'
printf '%s\n' "${summary[@]}"
