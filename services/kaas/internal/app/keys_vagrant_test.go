package app_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"google.golang.org/grpc/metadata"
	"google.golang.org/protobuf/encoding/protojson"
	authnv1 "k8s.io/api/authentication/v1"
	authzv1 "k8s.io/api/authorization/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	kaaspb "github.com/plinth-dev/plinth/libs/api/cnct/kaas/api"
	"github.com/plinth-dev/plinth/libs/api/hashicorp/vagrant"
	"github.com/plinth-dev/plinth/libs/platform/authz"
	"github.com/plinth-dev/plinth/services/kaas/internal/pki"
	"github.com/plinth-dev/plinth/services/kaas/internal/provider/maas/maastest"
)

// accessCheck is one question a role's kubeconfig puts to the cluster's API server
// (SelfSubjectAccessReview), with the answer kaas promises.
type accessCheck struct {
	verb, group, resource, namespace string
	allowed                          bool
}

// promised is what each Plinth role may do in a kaas cluster: viewers Kubernetes' view
// (namespaced reads, no Secrets), operators admin (namespaced reads and writes, Secrets and
// namespaced RBAC; nothing cluster-scoped), admins cluster-admin (everything, but through a
// binding, not system:masters).
var promised = map[authz.Role][]accessCheck{
	authz.Viewer: {
		{"list", "", "pods", "default", true}, {"get", "apps", "deployments", "kube-system", true},
		{"create", "", "pods", "default", false}, {"get", "", "secrets", "default", false},
		{"list", "", "nodes", "", false}, {"*", "*", "*", "", false},
	},
	authz.Operator: {
		{"create", "apps", "deployments", "default", true}, {"get", "", "secrets", "kube-system", true},
		{"create", "rbac.authorization.k8s.io", "rolebindings", "default", true},
		{"create", "rbac.authorization.k8s.io", "clusterrolebindings", "", false},
		{"delete", "", "nodes", "", false}, {"create", "", "namespaces", "", false}, {"*", "*", "*", "", false},
	},
	authz.Admin: {
		{"*", "*", "*", "", true}, {"delete", "", "nodes", "", true}, {"create", "rbac.authorization.k8s.io", "clusterrolebindings", "", true},
	},
}

// TestVagrantClusterKeysAndRoles is issue #36's attacker against a real cluster (netns
// machines, real etcd and kube-apiserver): the bootstrap jobs' arguments, rows and streams,
// which a viewer's Vagrant session token could read, held every private key of the cluster;
// and a viewer's GetCluster kubeconfig was system:masters. Now vagrant-server holds no
// private key of the cluster in any form, and the API server answers each role's
// kubeconfig as promised.
func TestVagrantClusterKeysAndRoles(t *testing.T) {
	t.Parallel()
	e := newEnv(t, maastest.Options{})
	v := startVagrant(t, e)
	cfg := v.config(t, e)
	k := e.start(t, cfg)
	name := clusterName("keys")
	if _, err := k.client.CreateCluster(e.ctx(t), &kaaspb.CreateClusterMsg{Name: name, K8SVersion: "v1.33.13",
		ControlPlaneNodes: &kaaspb.ControlPlaneMachineSpec{Count: 1},
		WorkerNodePools:   []*kaaspb.MachineSpec{{Name: "w", Count: 1}}}); err != nil {
		t.Fatal(err)
	}
	e.waitStatus(t, k.client, name, kaaspb.ClusterStatus_RUNNING, 5*time.Minute)
	tokens := map[authz.Role]string{authz.Admin: e.token,
		authz.Operator: newUserToken(t, e, authz.Operator), authz.Viewer: newUserToken(t, e, authz.Viewer)}

	for role, checks := range promised {
		kc := clientFor(t, getKubeconfig(t, k, name, tokens[role]))
		who, err := kc.AuthenticationV1().SelfSubjectReviews().Create(context.Background(), &authnv1.SelfSubjectReview{}, metav1.CreateOptions{})
		if err != nil {
			t.Fatalf("%s: SelfSubjectReview: %v", role, err)
		}
		if u := who.Status.UserInfo; strings.Join(u.Groups, ",") != roleGroup[role]+",system:authenticated" {
			t.Errorf("%s: the API server sees %s in %v, want %s only", role, u.Username, u.Groups, roleGroup[role])
		}
		for _, c := range checks {
			assertAccess(t, role, kc, c)
		}
	}

	// A cluster whose bindings are missing or changed (made before kaas bound the roles, or
	// edited since) gets them back from the next kaas.
	admin := clientFor(t, getKubeconfig(t, k, name, tokens[authz.Admin]))
	bindings := admin.RbacV1().ClusterRoleBindings()
	if err := bindings.Delete(context.Background(), "plinth:viewers", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	ops, err := bindings.Get(context.Background(), "plinth:operators", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	ops.Subjects[0].Name = "someone-else"
	if _, err := bindings.Update(context.Background(), ops, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	viewer := clientFor(t, getKubeconfig(t, k, name, tokens[authz.Viewer]))
	operator := clientFor(t, getKubeconfig(t, k, name, tokens[authz.Operator]))
	assertAccess(t, authz.Viewer, viewer, accessCheck{"list", "", "pods", "default", false})
	assertAccess(t, authz.Operator, operator, accessCheck{"create", "apps", "deployments", "default", false})
	k.stop()
	k = e.start(t, cfg)
	assertAccess(t, authz.Viewer, viewer, accessCheck{"list", "", "pods", "default", true})
	assertAccess(t, authz.Operator, operator, accessCheck{"create", "apps", "deployments", "default", true})

	// Every private key of the cluster and of its machines: the cluster's (kaas's sealed
	// row) and each machine's own (their pki directories; netns machines share this host's
	// filesystem).
	keys := clusterKeys(t, e, name)
	err = filepath.WalkDir(cfg.Vagrant.MachineDir, func(path string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() && strings.HasSuffix(path, ".key") {
			data, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			keys[strings.TrimPrefix(path, cfg.Vagrant.MachineDir)] = data
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	// Sandboxed machines keep their files in their own root filesystem, not under this host's
	// MachineDir: then only the cluster's keys are known here, and the machines' own are
	// looked for by their PEM header, in the clear and in base64 (how the jobs carried them).
	if len(keys) < 4 {
		t.Fatalf("found only %d private keys to look for", len(keys))
	}
	// What vagrant-server keeps (jobs and job_output rows) and answers (XListJobs, GetJob,
	// GetJobStream) to any token that may read jobs.
	var held [][]byte
	for _, q := range []string{"SELECT spec FROM jobs", "SELECT coalesce(result, ''::bytea) FROM jobs", "SELECT event FROM job_output"} {
		rows, err := v.db.Pool.Query(context.Background(), q)
		if err != nil {
			t.Fatalf("%s: %v", q, err)
		}
		for rows.Next() {
			var b []byte
			if err := rows.Scan(&b); err != nil {
				t.Fatal(err)
			}
			held = append(held, b)
		}
		rows.Close()
	}
	jobs, err := v.client.XListJobs(v.ctx(t), &vagrant.ListJobsRequest{})
	if err != nil {
		t.Fatal(err)
	}
	bootstraps := 0
	for _, j := range jobs.GetJobs() {
		if strings.Contains(strings.Join(j.GetCommand().GetCliArgs().GetArgs(), " "), "kaas-bootstrap") {
			bootstraps++
		}
		full, err := v.client.GetJob(v.ctx(t), &vagrant.GetJobRequest{JobId: j.GetId()})
		if err != nil {
			t.Fatal(err)
		}
		held = append(held, []byte(protojson.Format(j)), []byte(protojson.Format(full)), jobStream(t, v, j.GetId()))
	}
	if bootstraps < 2 {
		t.Fatalf("vagrant-server lists %d bootstrap jobs, want one per machine", bootstraps)
	}
	for _, h := range held {
		for _, marker := range []string{"PRIVATE KEY", base64.StdEncoding.EncodeToString([]byte("-----BEGIN EC PRIVATE")),
			base64.StdEncoding.EncodeToString([]byte("-----BEGIN PRIVATE")), base64.StdEncoding.EncodeToString([]byte("-----BEGIN RSA PRIVAT"))} {
			if bytes.Contains(h, []byte(marker)) {
				t.Fatalf("vagrant-server holds a PEM private key (%s): %.200q", marker, h)
			}
		}
		for name, key := range keys {
			body := pemBody(key)
			for _, enc := range [][]byte{key, []byte(base64.StdEncoding.EncodeToString(key)), []byte(body)} {
				if len(enc) > 0 && bytes.Contains(h, enc) {
					t.Errorf("vagrant-server holds %s", name)
				}
			}
		}
	}
}

// getKubeconfig is GetCluster's kubeconfig for token.
func getKubeconfig(t *testing.T, k *instance, name, token string) string {
	t.Helper()
	ctx := metadata.AppendToOutgoingContext(ctxT(t, 30*time.Second), "authorization", "Bearer "+token)
	got, err := k.client.GetCluster(ctx, &kaaspb.GetClusterMsg{Name: name})
	if err != nil {
		t.Fatal(err)
	}
	return got.GetCluster().GetKubeconfig()
}

// assertAccess asks the API server, as kc, whether c is allowed, until it answers as
// promised (kaas binds the roles right after the API server is up) or 30 s pass.
func assertAccess(t *testing.T, role authz.Role, kc kubernetes.Interface, c accessCheck) {
	t.Helper()
	var last string
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(500 * time.Millisecond) {
		r, err := kc.AuthorizationV1().SelfSubjectAccessReviews().Create(context.Background(), &authzv1.SelfSubjectAccessReview{
			Spec: authzv1.SelfSubjectAccessReviewSpec{ResourceAttributes: &authzv1.ResourceAttributes{
				Verb: c.verb, Group: c.group, Resource: c.resource, Namespace: c.namespace}}}, metav1.CreateOptions{})
		if err != nil {
			last = err.Error()
			continue
		}
		if r.Status.Allowed == c.allowed {
			return
		}
		last = r.Status.Reason
	}
	t.Errorf("%s: %s %s/%s in %q: want allowed=%v (last: %s)", role, c.verb, c.group, c.resource, c.namespace, c.allowed, last)
}

// clusterKeys are the private keys in kaas's sealed key material of cluster name.
func clusterKeys(t *testing.T, e *env, name string) map[string][]byte {
	t.Helper()
	db, err := pgx.Connect(context.Background(), e.dbURL)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close(context.Background())
	var sealed []byte
	if err := db.QueryRow(context.Background(), "SELECT secrets FROM clusters WHERE name = $1", name).Scan(&sealed); err != nil {
		t.Fatal(err)
	}
	key, _ := base64.StdEncoding.DecodeString(secretKey)
	box, err := pki.NewBox(key)
	if err != nil {
		t.Fatal(err)
	}
	c, err := pki.NewVault(box).Open(sealed, name)
	if err != nil {
		t.Fatal(err)
	}
	return map[string][]byte{"ca.key": c.CA.KeyPEM, "etcd-ca.key": c.EtcdCA.KeyPEM, "front-proxy-ca.key": c.FrontProxyCA.KeyPEM, "sa.key": c.ServiceAccountKey}
}

// pemBody is the base64 body of a PEM block on one line, as it would appear with its line
// breaks dropped.
func pemBody(p []byte) string {
	var b strings.Builder
	for _, l := range strings.Split(string(p), "\n") {
		if !strings.HasPrefix(l, "-----") {
			b.WriteString(l)
		}
	}
	return b.String()
}

// jobStream is everything GetJobStream answers for a completed job, as JSON.
func jobStream(t *testing.T, v *vagrantEnv, id string) []byte {
	t.Helper()
	s, err := v.client.GetJobStream(v.ctx(t), &vagrant.GetJobStreamRequest{JobId: id})
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	for {
		ev, err := s.Recv()
		if err == io.EOF || (err == nil && ev.GetComplete() != nil) {
			if ev != nil {
				out.WriteString(protojson.Format(ev))
			}
			return out.Bytes()
		}
		if err != nil {
			t.Fatalf("job %s stream: %v", id, err)
		}
		out.WriteString(protojson.Format(ev))
	}
}
