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

// Machines is how many machines v counts against its owner's quota: the desired counts of
// its pools not being deleted, the control plane's included (each is a machine somewhere);
// none for a cluster being deleted. Machines being released are not counted: they are
// going, and nothing asks for more of them.
func Machines(v View) int {
	if v.Deleting {
		return 0
	}
	n := 0
	for _, p := range v.Pools {
		if !p.Deleting {
			n += p.Count
		}
	}
	return n
}

// AdmitNew refuses a new cluster v whose owner's other clusters hold others, when v would
// take the owner beyond a limit.
func (q Quota) AdmitNew(v View, others Usage) error {
	if q.MaxClusters > 0 && others.Clusters+1 > q.MaxClusters {
		return &QuotaError{Owner: v.Owner, What: "clusters", Have: others.Clusters, Limit: q.MaxClusters, Adding: 1, Setting: ClustersQuotaSetting}
	}
	return q.admitMachines(v.Owner, others.Machines, Machines(v))
}

// AdmitChange refuses a change of a cluster from before to after that makes it want more
// machines than before and would take its owner (whose other clusters hold others) beyond
// the machine limit. A change that wants no more machines is always allowed.
func (q Quota) AdmitChange(before, after View, others Usage) error {
	was, will := Machines(before), Machines(after)
	if will <= was {
		return nil
	}
	return q.admitMachines(before.Owner, others.Machines+was, will-was)
}

func (q Quota) admitMachines(owner Owner, have, adding int) error {
	if q.MaxMachines > 0 && have+adding > q.MaxMachines {
		return &QuotaError{Owner: owner, What: "machines", Have: have, Limit: q.MaxMachines, Adding: adding, Setting: MachinesQuotaSetting}
	}
	return nil
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
