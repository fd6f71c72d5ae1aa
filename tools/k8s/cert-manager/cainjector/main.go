// Command cert-manager-cainjector is cert-manager's CA injector, built from its Go module
// (github.com/cert-manager/cert-manager, the version ../go.mod pins) for `make kube-up`'s
// cluster. Upstream's main lives in the separate module .../cmd/cainjector, which the module
// proxy here does not serve; the injectors themselves are the main module's public
// pkg/controller/cainjector, which this file runs as upstream's app does: a controller-runtime
// manager with the four injectable kinds (Mutating/ValidatingWebhookConfiguration,
// APIService, CustomResourceDefinition), filling each one's caBundle from the Certificate,
// Secret or apiserver CA its cert-manager.io/inject-ca-from(-secret) or inject-apiserver-ca
// annotation names. One replica, no leader election.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	admissionv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	apiextv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/runtime"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	apiregv1 "k8s.io/kube-aggregator/pkg/apis/apiregistration/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	cmapi "github.com/cert-manager/cert-manager/pkg/apis/certmanager/v1"
	"github.com/cert-manager/cert-manager/pkg/controller/cainjector"
	logf "github.com/cert-manager/cert-manager/pkg/logs"
	"github.com/cert-manager/cert-manager/pkg/util"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "cert-manager-cainjector:", err)
		os.Exit(1)
	}
}

func run() error {
	// --kubeconfig is controller-runtime's own flag (ctrl.GetConfig reads it); empty: the
	// pod's service account.
	health := flag.String("healthz-address", "0.0.0.0:9404", "address of /livez and /readyz")
	namespace := flag.String("namespace", "", "inject only into objects of this namespace (and cluster-scoped ones); empty: all")
	flag.Parse()

	scheme := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{corev1.AddToScheme, admissionv1.AddToScheme, apiextv1.AddToScheme, apiregv1.AddToScheme, cmapi.AddToScheme} {
		utilruntime.Must(add(scheme))
	}
	cfg, err := ctrl.GetConfig()
	if err != nil {
		return err
	}
	// The injectors apply caBundle as the field manager named by the user agent's first part
	// ("cert-manager-cainjector"), as upstream's app sets it.
	cfg = util.RestConfigWithUserAgent(cfg, "cainjector")
	ctrl.SetLogger(logf.Log)
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{
		Scheme:                 scheme,
		LeaderElection:         false,
		HealthProbeBindAddress: *health,
		Metrics:                metricsserver.Options{BindAddress: "0"},
	})
	if err != nil {
		return err
	}
	if err := mgr.AddHealthzCheck("livez", healthz.Ping); err != nil {
		return err
	}
	if err := mgr.AddReadyzCheck("readyz", healthz.Ping); err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := cainjector.RegisterAllInjectors(ctx, mgr, cainjector.SetupOptions{
		Namespace:                    *namespace,
		EnableCertificatesDataSource: true,
		EnabledReconcilersFor: map[string]bool{
			cainjector.MutatingWebhookConfigurationName:   true,
			cainjector.ValidatingWebhookConfigurationName: true,
			cainjector.APIServiceName:                     true,
			cainjector.CustomResourceDefinitionName:       true,
		},
	}); err != nil {
		return fmt.Errorf("register the injectors: %w", err)
	}
	logf.Log.Info("cert-manager cainjector started")
	return mgr.Start(ctx)
}
