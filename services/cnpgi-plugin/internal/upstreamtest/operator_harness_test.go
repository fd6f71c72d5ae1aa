package upstreamtest

import (
	"context"
	"encoding/json"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	jsonpatch "github.com/evanphx/json-patch/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// sidecarImage is what the operator-side tests configure for OperatorLifecycle.
const sidecarImage = "ghcr.io/plinth-dev/cnpgi-plugin:test"

// startOperatorPlugin runs the plugin as an operator-mode deployment would: with a sidecar
// image, so that every service is offered.
func startOperatorPlugin(t *testing.T, extraEnv ...string) *plugin {
	t.Helper()
	return startPlugin(t, 1, append([]string{"PLINTH_CNPGI_SIDECAR_IMAGE=" + sidecarImage, "PLINTH_CNPGI_REQUEUE_AFTER=7s"}, extraEnv...)...)
}

// catalogPool connects to the plugin's catalog schema.
func (p *plugin) catalogPool(t *testing.T) *pgxpool.Pool {
	t.Helper()
	pool, err := pgxpool.New(context.Background(), p.dbURL)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	return pool
}

// logValue waits for a JSON log line with msg and returns its key's value.
func (p *plugin) logValue(t *testing.T, msg, key string) string {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		for line := range strings.SplitSeq(p.logs.String(), "\n") {
			var rec map[string]any
			if json.Unmarshal([]byte(line), &rec) == nil && rec["msg"] == msg {
				if v, ok := rec[key].(string); ok {
					return v
				}
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("no log line %q with %s:\n%s", msg, key, p.logs.String())
	return ""
}

// genCerts runs `cnpgi-plugin gen-certs` as the plugin's owner into dir.
func genCerts(t *testing.T, o *owner, dir string, hosts string) {
	t.Helper()
	cmd := exec.Command(pluginBinary(t), "gen-certs", "-dir", dir, "-hosts", hosts, "-days", "2")
	if o != nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uint32(o.uid), Gid: uint32(o.gid), Groups: []uint32{}}}
	}
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("gen-certs: %v\n%s", err, out)
	}
	if !strings.Contains(string(out), "PLINTH_CNPGI_TLS_CLIENT_CA="+filepath.Join(dir, "client.crt")) {
		t.Fatalf("gen-certs printed %s", out)
	}
}

// applyPatch applies an RFC 6902 patch as CloudNativePG does (evanphx/json-patch v5); an
// empty patch leaves doc as it is.
func applyPatch(t *testing.T, doc, patch []byte) []byte {
	t.Helper()
	if len(patch) == 0 {
		return doc
	}
	p, err := jsonpatch.DecodePatch(patch)
	if err != nil {
		t.Fatalf("not an RFC 6902 patch: %v\n%s", err, patch)
	}
	out, err := p.Apply(doc)
	if err != nil {
		t.Fatalf("apply %s: %v", patch, err)
	}
	return out
}
