package conformance

import (
	"fmt"
	"sort"

	"google.golang.org/protobuf/reflect/protoreflect"
)

// resolver finds descriptors by full name. *protoregistry.Files implements
// it: the tests pass protoregistry.GlobalFiles, or a private registry holding
// a deliberately broken copy of a file.
type resolver interface {
	FindDescriptorByName(protoreflect.FullName) (protoreflect.Descriptor, error)
}

// checkAPI compares the upstream facts of one API with the descriptors r
// resolves and returns one sorted line per difference; none means
// wire-identical.
//
// Definitions are matched by full name (what gRPC paths, Any type URLs and
// reflection use), then methods, fields and enum values by name within them.
// Our definitions may not add methods, fields or enum values to upstream
// ones: upstream peers would not know them — unless a later upstream version
// we also speak (successors) has them, with the same shape. Extra top-level definitions are
// not compared (upstream has more of them than the facts list, e.g. Vagrant
// SDK types no RPC reaches).
func checkAPI(f *apiFacts, r resolver) []string {
	c := &checker{facts: f, r: r}
	for _, s := range f.Services {
		c.service(s)
	}
	for _, m := range f.Messages {
		c.message(m)
	}
	for _, e := range f.Enums {
		c.enum(e)
	}
	sort.Strings(c.problems)
	return c.problems
}

// checker collects the problems of one checkAPI run.
type checker struct {
	facts    *apiFacts
	r        resolver
	problems []string
}

func (c *checker) addf(format string, args ...any) {
	c.problems = append(c.problems, fmt.Sprintf(format, args...))
}

// find resolves a full name and reports what it is when it is not the
// wanted kind of definition ("message", "enum" or "service").
func (c *checker) find(what, name, file string) protoreflect.Descriptor {
	d, err := c.r.FindDescriptorByName(protoreflect.FullName(name))
	if err != nil {
		c.addf("%s %s: missing", what, name)
		return nil
	}
	if got := describe(d); got != what {
		c.addf("%s %s: is a %s", what, name, got)
		return nil
	}
	// The full name already fixes the wire; the package check catches the
	// subtler mistake of nesting a type where upstream has a package.
	if want, ok := c.facts.packageOf(file); ok && string(d.ParentFile().Package()) != want {
		c.addf("%s %s: declared in package %s, upstream %s", what, name, d.ParentFile().Package(), want)
	}
	return d
}

func describe(d protoreflect.Descriptor) string {
	switch d.(type) {
	case protoreflect.MessageDescriptor:
		return "message"
	case protoreflect.EnumDescriptor:
		return "enum"
	case protoreflect.ServiceDescriptor:
		return "service"
	case protoreflect.MethodDescriptor:
		return "method"
	case protoreflect.FieldDescriptor:
		return "field"
	case protoreflect.EnumValueDescriptor:
		return "enum value"
	default:
		return fmt.Sprintf("%T", d)
	}
}

func (c *checker) service(want serviceFact) {
	d := c.find("service", want.Name, want.File)
	if d == nil {
		return
	}
	sd := d.(protoreflect.ServiceDescriptor)
	known := map[string]bool{}
	for _, wm := range want.Methods {
		known[wm.Name] = true
		path := "/" + want.Name + "/" + wm.Name
		md := sd.Methods().ByName(protoreflect.Name(wm.Name))
		if md == nil {
			c.addf("method %s: missing", path)
			continue
		}
		got := methodShape(md)
		if got.Input != wm.Input {
			c.addf("method %s: request %s, upstream %s", path, got.Input, wm.Input)
		}
		if got.Output != wm.Output {
			c.addf("method %s: response %s, upstream %s", path, got.Output, wm.Output)
		}
		if shape(got) != shape(wm) {
			c.addf("method %s: %s, upstream %s", path, shape(got), shape(wm))
		}
	}
	for i := 0; i < sd.Methods().Len(); i++ {
		got := methodShape(sd.Methods().Get(i))
		if !known[got.Name] && !c.facts.laterHasMethod(want.Name, got) {
			c.addf("method /%s/%s: not in the upstream contract", want.Name, got.Name)
		}
	}
}

// methodShape extracts from a descriptor the facts the upstream JSON holds of a method.
func methodShape(md protoreflect.MethodDescriptor) methodFact {
	return methodFact{Name: string(md.Name()), Input: string(md.Input().FullName()), Output: string(md.Output().FullName()),
		ClientStreaming: md.IsStreamingClient(), ServerStreaming: md.IsStreamingServer()}
}

// shape names a method's streaming shape.
func shape(m methodFact) string {
	switch {
	case m.ClientStreaming && m.ServerStreaming:
		return "bidi-streaming"
	case m.ClientStreaming:
		return "client-streaming"
	case m.ServerStreaming:
		return "server-streaming"
	default:
		return "unary"
	}
}

func (c *checker) enum(want enumFact) {
	d := c.find("enum", want.Name, want.File)
	if d == nil {
		return
	}
	ed := d.(protoreflect.EnumDescriptor)
	known := map[string]bool{}
	for _, wv := range want.Values {
		known[wv.Name] = true
		vd := ed.Values().ByName(protoreflect.Name(wv.Name))
		switch {
		case vd == nil:
			c.addf("enum value %s.%s: missing", want.Name, wv.Name)
		case int32(vd.Number()) != wv.Number:
			c.addf("enum value %s.%s: number %d, upstream %d", want.Name, wv.Name, vd.Number(), wv.Number)
		}
	}
	for i := 0; i < ed.Values().Len(); i++ {
		vd := ed.Values().Get(i)
		if !known[string(vd.Name())] {
			c.addf("enum value %s.%s = %d: not in the upstream contract", want.Name, vd.Name(), vd.Number())
		}
	}
}

// errNotA says that a name resolved to the wrong kind of definition, or to
// nothing.
func errNotA(what string, d protoreflect.Descriptor) error {
	if d == nil {
		return fmt.Errorf("no such %s", what)
	}
	return fmt.Errorf("%s is a %s, not a %s", d.FullName(), describe(d), what)
}
