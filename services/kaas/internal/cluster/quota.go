package cluster

import (
	"errors"
	"fmt"
)

// The settings that configure a Quota. Refusals name them, so that whoever reads one knows
// which limit was met and what an administrator would raise.
const (
	ClustersQuotaSetting = "PLINTH_KAAS_MAX_CLUSTERS_PER_USER"
	MachinesQuotaSetting = "PLINTH_KAAS_MAX_MACHINES_PER_USER"
)

// Owner is the user who created a cluster: the account of the CreateCluster call. Every
// machine the cluster's pools ask for counts against the owner's quota, whoever asks.
//
// Clusters created before owners were recorded have an empty owner, and so would a
// cluster created without an account (none reaches the API: every RPC needs a token). They
// are counted together as one owner's rather than not at all, so that no path escapes the
// quota.
type Owner struct {
	ID   string // the user's id at auth (a UUID); the quota is counted by it
	Name string // the username, for messages
}

// String names the owner in messages: "user alice".
func (o Owner) String() string {
	if o.ID == "" {
		return "clusters without a recorded owner"
	}
	return "user " + o.Name
}

// Usage is what one owner's clusters hold, as a quota counts it: clusters not being
// deleted, and the machines their pools not being deleted want (see Machines).
type Usage struct {
	Clusters, Machines int
}

// Quota bounds what one owner's clusters may hold; a zero limit is no limit. Deleting
// clusters and pools frees quota at once, and a change that wants fewer machines than
// before is always allowed, even over the limit (after the limit was lowered).
type Quota struct {
	MaxClusters int
	MaxMachines int
}

// Validate refuses a negative limit, naming its setting (0 is no limit).
func (q Quota) Validate() error {
	var errs []error
	if q.MaxClusters < 0 {
		errs = append(errs, fmt.Errorf("%s: is %d; at least 0 (0: no limit)", ClustersQuotaSetting, q.MaxClusters))
	}
	if q.MaxMachines < 0 {
		errs = append(errs, fmt.Errorf("%s: is %d; at least 0 (0: no limit)", MachinesQuotaSetting, q.MaxMachines))
	}
	return errors.Join(errs...)
}

// ErrQuota is wrapped by QuotaError; test with errors.Is.
var ErrQuota = errors.New("quota exceeded")

// QuotaError: the request would take Owner beyond the limit on What, which Setting
// configures. Owner holds Have; the request would add Adding.
type QuotaError struct {
	Owner               Owner
	What                string // "clusters" or "machines"
	Have, Limit, Adding int
	Setting             string
}

func (e *QuotaError) Error() string {
	return fmt.Sprintf("quota: %s %s %d of %d %s (%s); this request would add %d",
		e.Owner, haveOrHas(e.Owner), e.Have, e.Limit, e.What, e.Setting, e.Adding)
}

// Unwrap makes a QuotaError an ErrQuota.
func (e *QuotaError) Unwrap() error { return ErrQuota }

func haveOrHas(o Owner) string {
	if o.ID == "" {
		return "have"
	}
	return "has"
}
