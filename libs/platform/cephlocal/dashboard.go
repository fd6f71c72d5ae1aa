package cephlocal

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"os"
	"strings"
	"time"
)

// DashboardPassword reads the dashboard administrator's password from its file.
func (c *Cluster) DashboardPassword() (string, error) {
	data, err := os.ReadFile(c.DashboardPasswordFile())
	return strings.TrimSpace(string(data)), err
}

// setUpDashboard waits for the dashboard module and makes DashboardUser an administrator with
// the password kept in DashboardPasswordFile (random, made by the first start): created in a
// new cluster, its password set again in an existing one. The module options were set before
// the mgr started; the user needs the module running.
func (c *Cluster) setUpDashboard(ctx context.Context) error {
	pwFile := c.DashboardPasswordFile()
	if _, err := os.Stat(pwFile); errors.Is(err, os.ErrNotExist) {
		secret := make([]byte, 18)
		_, _ = rand.Read(secret)
		if err := os.WriteFile(pwFile, []byte(base64.RawURLEncoding.EncodeToString(secret)), 0o600); err != nil {
			return err
		}
	}
	for {
		_, err := c.Run(ctx, "ceph", "dashboard", "ac-user-create", DashboardUser, "-i", pwFile, "administrator", "--force-password")
		if err != nil && strings.Contains(err.Error(), "already exists") {
			_, err = c.Run(ctx, "ceph", "dashboard", "ac-user-set-password", DashboardUser, "-i", pwFile, "--force-password")
		}
		if err == nil {
			break
		}
		select {
		case <-ctx.Done():
			return err
		case <-time.After(500 * time.Millisecond):
		}
	}
	return c.waitHTTP(ctx, c.DashboardURL()+"/api/health/minimal")
}
