package grpc

import (
	"context"
	"fmt"
	"log/slog"
	"unicode/utf8"

	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"

	lvmdpb "github.com/plinth-dev/plinth/libs/api/lvmd"
	"github.com/plinth-dev/plinth/libs/platform/input"
	"github.com/plinth-dev/plinth/services/lvmd-agent/internal/backup"
	"github.com/plinth-dev/plinth/services/lvmd-agent/internal/deviceclass"
	"github.com/plinth-dev/plinth/services/lvmd-agent/internal/volume"
)

// LVServer implements proto.LVService for both generations of its wire (see decodeCreateLV and
// lv_service.go): validate → volume.Service or backup.Runner → toStatus.
type LVServer struct {
	volumes   *volume.Service
	jobs      *backup.Runner
	s3Default *S3Default
	log       *slog.Logger
}

// NewLVServer serves volumes and jobs. s3Default, when not nil, completes backup and restore
// requests that name no S3 endpoint and no credentials.
func NewLVServer(volumes *volume.Service, jobs *backup.Runner, s3Default *S3Default, log *slog.Logger) *LVServer {
	return &LVServer{volumes: volumes, jobs: jobs, s3Default: s3Default, log: log}
}

// CreateLV creates a volume, empty or (with data_source.s3) restored from a backup. raw holds
// the request's bytes, of either generation, as unknown fields.
func (s *LVServer) CreateLV(ctx context.Context, raw *lvmdpb.Empty) (*lvmdpb.CreateLVResponse, error) {
	req, err := decodeCreateLV(raw.ProtoReflect().GetUnknown())
	if err != nil {
		return nil, err
	}
	if err := lvName(fieldName, req.name); err != nil {
		return nil, err
	}
	if err := className(req.deviceClass); err != nil {
		return nil, err
	}
	if err := tags(req.tags); err != nil {
		return nil, err
	}
	if err := input.String(fieldOptionClass, req.optionClass, deviceclass.MaxOptionClassNameLen); err != nil {
		return nil, err
	}
	size, err := sizeOf(req.sizeGB, req.sizeBytes, false)
	if err != nil {
		return nil, err
	}
	create := volume.CreateRequest{Name: req.name, Size: size, Tags: req.tags, DeviceClass: req.deviceClass, OptionClass: req.optionClass}
	var vol volume.Volume
	if ds := req.dataSource; ds != nil {
		target, err := s.s3Default.target(fieldS3, ds.GetS3())
		if err != nil {
			return nil, err
		}
		vol, err = s.jobs.Restore(ctx, backup.RestoreRequest{Volume: create, Target: target, Synchronous: ds.GetSynchronousRestore()})
		if err != nil {
			return nil, toStatus(ctx, s.log, err, "volume", req.name, "target", target)
		}
	} else if vol, _, err = s.volumes.Create(ctx, create); err != nil {
		return nil, toStatus(ctx, s.log, err, "volume", req.name, "device_class", input.Quote(req.deviceClass))
	}
	return &lvmdpb.CreateLVResponse{Volume: toLogicalVolume(vol)}, nil
}

// RemoveLV removes a volume; one that does not exist is already removed.
func (s *LVServer) RemoveLV(ctx context.Context, req *lvmdpb.RemoveLVRequest) (*lvmdpb.Empty, error) {
	if err := lvName(fieldName, req.GetName()); err != nil {
		return nil, err
	}
	if err := className(req.GetDeviceClass()); err != nil {
		return nil, err
	}
	if err := s.volumes.Remove(ctx, req.GetDeviceClass(), req.GetName()); err != nil {
		return nil, toStatus(ctx, s.log, err, "volume", req.GetName(), "device_class", input.Quote(req.GetDeviceClass()))
	}
	return &lvmdpb.Empty{}, nil
}

// ResizeLV grows a volume: to exactly size_gb (the same size a no-op, a smaller one
// OutOfRange: lvmd's rule), or to at least size_bytes (a volume already that large is left
// as it is: TopoLVM v0.36.5's rule). The answer carries the size after the call; the fork's
// clients read it as Empty.
func (s *LVServer) ResizeLV(ctx context.Context, req *lvmdpb.ResizeLVRequest) (*lvmdpb.ResizeLVResponse, error) {
	if err := lvName(fieldName, req.GetName()); err != nil {
		return nil, err
	}
	if err := className(req.GetDeviceClass()); err != nil {
		return nil, err
	}
	size, err := sizeOf(req.GetSizeGb(), req.GetSizeBytes(), true)
	if err != nil {
		return nil, err
	}
	resize := volume.ResizeRequest{DeviceClass: req.GetDeviceClass(), Name: req.GetName(), Size: size, AtLeast: req.GetSizeBytes() != 0}
	_, after, err := s.volumes.Resize(ctx, resize)
	if err != nil {
		return nil, toStatus(ctx, s.log, err, "volume", req.GetName(), "device_class", input.Quote(req.GetDeviceClass()))
	}
	return &lvmdpb.ResizeLVResponse{SizeBytes: int64(after)}, nil
}

// CreateLVSnapshot makes a thin snapshot of a thin volume, activated read-only ("ro") or
// read-write ("rw"), of size_bytes or size_gb (at least the source's; 0 is the source's):
// TopoLVM v0.13's call, which its node plugin makes for a VolumeSnapshot and a PVC cloned from
// one.
func (s *LVServer) CreateLVSnapshot(ctx context.Context, req *lvmdpb.CreateLVSnapshotRequest) (*lvmdpb.CreateLVSnapshotResponse, error) {
	if err := lvName(fieldName, req.GetName()); err != nil {
		return nil, err
	}
	if err := lvName(fieldSource, req.GetSourceVolume()); err != nil {
		return nil, err
	}
	if err := className(req.GetDeviceClass()); err != nil {
		return nil, err
	}
	if err := tags(req.GetTags()); err != nil {
		return nil, err
	}
	readOnly, err := accessType(req.GetAccessType())
	if err != nil {
		return nil, err
	}
	size, err := sizeOf(req.GetSizeGb(), req.GetSizeBytes(), true) // 0: the source's size
	if err != nil {
		return nil, err
	}
	snap, _, err := s.volumes.Snapshot(ctx, volume.SnapshotRequest{Name: req.GetName(), DeviceClass: req.GetDeviceClass(),
		Source: req.GetSourceVolume(), Tags: req.GetTags(), Size: size, ReadOnly: readOnly})
	if err != nil {
		return nil, toStatus(ctx, s.log, err, "volume", req.GetName(), "source", req.GetSourceVolume(), "device_class", input.Quote(req.GetDeviceClass()))
	}
	return &lvmdpb.CreateLVSnapshotResponse{Snapshot: toLogicalVolume(snap)}, nil
}

// CreateBackup starts a backup of volume_handle to data_source.s3, or reports the state of
// the one already started under this name.
func (s *LVServer) CreateBackup(ctx context.Context, req *lvmdpb.CreateBackupRequest) (*lvmdpb.CreateBackupResponse, error) {
	b := req.GetBackup()
	if b == nil {
		return nil, input.Invalid("backup", "is required")
	}
	if err := backupName("backup.name", b.GetName()); err != nil {
		return nil, err
	}
	if err := lvName("backup.volume_handle", b.GetVolumeHandle()); err != nil {
		return nil, err
	}
	target, err := s.s3Default.target("backup.data_source.s3", b.GetDataSource().GetS3())
	if err != nil {
		return nil, err
	}
	job, err := s.jobs.Backup(ctx, backup.BackupRequest{Name: b.GetName(), VolumeHandle: b.GetVolumeHandle(), Target: target})
	if err != nil {
		return nil, toStatus(ctx, s.log, err, "backup", input.Quote(b.GetName()), "volume", b.GetVolumeHandle(), "target", target)
	}
	return &lvmdpb.CreateBackupResponse{BackupState: toBackupState(job)}, nil
}

func toBackupState(j backup.Job) *lvmdpb.BackupState {
	st := &lvmdpb.BackupState{Name: j.Name, Msg: j.Message}
	switch j.State {
	case backup.Complete:
		st.State = lvmdpb.StateType_COMPLETE
	case backup.Failed:
		st.State = lvmdpb.StateType_ERROR
	default:
		st.State = lvmdpb.StateType_INPROGRESS
		st.Msg = fmt.Sprintf("copied %d of %d bytes", j.BytesDone, j.SizeBytes)
	}
	return st
}

// toLogicalVolume answers both generations: size_gb (whole GiB, rounded down as TopoLVM
// v0.23 to v0.36.4's lvmd did) for the fork's clients, size_bytes, path and attr for
// upstream's.
func toLogicalVolume(v volume.Volume) *lvmdpb.LogicalVolume {
	return &lvmdpb.LogicalVolume{Name: v.Name, SizeGb: v.Size >> 30, DevMajor: v.Major, DevMinor: v.Minor, Tags: v.Tags,
		SizeBytes: int64(v.Size), Path: v.Path, Attr: v.Attr}
}

// Two generations of TopoLVM's CreateLVRequest reach the same method, /proto.LVService/CreateLV,
// and differ in field 5: the backup fork's data_source (a DataSource message) and upstream's
// lvcreate_option_class (a string, since v0.18). Both are length-delimited, so the generated
// decoder of either would take the other's bytes for its own. The rule that tells them apart
// reads the request's top-level fields before decoding:
//
//   - field 5 whose bytes are empty or start with 0x08 or 0x12 is a DataSource: an encoded
//     DataSource is nothing but its fields 1 (synchronous_restore, tag byte 0x08) and 2 (s3,
//     tag byte 0x12). An option class name is printable text (lvmd.yaml allows letters,
//     digits and - _ . / only), so it never starts with either byte.
//   - any other field 5 is an option class name;
//   - size_bytes (field 6) is upstream's (v0.23+); the fork never had it, so size_bytes beside
//     a DataSource fits neither wire;
//   - without field 5 both wires are the same bytes.
//
// A field with another wire type than both generations give it fits neither wire either. Each
// refusal is InvalidArgument naming the fields.

// createLVCall is a CreateLV request of either generation, decoded.
type createLVCall struct {
	name, deviceClass string
	tags              []string
	// sizeGB and sizeBytes as sent (0 when absent: proto3 does not send zeros).
	sizeGB    uint64
	sizeBytes int64
	// optionClass is upstream's lvcreate_option_class; dataSource the fork's restore.
	optionClass string
	dataSource  *lvmdpb.DataSource
}

// createLVFields are the wire types both generations give CreateLVRequest's fields.
var createLVFields = map[protowire.Number]struct {
	name string
	typ  protowire.Type
}{
	1: {"name", protowire.BytesType},
	2: {"size_gb", protowire.VarintType},
	3: {"tags", protowire.BytesType},
	4: {"device_class", protowire.BytesType},
	5: {"data_source or lvcreate_option_class", protowire.BytesType},
	6: {"size_bytes", protowire.VarintType},
}

// decodeCreateLV applies the rule above to a CreateLV request's bytes.
func decodeCreateLV(raw []byte) (createLVCall, error) {
	var dataSource, optionClass, sizeBytes bool
	for b := raw; len(b) > 0; {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return createLVCall{}, notEitherWire("the request is not a protobuf message")
		}
		b = b[n:]
		if f, known := createLVFields[num]; known && f.typ != typ {
			return createLVCall{}, notEitherWire(fmt.Sprintf("field %d (%s) has wire type %d where both send %d", num, f.name, typ, f.typ))
		}
		switch v, _ := protowire.ConsumeBytes(b); {
		case num == 5 && isDataSource(v):
			dataSource = true
		case num == 5:
			optionClass = true
			fallthrough
		case num == 1 || num == 3 || num == 4:
			// proto3 strings must be UTF-8: say which field is not.
			if field := createLVFields[num].name; !utf8.Valid(v) {
				if num == 5 {
					field = "lvcreate_option_class"
				}
				return createLVCall{}, input.Invalid(field, "must be valid UTF-8")
			}
		case num == 6:
			sizeBytes = true
		}
		m := protowire.ConsumeFieldValue(num, typ, b)
		if m < 0 {
			return createLVCall{}, notEitherWire(fmt.Sprintf("field %d is cut short", num))
		}
		b = b[m:]
	}
	switch {
	case dataSource && optionClass:
		return createLVCall{}, notEitherWire("field 5 holds both a DataSource (data_source) and a name (lvcreate_option_class)")
	case dataSource && sizeBytes:
		return createLVCall{}, notEitherWire("data_source (the fork's restore, field 5) comes with size_gb; size_bytes (field 6) is upstream TopoLVM's, which has no data_source")
	case dataSource:
		var req lvmdpb.CreateLVRequest
		if err := proto.Unmarshal(raw, &req); err != nil {
			return createLVCall{}, notEitherWire("data_source: not a DataSource message")
		}
		return createLVCall{name: req.GetName(), deviceClass: req.GetDeviceClass(), tags: req.GetTags(), sizeGB: req.GetSizeGb(),
			dataSource: req.GetDataSource()}, nil
	}
	var req lvmdpb.OptionClassCreateLVRequest
	if err := proto.Unmarshal(raw, &req); err != nil {
		return createLVCall{}, notEitherWire("not a CreateLVRequest")
	}
	return createLVCall{name: req.GetName(), deviceClass: req.GetDeviceClass(), tags: req.GetTags(), sizeGB: req.GetSizeGb(),
		sizeBytes: req.GetSizeBytes(), optionClass: req.GetLvcreateOptionClass()}, nil
}

// isDataSource reports whether field 5's bytes are an encoded DataSource (see above).
func isDataSource(v []byte) bool { return len(v) == 0 || v[0] == 0x08 || v[0] == 0x12 }

// notEitherWire is the refusal of a CreateLV request that fits neither generation.
func notEitherWire(why string) error {
	return input.Invalid("CreateLVRequest", "fits neither the fork's wire (size_gb, data_source) nor upstream TopoLVM's (size_bytes, lvcreate_option_class): %s", why)
}
