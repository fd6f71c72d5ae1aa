package app_test

import (
	"io"
	"net"
	"strings"
	"testing"

	lvmdpb "github.com/plinth-dev/plinth/libs/api/lvmd"
)

// TestForeignEndpointAnswerStaysOut (issue #36, "data_source.s3.endpoint lets an operator
// probe local ports ... the agent's log keeps the foreign banner"): a backup whose endpoint is
// a local service that is not S3 (it greets with an SSH banner) fails, and neither the job's
// message (which the operator reads back) nor any log line quotes what the service said; the
// message says plainly what failed. A closed port says so too.
func TestForeignEndpointAnswerStaysOut(t *testing.T) {
	t.Parallel()
	const banner = "SSH-2.0-OpenSSH_9.2p1 probe-banner-7f3a"
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = lis.Close() })
	go func() {
		for {
			c, err := lis.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				_, _ = io.WriteString(c, banner+"\r\n")
				_, _ = io.Copy(io.Discard, c)
			}()
		}
	}()
	closed, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closedAddr := closed.Addr().String()
	_ = closed.Close()

	e := newEnv(t, envOptions{size: 2 << 30})
	a := e.start(t, e.config(t))
	ctx := ctxT(t)
	if _, err := a.lv.CreateLV(ctx, &lvmdpb.CreateLVRequest{Name: "src", SizeGb: 1}); err != nil {
		t.Fatal(err)
	}
	for name, c := range map[string]struct{ endpoint, want string }{
		"ssh":    {"http://" + lis.Addr().String(), "did not answer as an S3 server"},
		"closed": {"http://" + closedAddr, "connection refused"},
	} {
		s3 := &lvmdpb.DataSource_S3{Path: "bucket/probe/" + name, Endpoint: c.endpoint,
			AccessKeyId: "AKIAPROBE", SecretAccessKey: "probe-secret-value"}
		st := backupUntilDone(t, ctx, a, &lvmdpb.CreateBackupRequest{Backup: &lvmdpb.Backup{Name: "bk-" + name, VolumeHandle: "src",
			DataSource: &lvmdpb.DataSource{Type: &lvmdpb.DataSource_S3_{S3: s3}}}})
		if st.GetState() != lvmdpb.StateType_ERROR {
			t.Fatalf("%s: a backup to a foreign endpoint ended %v", name, st)
		}
		if strings.Contains(st.GetMsg(), "probe-banner") || strings.Contains(st.GetMsg(), "SSH-2.0") {
			t.Fatalf("%s: the job's message quotes the foreign endpoint: %q", name, st.GetMsg())
		}
		if !strings.Contains(st.GetMsg(), c.want) {
			t.Fatalf("%s: the job's message %q does not say %q", name, st.GetMsg(), c.want)
		}
	}
	if strings.Contains(e.logs.String(), "probe-banner") || strings.Contains(e.logs.String(), "SSH-2.0") {
		t.Fatal("the agent's log quotes the foreign endpoint's answer")
	}
}
