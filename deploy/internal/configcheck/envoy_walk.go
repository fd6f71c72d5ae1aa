package configcheck

import (
	"fmt"
	"maps"
	"slices"
	"sort"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	routerv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/router/v3"
	hcmv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/http_connection_manager/v3"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/descriptorpb"
	"google.golang.org/protobuf/types/known/anypb"
)

// envoyWalk visits every message of a parsed Envoy config, including those packed in Any
// values, and records what the cross-reference checks need.
type envoyWalk struct {
	errs          []error
	clusterRefs   []named
	httpFilters   map[string]bool
	perFilterKeys []named
}

// named is a name found at a path of the config.
type named struct{ path, name string }

func newEnvoyWalk() *envoyWalk {
	return &envoyWalk{httpFilters: map[string]bool{}}
}

// validator is what protoc-gen-validate generates for every Envoy message.
type validator interface{ ValidateAll() error }

func (w *envoyWalk) fail(path, format string, args ...any) {
	w.errs = append(w.errs, fmt.Errorf("%s: %s", displayPath(path), fmt.Sprintf(format, args...)))
}

func displayPath(p string) string {
	if p == "" {
		return "(root)"
	}
	return p[1:]
}

func (w *envoyWalk) message(m protoreflect.Message, path string) {
	if a, ok := m.Interface().(*anypb.Any); ok {
		w.any(a, path)
		return
	}
	w.record(m.Interface(), path)
	m.Range(func(fd protoreflect.FieldDescriptor, v protoreflect.Value) bool {
		p := path + "." + fd.TextName()
		if deprecated(fd.Options()) {
			w.fail(p, "field is deprecated in the Envoy API")
		}
		switch {
		case fd.IsMap():
			w.mapField(fd, v.Map(), p)
		case fd.IsList():
			for i := 0; i < v.List().Len(); i++ {
				w.value(fd, v.List().Get(i), fmt.Sprintf("%s[%d]", p, i))
			}
		default:
			w.value(fd, v, p)
		}
		return true
	})
}

// mapField visits map values in key order, so errors come out in a stable order.
func (w *envoyWalk) mapField(fd protoreflect.FieldDescriptor, m protoreflect.Map, path string) {
	var keys []protoreflect.MapKey
	m.Range(func(k protoreflect.MapKey, _ protoreflect.Value) bool {
		keys = append(keys, k)
		return true
	})
	sort.Slice(keys, func(i, j int) bool { return keys[i].String() < keys[j].String() })
	for _, k := range keys {
		w.value(fd.MapValue(), m.Get(k), path+"["+k.String()+"]")
	}
}

func (w *envoyWalk) value(fd protoreflect.FieldDescriptor, v protoreflect.Value, path string) {
	switch fd.Kind() {
	case protoreflect.MessageKind, protoreflect.GroupKind:
		w.message(v.Message(), path)
	case protoreflect.EnumKind:
		if ev := fd.Enum().Values().ByNumber(v.Enum()); ev != nil && deprecated(ev.Options()) {
			w.fail(path, "enum value %s is deprecated in the Envoy API", ev.Name())
		}
	}
}

// any unpacks a typed config and validates it: the enclosing message's ValidateAll does not.
func (w *envoyWalk) any(a *anypb.Any, path string) {
	inner, err := a.UnmarshalNew()
	if err != nil {
		w.fail(path, "cannot unpack %s: %v (link its package into configcheck with a blank import)", a.GetTypeUrl(), err)
		return
	}
	v, ok := inner.(validator)
	if !ok {
		w.fail(path, "%s has no validation rules: not an Envoy API type?", a.GetTypeUrl())
		return
	}
	if err := v.ValidateAll(); err != nil {
		w.fail(path, "%s: %v", a.GetTypeUrl(), err)
	}
	w.message(inner.ProtoReflect(), path+"<"+string(inner.ProtoReflect().Descriptor().Name())+">")
}

// record notes the references and names of the message types the checks care about.
func (w *envoyWalk) record(m proto.Message, path string) {
	switch m := m.(type) {
	case *routev3.RouteAction:
		switch cs := m.GetClusterSpecifier().(type) {
		case *routev3.RouteAction_Cluster:
			w.clusterRefs = append(w.clusterRefs, named{displayPath(path), cs.Cluster})
		case *routev3.RouteAction_WeightedClusters:
			for _, c := range cs.WeightedClusters.GetClusters() {
				w.clusterRefs = append(w.clusterRefs, named{displayPath(path), c.GetName()})
			}
		default:
			w.fail(path, "only cluster and weighted_clusters routes can be checked against the defined clusters")
		}
	case *corev3.GrpcService_EnvoyGrpc:
		w.clusterRefs = append(w.clusterRefs, named{displayPath(path), m.GetClusterName()})
	case *hcmv3.HttpConnectionManager:
		w.httpFilterChain(m, path)
	case *routev3.RouteConfiguration:
		w.perFilter(m.GetTypedPerFilterConfig(), path)
	case *routev3.VirtualHost:
		w.perFilter(m.GetTypedPerFilterConfig(), path)
	case *routev3.Route:
		w.perFilter(m.GetTypedPerFilterConfig(), path)
	}
}

func (w *envoyWalk) httpFilterChain(m *hcmv3.HttpConnectionManager, path string) {
	filters := m.GetHttpFilters()
	for _, f := range filters {
		if w.httpFilters[f.GetName()] {
			w.fail(path, "HTTP filter %q is configured twice", f.GetName())
		}
		w.httpFilters[f.GetName()] = true
	}
	if len(filters) == 0 {
		w.fail(path, "no http_filters: Envoy needs the router filter last")
		return
	}
	last := filters[len(filters)-1].GetTypedConfig()
	if last.MessageName() != proto.MessageName(&routerv3.Router{}) {
		w.fail(path, "the last HTTP filter is %s: Envoy needs the router filter last", last.GetTypeUrl())
	}
}

func (w *envoyWalk) perFilter(cfg map[string]*anypb.Any, path string) {
	for _, k := range slices.Sorted(maps.Keys(cfg)) {
		w.perFilterKeys = append(w.perFilterKeys, named{displayPath(path), k})
	}
}

// deprecated reports the standard `deprecated` option of a field or enum value.
func deprecated(opts proto.Message) bool {
	switch o := opts.(type) {
	case *descriptorpb.FieldOptions:
		return o.GetDeprecated()
	case *descriptorpb.EnumValueOptions:
		return o.GetDeprecated()
	}
	return false
}
