// Command plinth-kube runs a real single-node Kubernetes cluster on this machine (`make
// kube-up`, `make kube-down`), for trying deploy/k8s on one machine:
//
//	plinth-kube up   [-dir /var/lib/plinth-kube] [-bin bin] [-image FILE]... [-program IMAGE=PROGRAM[,PROGRAM...]]...
//	                 [-cert-manager=true] [-vg plinth_kube]
//	                 [-overlay deploy/k8s/overlays/local] [-root .] [-no-install]
//	plinth-kube demo [-dir /var/lib/plinth-kube] [-bin bin] [-root .]
//	plinth-kube down [-dir /var/lib/plinth-kube]
//
// up installs the Debian packages it needs when they are missing (as root, unless
// -no-install), starts etcd, the control plane, containerd, the kubelet and kube-proxy in
// the background (libs/kubetest/kubelocal), imports the images, installs cert-manager,
// applies the overlay with its Secrets (deploy/internal/kubeup) and prints KUBECONFIG=<path>
// once every workload is rolled out. demo runs CloudNativePG's operator (make tools-cnpg) on
// that cluster and the example Cluster whose WAL and backups go through cnpgi-plugin
// (deploy/internal/kubeup.Demo), returning once it is Ready. down stops all of it and undoes
// what it changed on the machine.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/plinth-dev/plinth/deploy/internal/kubeup"
	"github.com/plinth-dev/plinth/libs/kubetest/kubelocal"
)

// packages are the Debian packages a node needs, by the command each brings.
var packages = []struct{ pkg, path string }{
	{"containerd", "/usr/bin/containerd"},
	{"runc", "/usr/sbin/runc"},
	{"containernetworking-plugins", "/usr/lib/cni/bridge"},
	{"iptables", "/usr/sbin/iptables"},
	{"etcd-server", "/usr/bin/etcd"},
	{"busybox-static", "/bin/busybox"},
	{"iproute2", "/usr/bin/ip"},
	{"lvm2", "/usr/sbin/vgcreate"},
}

func main() {
	if err := run(os.Args[1:]); err != nil {
		if !errors.Is(err, flag.ErrHelp) {
			fmt.Fprintln(os.Stderr, "plinth-kube:", err)
		}
		os.Exit(1)
	}
}

type images []string

func (i *images) String() string     { return strings.Join(*i, ",") }
func (i *images) Set(v string) error { *i = append(*i, v); return nil }

func run(args []string) error {
	if len(args) == 0 || (args[0] != "up" && args[0] != "down" && args[0] != "demo") {
		return errors.New("usage: plinth-kube up|demo|down [flags] (-h for the flags)")
	}
	var o kubelocal.Options
	var imgs images
	noInstall := false
	var overlay, root string
	fs := flag.NewFlagSet("plinth-kube "+args[0], flag.ContinueOnError)
	fs.StringVar(&o.Dir, "dir", "/var/lib/plinth-kube", "the cluster's directory: state, logs, images, pods")
	if args[0] == "up" || args[0] == "demo" {
		fs.StringVar(&o.BinDir, "bin", "bin", "where `make tools-k8s` put kube-apiserver-"+kubelocal.Version+" and the rest (and make tools-cnpg cnpg-manager)")
		fs.StringVar(&root, "root", ".", "the repository (the overlay and base/namespace.yaml are in it)")
	}
	if args[0] == "up" {
		fs.Var(&imgs, "image", "a `docker save` archive to import (repeat the flag for more)")
		fs.Func("program", "`IMAGE=PROGRAM[,PROGRAM...]`: import static programs as an image of their own named IMAGE (make kube-up passes overlays/local's S3 server, bin/versitygw, and the Kubernetes binaries of kaas's machines); repeat for more images", func(v string) error {
			image, list, ok := strings.Cut(v, "=")
			if !ok || image == "" || list == "" {
				return fmt.Errorf("want IMAGE=PROGRAM[,PROGRAM...], got %q", v)
			}
			if o.Programs == nil {
				o.Programs = map[string][]string{}
			}
			for _, p := range strings.Split(list, ",") {
				abs, err := filepath.Abs(p)
				if err != nil {
					return err
				}
				o.Programs[image] = append(o.Programs[image], abs)
			}
			return nil
		})
		fs.BoolVar(&noInstall, "no-install", false, "never install Debian packages")
		fs.StringVar(&overlay, "overlay", "deploy/k8s/overlays/local", "the kustomization to apply once the node is Ready, with the Secrets deploy/k8s/README.md lists (empty: a bare cluster)")
		fs.DurationVar(&o.WaitForMachine, "wait-machine", 0, "how long to wait for another cluster on this machine to stop (one runs per machine)")
		fs.StringVar(&o.VolumeGroup, "vg", "plinth_kube", "a loop-backed volume group to make for lvmd-agent (overlays/local names plinth_kube); empty: none")
		fs.BoolVar(&o.CertManager, "cert-manager", true, "also run cert-manager's controller (deploy/k8s needs it for its mTLS pairs)")
		fs.BoolVar(&o.Storage, "storage", true, "also run local-path-provisioner as the default StorageClass (local-path; CloudNativePG's instances need volumes)")
	}
	if err := fs.Parse(args[1:]); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	say := func(format string, a ...any) { fmt.Fprintf(os.Stderr, format+"\n", a...) }
	if args[0] == "down" {
		err := kubelocal.Down(ctx, o.Dir, say)
		if errors.Is(err, kubelocal.ErrNoCluster) {
			say("plinth-kube: no cluster in %s: nothing to stop", o.Dir)
			return nil
		}
		return err
	}
	if args[0] == "demo" {
		return demo(ctx, o, root, say)
	}
	if overlay != "" && len(imgs) == 0 {
		return errors.New("-overlay runs the suite, whose images no registry here serves: build them (make images) and give -image bin/images/kube.tar, or -overlay= for a bare cluster")
	}
	if err := install(noInstall, say); err != nil {
		return err
	}
	var err error
	if o.BinDir, err = filepath.Abs(o.BinDir); err != nil {
		return err
	}
	o.Images = imgs
	o.Log = say
	c, err := kubelocal.Up(ctx, o)
	if err != nil {
		return err
	}
	say("plinth-kube: node %s Ready in %s; logs in %s/logs; stop with make kube-down", c.NodeName, c.StartupTime.Round(time.Second), c.Dir)
	if overlay != "" {
		began := time.Now()
		passwordFile := filepath.Join(c.Dir, "admin-password")
		err := kubeup.Apply(ctx, kubeup.Options{
			Root: root, Overlay: overlay, Kubectl: filepath.Join(o.BinDir, "kubectl-"+kubelocal.Version),
			Kubeconfig: c.KubeconfigPath, AdminPassword: os.Getenv("PLINTH_ADMIN_PASSWORD"),
			AdminPasswordFile: passwordFile, Out: os.Stderr,
		})
		if err != nil {
			return fmt.Errorf("%w (the cluster runs: make kube-down stops it)", err)
		}
		say("plinth-kube: %s applied, every workload rolled out in %s; the gateway: kubectl -n %s port-forward svc/gateway 8080", overlay, time.Since(began).Round(time.Second), kubeup.Namespace)
		if _, err := os.Stat(passwordFile); err == nil {
			say("plinth-kube: sign in as admin with the password in %s", passwordFile)
		}
	}
	fmt.Printf("KUBECONFIG=%s\n", c.KubeconfigPath)
	return nil
}

// demo runs kubeup.Demo on the cluster in o.Dir.
func demo(ctx context.Context, o kubelocal.Options, root string, say func(string, ...any)) error {
	c, err := kubelocal.Open(o.Dir)
	if err != nil {
		return fmt.Errorf("%w (make kube-up first)", err)
	}
	bin, err := filepath.Abs(o.BinDir)
	if err != nil {
		return err
	}
	manager := filepath.Join(bin, "cnpg-manager")
	if _, err := os.Stat(manager); err != nil {
		return fmt.Errorf("no %s: make tools-cnpg", manager)
	}
	began := time.Now()
	err = kubeup.Demo(ctx, kubeup.Options{Root: root, Kubectl: filepath.Join(bin, "kubectl-"+kubelocal.Version),
		Kubeconfig: c.KubeconfigPath, Out: os.Stderr}, c, manager)
	if err != nil {
		return fmt.Errorf("%w (the cluster runs: make kube-down stops it)", err)
	}
	say("plinth-kube: CloudNativePG runs %s in %s with cnpgi-plugin archiving its WAL, after %s; try: kubectl -n %s get cluster,backup,pods",
		kubeup.ExampleCluster, kubeup.Namespace, time.Since(began).Round(time.Second), kubeup.Namespace)
	return nil
}

// install installs the missing packages in one apt-get call, as root on a machine with apt.
func install(never bool, say func(string, ...any)) error {
	var missing []string
	for _, p := range packages {
		if _, err := os.Stat(p.path); err != nil {
			missing = append(missing, p.pkg)
		}
	}
	if len(missing) == 0 {
		return nil
	}
	if _, err := exec.LookPath("apt-get"); never || os.Geteuid() != 0 || err != nil {
		return fmt.Errorf("missing Debian packages: apt-get install %s", strings.Join(missing, " "))
	}
	say("plinth-kube: installing %s", strings.Join(missing, " "))
	cmd := exec.Command("apt-get", append([]string{"install", "-y", "-q", "--no-install-recommends"}, missing...)...)
	cmd.Env = append(os.Environ(), "DEBIAN_FRONTEND=noninteractive")
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("apt-get install %s: %w", strings.Join(missing, " "), err)
	}
	return nil
}
