package kubetest

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"regexp"
	"strings"
)

var forwardingRE = regexp.MustCompile(`Forwarding from 127\.0\.0\.1:(\d+) ->`)

// PortForward runs `kubectl port-forward` from a free loopback port to target's port (target
// as kubectl takes it: svc/NAME, deploy/NAME, pod/NAME) in namespace, and answers the local
// address once kubectl forwards. The forward ends with ctx, with stop, or when the pod it
// reaches goes (kubectl picks one pod of a Service or workload).
func PortForward(ctx context.Context, kubectl, kubeconfig, namespace, target string, port int) (addr string, stop func(), err error) {
	ctx, cancel := context.WithCancel(ctx)
	cmd := exec.CommandContext(ctx, kubectl, "-n", namespace, "port-forward", "--address", "127.0.0.1", target, fmt.Sprintf(":%d", port))
	cmd.Env = append(os.Environ(), "KUBECONFIG="+kubeconfig)
	out, err := cmd.StdoutPipe()
	if err != nil {
		cancel()
		return "", nil, err
	}
	cmd.Stderr = cmd.Stdout
	if err := cmd.Start(); err != nil {
		cancel()
		return "", nil, err
	}
	lines := bufio.NewScanner(out)
	var said []string
	for lines.Scan() {
		if m := forwardingRE.FindStringSubmatch(lines.Text()); m != nil {
			done := make(chan struct{})
			go func() { _, _ = io.Copy(io.Discard, out); _ = cmd.Wait(); close(done) }()
			return "127.0.0.1:" + m[1], func() { cancel(); <-done }, nil
		}
		said = append(said, lines.Text())
	}
	_ = cmd.Wait()
	cancel()
	return "", nil, fmt.Errorf("kubetest: kubectl port-forward %s/%s ended without forwarding: %s", namespace, target, strings.Join(said, "; "))
}
