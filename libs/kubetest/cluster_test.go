package kubetest_test

import (
	"context"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/plinth-dev/plinth/libs/kubetest"
)

func ctx(t *testing.T) context.Context {
	c, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	return c
}

// assertVersion checks /version through the typed client and through a client built from
// the kubeconfig file, so the file is usable on its own.
func assertVersion(t *testing.T, c *kubetest.Cluster, want string) {
	t.Helper()
	got, err := c.Client().Discovery().ServerVersion()
	if err != nil {
		t.Fatalf("/version: %v", err)
	}
	minor := strings.Split(want, ".")[1]
	if got.GitVersion != want || got.Major != "1" || got.Minor != minor || got.GitTreeState != "clean" {
		t.Fatalf("/version = %+v, want gitVersion %s, major 1, minor %s, tree clean", got, want, minor)
	}
	config, err := clientcmd.BuildConfigFromFlags("", c.KubeconfigPath())
	if err != nil {
		t.Fatalf("kubeconfig file: %v", err)
	}
	fromFile, err := kubernetes.NewForConfig(config)
	if err != nil {
		t.Fatal(err)
	}
	if v, err := fromFile.Discovery().ServerVersion(); err != nil || v.GitVersion != want {
		t.Fatalf("/version through the kubeconfig file = %v, %v; want %s", v, err, want)
	}
}

// TestVersionsAndUpgrade runs the older version, keeps an object across an upgrade to the
// newer one on the same etcd, and checks /version before and after: both pinned versions run.
func TestVersionsAndUpgrade(t *testing.T) {
	t.Parallel()
	versions := kubetest.Versions()
	c := kubetest.Start(t, kubetest.Options{Version: versions[0], ControllerManager: true})
	t.Logf("%s up in %s", versions[0], c.StartupTime().Round(time.Millisecond))
	assertVersion(t, c, versions[0])

	review, err := c.Client().AuthenticationV1().SelfSubjectReviews().Create(ctx(t), &authenticationv1.SelfSubjectReview{}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if u := review.Status.UserInfo; u.Username != kubetest.AdminUser || !slices.Contains(u.Groups, kubetest.AdminGroup) {
		t.Fatalf("the client is %+v, want %s in %s", u, kubetest.AdminUser, kubetest.AdminGroup)
	}

	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "survives"}, Data: map[string]string{"k": "v"}}
	if _, err := c.Client().CoreV1().ConfigMaps("default").Create(ctx(t), cm, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	c.Upgrade(t, versions[1])
	assertVersion(t, c, versions[1])
	if c.Version() != versions[1] {
		t.Fatalf("Version() = %s after upgrade, want %s", c.Version(), versions[1])
	}
	got, err := c.Client().CoreV1().ConfigMaps("default").Get(ctx(t), "survives", metav1.GetOptions{})
	if err != nil || got.Data["k"] != "v" {
		t.Fatalf("ConfigMap after upgrade: %v, %v", got, err)
	}
}

// TestKubectl uses the kubeconfig as a user would, when kubectl is installed. Only commands
// every kubectl still in use has (Debian's is 1.20): raw /version and a plain get.
func TestKubectl(t *testing.T) {
	t.Parallel()
	kubectl, err := exec.LookPath("kubectl")
	if err != nil {
		t.Skip("kubectl is not installed: the kubeconfig is checked through client-go in TestVersionsAndUpgrade")
	}
	c := kubetest.Start(t, kubetest.Options{})
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"get", "--raw", "/version"}, `"gitVersion": "` + c.Version() + `"`},
		{[]string{"get", "namespace", "kube-system", "-o", "name"}, "namespace/kube-system"},
	} {
		args := append([]string{"--kubeconfig", c.KubeconfigPath()}, tc.args...)
		out, err := exec.Command(kubectl, args...).CombinedOutput()
		if err != nil || !strings.Contains(string(out), tc.want) {
			t.Errorf("kubectl %s: %v\n%s\nwant output containing %s", strings.Join(tc.args, " "), err, out, tc.want)
		}
	}
}
