package grpc

import (
	"context"

	lvmdpb "github.com/plinth-dev/plinth/libs/api/lvmd"
	jobspb "github.com/plinth-dev/plinth/libs/api/plinth/lvmd/v1"
	"github.com/plinth-dev/plinth/libs/platform/input"
	"github.com/plinth-dev/plinth/libs/storage/encryption"

	"github.com/plinth-dev/plinth/services/lvmd-agent/internal/backup"
	"github.com/plinth-dev/plinth/services/lvmd-agent/internal/volume"
)

// RestoreBackup makes a new volume from a complete backup of this node: validate → read the
// backup's job → backup.Runner.RestoreBackup (which reads the manifest before it creates
// anything) → toStatus.
func (s *JobServer) RestoreBackup(ctx context.Context, req *jobspb.RestoreBackupRequest) (*jobspb.RestoreBackupResponse, error) {
	if req.GetBackupJobId() <= 0 {
		return nil, input.Invalid("backup_job_id", "must be a backup's job id (Job.id, a positive number)")
	}
	if err := lvName(fieldName, req.GetName()); err != nil {
		return nil, err
	}
	if err := className(req.GetDeviceClass()); err != nil {
		return nil, err
	}
	if req.GetSizeBytes() > maxGB<<30 {
		return nil, input.Invalid(fieldSizeBytes, "%d is more than the %d bytes any volume group can hold", req.GetSizeBytes(), uint64(maxGB<<30))
	}
	if err := input.String("encryption_key", req.GetEncryptionKey(), maxKeyLen); err != nil {
		return nil, err
	}
	if k := req.GetEncryptionKey(); k != "" {
		if _, err := encryption.ParseKey(k); err != nil {
			return nil, input.Invalid("encryption_key", "must be 32 bytes, base64 or raw (the key the backup was made with)")
		}
	}
	if err := credentials(req.GetCredentials()); err != nil {
		return nil, err
	}
	from, err := s.runner.Listed(ctx, req.GetBackupJobId())
	if err != nil {
		return nil, toStatus(ctx, s.log, err, "rpc", "RestoreBackup", "backup_job_id", req.GetBackupJobId())
	}
	if err := backup.RestorableBackup("backup_job_id", from); err != nil {
		return nil, toStatus(ctx, s.log, err, "rpc", "RestoreBackup", "backup_job_id", from.ID)
	}
	size := req.GetSizeBytes()
	if size == 0 {
		size = from.SizeBytes
	}
	if size < from.SizeBytes {
		return nil, input.Invalid(fieldSizeBytes, "the backup holds %d bytes (%d GiB); the new volume needs at least that, not %d",
			from.SizeBytes, (from.SizeBytes+1<<30-1)>>30, size)
	}
	target, err := s.storeOf(from, req.GetCredentials(), req.GetEncryptionKey())
	if err != nil {
		return nil, toStatus(ctx, s.log, err, "rpc", "RestoreBackup", "backup_job_id", from.ID)
	}
	job, err := s.runner.RestoreBackup(ctx, from, backup.RestoreRequest{
		Volume: volume.CreateRequest{Name: req.GetName(), Size: size, DeviceClass: req.GetDeviceClass()}, Target: target})
	if err != nil {
		return nil, toStatus(ctx, s.log, err, "rpc", "RestoreBackup", "backup_job_id", from.ID, "volume", req.GetName(), "target", target)
	}
	return &jobspb.RestoreBackupResponse{Job: jobPB(job)}, nil
}

// DeleteBackup deletes a backup's objects and its job.
func (s *JobServer) DeleteBackup(ctx context.Context, req *jobspb.DeleteBackupRequest) (*jobspb.DeleteBackupResponse, error) {
	if req.GetBackupJobId() <= 0 {
		return nil, input.Invalid("backup_job_id", "must be a backup's job id (Job.id, a positive number)")
	}
	if err := credentials(req.GetCredentials()); err != nil {
		return nil, err
	}
	j, err := s.runner.Listed(ctx, req.GetBackupJobId())
	if err != nil {
		return nil, toStatus(ctx, s.log, err, "rpc", "DeleteBackup", "backup_job_id", req.GetBackupJobId())
	}
	var target backup.Target
	if j.Kind == backup.KindBackup && j.Store.Known() {
		if target, err = s.storeOf(j, req.GetCredentials(), ""); err != nil {
			return nil, toStatus(ctx, s.log, err, "rpc", "DeleteBackup", "backup_job_id", j.ID)
		}
	}
	n, err := s.runner.DeleteBackup(ctx, j, target)
	if err != nil {
		return nil, toStatus(ctx, s.log, err, "rpc", "DeleteBackup", "backup_job_id", j.ID, "target", target)
	}
	return &jobspb.DeleteBackupResponse{ObjectsDeleted: uint32(n)}, nil
}

// DismissJob removes a failed job from the list.
func (s *JobServer) DismissJob(ctx context.Context, req *jobspb.DismissJobRequest) (*jobspb.DismissJobResponse, error) {
	if req.GetId() <= 0 {
		return nil, input.Invalid("id", "must be a job id (Job.id, a positive number)")
	}
	if err := s.runner.Dismiss(ctx, req.GetId()); err != nil {
		return nil, toStatus(ctx, s.log, err, "rpc", "DismissJob", "id", req.GetId())
	}
	return &jobspb.DismissJobResponse{}, nil
}

// credentials checks a request's store credentials: bounded, UTF-8, both keys or neither.
func credentials(c *jobspb.StoreCredentials) error {
	for _, f := range []struct {
		field, v string
		max      int
	}{
		{"credentials.access_key_id", c.GetAccessKeyId(), maxCredLen},
		{"credentials.secret_access_key", c.GetSecretAccessKey(), maxCredLen},
		{"credentials.session_token", c.GetSessionToken(), maxTokenLen},
	} {
		if err := input.String(f.field, f.v, f.max); err != nil {
			return err
		}
	}
	switch {
	case c.GetAccessKeyId() != "" && c.GetSecretAccessKey() == "":
		return input.Invalid("credentials.secret_access_key", "is required with an access key id")
	case c.GetAccessKeyId() == "" && (c.GetSecretAccessKey() != "" || c.GetSessionToken() != ""):
		return input.Invalid("credentials.access_key_id", "is required with a secret access key or session token")
	}
	return nil
}

// storeOf is the target of job j's backup: its recorded store, reached with the agent's own
// credentials when it is the default store, else with the caller's.
func (s *JobServer) storeOf(j backup.Job, c *jobspb.StoreCredentials, key string) (backup.Target, error) {
	ref := j.Store
	if !ref.Known() {
		return backup.Target{}, backup.ErrLocationUnknown
	}
	src := &lvmdpb.DataSource_S3{Path: ref.Bucket + "/" + ref.Prefix, EncryptionKey: key}
	if ref.Default {
		if s.s3 == nil {
			if c.GetAccessKeyId() == "" {
				return backup.Target{}, backup.ErrNoDefaultStore
			}
		} else if c.GetAccessKeyId() == "" {
			return s.s3.target("backup", src)
		}
		if ref.Endpoint == "" && s.s3 != nil {
			ref.Endpoint = s.s3.Endpoint
		}
	}
	if c.GetAccessKeyId() == "" {
		return backup.Target{}, input.Invalid("credentials.access_key_id", "the backup is in a store that is not the agent's own (%s): give its access key id and secret", j.Location)
	}
	src.Endpoint, src.VerifyTls = ref.Endpoint, ref.VerifyTLS
	src.AccessKeyId, src.SecretAccessKey, src.SessionToken = c.GetAccessKeyId(), c.GetSecretAccessKey(), c.GetSessionToken()
	return toTarget("credentials", src)
}
