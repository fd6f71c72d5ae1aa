// Command cert-manager-controller is cert-manager's controller, built from its Go module
// (github.com/cert-manager/cert-manager, the version go.mod pins) for `make kube-up`'s
// cluster. Upstream's main lives in the separate module .../cmd/controller, which the module
// proxy here does not serve, so this file does what its app.Run does for the controllers a
// Plinth cluster uses — the Issuer and ClusterIssuer controllers, the SelfSigned and CA
// issuers, the CertificateRequest approver and the six Certificate controllers — with one
// replica and no leader election. ACME, Vault, Venafi and the ingress/gateway shims are left
// out: nothing here reaches an outside CA.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"maps"
	"net"
	"net/http"
	"os"
	"os/signal"
	"slices"
	"syscall"
	"time"

	controllerpkg "github.com/cert-manager/cert-manager/pkg/controller"
	_ "github.com/cert-manager/cert-manager/pkg/controller/certificaterequests/approver"
	_ "github.com/cert-manager/cert-manager/pkg/controller/certificaterequests/ca"
	_ "github.com/cert-manager/cert-manager/pkg/controller/certificaterequests/selfsigned"
	_ "github.com/cert-manager/cert-manager/pkg/controller/certificates/issuing"
	_ "github.com/cert-manager/cert-manager/pkg/controller/certificates/keymanager"
	_ "github.com/cert-manager/cert-manager/pkg/controller/certificates/readiness"
	_ "github.com/cert-manager/cert-manager/pkg/controller/certificates/requestmanager"
	_ "github.com/cert-manager/cert-manager/pkg/controller/certificates/revisionmanager"
	_ "github.com/cert-manager/cert-manager/pkg/controller/certificates/trigger"
	_ "github.com/cert-manager/cert-manager/pkg/controller/clusterissuers"
	_ "github.com/cert-manager/cert-manager/pkg/controller/issuers"
	_ "github.com/cert-manager/cert-manager/pkg/issuer/ca"
	_ "github.com/cert-manager/cert-manager/pkg/issuer/selfsigned"
	logf "github.com/cert-manager/cert-manager/pkg/logs"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "cert-manager-controller:", err)
		os.Exit(1)
	}
}

func run() error {
	kubeconfig := flag.String("kubeconfig", "", "kubeconfig file; empty: the pod's service account")
	namespace := flag.String("cluster-resource-namespace", "cert-manager", "where ClusterIssuers keep their Secrets")
	healthz := flag.String("healthz-address", "0.0.0.0:9403", "address of /livez and /readyz")
	workers := flag.Int("concurrent-workers", 5, "workers per controller")
	flag.Parse()

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	ctx = logf.NewContext(ctx, logf.Log)

	factory, err := controllerpkg.NewContextFactory(ctx, controllerpkg.ContextOptions{
		Kubeconfig:         *kubeconfig,
		KubernetesAPIQPS:   20,
		KubernetesAPIBurst: 50,
		IssuerOptions:      controllerpkg.IssuerOptions{ClusterResourceNamespace: *namespace},
		// Upstream's defaults: a failed request is retried after 1 h, backing off to 32 h.
		CertificateOptions: controllerpkg.CertificateOptions{
			CertificateRequestMinimumBackoffDuration: time.Hour,
			CertificateRequestMaximumBackoffDuration: 32 * time.Hour,
		},
	})
	if err != nil {
		return err
	}
	cctx, err := factory.Build()
	if err != nil {
		return err
	}

	ln, err := net.Listen("tcp", *healthz)
	if err != nil {
		return err
	}
	ok := func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("ok")) }
	mux := http.NewServeMux()
	mux.HandleFunc("/livez", ok)
	mux.HandleFunc("/readyz", ok)
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = srv.Serve(ln) }()

	errs := make(chan error, len(controllerpkg.Known()))
	names := slices.Sorted(maps.Keys(controllerpkg.Known()))
	for _, name := range names {
		c, err := controllerpkg.Known()[name](factory)
		if err != nil {
			return fmt.Errorf("controller %s: %w", name, err)
		}
		go func() { errs <- c.Run(*workers, ctx) }()
	}
	logf.Log.Info("cert-manager controllers started", "controllers", names)
	cctx.SharedInformerFactory.Start(ctx.Done())
	cctx.KubeSharedInformerFactory.Start(ctx.Done())
	cctx.HTTP01ResourceMetadataInformersFactory.Start(ctx.Done())

	var runErr error
	select {
	case <-ctx.Done():
	case runErr = <-errs:
		stop()
	}
	shutdown, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_ = srv.Shutdown(shutdown)
	cctx.SharedInformerFactory.Shutdown()
	cctx.KubeSharedInformerFactory.Shutdown()
	cctx.HTTP01ResourceMetadataInformersFactory.Shutdown()
	if runErr != nil && !errors.Is(runErr, context.Canceled) {
		return runErr
	}
	return nil
}
