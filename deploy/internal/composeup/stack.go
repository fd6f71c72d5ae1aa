package composeup

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// EnvoyImage is the Envoy gateway's image in docker-compose.yaml; where it is neither present
// nor pullable the gateway service is left out and the Go gateway serves alone.
const EnvoyImage = "envoyproxy/envoy:v1.40-latest"

// DefaultOffset puts the stack beside `make up` (4222, 5432, 7000-7339, 8080, 8180): Postgres
// on 6432, NATS on 5222, services on 8001-8203, the Go gateway on 9081.
const DefaultOffset = 1000

// Options say which stack: the compose file, the project (its containers, volumes and network
// are named after it) and how it is moved.
type Options struct {
	// Root is the repository (the compose file's directory); the override goes under
	// Root/.plinth/compose/<Project>/.
	Root    string
	File    string // default Root/docker-compose.yaml
	Project string // default plinth
	Offset  int
	// Subnet, when set, replaces the file's 172.29.71.0/24 (for a second stack beside one).
	Subnet string
	// Wait bounds `up --wait`.
	Wait time.Duration
	// Ceph also runs the ceph profile's dev cluster and points stats at it (CephEnv), unless
	// PLINTH_STATS_CEPH_URL names another cluster.
	Ceph bool
	// Docker is the docker client (default "docker" on PATH); its environment is this
	// process's (DOCKER_CONFIG names the compose plugin's directory).
	Docker string
	Out    io.Writer
}

var projectRE = regexp.MustCompile(`^[a-z0-9][a-z0-9_-]{0,40}$`)

func (o *Options) defaults() error {
	if o.Root == "" {
		o.Root = "."
	}
	abs, err := filepath.Abs(o.Root)
	if err != nil {
		return err
	}
	o.Root = abs
	if o.File == "" {
		o.File = filepath.Join(o.Root, "docker-compose.yaml")
	}
	if o.Project == "" {
		o.Project = "plinth"
	}
	if !projectRE.MatchString(o.Project) {
		return fmt.Errorf("-project %q: lower-case letters, digits, _ and -, starting with a letter or digit, at most 41", o.Project)
	}
	if o.Wait == 0 {
		o.Wait = 5 * time.Minute
	}
	if o.Docker == "" {
		o.Docker = "docker"
	}
	if o.Out == nil {
		o.Out = os.Stdout
	}
	return nil
}

// VG is the lvmd-agent's loop-backed volume group: named after the project, so it is neither
// `make up`'s (plinth) nor a test's, and two projects have their own.
func VG(project string) string { return "compose_" + strings.ReplaceAll(project, "-", "_") }

// Dir is where the project's generated files are.
func (o *Options) Dir() string { return filepath.Join(o.Root, ".plinth", "compose", o.Project) }

func (o *Options) overridePath() string { return filepath.Join(o.Dir(), "override.yaml") }

// compose runs `docker compose` for the project with the file and the override.
func (o *Options) compose(ctx context.Context, stdout io.Writer, args ...string) error {
	base := []string{"compose", "-p", o.Project, "-f", o.File}
	if _, err := os.Stat(o.overridePath()); err == nil {
		base = append(base, "-f", o.overridePath())
	}
	base = append(base, "--profile", "go-gateway")
	env := append(os.Environ(), "PLINTH_COMPOSE_LVMD_VG="+VG(o.Project))
	if o.Ceph {
		base = append(base, "--profile", "ceph")
		env = append(env, CephEnv(os.Getenv)...)
	}
	cmd := exec.CommandContext(ctx, o.Docker, append(base, args...)...)
	cmd.Dir = o.Root
	cmd.Env = env
	cmd.Stdout = stdout
	var stderr bytes.Buffer
	cmd.Stderr = io.MultiWriter(&stderr, o.Out)
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("docker compose %s: %w", strings.Join(args, " "), err)
	}
	return nil
}

// CephEnv are the variables that point the compose file's stats at the ceph profile's dev
// cluster (its dashboard, user plinth, the password it writes to the ceph-dashboard volume),
// or none when PLINTH_STATS_CEPH_URL is set: the user named their own cluster.
func CephEnv(getenv func(string) string) []string {
	if getenv("PLINTH_STATS_CEPH_URL") != "" {
		return nil
	}
	return []string{"PLINTH_STATS_CEPH_URL=http://ceph:7303", "PLINTH_STATS_CEPH_USER=plinth",
		"PLINTH_STATS_CEPH_PASSWORD_FILE=/run/plinth/ceph-dashboard/password"}
}

// docker runs the docker client and returns its output.
func (o *Options) docker(ctx context.Context, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, o.Docker, args...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return string(out), fmt.Errorf("docker %s: %w: %s", strings.Join(args, " "), err, strings.TrimSpace(stderr.String()))
	}
	return string(out), nil
}

// Preflight checks that an engine answers and the compose plugin is there.
func (o *Options) Preflight(ctx context.Context) error {
	if err := o.defaults(); err != nil {
		return err
	}
	if _, err := o.docker(ctx, "version", "--format", "{{.Server.Version}}"); err != nil {
		return fmt.Errorf("no Docker engine answers (here: tools/docker/dockerd.sh start): %w", err)
	}
	if _, err := o.docker(ctx, "compose", "version"); err != nil {
		return fmt.Errorf("no compose plugin (make tools-docker, then DOCKER_CONFIG=bin/docker-config): %w", err)
	}
	return nil
}

// Stack is what Up started.
type Stack struct {
	Services []string
	Ports    []Published
	// Envoy is false when the Envoy gateway was left out (its image cannot be had).
	Envoy bool
	// GatewayGo is the Go gateway's host address; Gateway Envoy's (when it runs).
	GatewayGo, Gateway string
	// PasswordFile holds the generated admin password (empty when PLINTH_ADMIN_PASSWORD was set
	// or the admin existed before this stack's first start).
	PasswordFile string
}

// Up builds the images and starts every service — the ceph profile's when o.Ceph, Envoy's
// when its image can be had — waiting for every health check.
func Up(ctx context.Context, o Options) (*Stack, error) {
	if err := o.Preflight(ctx); err != nil {
		return nil, err
	}
	p, err := LoadFile(ctx, o.File, environ())
	if err != nil {
		return nil, err
	}
	st := &Stack{Envoy: o.envoyImage(ctx)}
	for _, name := range slices.Sorted(maps.Keys(p.Services)) {
		s := p.Services[name]
		if (slices.Contains(s.Profiles, "ceph") && !o.Ceph) || (name == "gateway" && !st.Envoy) {
			continue
		}
		st.Services = append(st.Services, name)
	}
	all, err := ShiftPorts(p, o.Offset)
	if err != nil {
		return nil, err
	}
	var netw *Network
	if o.Subnet != "" {
		n, err := MoveNetwork(p, o.Subnet)
		if err != nil {
			return nil, err
		}
		netw = &n
	}
	for _, pp := range all {
		if !slices.Contains(st.Services, pp.Service) {
			continue
		}
		st.Ports = append(st.Ports, pp)
		addr := net.JoinHostPort(pp.HostIP, strconv.Itoa(pp.Host))
		switch {
		case pp.Service == "gateway-go" && pp.Target == 8080:
			st.GatewayGo = addr
		case pp.Service == "gateway" && pp.Target == 8080:
			st.Gateway = addr
		}
	}
	if err := os.MkdirAll(o.Dir(), 0o700); err != nil {
		return nil, err
	}
	if err := os.WriteFile(o.overridePath(), Override(all, BuiltServices(p), netw), 0o600); err != nil {
		return nil, err
	}
	running, err := o.containers(ctx)
	if err != nil {
		return nil, err
	}
	if len(running) == 0 {
		// A fresh start: say which port is taken before compose fails half-way.
		for _, pp := range st.Ports {
			l, err := net.Listen("tcp", net.JoinHostPort(pp.HostIP, strconv.Itoa(pp.Host)))
			if err != nil {
				return nil, fmt.Errorf("%s's port %d (published %d+offset %d) is taken: choose another PLINTH_COMPOSE_PORT_OFFSET: %w",
					pp.Service, pp.Host, pp.Host-o.Offset, o.Offset, err)
			}
			_ = l.Close()
		}
	}
	if !st.Envoy {
		fmt.Fprintf(o.Out, "plinth-compose: Envoy's image %s can be neither found nor pulled: leaving out the gateway service; the Go gateway (gateway-go) serves the suite\n", EnvoyImage)
	}
	fmt.Fprintf(o.Out, "plinth-compose: project %s, ports shifted by %d (%s), services: %s\n",
		o.Project, o.Offset, o.overridePath(), strings.Join(st.Services, " "))
	args := []string{"up", "--build", "--detach", "--wait", "--wait-timeout", strconv.Itoa(int(o.Wait.Seconds())), "--remove-orphans"}
	if err := o.compose(ctx, o.Out, append(args, st.Services...)...); err != nil {
		return st, fmt.Errorf("%w (see `docker compose -p %s logs`; make compose-down removes what started)", err, o.Project)
	}
	st.PasswordFile, err = o.savePassword(ctx)
	return st, err
}

var firstUserRE = regexp.MustCompile(`First user created: admin / (\S+)`)

// savePassword copies the generated admin password from auth's output (printed once, outside
// the JSON log) into a file only the user can read, and names the file.
func (o *Options) savePassword(ctx context.Context) (string, error) {
	var logs bytes.Buffer
	if err := o.compose(ctx, &logs, "logs", "--no-color", "--no-log-prefix", "auth"); err != nil {
		return "", err
	}
	path := filepath.Join(o.Dir(), "admin-password")
	m := firstUserRE.FindSubmatch(logs.Bytes())
	if m == nil {
		// auth's container was recreated since (its output with it): the file from the first
		// start still holds the password, until down removes the database with it.
		if _, err := os.Stat(path); err == nil {
			return path, nil
		}
		return "", nil
	}
	return path, os.WriteFile(path, append(m[1], '\n'), 0o600)
}

// envoyImage reports whether Envoy's image is here or can be pulled.
func (o *Options) envoyImage(ctx context.Context) bool {
	if _, err := o.docker(ctx, "image", "inspect", EnvoyImage); err == nil {
		return true
	}
	pctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	_, err := o.docker(pctx, "pull", "-q", EnvoyImage)
	return err == nil
}

// containers lists the project's containers, running or not.
func (o *Options) containers(ctx context.Context) ([]string, error) {
	return o.list(ctx, "ps", "-a", "--format", "{{.Names}}")
}

func (o *Options) list(ctx context.Context, args ...string) ([]string, error) {
	out, err := o.docker(ctx, append(append([]string{}, args...), "--filter", "label=com.docker.compose.project="+o.Project)...)
	if err != nil {
		return nil, err
	}
	return strings.Fields(out), nil
}

// Down removes the lvmd-agent's volume group and loop device, then the project's containers,
// networks and volumes, and checks that none is left.
func Down(ctx context.Context, o Options) error {
	if err := o.Preflight(ctx); err != nil {
		return err
	}
	var errs []error
	vols, err := o.list(ctx, "volume", "ls", "--format", "{{.Name}}")
	if err != nil {
		return err
	}
	var pv []backingFile
	if slices.Contains(vols, o.Project+"_lvm") {
		pv = o.volumeFiles(ctx)
		if removed, err := o.removeVG(ctx); err != nil {
			fmt.Fprintf(o.Out, "plinth-compose: the agent could not remove its volume group (%v): removing it from the host\n", err)
		} else if !removed {
			fmt.Fprintf(o.Out, "plinth-compose: lvmd-agent is not running: removing its volume group from the host\n")
		}
	}
	errs = append(errs, o.compose(ctx, o.Out, "--profile", "ceph", "down", "--volumes", "--remove-orphans", "--timeout", "20"))
	if devs := loopDevices(pv); len(devs) > 0 {
		errs = append(errs, o.detachLoops(ctx, devs))
	}
	left := o.leftovers(ctx)
	for _, d := range loopDevices(pv) {
		left = append(left, "loop device "+d)
	}
	if len(left) > 0 {
		errs = append(errs, fmt.Errorf("project %s left behind: %s", o.Project, strings.Join(left, ", ")))
	}
	if err := errors.Join(errs...); err != nil {
		return err
	}
	_ = os.RemoveAll(o.Dir())
	fmt.Fprintf(o.Out, "plinth-compose: project %s removed: no container, volume, network, volume group or loop device left\n", o.Project)
	return nil
}

// removeVG removes the agent's volume group and loop device from inside the running agent:
// the kernel names a loop device's file by its path in the mount namespace that attached it,
// so only there does dev-vg -remove find the device (a one-off container would not). It
// returns false when the agent is not running (detachLoops then does it from the host).
func (o *Options) removeVG(ctx context.Context) (bool, error) {
	running, err := o.list(ctx, "ps", "--format", "{{.Label \"com.docker.compose.service\"}}")
	if err != nil || !slices.Contains(running, "lvmd-agent") {
		return false, err
	}
	err = o.compose(ctx, o.Out, "exec", "-T", "lvmd-agent", "/usr/local/bin/plinth-service",
		"dev-vg", "-remove", "-dir", "/var/lib/plinth-lvm/"+VG(o.Project), "-vg", VG(o.Project))
	return err == nil, err
}

// detachLoops removes the project's volume group and detaches its loop devices from the host
// (lvm2 and losetup, as root), for when the agent was not running to do it.
func (o *Options) detachLoops(ctx context.Context, devs []string) error {
	var errs []error
	if out, err := exec.CommandContext(ctx, "lvm", "vgremove", "-ff", "-y", VG(o.Project)).CombinedOutput(); err != nil && !strings.Contains(string(out), "not found") {
		errs = append(errs, fmt.Errorf("vgremove %s: %w: %s", VG(o.Project), err, strings.TrimSpace(string(out))))
	}
	for _, d := range devs {
		_ = exec.CommandContext(ctx, "lvm", "pvremove", "-ff", "-y", d).Run()
		if out, err := exec.CommandContext(ctx, "losetup", "-d", d).CombinedOutput(); err != nil {
			errs = append(errs, fmt.Errorf("losetup -d %s: %w: %s", d, err, strings.TrimSpace(string(out))))
		}
	}
	return errors.Join(errs...)
}

// leftovers names what of the project is still there: containers, volumes and networks.
func (o *Options) leftovers(ctx context.Context) []string {
	var left []string
	for _, q := range [][]string{
		{"ps", "-a", "--format", "container {{.Names}}"},
		{"volume", "ls", "--format", "volume {{.Name}}"},
		{"network", "ls", "--format", "network {{.Name}}"},
	} {
		out, err := o.docker(ctx, append(q, "--filter", "label=com.docker.compose.project="+o.Project)...)
		if err != nil {
			left = append(left, err.Error())
			continue
		}
		sc := bufio.NewScanner(strings.NewReader(out))
		for sc.Scan() {
			if l := strings.TrimSpace(sc.Text()); l != "" {
				left = append(left, l)
			}
		}
	}
	return left
}

// backingFile identifies a loop device's backing file (device and inode): the kernel names it
// by its path inside the container that attached it, so only these say it is the volume's.
type backingFile struct{ dev, ino uint64 }

// volumeFiles returns the identities of the backing files in the project's lvm volume (any
// pv0.img in it, whatever directory an older layout used), when this process can see the
// engine's volumes (a local engine, as root).
func (o *Options) volumeFiles(ctx context.Context) []backingFile {
	mp, err := o.docker(ctx, "volume", "inspect", "-f", "{{.Mountpoint}}", o.Project+"_lvm")
	if err != nil {
		return nil
	}
	mp = strings.TrimSpace(mp)
	files, _ := filepath.Glob(filepath.Join(mp, "*", "pv0.img"))
	files = append(files, filepath.Join(mp, "pv0.img"))
	var out []backingFile
	for _, f := range files {
		var st unix.Stat_t
		if unix.Stat(f, &st) == nil {
			out = append(out, backingFile{dev: st.Dev, ino: st.Ino})
		}
	}
	return out
}

// loopDevices names the loop devices attached to any of files.
func loopDevices(files []backingFile) []string {
	devs, _ := filepath.Glob("/dev/loop[0-9]*")
	var out []string
	for _, d := range devs {
		fd, err := unix.Open(d, unix.O_RDONLY|unix.O_CLOEXEC, 0)
		if err != nil {
			continue
		}
		info, err := unix.IoctlLoopGetStatus64(fd)
		_ = unix.Close(fd)
		if err != nil {
			continue
		}
		for _, f := range files {
			if info.Inode == f.ino && unix.Major(info.Device) == unix.Major(f.dev) && unix.Minor(info.Device) == unix.Minor(f.dev) {
				out = append(out, d)
			}
		}
	}
	return out
}

func environ() map[string]string {
	env := map[string]string{}
	for _, kv := range os.Environ() {
		if k, v, ok := strings.Cut(kv, "="); ok {
			env[k] = v
		}
	}
	return env
}
