// Package access decides what a Plinth user may do in a kaas cluster: the group of the client
// certificate GetCluster issues for the user's role, and the RBAC bindings that give each
// group its Kubernetes ClusterRole.
package access

import (
	"strings"
	"time"

	"github.com/plinth-dev/plinth/libs/platform/authz"
	"github.com/plinth-dev/plinth/services/kaas/internal/cluster"
	"github.com/plinth-dev/plinth/services/kaas/internal/pki"
)

// Grant is what one Plinth role holds in every kaas cluster: certificates in Group, which a
// ClusterRoleBinding of the same name binds to ClusterRole.
type Grant struct {
	Group       string
	ClusterRole string
}

// The grants. Kubernetes' own user-facing ClusterRoles: `view` reads namespaced objects but
// no Secrets; `admin` reads and changes namespaced objects, Secrets and namespaced RBAC, but
// no cluster-scoped object (nodes, namespaces, ClusterRoles, CRDs); `cluster-admin` is
// everything. None is system:masters, so removing a binding takes the right away again.
var grants = map[authz.Role]Grant{
	authz.Viewer:   {Group: "plinth:viewers", ClusterRole: "view"},
	authz.Operator: {Group: "plinth:operators", ClusterRole: "admin"},
	authz.Admin:    {Group: "plinth:admins", ClusterRole: "cluster-admin"},
}

// Of is the grant of role; false for a role kaas does not know (no kubeconfig).
func Of(role authz.Role) (Grant, bool) {
	g, ok := grants[role]
	return g, ok
}

// UserPrefix starts every user name kaas puts in a certificate, so that no Plinth username
// can ever name a system: user or another component.
const UserPrefix = "plinth:"

// DefaultTTL is how long a kubeconfig's certificate is valid when not configured.
const DefaultTTL = 8 * time.Hour

// MaxTTL bounds the configurable lifetime: certificates cannot be revoked, so a day at most.
const MaxTTL = 24 * time.Hour

// Credentials makes clusters' key material and, per call, the caller's kubeconfig
// (cluster.Credentials).
type Credentials struct {
	vault *pki.Vault
	ttl   time.Duration
	now   func() time.Time
}

// NewCredentials keeps key material in vault and issues kubeconfigs valid ttl (0: DefaultTTL).
func NewCredentials(vault *pki.Vault, ttl time.Duration) *Credentials {
	if ttl <= 0 {
		ttl = DefaultTTL
	}
	return &Credentials{vault: vault, ttl: ttl, now: time.Now}
}

// New makes a cluster's key material, sealed.
func (c *Credentials) New(name string) ([]byte, error) { return c.vault.New(name) }

// Kubeconfig is who's kubeconfig of the cluster at endpoint: a client certificate issued now
// for the caller's user in its role's group, valid the configured lifetime and never beyond
// the caller's token. A caller without a known role gets none (nil).
func (c *Credentials) Kubeconfig(sealed []byte, name, endpoint string, who cluster.Caller) ([]byte, error) {
	g, ok := Of(who.Role)
	if !ok {
		return nil, nil
	}
	notAfter := c.now().Add(c.ttl)
	if !who.Expires.IsZero() && who.Expires.Before(notAfter) {
		notAfter = who.Expires
	}
	user := who.Name
	if user == "" {
		user = who.ID
	}
	return c.vault.Kubeconfig(sealed, name, endpoint, pki.CertSpec{CommonName: UserPrefix + strings.TrimSpace(user),
		Orgs: []string{g.Group}, Client: true, NotAfter: notAfter})
}
