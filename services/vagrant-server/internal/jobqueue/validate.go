package jobqueue

import (
	"context"
	"fmt"

	"github.com/plinth-dev/plinth/libs/api/hashicorp/vagrant"
)

// targetRunnerID is the runner a valid job is targeted at; "" means any runner.
func targetRunnerID(job *vagrant.Job) string {
	return job.GetTargetRunner().GetId().GetId()
}

// Validation is the answer to ValidateJob.
type Validation struct {
	// Valid is true when the job could be queued as it is.
	Valid bool
	// Err says why it could not: an *input.Error (InvalidArgument) or an
	// *UnknownOperationError (Unimplemented). Nil when Valid.
	Err error
	// Assignable is true when an online runner could take the job now (see the package
	// comment for the rules). Always false for an invalid job or when not checked.
	Assignable bool
}

// Validate checks a new job as Queue would, without queueing it (upstream looked the job up
// by id, which a new job does not have, so its ValidateJob always failed). With
// checkAssignable it also reports whether a registered, online runner could take the job at
// this moment: a point-in-time answer that promises nothing about when it will run.
func (q *Queue) Validate(ctx context.Context, job *vagrant.Job, checkAssignable bool) (Validation, error) {
	if err := validateNew(job); err != nil {
		return Validation{Err: err}, nil
	}
	v := Validation{Valid: true}
	if !checkAssignable {
		return v, nil
	}
	err := q.pool.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM runners
		WHERE online
		  AND (id = $1 OR ($1 = '' AND NOT by_id_only))
		  AND (cardinality(component_tokens) = 0 OR $2::text[] <@ component_tokens))`,
		targetRunnerID(job), requiredTokens(job)).Scan(&v.Assignable)
	if err != nil {
		return Validation{}, fmt.Errorf("check assignability: %w", err)
	}
	return v, nil
}
