package upstreamcnpgi

import (
	"encoding/json"
	"fmt"
	"reflect"
	"testing"

	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/reflect/protoregistry"
	"google.golang.org/protobuf/types/dynamicpb"
)

// TestSameDefinitions: ours declares exactly the messages and enums upstream
// declares, under the same full names.
func TestSameDefinitions(t *testing.T) {
	upMsgs, upEnums := definitions(protoregistry.GlobalFiles)
	ourMsgs, ourEnums := definitions(ourFiles(t))
	if len(upMsgs) == 0 {
		t.Fatal("no upstream CNPG-I messages registered: are the cnpg-i packages linked?")
	}
	if got, want := names(ourMsgs), names(upMsgs); got != want {
		t.Errorf("messages differ\nours:\n%s\nupstream:\n%s", got, want)
	}
	if got, want := names(ourEnums), names(upEnums); got != want {
		t.Errorf("enums differ\nours:\n%s\nupstream:\n%s", got, want)
	}
}

// TestEnumValuesMatch: every enum has the same value names and numbers.
func TestEnumValuesMatch(t *testing.T) {
	ours := ourFiles(t)
	_, upEnums := definitions(protoregistry.GlobalFiles)
	for _, up := range upEnums {
		d, err := ours.FindDescriptorByName(up.FullName())
		our, ok := d.(protoreflect.EnumDescriptor)
		if err != nil || !ok {
			t.Errorf("enum %s: missing in ours", up.FullName())
			continue
		}
		if got, want := enumValues(our), enumValues(up); !reflect.DeepEqual(got, want) {
			t.Errorf("enum %s: ours %v, upstream %v", up.FullName(), got, want)
		}
	}
}

func enumValues(ed protoreflect.EnumDescriptor) map[string]protoreflect.EnumNumber {
	out := map[string]protoreflect.EnumNumber{}
	for i := 0; i < ed.Values().Len(); i++ {
		out[string(ed.Values().Get(i).Name())] = ed.Values().Get(i).Number()
	}
	return out
}

// TestRoundTripEveryMessage fills every upstream message generically,
// decodes its bytes into ours and back, and the same starting from ours.
// Decoding must leave no unknown fields (a field number or type mismatch
// would park data there and still round-trip), the JSON forms must agree
// (names, json_name, enum names), and the final message must equal the
// first.
func TestRoundTripEveryMessage(t *testing.T) {
	ours := ourFiles(t)
	upMsgs, _ := definitions(protoregistry.GlobalFiles)
	for _, upDesc := range upMsgs {
		t.Run(string(upDesc.FullName()), func(t *testing.T) {
			upType, err := protoregistry.GlobalTypes.FindMessageByName(upDesc.FullName())
			if err != nil {
				t.Fatalf("upstream Go type not registered: %v", err)
			}
			d, err := ours.FindDescriptorByName(upDesc.FullName())
			ourDesc, ok := d.(protoreflect.MessageDescriptor)
			if err != nil || !ok {
				t.Fatalf("missing in ours")
			}
			ourType := dynamicpb.NewMessageType(ourDesc)
			variants := max(2, oneofWidth(upDesc, map[protoreflect.FullName]bool{}))
			covered := map[protoreflect.FieldNumber]bool{}
			for v := range variants {
				src := upType.New()
				filler{variant: v}.fill(src, 0)
				src.Range(func(fd protoreflect.FieldDescriptor, _ protoreflect.Value) bool {
					covered[fd.Number()] = true
					return true
				})
				if err := roundTrip(src.Interface(), ourType, upType); err != nil {
					t.Errorf("variant %d, upstream→ours→upstream: %v", v, err)
				}
				start := ourType.New()
				filler{variant: v}.fill(start, 0)
				if err := roundTrip(start.Interface(), upType, ourType); err != nil {
					t.Errorf("variant %d, ours→upstream→ours: %v", v, err)
				}
			}
			if n := upDesc.Fields().Len(); len(covered) != n {
				t.Errorf("the filler set %d of %d fields: the round trip would prove less than it claims", len(covered), n)
			}
		})
	}
}

// roundTrip encodes src, decodes it as the other side's type, encodes that
// and decodes it back as src's type. It returns the first way the trip was
// not lossless, or nil.
func roundTrip(src proto.Message, other, same protoreflect.MessageType) error {
	mid, err := transcode(src, other)
	if err != nil {
		return err
	}
	back, err := transcode(mid, same)
	if err != nil {
		return err
	}
	if !proto.Equal(src, back) {
		return fmt.Errorf("not lossless\nsent     %v\nreceived %v", src, back)
	}
	got, err := jsonTree(mid)
	if err != nil {
		return err
	}
	want, err := jsonTree(src)
	if err != nil {
		return err
	}
	if !reflect.DeepEqual(got, want) {
		return fmt.Errorf("JSON forms differ\nreceiver %v\nsender   %v", got, want)
	}
	return nil
}

// transcode marshals from and unmarshals the bytes into a new message of
// type into, failing on fields the receiver does not know.
func transcode(from proto.Message, into protoreflect.MessageType) (proto.Message, error) {
	data, err := proto.MarshalOptions{Deterministic: true}.Marshal(from)
	if err != nil {
		return nil, fmt.Errorf("marshal %s: %w", from.ProtoReflect().Descriptor().FullName(), err)
	}
	to := into.New().Interface()
	if err := proto.Unmarshal(data, to); err != nil {
		return nil, fmt.Errorf("unmarshal %s: %w", into.Descriptor().FullName(), err)
	}
	if path := unknownFields(to.ProtoReflect()); path != "" {
		return nil, fmt.Errorf("%s decoded into unknown fields: the two sides disagree on numbers or types", path)
	}
	return to, nil
}

// unknownFields returns the full name of the first message in the tree that
// holds unknown fields, or "".
func unknownFields(m protoreflect.Message) string {
	if len(m.GetUnknown()) > 0 {
		return string(m.Descriptor().FullName())
	}
	found := ""
	m.Range(func(fd protoreflect.FieldDescriptor, v protoreflect.Value) bool {
		switch {
		case fd.IsMap() && fd.MapValue().Message() != nil:
			v.Map().Range(func(_ protoreflect.MapKey, mv protoreflect.Value) bool {
				found = unknownFields(mv.Message())
				return found == ""
			})
		case fd.IsList() && fd.Message() != nil:
			for i := 0; i < v.List().Len() && found == ""; i++ {
				found = unknownFields(v.List().Get(i).Message())
			}
		case !fd.IsMap() && !fd.IsList() && fd.Message() != nil:
			found = unknownFields(v.Message())
		}
		return found == ""
	})
	return found
}

// jsonTree is the protojson form of m as a generic value, so that two
// encodings compare regardless of whitespace and key order.
func jsonTree(m proto.Message) (any, error) {
	data, err := protojson.Marshal(m)
	if err != nil {
		return nil, fmt.Errorf("protojson %s: %w", m.ProtoReflect().Descriptor().FullName(), err)
	}
	var tree any
	if err := json.Unmarshal(data, &tree); err != nil {
		return nil, fmt.Errorf("decode protojson output: %w", err)
	}
	return tree, nil
}
