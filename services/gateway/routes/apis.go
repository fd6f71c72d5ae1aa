package routes

// Every API package (libs/api/all): importing routes registers their descriptors
// (protoregistry.GlobalFiles), so the Go gateway's catalog, the Envoy generator and the
// table's own test see every routed service. A new API is added there and in Table.
import (
	"fmt"

	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/reflect/protoregistry"

	_ "github.com/plinth-dev/plinth/libs/api/all"
)

// ServiceDescriptor finds a routed gRPC service's descriptor among the APIs linked in above.
func ServiceDescriptor(name string) (protoreflect.ServiceDescriptor, error) {
	d, err := protoregistry.GlobalFiles.FindDescriptorByName(protoreflect.FullName(name))
	if err != nil {
		return nil, fmt.Errorf("no such gRPC service %s is linked in (%v): add its libs/api package to services/gateway/routes/apis.go", name, err)
	}
	sd, ok := d.(protoreflect.ServiceDescriptor)
	if !ok {
		return nil, fmt.Errorf("%s is a %T, not a gRPC service", name, d)
	}
	return sd, nil
}
