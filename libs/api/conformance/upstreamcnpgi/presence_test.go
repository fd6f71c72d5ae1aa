package upstreamcnpgi

import (
	"bytes"
	"testing"

	"github.com/cloudnative-pg/cnpg-i/pkg/restore/job"
	"github.com/cloudnative-pg/cnpg-i/pkg/wal"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/dynamicpb"
)

// TestCheckEmptyWALArchivePresence pins the trap by its bytes: an operator on
// cnpg-i v0.6.0 always sends check_empty_wal_archive, also as false, and a
// plugin must tell that from an older operator that never sends it.
func TestCheckEmptyWALArchivePresence(t *testing.T) {
	ours := ourFiles(t)
	tests := []struct {
		name  string
		msg   proto.Message
		field protoreflect.FullName
		want  []byte // the whole encoding
	}{
		{"archive, false", &wal.WALArchiveRequest{CheckEmptyWalArchive: proto.Bool(false)},
			"cnpgi.wal.v1.WALArchiveRequest.check_empty_wal_archive", []byte{0x20, 0x00}},
		{"archive, true", &wal.WALArchiveRequest{CheckEmptyWalArchive: proto.Bool(true)},
			"cnpgi.wal.v1.WALArchiveRequest.check_empty_wal_archive", []byte{0x20, 0x01}},
		{"archive, absent", &wal.WALArchiveRequest{},
			"cnpgi.wal.v1.WALArchiveRequest.check_empty_wal_archive", []byte{}},
		{"restore job, false", &job.RestoreRequest{CheckEmptyWalArchive: proto.Bool(false)},
			"cnpgi.wal.v1.RestoreRequest.check_empty_wal_archive", []byte{0x10, 0x00}},
		{"restore job, absent", &job.RestoreRequest{},
			"cnpgi.wal.v1.RestoreRequest.check_empty_wal_archive", []byte{}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			data, err := proto.Marshal(tc.msg)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(data, tc.want) {
				t.Fatalf("upstream encodes % x, want % x", data, tc.want)
			}
			d, err := ours.FindDescriptorByName(tc.field)
			fd, ok := d.(protoreflect.FieldDescriptor)
			if err != nil || !ok {
				t.Fatalf("our field %s is missing", tc.field)
			}
			got := dynamicpb.NewMessage(fd.ContainingMessage())
			if err := proto.Unmarshal(data, got); err != nil {
				t.Fatal(err)
			}
			if got.Has(fd) != (len(tc.want) > 0) {
				t.Errorf("ours: present=%v after decoding % x", got.Has(fd), data)
			}
			again, err := proto.Marshal(got)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(again, tc.want) {
				t.Errorf("ours re-encodes % x, want % x", again, tc.want)
			}
		})
	}
}
