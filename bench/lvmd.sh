#!/usr/bin/env bash
# lvmd-agent benchmark, on real lvm2 over loop devices (metadata-only mode where the kernel
# has no device-mapper) and a real S3 server (versitygw):
#   1. per-operation latency of CreateLV, ResizeLV, GetLVList, GetFreeBytes and RemoveLV
#      through the agent (gRPC on its unix socket: validation, the per-VG lock, the space
#      check, lvm, recording the change and its events in Postgres) against the bare `lvm`
#      command making the same change, and the overhead ratio;
#   2. backup and restore throughput (MB/s of volume bytes) through the agent against the
#      ceiling: the same bytes, read the same way, streamed with the same zstd settings, part
#      size and concurrency to and from the same S3 server, without the agent's job, checksums
#      and manifest.
# Both are Go benchmarks in services/lvmd-agent/internal/app (bench_test.go); this script runs
# them and prints the figures.
#
# Needs: root, lvm2, losetup, Go, versitygw (`make tools-s3` or PLINTH_VERSITYGW), Postgres
# (TEST_DATABASE_URL, default the local one) and NATS (TEST_NATS_URL; default the local one if
# it answers, else an embedded server). Knobs: OPS (iterations of the operation cycle,
# default 20), GB (volume size for throughput, default 1).
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
die() { printf 'bench/lvmd.sh: %s\n' "$*" >&2; exit 1; }
[ "$(id -u)" -eq 0 ] || die "needs root (loop devices and lvm2)"
command -v lvm >/dev/null || die "lvm not found: apt-get install lvm2"
command -v losetup >/dev/null || die "losetup not found: apt-get install util-linux"
export PLINTH_VERSITYGW="${PLINTH_VERSITYGW:-$root/bin/versitygw}"
[ -x "$PLINTH_VERSITYGW" ] || die "versitygw not found: run \`make tools-s3\` or set PLINTH_VERSITYGW"
export TEST_DATABASE_URL="${TEST_DATABASE_URL:-postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable}"
if [ -z "${TEST_NATS_URL:-}" ] && (exec 3<>/dev/tcp/127.0.0.1/4222) 2>/dev/null; then
	export TEST_NATS_URL=nats://127.0.0.1:4222
fi
ops="${OPS:-20}"
gb="${GB:-1}"
out="$(mktemp /tmp/lvmd-bench-XXXXXX)"
trap 'rm -f "$out"' EXIT

cd "$root/services/lvmd-agent"
echo "per-operation latency, $ops cycles (create 1 GiB, resize to 2 GiB, list, free, remove)..." >&2
go test -run '^$' -bench '^BenchmarkVolumeOps$' -benchtime "${ops}x" -timeout 60m ./internal/app/ >"$out"
echo "backup/restore throughput, a $gb GiB volume (half random, half text)..." >&2
LVMD_BENCH_GB="$gb" go test -run '^$' -bench '^BenchmarkBackupThroughput$' -benchtime 1x -timeout 120m ./internal/app/ >>"$out"

# A benchmark line is "Name-N iterations ns/op value unit value unit ...".
metric() { awk -v unit="$1" '/^Benchmark/ { for (i = 3; i < NF; i++) if ($(i + 1) == unit) print $i }' "$out"; }
echo
printf '%-14s %12s %12s %10s\n' operation "agent (ms)" "lvm (ms)" overhead
for op in create resize list free remove; do
	printf '%-14s %12s %12s %9sx\n' "$op" "$(metric "$op-agent-ms")" "$(metric "$op-lvm-ms")" "$(metric "$op-overhead-x")"
done
echo
printf '%-10s %14s %16s %10s\n' job "agent (MB/s)" "ceiling (MB/s)" "of ceiling"
printf '%-10s %14s %16s %10s\n' backup "$(metric backup-MB/s)" "$(metric upload-ceiling-MB/s)" "$(metric backup-of-ceiling)"
printf '%-10s %14s %16s %10s\n' restore "$(metric restore-MB/s)" "$(metric download-ceiling-MB/s)" "$(metric restore-of-ceiling)"
echo
echo "machine: $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg); lvm $(lvm version 2>/dev/null | awk '/LVM version/ {print $3}')"
