package jobqueue

import (
	"context"
	"fmt"
	"path"
	"strings"

	"github.com/plinth-dev/plinth/libs/api/hashicorp/vagrant"
	"github.com/plinth-dev/plinth/libs/platform/input"
)

// validateNew checks a job about to be queued: it has no id yet, a target runner and an
// operation this server knows. It returns an *input.Error naming the field or an *UnknownOperationError.
func validateNew(job *vagrant.Job) error {
	if job == nil {
		return &input.Error{Field: "job", Reason: "required"}
	}
	if job.GetId() != "" {
		return &input.Error{Field: "job.id", Reason: "must be empty: the server assigns the id when the job is queued"}
	}
	switch t := job.GetTargetRunner().GetTarget().(type) {
	case *vagrant.Ref_Runner_Any:
	case *vagrant.Ref_Runner_Id:
		if t.Id.GetId() == "" {
			return &input.Error{Field: "job.target_runner.id.id", Reason: "required: the id of the runner that must run the job (or set target_runner.any)"}
		}
	default:
		return &input.Error{Field: "job.target_runner", Reason: "required: set any (any runner) or id (one runner)"}
	}
	if operationName(job) == "" {
		if num := unknownOperation(job); num != 0 {
			return &UnknownOperationError{FieldNumber: int32(num)}
		}
		return &input.Error{Field: "job.operation", Reason: "required: set one of noop, auth, docs, validate, command, init, init_basis, init_project"}
	}
	if err := validateLabels(job.GetLabels()); err != nil {
		return err
	}
	if git := job.GetDataSource().GetGit(); git != nil {
		if git.GetUrl() == "" {
			return &input.Error{Field: "job.data_source.git.url", Reason: "required: the repository to clone"}
		}
		if p := git.GetPath(); p != "" && (path.IsAbs(p) || strings.Contains(p, "..")) {
			return &input.Error{Field: "job.data_source.git.path", Reason: "must be a relative path inside the repository without \"..\""}
		}
	}
	return nil
}

// Bounds of a job's labels: every list of jobs (ListJobs, the console's Jobs page, events)
// carries them, so a job with 100,000 labels (1.29 MB) was downloaded again at every poll.
// Keys have the bound of every map key (255 bytes, checked for the whole request).
const (
	MaxLabels          = 64
	MaxLabelValueBytes = 512
)

// validateLabels refuses more than MaxLabels labels, an empty key, and a value over its bound,
// naming the label.
func validateLabels(labels map[string]string) error {
	if len(labels) > MaxLabels {
		return &input.Error{Field: "job.labels", Reason: fmt.Sprintf("at most %d labels, got %d", MaxLabels, len(labels))}
	}
	for k, v := range labels {
		switch {
		case k == "":
			return &input.Error{Field: "job.labels", Reason: "a label key must not be empty"}
		case len(v) > MaxLabelValueBytes:
			return &input.Error{Field: "job.labels[" + input.Truncate(k, 32) + "]", Reason: fmt.Sprintf("longer than %d bytes", MaxLabelValueBytes)}
		}
	}
	return nil
}

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
