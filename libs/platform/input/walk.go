package input

import (
	"strconv"

	"google.golang.org/protobuf/reflect/protoreflect"
)

// Walk calls visit for every field set in m and in the messages it holds (singular fields,
// list elements and map values, to any depth), with the field's path as an error names it:
// "basis.name", "worker_node_pools[2].labels", `job.labels["k"]`. visit sees a list or a map
// whole; Walk then goes into the messages it holds. The first error ends the walk.
func Walk(m protoreflect.Message, visit func(fd protoreflect.FieldDescriptor, v protoreflect.Value, path string) error) error {
	return walk(m, "", visit)
}

func walk(m protoreflect.Message, prefix string, visit func(protoreflect.FieldDescriptor, protoreflect.Value, string) error) error {
	var err error
	m.Range(func(fd protoreflect.FieldDescriptor, v protoreflect.Value) bool {
		path := string(fd.Name())
		if prefix != "" {
			path = prefix + "." + path
		}
		if err = visit(fd, v, path); err != nil {
			return false
		}
		switch {
		case fd.IsList() && fd.Message() != nil:
			l := v.List()
			for i := range l.Len() {
				if err = walk(l.Get(i).Message(), path+"["+strconv.Itoa(i)+"]", visit); err != nil {
					return false
				}
			}
		case fd.IsMap() && fd.MapValue().Message() != nil:
			v.Map().Range(func(k protoreflect.MapKey, mv protoreflect.Value) bool {
				err = walk(mv.Message(), path+"["+Quote(k.String())+"]", visit)
				return err == nil
			})
		case !fd.IsList() && !fd.IsMap() && fd.Message() != nil:
			err = walk(v.Message(), path, visit)
		}
		return err == nil
	})
	return err
}
