package kubetest

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/plinth-dev/plinth/libs/platform/ports"
)

const (
	// startTimeout bounds each component's start. On two busy cores with other tests running,
	// an apiserver that is healthy can take 20 s; one that takes longer is stuck.
	startTimeout = 90 * time.Second

	// startAttempts: a start that loses the port race is retried with fresh ports.
	startAttempts = 3
)

// freePorts returns n distinct free ports below the ephemeral range.
func freePorts(n int) ([]int, error) {
	p, err := ports.Free(n)
	if err != nil {
		return nil, fmt.Errorf("kubetest: %w", err)
	}
	return p, nil
}

// withFreshPorts runs start with n new ports until it succeeds or fails for another reason
// than a lost port race.
func withFreshPorts(n int, start func(ports []int) error) error {
	var err error
	for range startAttempts {
		var ports []int
		if ports, err = freePorts(n); err != nil {
			return err
		}
		if err = start(ports); !errors.Is(err, errPortTaken) {
			return err
		}
	}
	return err
}

// startReady starts a component and waits until ready answers; one that never gets ready
// is stopped.
func startReady(name, logPath, binary string, args []string, ready func(ctx context.Context) error) (*process, error) {
	p, err := startProcess(name, logPath, binary, args...)
	if err != nil {
		return nil, err
	}
	if err := waitReady(p, ready); err != nil {
		p.stop()
		return nil, err
	}
	return p, nil
}

// waitReady polls ready until it succeeds, p exits, or startTimeout passes.
func waitReady(p *process, ready func(ctx context.Context) error) error {
	deadline := time.Now().Add(startTimeout)
	for {
		if done, err := p.exited(); done {
			return p.failure(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		err := ready(ctx)
		cancel()
		if err == nil {
			return nil
		}
		if time.Now().After(deadline) {
			return p.failure(fmt.Errorf("%s not ready after %s: %w", p.name, startTimeout, err))
		}
		time.Sleep(100 * time.Millisecond)
	}
}
