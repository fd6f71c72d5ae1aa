// Command plinth-compose runs the suite as containers with docker-compose.yaml (`make
// compose-up`, `make compose-down`):
//
//	plinth-compose up   [-project plinth] [-port-offset N] [-subnet 172.29.72.0/24]
//	plinth-compose down [-project plinth]
//	plinth-compose images [-out bin/images/kube.tar]
//
// up builds the images and starts every service (the Envoy gateway only where its image can
// be had), waits for every health check and prints the gateway's address and where the admin
// password is. down removes the lvmd-agent's volume group and loop device, then the project's
// containers, networks and volumes, and fails if any is left. images builds the images
// deploy/k8s runs, tags them as its manifests name them and saves them, with PostgreSQL's
// and NATS's, into one archive for `make kube-up` (KUBE_FLAGS='-image FILE').
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"strconv"
	"syscall"
	"time"

	"github.com/plinth-dev/plinth/deploy/internal/composeup"
)

func main() {
	if err := run(os.Args[1:]); err != nil {
		if !errors.Is(err, flag.ErrHelp) {
			fmt.Fprintln(os.Stderr, "plinth-compose:", err)
		}
		os.Exit(1)
	}
}

func run(args []string) error {
	if len(args) == 0 || (args[0] != "up" && args[0] != "down" && args[0] != "images") {
		return fmt.Errorf("usage: plinth-compose up|down|images [flags] (-h for the flags)")
	}
	offset := composeup.DefaultOffset
	if v := os.Getenv("PLINTH_COMPOSE_PORT_OFFSET"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil {
			return fmt.Errorf("PLINTH_COMPOSE_PORT_OFFSET=%q is not a whole number", v)
		}
		offset = n
	}
	var o composeup.Options
	fs := flag.NewFlagSet("plinth-compose "+args[0], flag.ContinueOnError)
	fs.StringVar(&o.Root, "root", ".", "the repository (docker-compose.yaml's directory)")
	fs.StringVar(&o.Project, "project", "plinth", "compose project name: containers, volumes, network and the lvmd VG are named after it")
	fs.IntVar(&o.Offset, "port-offset", offset, "added to every published port (default: PLINTH_COMPOSE_PORT_OFFSET, else 1000)")
	fs.StringVar(&o.Subnet, "subnet", "", "the project network's IPv4 subnet instead of the file's 172.29.71.0/24 (a second stack)")
	fs.DurationVar(&o.Wait, "wait", 5*time.Minute, "how long up waits for every health check")
	fs.BoolVar(&o.Ceph, "ceph", true, "also run the ceph profile's dev Ceph cluster for stats (unless PLINTH_STATS_CEPH_URL names yours)")
	imagesOut := fs.String("out", "bin/images/kube.tar", "images: the archive to write")
	if err := fs.Parse(args[1:]); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	switch args[0] {
	case "down":
		return composeup.Down(ctx, o)
	case "images":
		return composeup.Images(ctx, o, *imagesOut)
	}
	st, err := composeup.Up(ctx, o)
	if err != nil {
		return err
	}
	fmt.Printf("\nPlinth is up (project %s): %d services healthy.\n", o.Project, len(st.Services))
	fmt.Printf("  Go gateway (gRPC, gRPC-Web, Connect, console): http://%s\n", st.GatewayGo)
	if st.Envoy {
		fmt.Printf("  Envoy gateway (gRPC): http://%s\n", st.Gateway)
	}
	switch {
	case os.Getenv("PLINTH_ADMIN_PASSWORD") != "" && st.PasswordFile == "":
		fmt.Println("  Sign in as admin with PLINTH_ADMIN_PASSWORD.")
	case st.PasswordFile != "":
		fmt.Printf("  Sign in as admin; the generated password is in %s (auth printed it once, at its first start).\n", st.PasswordFile)
	default:
		fmt.Printf("  The admin existed before this start: its password is the one set or printed then.\n")
	}
	fmt.Printf("  Ports: the file's, shifted by %d, on 127.0.0.1. Stop and remove everything: make compose-down\n", o.Offset)
	return nil
}
