package conformance

import (
	"fmt"
	"strings"

	"google.golang.org/protobuf/reflect/protoreflect"
)

func (c *checker) message(want messageFact) {
	d := c.find("message", want.Name, want.File)
	if d == nil {
		return
	}
	md := d.(protoreflect.MessageDescriptor)
	known := map[string]bool{}
	for _, wf := range want.Fields {
		known[wf.Name] = true
		fd := md.Fields().ByName(protoreflect.Name(wf.Name))
		if fd == nil {
			c.addf("field %s.%s: missing%s", want.Name, wf.Name, numberHint(md, wf.Number))
			continue
		}
		for _, diff := range diffField(fieldShape(fd), wf) {
			c.addf("field %s.%s: %s", want.Name, wf.Name, diff)
		}
	}
	for i := 0; i < md.Fields().Len(); i++ {
		fd := md.Fields().Get(i)
		if !known[string(fd.Name())] && !c.facts.laterHasField(want.Name, fieldShape(fd)) {
			c.addf("field %s.%s = %d: not in the upstream contract", want.Name, fd.Name(), fd.Number())
		}
	}
}

// numberHint points at a renamed field: our field that has the number
// upstream gave the missing one.
func numberHint(md protoreflect.MessageDescriptor, number int32) string {
	if fd := md.Fields().ByNumber(protoreflect.FieldNumber(number)); fd != nil {
		return " (our field " + string(fd.Name()) + " has its number: renamed?)"
	}
	return ""
}

// fieldShape extracts from a descriptor the same facts the upstream JSON
// holds, so that both can be compared attribute by attribute.
func fieldShape(fd protoreflect.FieldDescriptor) fieldFact {
	f := fieldFact{
		Name:        string(fd.Name()),
		Number:      int32(fd.Number()),
		Kind:        fd.Kind().String(),
		Type:        typeName(fd),
		Cardinality: fd.Cardinality().String(),
		Presence:    "implicit",
		Map:         fd.IsMap(),
		JSONName:    fd.JSONName(),
	}
	if fd.HasPresence() {
		f.Presence = "explicit"
	}
	// proto3 `optional` is compiled into a synthetic oneof; only real
	// oneofs are oneofs on the wire contract.
	if od := fd.ContainingOneof(); od != nil {
		if od.IsSynthetic() {
			f.Proto3Optional = true
		} else {
			f.Oneof = string(od.Name())
		}
	}
	if fd.IsMap() {
		f.MapKey = fd.MapKey().Kind().String()
		f.MapValueKind = fd.MapValue().Kind().String()
		f.MapValueType = typeName(fd.MapValue())
	}
	return f
}

// typeName is the full name of a message or enum field's type, else "".
func typeName(fd protoreflect.FieldDescriptor) string {
	switch {
	case fd.Message() != nil:
		return string(fd.Message().FullName())
	case fd.Enum() != nil:
		return string(fd.Enum().FullName())
	default:
		return ""
	}
}

// diffField lists how got differs from the upstream field want, one
// attribute per line, as "attribute ours, upstream theirs".
func diffField(got, want fieldFact) []string {
	var diffs []string
	add := func(attr string, ours, theirs any) {
		diffs = append(diffs, attr+" "+show(ours)+", upstream "+show(theirs))
	}
	if got.Number != want.Number {
		add("number", got.Number, want.Number)
	}
	if got.Kind != want.Kind {
		add("kind", got.Kind, want.Kind)
	}
	if got.Type != want.Type {
		add("type", got.Type, want.Type)
	}
	if got.Cardinality != want.Cardinality {
		add("label", got.Cardinality, want.Cardinality)
	}
	if got.Proto3Optional != want.Proto3Optional {
		add("proto3 optional", got.Proto3Optional, want.Proto3Optional)
	}
	if got.Presence != want.Presence {
		add("presence", got.Presence, want.Presence)
	}
	if got.Oneof != want.Oneof {
		add("oneof", got.Oneof, want.Oneof)
	}
	if got.Map != want.Map {
		add("map", got.Map, want.Map)
	}
	if got.MapKey != want.MapKey {
		add("map key", got.MapKey, want.MapKey)
	}
	if got.MapValueKind != want.MapValueKind || got.MapValueType != want.MapValueType {
		add("map value", strings.TrimSpace(got.MapValueKind+" "+got.MapValueType), strings.TrimSpace(want.MapValueKind+" "+want.MapValueType))
	}
	if got.JSONName != want.JSONName {
		add("json_name", got.JSONName, want.JSONName)
	}
	return diffs
}

// show prints a value so that an empty string stays visible.
func show(v any) string {
	if s, ok := v.(string); ok && strings.TrimSpace(s) == "" {
		return fmt.Sprintf("%q", s)
	}
	return fmt.Sprint(v)
}
