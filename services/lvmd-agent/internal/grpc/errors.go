// Package grpc serves TopoLVM's lvmd protocol (proto.LVService, proto.VGService, with the
// fork's backups) over the volume rules and the backup jobs: validate → domain → toStatus.
package grpc

import (
	"context"
	"errors"
	"log/slog"

	smithyhttp "github.com/aws/smithy-go/transport/http"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/plinth-dev/plinth/libs/platform/grpcerr"
	"github.com/plinth-dev/plinth/libs/platform/input"
	"github.com/plinth-dev/plinth/libs/storage/encryption"
	"github.com/plinth-dev/plinth/libs/storage/objectstore"

	"github.com/plinth-dev/plinth/services/lvmd-agent/internal/backup"
	"github.com/plinth-dev/plinth/services/lvmd-agent/internal/lvm"
	"github.com/plinth-dev/plinth/services/lvmd-agent/internal/volume"
)

// toStatus maps domain errors to gRPC status errors in one place. Each code is chosen for
// what the caller (TopoLVM's node plugin, the backup controller, an operator with grpcurl)
// should do next; lvm's and the object store's own words stay in the log:
//   - unknown device class, volume, backup or job → NotFound, as lvmd answers: fix the request.
//   - not enough space → ResourceExhausted with free and requested bytes (lvmd's message).
//   - a shrink, a snapshot smaller than its source → OutOfRange: lvmd's answers; lvm itself
//     would shrink an inactive volume.
//   - a snapshot in a thick class → Unimplemented, as lvmd answers.
//   - a volume that exists with another size, or was not restored → AlreadyExists.
//   - wrong or missing encryption key, a backup larger than the volume, an unknown lvcreate
//     option class → InvalidArgument naming the field.
//   - a volume held by a backup or restore, a missing volume group or thin pool, settings lvm refuses,
//     an unusable manifest, a missing bucket, a layout only device-mapper can read →
//     FailedPrecondition: the node or the target must change first.
//   - credentials the object store refuses → PermissionDenied; an object store that cannot be
//     reached → Unavailable; both, and a missing bucket, said in words naming the bucket and
//     endpoint (backup.StoreError).
//   - a listed job that is not a complete backup, still runs, did not fail (dismiss), or was
//     recorded without its location → FailedPrecondition.
//   - restored bytes that fail their checksum or authentication → DataLoss.
//   - lvm hanging past its deadline, a job still running elsewhere → Unavailable: retry.
//   - anything else → grpcerr.Unexpected (context codes, transient → Unavailable, else
//     Internal with a fixed message; the cause is logged with attrs).
func toStatus(ctx context.Context, log *slog.Logger, err error, attrs ...any) error {
	if err == nil {
		return nil
	}
	var (
		classErr  *volume.ClassNotFoundError
		optErr    *volume.OptionClassNotFoundError
		noSpace   *volume.NoSpaceError
		shrink    *volume.ShrinkError
		exists    *volume.ExistsError
		busy      *volume.BusyError
		tooLong   *volume.NameTooLongError
		noPool    *volume.PoolMissingError
		thick     *volume.ThickSnapshotError
		snapSize  *volume.SnapshotSizeError
		keyErr    *backup.KeyMismatchError
		tooSmall  *backup.TooSmallError
		taken     *backup.PathTakenError
		jobErr    *backup.JobError
		decKeyErr *encryption.KeyError
		storeErr  *backup.StoreError
		notBackup *backup.NotBackupError
		sendErr   *smithyhttp.RequestSendError
	)
	switch {
	case errors.As(err, &classErr):
		return status.Error(codes.NotFound, "device class not found: "+input.Quote(classErr.Name))
	case errors.As(err, &optErr):
		// Unlike a device class, an option class is only looked up in lvmd.yaml: the request
		// (its StorageClass) names one the node does not have. TopoLVM answers Internal.
		return status.Error(codes.InvalidArgument, fieldOptionClass+": "+input.Quote(optErr.Name)+" is not an lvcreate option class of this node's lvmd.yaml")
	case errors.As(err, &noSpace):
		return status.Error(codes.ResourceExhausted, noSpace.Error())
	case errors.As(err, &shrink):
		return status.Error(codes.OutOfRange, shrink.Error())
	case errors.As(err, &snapSize):
		return status.Error(codes.OutOfRange, "size_bytes: "+snapSize.Error())
	case errors.As(err, &thick):
		return status.Error(codes.Unimplemented, thick.Error()) // lvmd's answer
	case errors.As(err, &noPool):
		log.ErrorContext(ctx, "a thin class's pool is missing", append(attrs, "error", err)...)
		return status.Error(codes.FailedPrecondition, "the device class's thin pool is missing on this node: "+noPool.Error())
	case errors.As(err, &exists):
		return status.Error(codes.AlreadyExists, exists.Error())
	case errors.As(err, &busy):
		return status.Error(codes.FailedPrecondition, busy.Error())
	case errors.As(err, &tooLong):
		// The client's mistake: which volume group a class uses is the node's, so say it.
		return status.Error(codes.InvalidArgument, "name: "+tooLong.Error())
	case errors.Is(err, volume.ErrVolumeNotFound):
		return status.Error(codes.NotFound, input.Truncate(err.Error(), 256)) // names are validated, never hostile
	case errors.Is(err, volume.ErrVolumeGroupMissing), errors.Is(err, lvm.ErrVGNotFound):
		log.ErrorContext(ctx, "a device class's volume group is missing", append(attrs, "error", err)...)
		return status.Error(codes.FailedPrecondition, "the device class's volume group is missing on this node")
	case errors.Is(err, volume.ErrRefused):
		log.ErrorContext(ctx, "lvm refused the device class's settings", append(attrs, "error", err)...)
		return status.Error(codes.FailedPrecondition, "lvm refused the device class's settings (stripe, lvcreate-options); see the agent's log")
	case errors.Is(err, lvm.ErrUnsupportedLayout):
		return status.Error(codes.FailedPrecondition, "the volume's layout can only be read through device-mapper, which this node lacks")
	case errors.Is(err, lvm.ErrTimeout):
		log.WarnContext(ctx, "lvm timed out", append(attrs, "error", err)...)
		return status.Error(codes.Unavailable, "lvm did not finish in time; retry")
	case errors.Is(err, backup.ErrJobNotFound):
		return status.Error(codes.NotFound, "job not found on this node")
	case errors.Is(err, backup.ErrNoBackup):
		return status.Error(codes.NotFound, err.Error())
	case errors.Is(err, backup.ErrKeyRequired):
		return status.Error(codes.InvalidArgument, err.Error())
	case errors.As(err, &keyErr):
		return status.Error(codes.InvalidArgument, keyErr.Error())
	case errors.As(err, &decKeyErr):
		return status.Error(codes.InvalidArgument, "data_source.s3.encryption_key: "+decKeyErr.Error())
	case errors.As(err, &tooSmall):
		return status.Error(codes.InvalidArgument, tooSmall.Error())
	case errors.Is(err, backup.ErrNotRestored):
		return status.Error(codes.AlreadyExists, err.Error())
	case errors.As(err, &taken):
		return status.Error(codes.AlreadyExists, taken.Error())
	case errors.Is(err, backup.ErrBadManifest):
		log.WarnContext(ctx, "unusable backup manifest", append(attrs, "error", err)...)
		return status.Error(codes.FailedPrecondition, "data_source.s3.path does not hold a backup this agent can restore; see the agent's log")
	case errors.Is(err, backup.ErrChecksum), errors.Is(err, encryption.ErrDecrypt):
		log.ErrorContext(ctx, "restored data failed verification", append(attrs, "error", err)...)
		return status.Error(codes.DataLoss, "the backup's data failed verification (checksum or authentication); the volume was not restored")
	case errors.As(err, &storeErr) && errors.Is(err, objectstore.ErrDenied):
		return status.Error(codes.PermissionDenied, storeErr.Error())
	case errors.As(err, &storeErr) && errors.Is(err, objectstore.ErrBucketMissing):
		return status.Error(codes.FailedPrecondition, storeErr.Error())
	case errors.As(err, &storeErr) && errors.As(err, &sendErr):
		log.WarnContext(ctx, "object store unreachable", append(attrs, "error", storeErr.Error())...)
		return status.Error(codes.Unavailable, storeErr.Error())
	case errors.As(err, &notBackup):
		return status.Error(codes.FailedPrecondition, notBackup.Error())
	case errors.Is(err, backup.ErrJobRunning), errors.Is(err, backup.ErrNotFailed), errors.Is(err, backup.ErrLocationUnknown),
		errors.Is(err, backup.ErrNoDefaultStore):
		return status.Error(codes.FailedPrecondition, err.Error())
	case errors.Is(err, objectstore.ErrDenied):
		return status.Error(codes.PermissionDenied, "the object store refused the credentials or the operation")
	case errors.Is(err, objectstore.ErrBucketMissing):
		return status.Error(codes.FailedPrecondition, "the bucket in data_source.s3.path does not exist")
	case errors.Is(err, backup.ErrElsewhere):
		return status.Error(codes.Unavailable, err.Error())
	case errors.As(err, &jobErr):
		return status.Error(codes.Aborted, "the restore failed: "+input.Truncate(jobErr.Message, 512))
	}
	return grpcerr.Unexpected(ctx, log, err, attrs...)
}
