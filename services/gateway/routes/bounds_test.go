package routes

import (
	"sort"
	"testing"

	"google.golang.org/protobuf/reflect/protoreflect"

	"github.com/plinth-dev/plinth/libs/platform/input/bounds"
)

// TestEveryRepeatedFieldIsBounded walks every request message of every routed method, nested
// messages included, and lists each repeated and map field with its bound
// (libs/platform/input/bounds). It fails for a field with no entry there — a new unbounded
// list or map a client could fill — and for an entry that names no field a client can send.
func TestEveryRepeatedFieldIsBounded(t *testing.T) {
	reached := map[protoreflect.FullName]string{} // field → the first method it was reached from
	seen := map[protoreflect.FullName]bool{}      // messages already walked
	for _, r := range Table {
		if r.Method != "" {
			continue // a method route: its service's route covers it
		}
		sd, err := ServiceDescriptor(r.Service)
		if err != nil {
			t.Fatal(err)
		}
		for i := range sd.Methods().Len() {
			md := sd.Methods().Get(i)
			repeatedFields(md.Input(), "/"+r.Service+"/"+string(md.Name()), reached, seen)
		}
	}
	names := make([]string, 0, len(reached))
	for f := range reached {
		names = append(names, string(f))
	}
	sort.Strings(names)
	for _, name := range names {
		f := protoreflect.FullName(name)
		b, ok := bounds.Fields[f]
		switch {
		case !ok:
			t.Errorf("%s (reached from %s) is a repeated or map field a client fills, with no bound: add it to libs/platform/input/bounds.Fields", f, reached[f])
		case b.Why == "":
			t.Errorf("%s: its bound must say why", f)
		case b.Max == 0:
			t.Logf("%-75s bounded by: %s", f, b.Why)
		default:
			t.Logf("%-75s at most %d: %s", f, b.Max, b.Why)
		}
	}
	for f := range bounds.Fields {
		if _, ok := reached[f]; !ok {
			t.Errorf("bounds.Fields lists %s, which no routed request message holds", f)
		}
	}
}

// repeatedFields records every list and map field reachable from md.
func repeatedFields(md protoreflect.MessageDescriptor, method string, reached map[protoreflect.FullName]string, seen map[protoreflect.FullName]bool) {
	if seen[md.FullName()] {
		return
	}
	seen[md.FullName()] = true
	fields := md.Fields()
	for i := range fields.Len() {
		f := fields.Get(i)
		if f.IsList() || f.IsMap() {
			if _, ok := reached[f.FullName()]; !ok {
				reached[f.FullName()] = method
			}
		}
		switch {
		case f.IsMap():
			if v := f.MapValue(); v.Message() != nil {
				repeatedFields(v.Message(), method, reached, seen)
			}
		case f.Message() != nil:
			repeatedFields(f.Message(), method, reached, seen)
		}
	}
}
