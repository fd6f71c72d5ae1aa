package grpc

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"syscall"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/plinth-dev/plinth/libs/platform/input"
	"github.com/plinth-dev/plinth/libs/storage/encryption"
	"github.com/plinth-dev/plinth/libs/storage/objectstore"

	"github.com/plinth-dev/plinth/services/lvmd-agent/internal/backup"
	"github.com/plinth-dev/plinth/services/lvmd-agent/internal/lvm"
	"github.com/plinth-dev/plinth/services/lvmd-agent/internal/volume"
)

func TestToStatus(t *testing.T) {
	lvmErr := func(kind error) error {
		return fmt.Errorf("create: %w", &lvm.Error{Kind: kind, Command: "lvcreate", ExitCode: 5, Detail: "/dev/loop7: secret lvm detail"})
	}
	for _, tt := range []struct {
		err  error
		code codes.Code
		msg  string
	}{
		{&volume.ClassNotFoundError{Name: "nvme"}, codes.NotFound, `device class not found: "nvme"`},
		{&volume.OptionClassNotFoundError{Name: "raid9"}, codes.InvalidArgument, `lvcreate_option_class: "raid9" is not an lvcreate option class`},
		{&volume.NoSpaceError{Free: 1, Requested: 2}, codes.ResourceExhausted, "free=1, requested=2"},
		{&volume.ShrinkError{Current: 2, Requested: 1}, codes.OutOfRange, "shrinking"},
		{&volume.ExistsError{Name: "v", Size: 1, Request: 2}, codes.AlreadyExists, "already exists"},
		{&volume.SnapshotSizeError{Source: 2, Requested: 1}, codes.OutOfRange, "size_bytes: requested size 1 is smaller than the source volume's 2"},
		{&volume.ThickSnapshotError{DeviceClass: "ssd"}, codes.Unimplemented, "device class ssd is not thin"},
		{&volume.PoolMissingError{Pool: "pool0", VolumeGroup: "vg"}, codes.FailedPrecondition, "thin pool is missing on this node: thin pool pool0 does not exist in volume group vg"},
		{&volume.BusyError{Volume: "v", By: "backup b"}, codes.FailedPrecondition, "in use by backup b"},
		{fmt.Errorf("%w: v", volume.ErrVolumeNotFound), codes.NotFound, "logical volume not found: v"},
		{fmt.Errorf("x: %w: %w", volume.ErrVolumeGroupMissing, lvmErr(lvm.ErrVGNotFound)), codes.FailedPrecondition, "volume group is missing"},
		{fmt.Errorf("x: %w: %w", volume.ErrRefused, lvmErr(lvm.ErrInvalid)), codes.FailedPrecondition, "refused the device class"},
		{lvmErr(lvm.ErrTimeout), codes.Unavailable, "retry"},
		{lvmErr(lvm.ErrFailed), codes.Internal, "internal error"},
		{fmt.Errorf("layout: %w", lvm.ErrUnsupportedLayout), codes.FailedPrecondition, "device-mapper"},
		{backup.ErrNoBackup, codes.NotFound, "no backup at data_source.s3.path"},
		{fmt.Errorf("get: %w", backup.ErrJobNotFound), codes.NotFound, "job not found"},
		{backup.ErrKeyRequired, codes.InvalidArgument, "encryption_key"},
		{&backup.KeyMismatchError{Backup: "aa", Given: "bb"}, codes.InvalidArgument, "encryption_key"},
		{&encryption.KeyError{KeyID: "aa"}, codes.InvalidArgument, "encryption_key"},
		{&backup.TooSmallError{Backup: 2 << 30, Volume: 1 << 30}, codes.InvalidArgument, "size_gb"},
		{&volume.NameTooLongError{Len: 121, Max: 120, VolumeGroup: "plinth"}, codes.InvalidArgument, "name: is 121 bytes; lvm allows at most 120"},
		{backup.ErrNotRestored, codes.AlreadyExists, "not restored"},
		{&backup.PathTakenError{Backup: "b"}, codes.AlreadyExists, "already holds backup"},
		{fmt.Errorf("%w: bad json", backup.ErrBadManifest), codes.FailedPrecondition, "does not hold a backup"},
		{fmt.Errorf("restore: %w", backup.ErrChecksum), codes.DataLoss, "failed verification"},
		{fmt.Errorf("chunk 3: %w", encryption.ErrDecrypt), codes.DataLoss, "failed verification"},
		{fmt.Errorf("get: %w", objectstore.ErrDenied), codes.PermissionDenied, "refused the credentials"},
		{fmt.Errorf("get: %w", objectstore.ErrBucketMissing), codes.FailedPrecondition, "bucket"},
		{backup.ErrElsewhere, codes.Unavailable, "retry later"},
		{&backup.JobError{Message: "boom"}, codes.Aborted, "boom"},
		{input.Invalid("name", "is required"), codes.InvalidArgument, "name: is required"},
		{context.Canceled, codes.Canceled, ""},
		{fmt.Errorf("dial: %w", syscall.ECONNREFUSED), codes.Unavailable, ""},
		{errors.New("/var/lib/secret path"), codes.Internal, "internal error"},
	} {
		var logs bytes.Buffer
		err := toStatus(context.Background(), slog.New(slog.NewTextHandler(&logs, nil)), tt.err, "volume", "v")
		st := status.Convert(err)
		if st.Code() != tt.code || !strings.Contains(st.Message(), tt.msg) {
			t.Errorf("%v → %v %q, want %v containing %q", tt.err, st.Code(), st.Message(), tt.code, tt.msg)
		}
		if strings.Contains(st.Message(), "secret") || strings.Contains(st.Message(), "/dev/loop7") {
			t.Errorf("%v leaked its cause to the client: %q", tt.err, st.Message())
		}
	}
	if toStatus(context.Background(), slog.Default(), nil) != nil {
		t.Error("nil must stay nil")
	}
}
