package cephlocal

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"time"
)

// Status is the part of `ceph status -f json` this package and its users read: what the mon
// says, independently of the mgr.
type Status struct {
	FSID   string `json:"fsid"`
	Health struct {
		Status string `json:"status"`
		// Checks are the active health checks by name (POOL_APP_NOT_ENABLED, OSD_FULL, …).
		Checks map[string]struct {
			Summary struct {
				Message string `json:"message"`
			} `json:"summary"`
		} `json:"checks"`
	} `json:"health"`
	QuorumNames []string `json:"quorum_names"`
	OSDMap      struct {
		Num int `json:"num_osds"`
		Up  int `json:"num_up_osds"`
		In  int `json:"num_in_osds"`
	} `json:"osdmap"`
	PGMap struct {
		ByState []struct {
			State string `json:"state_name"`
			Count int    `json:"count"`
		} `json:"pgs_by_state"`
		PGs   int   `json:"num_pgs"`
		Pools int   `json:"num_pools"`
		Total int64 `json:"bytes_total"`
	} `json:"pgmap"`
	MgrMap struct {
		Available bool `json:"available"`
	} `json:"mgrmap"`
}

// Healthy reports HEALTH_OK, the OSD up and in, the mgr available and every PG active+clean.
func (s Status) Healthy() bool {
	clean := 0
	for _, st := range s.PGMap.ByState {
		if st.State == "active+clean" {
			clean += st.Count
		}
	}
	return s.Health.Status == "HEALTH_OK" && s.OSDMap.Up == 1 && s.OSDMap.In == 1 &&
		s.MgrMap.Available && s.PGMap.PGs > 0 && clean == s.PGMap.PGs
}

// Status reads `ceph status`.
func (c *Cluster) Status(ctx context.Context) (Status, error) {
	var st Status
	out, err := c.Run(ctx, "ceph", "--connect-timeout", "5", "status", "-f", "json")
	if err != nil {
		return st, err
	}
	if err := json.Unmarshal([]byte(out), &st); err != nil {
		return st, fmt.Errorf("cephlocal: ceph status: %w", err)
	}
	return st, nil
}

// WaitHealthy waits until the cluster is Healthy (again, after a caller changed it), at most
// the Options' ReadyTimeout.
func (c *Cluster) WaitHealthy(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, c.opts.ReadyTimeout)
	defer cancel()
	return c.waitHealthy(ctx)
}

func (c *Cluster) waitHealthy(ctx context.Context) error {
	var last string
	for {
		if err := c.exitedDaemon(); err != nil {
			return fmt.Errorf("cephlocal: %w", err)
		}
		st, err := c.Status(ctx)
		if err == nil && st.Healthy() {
			return nil
		}
		last = fmt.Sprintf("%+v %v", st, err)
		select {
		case <-ctx.Done():
			return fmt.Errorf("cephlocal: not healthy after %v: %s", c.opts.ReadyTimeout, last)
		case <-time.After(300 * time.Millisecond):
		}
	}
}

// waitHTTP waits until url answers an HTTP request at all (any status).
func (c *Cluster) waitHTTP(ctx context.Context, url string) error {
	client := &http.Client{Timeout: 5 * time.Second}
	var err error
	for {
		var resp *http.Response
		if resp, err = client.Get(url); err == nil {
			_ = resp.Body.Close()
			return nil
		}
		if exited := c.exitedDaemon(); exited != nil {
			return exited
		}
		select {
		case <-ctx.Done():
			return errors.Join(err, ctx.Err())
		case <-time.After(300 * time.Millisecond):
		}
	}
}
