package upstreamtest

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/cloudnative-pg/cnpg-i/pkg/operator"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// TestOperator drives every Operator RPC through the upstream client.
func TestOperator(t *testing.T) {
	t.Parallel()
	p := startOperatorPlugin(t)
	c := operator.NewOperatorClient(p.conn)
	ctx := ctxT(t)

	caps, err := c.GetCapabilities(ctx, &operator.OperatorCapabilitiesRequest{})
	if err != nil {
		t.Fatal(err)
	}
	var rpcs []operator.OperatorCapability_RPC_Type
	for _, cp := range caps.GetCapabilities() {
		rpcs = append(rpcs, cp.GetRpc().GetType())
	}
	slices.Sort(rpcs)
	if !slices.Equal(rpcs, []operator.OperatorCapability_RPC_Type{1, 2, 3, 5, 6}) {
		t.Fatalf("operator capabilities %v", rpcs)
	}

	t.Run("validate create", func(t *testing.T) {
		res, err := c.ValidateClusterCreate(ctx, &operator.OperatorValidateClusterCreateRequest{Definition: cluster("pg", map[string]string{"objectStore": "s3", "retentionPolicy": "7d,keep:5"})})
		if err != nil || len(res.GetValidationErrors()) != 0 {
			t.Fatalf("a valid cluster: %v, %v", res.GetValidationErrors(), err)
		}
		res, err = c.ValidateClusterCreate(ctx, &operator.OperatorValidateClusterCreateRequest{
			Definition: cluster("pg", map[string]string{"objectStore": "gcs", "serverName": "a/b", "bogus": "1", "retentionPolicy": "7d,keep:0"}),
		})
		if err != nil {
			t.Fatal(err)
		}
		want := []struct{ path, value, msg string }{
			{"spec/plugins/0/parameters/bogus", "1", "unknown parameter; this plugin takes: objectStore, serverName, retentionPolicy"},
			{"spec/plugins/0/parameters/objectStore", "gcs", "names no object store of the plugin; configured: local, s3"},
			{"spec/plugins/0/parameters/retentionPolicy", "7d,keep:0", `"7d,keep:0": keep:N takes one positive whole number`},
			{"spec/plugins/0/parameters/serverName", "a/b", `"a/b" must be 1-128 characters`},
		}
		got := res.GetValidationErrors()
		if len(got) != len(want) {
			t.Fatalf("validation errors %v", got)
		}
		for i, w := range want {
			if strings.Join(got[i].GetPathComponents(), "/") != w.path || got[i].GetValue() != w.value || !strings.HasPrefix(got[i].GetMessage(), w.msg) {
				t.Errorf("error %d = %v, want %+v", i, got[i], w)
			}
		}
	})

	t.Run("validate change", func(t *testing.T) {
		old := cluster("pg", map[string]string{"serverName": "pg-a"})
		res, err := c.ValidateClusterChange(ctx, &operator.OperatorValidateClusterChangeRequest{OldCluster: old, NewCluster: cluster("pg", map[string]string{"serverName": "pg-a", "objectStore": "s3"})})
		if err != nil || len(res.GetValidationErrors()) != 0 {
			t.Fatalf("changing the store: %v, %v", res.GetValidationErrors(), err)
		}
		res, err = c.ValidateClusterChange(ctx, &operator.OperatorValidateClusterChangeRequest{OldCluster: old, NewCluster: cluster("pg", nil)})
		if err != nil {
			t.Fatal(err)
		}
		if v := res.GetValidationErrors(); len(v) != 1 || strings.Join(v[0].GetPathComponents(), "/") != "spec/plugins/0/parameters/serverName" ||
			v[0].GetValue() != "pg" || !strings.Contains(v[0].GetMessage(), "immutable") {
			t.Fatalf("server name change: %v", v)
		}
		res, err = c.ValidateClusterChange(ctx, &operator.OperatorValidateClusterChangeRequest{OldCluster: old,
			NewCluster: cluster("pg", map[string]string{"serverName": "pg-a", "retentionPolicy": "1y"})})
		if v := res.GetValidationErrors(); err != nil || len(v) != 1 || strings.Join(v[0].GetPathComponents(), "/") != "spec/plugins/0/parameters/retentionPolicy" ||
			v[0].GetValue() != "1y" || !strings.Contains(v[0].GetMessage(), "neither a recovery window") {
			t.Fatalf("a bad retention policy on change: %v, %v", v, err)
		}
		_, err = c.ValidateClusterChange(ctx, &operator.OperatorValidateClusterChangeRequest{OldCluster: old, NewCluster: []byte(`[]`)})
		if status.Code(err) != codes.InvalidArgument || !strings.Contains(status.Convert(err).Message(), "new_cluster") {
			t.Fatalf("a new_cluster that is not a Cluster: %v", err)
		}
	})

	t.Run("mutate", func(t *testing.T) {
		def := cluster("pg", nil)
		res, err := c.MutateCluster(ctx, &operator.OperatorMutateClusterRequest{Definition: def})
		if err != nil {
			t.Fatal(err)
		}
		var out struct {
			APIVersion string `json:"apiVersion"`
			Spec       struct {
				Instances int `json:"instances"`
				Plugins   []struct {
					Name          string            `json:"name"`
					IsWALArchiver bool              `json:"isWALArchiver"`
					Parameters    map[string]string `json:"parameters"`
				} `json:"plugins"`
			} `json:"spec"`
		}
		if err := json.Unmarshal(applyPatch(t, def, res.GetJsonPatch()), &out); err != nil {
			t.Fatal(err)
		}
		pl := out.Spec.Plugins[0]
		if out.APIVersion != "postgresql.cnpg.io/v1" || out.Spec.Instances != 1 || !pl.IsWALArchiver ||
			pl.Parameters["serverName"] != "pg" || pl.Parameters["objectStore"] != "local" || len(pl.Parameters) != 2 {
			t.Fatalf("mutated cluster %+v", out)
		}
		full := cluster("pg", map[string]string{"serverName": "x", "objectStore": "s3"})
		if res, err := c.MutateCluster(ctx, &operator.OperatorMutateClusterRequest{Definition: full}); err != nil || len(res.GetJsonPatch()) != 0 {
			t.Fatalf("nothing to default: %q, %v", res.GetJsonPatch(), err)
		}
		if _, err := c.MutateCluster(ctx, &operator.OperatorMutateClusterRequest{}); status.Code(err) != codes.InvalidArgument {
			t.Fatalf("empty definition: %v", err)
		}
	})

	t.Run("status", func(t *testing.T) {
		def := cluster("pg-status", map[string]string{"objectStore": "s3"})
		res, err := c.SetStatusInCluster(ctx, &operator.SetStatusInClusterRequest{Cluster: def})
		if err != nil {
			t.Fatal(err)
		}
		var w map[string]any
		if err := json.Unmarshal(res.GetJsonStatus(), &w); err != nil {
			t.Fatalf("status %q is not a JSON object: %v", res.GetJsonStatus(), err)
		}
		if w["objectStore"] != "s3" || w["serverName"] != "pg-status" || w["backups"] != 0.0 || w["firstRecoverabilityPoint"] != nil {
			t.Fatalf("status without backups: %s", res.GetJsonStatus())
		}
		// The operator stores the answer in status.pluginStatus: the same answer is then empty.
		withStatus := func(def, st []byte) []byte {
			var obj map[string]any
			_ = json.Unmarshal(def, &obj)
			obj["status"] = map[string]any{"pluginStatus": []any{map[string]any{"name": pluginName, "status": string(st)}}}
			b, _ := json.Marshal(obj)
			return b
		}
		again, err := c.SetStatusInCluster(ctx, &operator.SetStatusInClusterRequest{Cluster: withStatus(def, res.GetJsonStatus())})
		if err != nil || len(again.GetJsonStatus()) != 0 {
			t.Fatalf("unchanged status answered %q, %v", again.GetJsonStatus(), err)
		}
		// A completed base backup in the catalog moves the window.
		end := time.Date(2026, 8, 1, 10, 0, 0, 0, time.UTC)
		if _, err := p.catalogPool(t).Exec(ctx, `INSERT INTO base_backups (store, server, backup_id, status, begin_time, end_time)
			VALUES ('s3', 'pg-status', '20260801T095000', 'DONE', $1, $2)`, end.Add(-10*time.Minute), end); err != nil {
			t.Fatal(err)
		}
		moved, err := c.SetStatusInCluster(ctx, &operator.SetStatusInClusterRequest{Cluster: withStatus(def, res.GetJsonStatus())})
		if err != nil || !strings.Contains(string(moved.GetJsonStatus()), `"firstRecoverabilityPoint":"2026-08-01T10:00:00Z"`) ||
			!strings.Contains(string(moved.GetJsonStatus()), `"backups":1`) {
			t.Fatalf("after a backup: %s, %v", moved.GetJsonStatus(), err)
		}
		none, err := c.SetStatusInCluster(ctx, &operator.SetStatusInClusterRequest{Cluster: []byte(`{"metadata":{"name":"x"},"spec":{}}`)})
		if err != nil || len(none.GetJsonStatus()) != 0 {
			t.Fatalf("a cluster without the plugin: %q, %v", none.GetJsonStatus(), err)
		}
		_, err = c.SetStatusInCluster(ctx, &operator.SetStatusInClusterRequest{Cluster: cluster("pg", map[string]string{"objectStore": "gcs"})})
		if status.Code(err) != codes.FailedPrecondition || !strings.Contains(status.Convert(err).Message(), `"gcs"`) {
			t.Fatalf("unknown store: %v", err)
		}
		_, err = c.SetStatusInCluster(ctx, &operator.SetStatusInClusterRequest{Cluster: cluster("pg", map[string]string{"typo": "1"})})
		if status.Code(err) != codes.InvalidArgument || !strings.Contains(status.Convert(err).Message(), "spec.plugins[0].parameters.typo") {
			t.Fatalf("bad parameter: %v", err)
		}
	})

	t.Run("deregister", func(t *testing.T) {
		if _, err := c.Deregister(ctx, &operator.DeregisterRequest{Definition: cluster("pg", nil)}); err != nil {
			t.Fatal(err)
		}
		if _, err := c.Deregister(ctx, &operator.DeregisterRequest{Definition: []byte("{")}); status.Code(err) != codes.InvalidArgument {
			t.Fatalf("broken definition: %v", err)
		}
	})
}
