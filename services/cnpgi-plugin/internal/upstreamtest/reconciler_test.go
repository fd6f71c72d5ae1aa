package upstreamtest

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cloudnative-pg/cnpg-i/pkg/reconciler"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/plinth-dev/plinth/libs/storage/s3test"
)

// TestReconcilerHooks holds back reconciliations whose store is missing or unreachable: a
// bucket that does not exist, an endpoint nobody listens on, a store the plugin lacks.
func TestReconcilerHooks(t *testing.T) {
	t.Parallel()
	o := runAs(t)
	s3 := s3test.Start(t)
	bucket := s3.Bucket(t)
	dir := home(t, o)
	config := fmt.Sprintf(`
defaultStore: local
stores:
  local:
    posix: {path: %[1]s/store}
  s3:
    s3: {endpoint: %[2]s, bucket: %[3]s, pathStyle: true, accessKeyId: {env: RECON_KEY}, secretAccessKey: {env: RECON_SECRET}}
  nobucket:
    s3: {endpoint: %[2]s, bucket: %[3]s-missing, pathStyle: true, accessKeyId: {env: RECON_KEY}, secretAccessKey: {env: RECON_SECRET}}
  down:
    s3: {endpoint: "http://127.0.0.1:1", bucket: b, pathStyle: true, accessKeyId: {env: RECON_KEY}, secretAccessKey: {env: RECON_SECRET}}
`, dir, s3.Endpoint, bucket)
	o.writeFile(t, filepath.Join(dir, "config.yaml"), []byte(config), 0o644)
	// The longest probe allowed: a reachable store must be found reachable however loaded the
	// machine running the tests is; unreachable ones take it in parallel.
	p := startOperatorPlugin(t, "PLINTH_CNPGI_CONFIG="+filepath.Join(dir, "config.yaml"),
		"RECON_KEY="+s3.AccessKeyID, "RECON_SECRET="+s3.SecretAccessKey, "PLINTH_CNPGI_PROBE_TIMEOUT=25s")
	c := reconciler.NewReconcilerHooksClient(p.conn)
	ctx := ctxT(t)

	caps, err := c.GetCapabilities(ctx, &reconciler.ReconcilerHooksCapabilitiesRequest{})
	if err != nil || len(caps.GetReconcilerCapabilities()) != 2 || caps.GetReconcilerCapabilities()[0].GetKind() != reconciler.ReconcilerHooksCapability_KIND_CLUSTER ||
		caps.GetReconcilerCapabilities()[1].GetKind() != reconciler.ReconcilerHooksCapability_KIND_BACKUP {
		t.Fatalf("reconciler capabilities %v, %v", caps, err)
	}
	backup := func(store string) []byte {
		return []byte(`{"apiVersion":"postgresql.cnpg.io/v1","kind":"Backup","metadata":{"name":"b"},"spec":{"cluster":{"name":"pg"},"method":"plugin",` +
			`"pluginConfiguration":{"name":"` + pluginName + `","parameters":{"objectStore":"` + store + `"}}}}`)
	}
	cases := []struct {
		name              string
		cluster, resource []byte
		requeue           bool
	}{
		{"POSIX store", cluster("pg", nil), cluster("pg", nil), false},
		{"S3 store", cluster("pg", map[string]string{"objectStore": "s3"}), nil, false},
		{"missing bucket", cluster("pg", map[string]string{"objectStore": "nobucket"}), nil, true},
		{"unreachable endpoint", cluster("pg", map[string]string{"objectStore": "down"}), nil, true},
		{"store the plugin lacks", cluster("pg", map[string]string{"objectStore": "gcs"}), nil, true},
		{"backup to an unreachable store", cluster("pg", nil), backup("down"), true},
		{"backup to a reachable store", cluster("pg", map[string]string{"objectStore": "down"}), backup("s3"), false},
	}
	// In parallel: each unreachable store costs the plugin's probe timeout.
	t.Run("hooks", func(t *testing.T) {
		for _, tc := range cases {
			for _, hook := range []string{"Pre", "Post"} {
				t.Run(hook+" "+tc.name, func(t *testing.T) {
					t.Parallel()
					req := &reconciler.ReconcilerHooksRequest{ClusterDefinition: tc.cluster, ResourceDefinition: tc.resource}
					call := c.Pre
					if hook == "Post" {
						call = c.Post
					}
					res, err := call(ctx, req)
					if err != nil {
						t.Fatal(err)
					}
					want := reconciler.ReconcilerHooksResult_BEHAVIOR_CONTINUE
					if tc.requeue {
						want = reconciler.ReconcilerHooksResult_BEHAVIOR_REQUEUE
					}
					if res.GetBehavior() != want || (tc.requeue && res.GetRequeueAfter() != 7) || (!tc.requeue && res.GetRequeueAfter() != 0) {
						t.Errorf("%v after %ds, want %v", res.GetBehavior(), res.GetRequeueAfter(), want)
					}
				})
			}
		}
	})
	_, err = c.Pre(ctx, &reconciler.ReconcilerHooksRequest{ClusterDefinition: []byte(`{"spec":{}}`)})
	if status.Code(err) != codes.InvalidArgument || !strings.Contains(status.Convert(err).Message(), "metadata.name") {
		t.Fatalf("a cluster without a name: %v", err)
	}
	if !strings.Contains(p.logs.String(), "holding back the reconciliation") {
		t.Error("a held back reconciliation is not logged")
	}
}
