package upstreamcnpgi

import (
	"fmt"

	"google.golang.org/protobuf/reflect/protoreflect"
)

// maxDepth bounds the recursion of fill for recursive message types.
const maxDepth = 5

// filler sets every field of a message generically through protoreflect, so
// the same code fills upstream generated messages and our dynamic ones:
// scalars get values derived from the field number (negative for signed
// kinds, beyond 32 bits for 64-bit kinds), enums a non-zero value, messages
// are filled recursively, lists get two elements and maps two entries.
//
// variant picks the member set in each oneof (variant modulo the number of
// members), so running variants 0..width-1 sets every member once. Fields
// with explicit presence and a scalar kind are set to their zero value in
// even variants: a present false (bytes 20 00 for check_empty_wal_archive)
// must survive, which it only does when both sides track presence.
type filler struct {
	variant int
}

func (f filler) fill(m protoreflect.Message, depth int) {
	if depth > maxDepth {
		return
	}
	fields := m.Descriptor().Fields()
	for i := 0; i < fields.Len(); i++ {
		fd := fields.Get(i)
		if od := fd.ContainingOneof(); od != nil && !od.IsSynthetic() {
			if od.Fields().Get(f.variant%od.Fields().Len()) != fd {
				continue
			}
		}
		f.field(m, fd, depth)
	}
}

func (f filler) field(m protoreflect.Message, fd protoreflect.FieldDescriptor, depth int) {
	switch {
	case fd.IsMap():
		mp := m.Mutable(fd).Map()
		for seed := 1; seed <= 2; seed++ {
			val := scalar(fd.MapValue(), seed)
			if fd.MapValue().Message() != nil {
				val = mp.NewValue()
				f.fill(val.Message(), depth+1)
			}
			mp.Set(scalar(fd.MapKey(), seed).MapKey(), val)
		}
	case fd.IsList():
		list := m.Mutable(fd).List()
		for seed := 1; seed <= 2; seed++ {
			if fd.Message() != nil {
				elem := list.NewElement()
				f.fill(elem.Message(), depth+1)
				list.Append(elem)
			} else {
				list.Append(scalar(fd, seed))
			}
		}
	case fd.Message() != nil:
		f.fill(m.Mutable(fd).Message(), depth+1)
	default:
		seed := 1 + f.variant
		if fd.HasPresence() && f.variant%2 == 0 {
			seed = 0
		}
		m.Set(fd, scalar(fd, seed))
	}
}

// scalar is a value for a non-message field: the zero value for seed 0,
// else a non-zero value that differs by seed and field number.
func scalar(fd protoreflect.FieldDescriptor, seed int) protoreflect.Value {
	n := int64(seed) * (1000 + int64(fd.Number()))
	switch fd.Kind() {
	case protoreflect.BoolKind:
		return protoreflect.ValueOfBool(seed%2 == 1)
	case protoreflect.EnumKind:
		values := fd.Enum().Values()
		if seed == 0 || values.Len() < 2 {
			return protoreflect.ValueOfEnum(values.Get(0).Number())
		}
		return protoreflect.ValueOfEnum(values.Get(1 + (seed-1)%(values.Len()-1)).Number())
	case protoreflect.Int32Kind, protoreflect.Sint32Kind, protoreflect.Sfixed32Kind:
		return protoreflect.ValueOfInt32(int32(-n))
	case protoreflect.Uint32Kind, protoreflect.Fixed32Kind:
		return protoreflect.ValueOfUint32(uint32(n))
	case protoreflect.Int64Kind, protoreflect.Sint64Kind, protoreflect.Sfixed64Kind:
		return protoreflect.ValueOfInt64(-n << 32)
	case protoreflect.Uint64Kind, protoreflect.Fixed64Kind:
		return protoreflect.ValueOfUint64(uint64(n) << 32)
	case protoreflect.FloatKind:
		return protoreflect.ValueOfFloat32(float32(n) / 4)
	case protoreflect.DoubleKind:
		return protoreflect.ValueOfFloat64(float64(n) / 8)
	case protoreflect.StringKind:
		if seed == 0 {
			return protoreflect.ValueOfString("")
		}
		return protoreflect.ValueOfString(fmt.Sprintf("%s-%d-é", fd.Name(), seed))
	case protoreflect.BytesKind:
		if seed == 0 {
			return protoreflect.ValueOfBytes([]byte{})
		}
		return protoreflect.ValueOfBytes([]byte(fmt.Sprintf(`{"%s":%d}`+"\x00\xff", fd.Name(), seed)))
	default:
		// Message and group kinds never reach here: field() fills them.
		return protoreflect.Value{}
	}
}

// oneofWidth is the largest number of members of any oneof reachable from
// md: the number of variants needed to set each member once.
func oneofWidth(md protoreflect.MessageDescriptor, seen map[protoreflect.FullName]bool) int {
	if seen[md.FullName()] {
		return 0
	}
	seen[md.FullName()] = true
	width := 0
	for i := 0; i < md.Oneofs().Len(); i++ {
		if od := md.Oneofs().Get(i); !od.IsSynthetic() {
			width = max(width, od.Fields().Len())
		}
	}
	for i := 0; i < md.Fields().Len(); i++ {
		fd := md.Fields().Get(i)
		if fd.IsMap() {
			fd = fd.MapValue()
		}
		if fd.Message() != nil {
			width = max(width, oneofWidth(fd.Message(), seen))
		}
	}
	return width
}
