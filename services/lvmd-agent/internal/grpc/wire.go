package grpc

import (
	"fmt"
	"unicode/utf8"

	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"

	lvmdpb "github.com/plinth-dev/plinth/libs/api/lvmd"
	"github.com/plinth-dev/plinth/libs/platform/input"
)

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
