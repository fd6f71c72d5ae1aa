package app_test

import (
	"testing"

	"google.golang.org/grpc/codes"

	lvmdpb "github.com/plinth-dev/plinth/libs/api/lvmd"
	volumespb "github.com/plinth-dev/plinth/libs/api/plinth/lvmd/v1"
)

// TestVolumeServiceDescribesVolumes reads volumes made by the agent on real volume groups
// through plinth.lvmd.v1.VolumeService: group, device path, exact size, activation, tags.
func TestVolumeServiceDescribesVolumes(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOptions{classes: 2, size: 4 << 30})
	a := e.start(t, e.config(t))
	vols := volumespb.NewVolumeServiceClient(a.conn)
	ctx := ctxT(t)
	if _, err := a.lv.CreateLV(ctx, &lvmdpb.CreateLVRequest{Name: "a", SizeGb: 1, Tags: []string{"team=db"}}); err != nil {
		t.Fatal(err)
	}
	if _, err := a.lv.CreateLV(ctx, &lvmdpb.CreateLVRequest{Name: "b", SizeGb: 2, DeviceClass: "hdd"}); err != nil {
		t.Fatal(err)
	}

	got, err := vols.GetVolume(ctx, &volumespb.GetVolumeRequest{Name: "b"})
	if err != nil {
		t.Fatal(err)
	}
	v, hdd := got.GetVolume(), e.vgs[1]
	if v.GetName() != "b" || v.GetDeviceClass() != "hdd" || v.GetVolumeGroup() != hdd.Name || v.GetDevicePath() != "/dev/"+hdd.Name+"/b" ||
		v.GetSizeBytes() != 2<<30 || v.GetInUseBy() != "" || got.GetDefaultBackupEndpoint() != "" {
		t.Fatalf("GetVolume without a class: %v", got)
	}
	// Activated where lvm can (device-mapper), with the device numbers of its node.
	if v.GetActive() != !hdd.MetadataOnly || v.GetActive() != (v.GetDevMajor() != 0) {
		t.Fatalf("activation: %v (metadata only: %v)", v, hdd.MetadataOnly)
	}
	list, err := vols.ListVolumes(ctx, &volumespb.ListVolumesRequest{})
	if err != nil || len(list.GetVolumes()) != 1 || list.GetVolumes()[0].GetName() != "a" || list.GetVolumes()[0].GetDeviceClass() != "ssd" ||
		list.GetVolumes()[0].GetTags()[0] != "team=db" || list.GetVolumes()[0].GetSizeBytes() != 1<<30 {
		t.Fatalf("ListVolumes of the default class: %v %v", list, err)
	}

	_, err = vols.GetVolume(ctx, &volumespb.GetVolumeRequest{Name: "a", DeviceClass: "hdd"})
	wantCode(t, err, codes.NotFound, "a")
	_, err = vols.GetVolume(ctx, &volumespb.GetVolumeRequest{Name: "nosuch"})
	wantCode(t, err, codes.NotFound, "nosuch")
	_, err = vols.GetVolume(ctx, &volumespb.GetVolumeRequest{Name: "a/b"})
	wantCode(t, err, codes.InvalidArgument, "name")
	_, err = vols.GetVolume(ctx, &volumespb.GetVolumeRequest{})
	wantCode(t, err, codes.InvalidArgument, "name")
	_, err = vols.GetVolume(ctx, &volumespb.GetVolumeRequest{Name: "a", DeviceClass: "nosuch"})
	wantCode(t, err, codes.NotFound, "device class")
	_, err = vols.ListVolumes(ctx, &volumespb.ListVolumesRequest{DeviceClass: "nosuch"})
	wantCode(t, err, codes.NotFound, "device class")
}
