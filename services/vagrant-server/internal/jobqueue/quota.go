package jobqueue

import "fmt"

// JobsQuotaSetting is the setting that configures Options.MaxUnfinishedPerOwner. A refusal
// names it, so whoever reads one knows which limit was met and what an admin would raise.
const JobsQuotaSetting = "PLINTH_VAGRANT_MAX_QUEUED_JOBS_PER_USER"

// QuotaError is a job refused because its owner already holds Limit unfinished jobs —
// queued, assigned or running — or more (after the limit was lowered): nothing was queued.
// A job that completes, fails, expires or is canceled frees its place. It maps to
// ResourceExhausted.
type QuotaError struct {
	// Owner is whom the jobs count against (tokens.Caller.Owner).
	Owner string
	// Held is how many unfinished jobs the owner holds.
	Held, Limit int
}

func (e *QuotaError) Error() string {
	return fmt.Sprintf("quota: %s holds %d unfinished jobs, at most %d allowed (%s); wait for some to finish or cancel them",
		quoteID(e.Owner), e.Held, e.Limit, JobsQuotaSetting)
}
