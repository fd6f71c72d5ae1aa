package app_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	lvmdpb "github.com/plinth-dev/plinth/libs/api/lvmd"
	"github.com/plinth-dev/plinth/libs/storage/compression"
	"github.com/plinth-dev/plinth/libs/storage/objectstore"

	"github.com/plinth-dev/plinth/services/lvmd-agent/internal/app"
	"github.com/plinth-dev/plinth/services/lvmd-agent/internal/lvm"
	"github.com/plinth-dev/plinth/services/lvmd-agent/internal/lvm/lvmtest"
)

// BenchmarkVolumeOps times each lvmd call through the agent (gRPC over its unix socket:
// validation, the per-VG lock, the space check, lvm, recording the change with its events)
// against the bare lvm command doing only the change, and reports both and their ratio in
// milliseconds per operation. bench/lvmd.sh runs it.
func BenchmarkVolumeOps(b *testing.B) {
	e := newEnv(b, envOptions{size: 16 << 30})
	a := e.start(b, e.config(b))
	ctx := ctxT(b)
	vg := e.vgs[0]
	var agentT, bareT [5]time.Duration
	ops := []string{"create", "resize", "list", "free", "remove"}
	for i := 0; i < b.N; i++ {
		name := fmt.Sprintf("bench-%d", i)
		agentT[0] += timed(b, func() error {
			_, err := a.lv.CreateLV(ctx, &lvmdpb.CreateLVRequest{Name: name, SizeGb: 1, Tags: []string{"bench"}})
			return err
		})
		agentT[1] += timed(b, func() error {
			_, err := a.lv.ResizeLV(ctx, &lvmdpb.ResizeLVRequest{Name: name, SizeGb: 2})
			return err
		})
		agentT[2] += timed(b, func() error { _, err := a.vg.GetLVList(ctx, &lvmdpb.GetLVListRequest{}); return err })
		agentT[3] += timed(b, func() error { _, err := a.vg.GetFreeBytes(ctx, &lvmdpb.GetFreeBytesRequest{}); return err })
		agentT[4] += timed(b, func() error { _, err := a.lv.RemoveLV(ctx, &lvmdpb.RemoveLVRequest{Name: name}); return err })

		bare := "bare-" + name
		bareT[0] += timed(b, func() error {
			return bareLvm(vg, "lvcreate", "-n", bare, "-L", "1g", "-W", "y", "-y", "--addtag", "bench", vg.Name)
		})
		bareT[1] += timed(b, func() error { return bareLvm(vg, "lvresize", "-L", "2g", "-y", vg.Name+"/"+bare) })
		bareT[2] += timed(b, func() error {
			return bareLvm(vg, "lvs", "--reportformat", "json", "--units", "b", "--nosuffix", "-o", "lv_name,lv_size,lv_tags", vg.Name)
		})
		bareT[3] += timed(b, func() error {
			return bareLvm(vg, "vgs", "--reportformat", "json", "--units", "b", "--nosuffix", "-o", "vg_free", vg.Name)
		})
		bareT[4] += timed(b, func() error { return bareLvm(vg, "lvremove", "-f", "-y", vg.Name+"/"+bare) })
	}
	for i, op := range ops {
		ag, ba := ms(agentT[i], b.N), ms(bareT[i], b.N)
		b.ReportMetric(ag, op+"-agent-ms")
		b.ReportMetric(ba, op+"-lvm-ms")
		b.ReportMetric(ag/ba, op+"-overhead-x")
	}
}

func timed(b *testing.B, fn func() error) time.Duration {
	b.Helper()
	start := time.Now()
	if err := fn(); err != nil {
		b.Fatal(err)
	}
	return time.Since(start)
}

func ms(d time.Duration, n int) float64 { return float64(d.Microseconds()) / 1000 / float64(n) }

func bareLvm(vg *lvmtest.VG, args ...string) error {
	if vg.MetadataOnly {
		args = append(args, "--config", lvm.MetadataOnlyConfig)
	}
	cmd := exec.Command("lvm", args...)
	cmd.Env = append(os.Environ(), "LC_ALL=C", "LVM_SUPPRESS_FD_WARNINGS=1")
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("lvm %s: %v: %s", strings.Join(args, " "), err, out)
	}
	return nil
}

// BenchmarkBackupThroughput backs a volume up and restores it through the agent, and, as the
// ceiling, streams the same bytes with the same compression to and from the same S3 server
// without the agent (no job, checksums, manifest or encryption). It reports MB/s of volume
// bytes for each and the agent's share of the ceiling. LVMD_BENCH_GB sets the volume size
// (default 1); half of it is random, half compressible text.
func BenchmarkBackupThroughput(b *testing.B) {
	gb := int64(1)
	if v := os.Getenv("LVMD_BENCH_GB"); v != "" {
		if _, err := fmt.Sscan(v, &gb); err != nil || gb < 1 {
			b.Fatalf("LVMD_BENCH_GB=%q", v)
		}
	}
	size := gb << 30
	e := newEnv(b, envOptions{size: (3*gb + 2) << 30})
	bk := newBucket(b, e)
	a := e.start(b, e.config(b, func(c *app.Config) { c.PartSizeMiB = 16 })) // the defaults, as in production
	ctx, cancel := context.WithTimeout(context.Background(), time.Hour)
	defer cancel()
	vg := e.vgs[0]
	if _, err := a.lv.CreateLV(ctx, &lvmdpb.CreateLVRequest{Name: "src", SizeGb: uint64(gb)}); err != nil {
		b.Fatal(err)
	}
	chunk := make([]byte, 64<<20)
	text := bytes.Repeat([]byte("INSERT INTO t VALUES (42, 'plinth bench row');\n"), len(chunk)/47+1)[:len(chunk)]
	for off := int64(0); off < size; off += int64(len(chunk)) {
		if off < size/2 {
			_, _ = rand.Read(chunk)
			vg.WriteLV(b, "src", off, chunk)
		} else {
			vg.WriteLV(b, "src", off, text)
		}
	}
	b.ResetTimer()
	var backupT, restoreT, upT, downT time.Duration
	for i := 0; i < b.N; i++ {
		path := fmt.Sprintf("bench/%d", i)
		backupT += timed(b, func() error {
			st := backupUntilDone(b, ctx, a, &lvmdpb.CreateBackupRequest{Backup: &lvmdpb.Backup{Name: fmt.Sprintf("bench-%d", i), VolumeHandle: "src",
				DataSource: &lvmdpb.DataSource{Type: &lvmdpb.DataSource_S3_{S3: bk.source(path, "")}}}})
			if st.GetState() != lvmdpb.StateType_COMPLETE {
				return fmt.Errorf("backup %v", st)
			}
			return nil
		})
		restoreT += timed(b, func() error {
			_, err := a.lv.CreateLV(ctx, &lvmdpb.CreateLVRequest{Name: "dst", SizeGb: uint64(gb),
				DataSource: &lvmdpb.DataSource{SynchronousRestore: true, Type: &lvmdpb.DataSource_S3_{S3: bk.source(path, "")}}})
			return err
		})
		if _, err := a.lv.RemoveLV(ctx, &lvmdpb.RemoveLVRequest{Name: "dst"}); err != nil {
			b.Fatal(err)
		}
		up, down := ceiling(b, ctx, vg, bk, "plain/"+path)
		upT, downT = upT+up, downT+down
	}
	mbps := func(d time.Duration) float64 { return float64(size) * float64(b.N) / (1 << 20) / d.Seconds() }
	b.ReportMetric(mbps(backupT), "backup-MB/s")
	b.ReportMetric(mbps(upT), "upload-ceiling-MB/s")
	b.ReportMetric(mbps(backupT)/mbps(upT), "backup-of-ceiling")
	b.ReportMetric(mbps(restoreT), "restore-MB/s")
	b.ReportMetric(mbps(downT), "download-ceiling-MB/s")
	b.ReportMetric(mbps(restoreT)/mbps(downT), "restore-of-ceiling")
}

// ceiling streams the source volume's bytes (read as the agent reads them) through zstd
// into one S3 object with the agent's part size and concurrency, then back through zstd into
// a scratch volume, and returns both durations.
func ceiling(b *testing.B, ctx context.Context, vg *lvmtest.VG, bk *bucket, key string) (up, down time.Duration) {
	b.Helper()
	st, err := objectstore.NewS3(objectstore.S3Options{Endpoint: bk.srv.Endpoint, Bucket: bk.name, PathStyle: true,
		AccessKeyID: bk.srv.AccessKeyID, SecretAccessKey: bk.srv.SecretAccessKey, PartSize: 16 << 20, Concurrency: 4})
	if err != nil {
		b.Fatal(err)
	}
	src := raw(b, ctx, vg, "src", false)
	defer src.Close()
	up = timed(b, func() error {
		_, err := objectstore.PutFunc(ctx, st, key, objectstore.PutOptions{Size: -1}, func(w io.Writer) error {
			zw, err := compression.Writer(compression.Zstd, w, 2)
			if err != nil {
				return err
			}
			if _, err := io.CopyBuffer(zw, io.NewSectionReader(src, 0, src.Size()), make([]byte, 1<<20)); err != nil {
				return err
			}
			return zw.Close()
		})
		return err
	})
	if err := vg.Runner.Create(ctx, vg.Name, lvm.CreateSpec{Name: "scratch", Size: uint64(src.Size())}); err != nil {
		b.Fatal(err)
	}
	defer vg.Runner.Remove(context.Background(), vg.Name, "scratch")
	dst := raw(b, ctx, vg, "scratch", true)
	defer dst.Close()
	down = timed(b, func() error {
		rc, _, err := st.Get(ctx, key)
		if err != nil {
			return err
		}
		defer rc.Close()
		zr, err := compression.Reader(compression.Zstd, rc, 2)
		if err != nil {
			return err
		}
		defer zr.Close()
		if _, err := io.CopyBuffer(io.NewOffsetWriter(dst, 0), zr, make([]byte, 1<<20)); err != nil {
			return err
		}
		return dst.Sync()
	})
	return up, down
}

func raw(b *testing.B, ctx context.Context, vg *lvmtest.VG, lv string, writable bool) *lvm.RawVolume {
	b.Helper()
	info, err := vg.Runner.VG(ctx, vg.Name)
	if err != nil {
		b.Fatal(err)
	}
	segs, err := vg.Runner.Segments(ctx, vg.Name, lv)
	if err != nil {
		b.Fatal(err)
	}
	pvs, err := vg.Runner.PVs(ctx, vg.Name)
	if err != nil {
		b.Fatal(err)
	}
	l, err := lvm.NewLayout(segs, pvs, info.ExtentSize)
	if err != nil {
		b.Fatal(err)
	}
	r, err := lvm.OpenRaw(l, writable)
	if err != nil {
		b.Fatal(err)
	}
	return r
}
