package composeup

import (
	"context"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
)

// KubeImages maps each compose service whose image deploy/k8s runs to the name the manifests
// give it (base/ and overlays/local): the same Dockerfile stage, tagged as a registry would
// serve it.
var KubeImages = map[string]string{
	"auth":           "ghcr.io/plinth-dev/auth:0.1.0",
	"stats":          "ghcr.io/plinth-dev/stats:0.1.0",
	"kaas":           "ghcr.io/plinth-dev/kaas:0.1.0",
	"vagrant-server": "ghcr.io/plinth-dev/vagrant-server:0.1.0",
	"vagrant-runner": "ghcr.io/plinth-dev/vagrant-runner:0.1.0",
	"lvmd-agent":     "ghcr.io/plinth-dev/lvmd-agent:0.1.0",
	"cnpgi-plugin":   "ghcr.io/plinth-dev/cnpgi-plugin:0.1.0",
	"gateway-go":     "ghcr.io/plinth-dev/gateway:0.1.0",
}

// KubeDependencyImages are the compose file's images of PostgreSQL and NATS, which
// deploy/k8s/overlays/local runs in the cluster (local stand-ins where no registry serves
// them: make base-images).
var KubeDependencyImages = []string{"postgres:15", "nats:2.11-alpine"}

// OperandImage is CloudNativePG's PostgreSQL image for deploy/k8s/cnpg, built from
// deploy/docker/postgresql on the compose file's postgres:15; its tag is the major version,
// which the operator reads from it.
const OperandImage = "plinth.local/postgresql:15"

// Images builds the images of KubeImages with compose (the same build as Up's), tags them as
// the Kubernetes manifests name them and writes them, with KubeDependencyImages and
// OperandImage (built here), to out as
// one `docker save` archive, which `make kube-up` imports into the cluster's containerd.
// Only o.Root, o.File, o.Docker and o.Out count.
func Images(ctx context.Context, o Options, out string) error {
	// A project of its own: its override must not replace a running stack's.
	o.Project, o.Ceph = "plinth-images", false
	if err := o.Preflight(ctx); err != nil {
		return err
	}
	p, err := LoadFile(ctx, o.File, environ())
	if err != nil {
		return err
	}
	if err := os.MkdirAll(o.Dir(), 0o700); err != nil {
		return err
	}
	// The override names the built images (ImageName); ports are not published by a build.
	if err := os.WriteFile(o.overridePath(), Override(nil, BuiltServices(p), nil), 0o600); err != nil {
		return err
	}
	services := slices.Sorted(maps.Keys(KubeImages))
	for _, s := range services {
		if _, ok := p.Services[s]; !ok {
			return fmt.Errorf("composeup: docker-compose.yaml has no service %s (KubeImages)", s)
		}
	}
	if err := o.compose(ctx, o.Out, append([]string{"build"}, services...)...); err != nil {
		return err
	}
	if _, err := o.docker(ctx, "build", "-q", "-t", OperandImage, filepath.Join(o.Root, "deploy", "docker", "postgresql")); err != nil {
		return err
	}
	tags := append(slices.Clone(KubeDependencyImages), OperandImage)
	for _, s := range services {
		if _, err := o.docker(ctx, "tag", ImageName(s), KubeImages[s]); err != nil {
			return err
		}
		tags = append(tags, KubeImages[s])
	}
	if err := os.MkdirAll(filepath.Dir(out), 0o755); err != nil {
		return err
	}
	tmp := out + ".tmp"
	if _, err := o.docker(ctx, append([]string{"save", "-o", tmp}, tags...)...); err != nil {
		_ = os.Remove(tmp)
		return err
	}
	if err := os.Rename(tmp, out); err != nil {
		return err
	}
	fmt.Fprintf(o.Out, "plinth-compose: %d images in %s\n", len(tags), out)
	return nil
}
