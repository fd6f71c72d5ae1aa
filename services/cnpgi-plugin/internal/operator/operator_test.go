package operator

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	jsonpatch "github.com/evanphx/json-patch/v5"

	"github.com/plinth-dev/plinth/services/cnpgi-plugin/internal/catalog/history"
	"github.com/plinth-dev/plinth/services/cnpgi-plugin/internal/cluster"
	"github.com/plinth-dev/plinth/services/cnpgi-plugin/internal/stores"

	"github.com/plinth-dev/plinth/libs/platform/input"
)

const plugin = "cnpgi.plinth.dev"

type storeNames struct {
	names []string
	def   string
}

func (s storeNames) Names() []string { return s.names }
func (s storeNames) Default() string { return s.def }
func rules(def string) Rules {
	return Rules{Plugin: plugin, Stores: storeNames{[]string{"local", "s3"}, def}}
}
func parse(t *testing.T, js string) *cluster.Cluster {
	t.Helper()
	c, err := cluster.Parse([]byte(js))
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// clusterJSON is a Cluster with the plugin's parameters params (a JSON object or "null").
func clusterJSON(name, params string) string {
	return fmt.Sprintf(`{"apiVersion":"postgresql.cnpg.io/v1","kind":"Cluster","metadata":{"name":%q},"spec":{"instances":1,`+
		`"plugins":[{"name":"other.example.com","parameters":{"x":"y"}},{"name":%q,"isWALArchiver":true,"parameters":%s}]}}`, name, plugin, params)
}

func TestValidateCreate(t *testing.T) {
	cases := []struct {
		name, params, def string
		want              []string // "path=value: message prefix"
	}{
		{"defaults suffice", `{}`, "local", nil},
		{"explicit", `{"objectStore":"s3","serverName":"pg-1.a_b"}`, "", nil},
		{"unknown and misspelt parameters", `{"objetStore":"s3","zz":"1"}`, "local", []string{
			"spec.plugins.1.parameters.objetStore=s3: unknown parameter", "spec.plugins.1.parameters.zz=1: unknown parameter"}},
		{"unknown store", `{"objectStore":"gcs"}`, "local", []string{"spec.plugins.1.parameters.objectStore=gcs: names no object store"}},
		{"no store and no default", `{}`, "", []string{"spec.plugins.1.parameters.objectStore=: is required"}},
		{"bad server name", `{"serverName":"../x"}`, "local", []string{"spec.plugins.1.parameters.serverName=../x: \"../x\" must be"}},
		{"retention policy", `{"retentionPolicy":"30d,keep:3"}`, "local", nil},
		{"bad retention policy", `{"retentionPolicy":"30days"}`, "local", []string{
			"spec.plugins.1.parameters.retentionPolicy=30days: \"30days\": \"30days\" is neither a recovery window"}},
		{"tablespace map on the own archive", `{"tablespaceMap":"t:/x"}`, "local", []string{
			"spec.plugins.1.parameters.tablespaceMap=t:/x: applies only when recovering"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := rules(c.def).ValidateCreate(parse(t, clusterJSON("pg", c.params)))
			if len(got) != len(c.want) {
				t.Fatalf("errors %v, want %v", got, c.want)
			}
			for i, e := range got {
				s := strings.Join(e.Path, ".") + "=" + e.Value + ": " + e.Message
				if !strings.HasPrefix(s, c.want[i]) {
					t.Errorf("error %d: %q, want %q…", i, s, c.want[i])
				}
			}
		})
	}
	// The default server name is the cluster's: a name that is not a valid one is reported.
	if got := rules("local").ValidateCreate(parse(t, clusterJSON("-pg", `{}`))); len(got) != 1 || got[0].Value != "-pg" {
		t.Fatalf("invalid default server name: %v", got)
	}
}

func TestValidateTablespaceMap(t *testing.T) {
	for m, want := range map[string]string{"t:/mnt/t,u:/mnt/u": "", "t:relative": "must be an absolute path", "t": "is not NAME:LOCATION"} {
		c := parse(t, `{"metadata":{"name":"pg"},"spec":{"externalClusters":[{"name":"src","plugin":{"name":"`+plugin+`","parameters":{"tablespaceMap":"`+m+`"}}}]}}`)
		got := rules("local").ValidateCreate(c)
		if want == "" && len(got) != 0 || want != "" && (len(got) != 1 || !strings.Contains(got[0].Message, want)) {
			t.Errorf("%q: %v, want %q", m, got, want)
		}
	}
}

func TestValidateExternalClusters(t *testing.T) {
	c := parse(t, `{"metadata":{"name":"pg"},"spec":{"externalClusters":[{"name":"src","plugin":{"name":"`+plugin+`","parameters":{"bogus":"1","retentionPolicy":"7d"}}},
		{"name":"other","plugin":{"name":"x.io","parameters":{"bogus":"1"}}}]}}`)
	got := rules("local").ValidateCreate(c)
	if len(got) != 2 || !slices.Equal(got[0].Path, []string{"spec", "externalClusters", "0", "plugin", "parameters", "bogus"}) ||
		!slices.Equal(got[1].Path, []string{"spec", "externalClusters", "0", "plugin", "parameters", "retentionPolicy"}) ||
		!strings.Contains(got[1].Message, "only to the cluster's own archive") {
		t.Fatalf("errors %v", got)
	}
}

func TestServerNameIsImmutable(t *testing.T) {
	r := rules("local")
	cases := []struct {
		name, old, updated string
		immutable          bool
	}{
		{"unchanged default", `{}`, `{"objectStore":"s3"}`, false},
		{"default written down", `{}`, `{"serverName":"pg"}`, false},
		{"renamed", `{"serverName":"a"}`, `{"serverName":"b"}`, true},
		{"explicit back to default", `{"serverName":"a"}`, `{}`, true},
	}
	for _, c := range cases {
		errs := r.ValidateChange(parse(t, clusterJSON("pg", c.old)), parse(t, clusterJSON("pg", c.updated)))
		found := slices.ContainsFunc(errs, func(e FieldError) bool {
			return strings.Contains(e.Message, "immutable") && slices.Equal(e.Path, []string{"spec", "plugins", "1", "parameters", "serverName"})
		})
		if found != c.immutable {
			t.Errorf("%s: errors %v, immutable=%v", c.name, errs, c.immutable)
		}
	}
	// Enabling the plugin on an existing cluster is not a change of its server name.
	none := parse(t, `{"metadata":{"name":"pg"},"spec":{}}`)
	if errs := r.ValidateChange(none, parse(t, clusterJSON("pg", `{"serverName":"x"}`))); len(errs) != 0 {
		t.Fatalf("plugin added: %v", errs)
	}
}

// apply applies a patch the way the operator does (evanphx/json-patch v5) and decodes the
// plugin's parameters.
func apply(t *testing.T, doc string, r Rules) (map[string]string, []byte) {
	t.Helper()
	raw, err := r.Mutate(parse(t, doc)).Marshal()
	if err != nil {
		t.Fatal(err)
	}
	if raw == nil {
		return nil, nil
	}
	p, err := jsonpatch.DecodePatch(raw)
	if err != nil {
		t.Fatalf("not an RFC 6902 patch: %v\n%s", err, raw)
	}
	out, err := p.Apply([]byte(doc))
	if err != nil {
		t.Fatalf("apply %s: %v", raw, err)
	}
	var c cluster.Cluster
	if err := json.Unmarshal(out, &c); err != nil {
		t.Fatal(err)
	}
	return c.Spec.Plugins[1].Parameters, out
}

func TestMutateWritesDefaultsDown(t *testing.T) {
	for _, params := range []string{`null`, `{}`, `{"objectStore":"s3"}`, `{"serverName":"custom"}`} {
		got, out := apply(t, clusterJSON("pg", params), rules("local"))
		want := map[string]string{"objectStore": "local", "serverName": "pg"}
		var explicit map[string]string
		_ = json.Unmarshal([]byte(params), &explicit)
		for k, v := range explicit { // explicit values stay
			want[k] = v
		}
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("%s: parameters %v, want %v", params, got, want)
		}
		if !strings.Contains(string(out), `"other.example.com","parameters":{"x":"y"}`) || !strings.Contains(string(out), `"apiVersion":"postgresql.cnpg.io/v1"`) {
			t.Errorf("%s: the patch touched more than the plugin's parameters: %s", params, out)
		}
	}
	if got, _ := apply(t, clusterJSON("pg", `{"objectStore":"s3","serverName":"x"}`), rules("local")); got != nil {
		t.Fatalf("nothing to default must be an empty patch, got %v", got)
	}
	// Without a default store only the server name is written.
	if got, _ := apply(t, clusterJSON("pg", `{}`), rules("")); fmt.Sprint(got) != "map[serverName:pg]" {
		t.Fatalf("no default store: %v", got)
	}
}

type fakeHistory struct {
	s   history.Summary
	err error
}

func (f fakeHistory) Summary(context.Context, string, string) (history.Summary, error) {
	return f.s, f.err
}

func resolve(_ context.Context, t cluster.Target) (string, error) {
	name := t.ObjectStore
	switch name {
	case "", "local":
		return "local", nil
	case "s3":
		return "s3", nil
	}
	return "", fmt.Errorf("%w %q", stores.ErrUnknownStore, name)
}

func TestStatusIsEmptyWhenUnchanged(t *testing.T) {
	r := rules("local")
	end := time.Date(2026, 8, 1, 10, 0, 0, 0, time.UTC)
	h := fakeHistory{s: history.Summary{Backups: 2, FirstRecoverabilityPoint: end, LastSuccessfulBackup: end.Add(time.Hour)}}
	ctx := context.Background()
	got, err := r.Status(ctx, parse(t, clusterJSON("pg", `{}`)), h, resolve)
	if err != nil {
		t.Fatal(err)
	}
	var w map[string]any
	if err := json.Unmarshal(got, &w); err != nil {
		t.Fatalf("status %s is not a JSON object: %v", got, err)
	}
	if w["objectStore"] != "local" || w["serverName"] != "pg" || w["firstRecoverabilityPoint"] != "2026-08-01T10:00:00Z" ||
		w["lastSuccessfulBackupTime"] != "2026-08-01T11:00:00Z" || w["backups"] != 2.0 || w["lastFailedBackupTime"] != nil {
		t.Fatalf("status %s", got)
	}
	// The same window, reordered and re-spaced, already in the status: nothing to patch.
	reordered := `{ "backups": 2, "serverName": "pg", "objectStore": "local", "firstRecoverabilityPoint": "2026-08-01T10:00:00Z", "lastSuccessfulBackupTime": "2026-08-01T11:00:00Z" }`
	quoted, _ := json.Marshal(reordered)
	withStatus := strings.TrimSuffix(clusterJSON("pg", `{}`), "}") +
		`,"status":{"pluginStatus":[{"name":"other.example.com","status":"{}"},{"name":"` + plugin + `","status":` + string(quoted) + `}]}}`
	if got, err := r.Status(ctx, parse(t, withStatus), h, resolve); err != nil || got != nil {
		t.Fatalf("unchanged window answered %s, %v; want empty", got, err)
	}
	h.s.LastFailedBackup = end.Add(2 * time.Hour)
	if got, err := r.Status(ctx, parse(t, withStatus), h, resolve); err != nil || !strings.Contains(string(got), `"lastFailedBackupTime":"2026-08-01T12:00:00Z"`) {
		t.Fatalf("changed window answered %s, %v", got, err)
	}
}

func TestStatusErrors(t *testing.T) {
	r, ctx := rules("local"), context.Background()
	if got, err := r.Status(ctx, parse(t, `{"metadata":{"name":"pg"},"spec":{}}`), fakeHistory{}, resolve); got != nil || err != nil {
		t.Fatalf("a cluster without the plugin: %s, %v; want no status", got, err)
	}
	var cerr *input.Error
	if _, err := r.Status(ctx, parse(t, clusterJSON("pg", `{"bad":"1"}`)), fakeHistory{}, resolve); !errors.As(err, &cerr) {
		t.Fatalf("bad parameter: %v", err)
	}
	if _, err := r.Status(ctx, parse(t, clusterJSON("pg", `{"objectStore":"gcs"}`)), fakeHistory{}, resolve); !errors.Is(err, stores.ErrUnknownStore) {
		t.Fatalf("unknown store: %v", err)
	}
	boom := errors.New("catalog down")
	if _, err := r.Status(ctx, parse(t, clusterJSON("pg", `{}`)), fakeHistory{err: boom}, resolve); !errors.Is(err, boom) {
		t.Fatalf("catalog error: %v", err)
	}
}
