package backup

import (
	"context"
	"time"
)

// RetentionBudget bounds the retention run after a backup: deleting many objects on a slow
// store must not hold the backup call open indefinitely; the next backup finishes the job.
const RetentionBudget = 10 * time.Minute

// Retained is the outcome of the retention run that follows a backup.
type Retained struct {
	// Policy is the policy applied.
	Policy Policy
	// Report is what retention did; only complete when Err is nil.
	Report Report
	// Err is why retention did not finish. The backup it followed is stored all the same.
	Err error
}

// TakeAndRetain is a cluster's backup: Take, then, when the backup succeeded and the cluster
// has a retention policy, that policy applied to the store the backup went to, within
// RetentionBudget. A failed retention does not fail the backup — the backup is safely
// stored — it is logged and reported in Result.Retention, and the next backup tries again.
// A failed backup runs no retention: deleting older backups must never follow a backup that
// may not exist. Result.Retention is nil without a policy.
func (s *Service) TakeAndRetain(ctx context.Context, req Request, policy *Policy) (*Result, error) {
	res, err := s.Take(ctx, req)
	if err != nil || policy == nil {
		return res, err
	}
	res.Retention = s.retainAfterBackup(ctx, req.Target, *policy)
	return res, nil
}

func (s *Service) retainAfterBackup(ctx context.Context, t Target, p Policy) *Retained {
	ctx, cancel := context.WithTimeout(ctx, RetentionBudget)
	defer cancel()
	rep, err := s.Retain(ctx, t, p, false)
	if err != nil {
		s.log.WarnContext(ctx, "retention after the backup failed; the next backup retries it", "store", t.Store.Name,
			"server", t.Server, "policy", p.Spec(), "error", err)
	}
	return &Retained{Policy: p, Report: rep, Err: err}
}
