package reconciler

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/plinth-dev/plinth/libs/storage/objectstore"
	"github.com/plinth-dev/plinth/libs/storage/secret"
	"github.com/plinth-dev/plinth/services/cnpgi-plugin/internal/stores"

	"github.com/plinth-dev/plinth/libs/platform/input"
)

const plugin = "cnpgi.plinth.dev"

// registry has a POSIX store "local" (the default) and an S3 store "down" whose endpoint
// refuses connections.
func registry(t *testing.T) (*stores.Registry, string) {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "store")
	f := &stores.File{DefaultStore: "local", Stores: map[string]stores.StoreConfig{
		"local": {POSIX: &objectstore.POSIXConfig{Path: dir, NoSync: true}},
		"down": {S3: &objectstore.S3Config{Endpoint: "http://127.0.0.1:1", Bucket: "b", PathStyle: true,
			AccessKeyID: secret.Ref{Env: "K"}, SecretAccessKey: secret.Ref{Env: "K"}}},
	}}
	reg, err := stores.Open(f, []string{"K=x"})
	if err != nil {
		t.Fatal(err)
	}
	return reg, dir
}

func clusterWith(params string) []byte {
	return []byte(`{"metadata":{"name":"pg"},"spec":{"plugins":[{"name":"` + plugin + `","parameters":` + params + `}]}}`)
}

func TestGate(t *testing.T) {
	reg, _ := registry(t)
	g := NewGate(plugin, reg, Options{RequeueAfter: 42 * time.Second, ProbeTimeout: 500 * time.Millisecond})
	backup := func(params string) []byte {
		return []byte(`{"apiVersion":"postgresql.cnpg.io/v1","kind":"Backup","metadata":{"name":"b1"},"spec":{"cluster":{"name":"pg"},"method":"plugin",` +
			`"pluginConfiguration":{"name":"` + plugin + `","parameters":` + params + `}}}`)
	}
	cases := []struct {
		name            string
		cluster, object []byte
		requeue         bool
	}{
		{"reachable default store", clusterWith(`{}`), nil, false},
		{"unreachable store", clusterWith(`{"objectStore":"down"}`), nil, true},
		{"store the plugin lacks", clusterWith(`{"objectStore":"gone"}`), nil, true},
		{"cluster being deleted", []byte(`{"metadata":{"name":"pg","deletionTimestamp":"2026-08-01T00:00:00Z"},"spec":{"plugins":[{"name":"` + plugin + `","parameters":{"objectStore":"down"}}]}}`), nil, false},
		{"cluster without the plugin", []byte(`{"metadata":{"name":"pg"},"spec":{}}`), nil, false},
		{"the Cluster itself as resource", clusterWith(`{"objectStore":"down"}`), clusterWith(`{"objectStore":"down"}`), true},
		{"backup to an unreachable store of its own", clusterWith(`{}`), backup(`{"objectStore":"down"}`), true},
		{"backup to the cluster's store", clusterWith(`{}`), backup(`{}`), false},
		{"backup of a cluster archiving elsewhere", []byte(`{"metadata":{"name":"pg"},"spec":{}}`), backup(`{"objectStore":"down"}`), true},
		{"backup by another method", clusterWith(`{"objectStore":"down"}`), []byte(`{"kind":"Backup","spec":{"method":"volumeSnapshot"}}`), false},
		{"backup through another plugin", clusterWith(`{"objectStore":"down"}`), []byte(`{"kind":"Backup","spec":{"method":"plugin","pluginConfiguration":{"name":"x.io"}}}`), false},
	}
	for _, c := range cases {
		d, err := g.Check(context.Background(), c.cluster, c.object)
		if err != nil {
			t.Errorf("%s: %v", c.name, err)
			continue
		}
		if d.Requeue != c.requeue || (d.Requeue && d.RequeueAfter != 42*time.Second) {
			t.Errorf("%s: %+v, want requeue=%v", c.name, d, c.requeue)
		}
	}
}

func TestMissingDirectoryIsMissingStore(t *testing.T) {
	reg, dir := registry(t)
	g := NewGate(plugin, reg, Options{})
	if d, err := g.Check(context.Background(), clusterWith(`{}`), nil); err != nil || d.Requeue {
		t.Fatalf("before: %+v %v", d, err)
	}
	if err := os.RemoveAll(dir); err != nil { // an NFS share that is no longer mounted
		t.Fatal(err)
	}
	d, err := g.Check(context.Background(), clusterWith(`{}`), nil)
	if err != nil || !d.Requeue || d.RequeueAfter != 30*time.Second {
		t.Fatalf("after: %+v %v", d, err)
	}
}

func TestBadRequests(t *testing.T) {
	reg, _ := registry(t)
	g := NewGate(plugin, reg, Options{})
	var cerr *input.Error
	for name, c := range map[string][2][]byte{
		"cluster not JSON":  {[]byte(`{`), nil},
		"resource not JSON": {clusterWith(`{}`), []byte(`[`)},
		"bad parameter":     {clusterWith(`{"typo":"x"}`), nil},
	} {
		if _, err := g.Check(context.Background(), c[0], c[1]); !errors.As(err, &cerr) {
			t.Errorf("%s: %v, want a *input.Error", name, err)
		}
	}
}
