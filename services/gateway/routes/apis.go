package routes

// Every API package the route table names: importing routes registers their descriptors
// (protoregistry.GlobalFiles), so the Go gateway's catalog, the Envoy generator and the
// table's own test see every routed service. A new API is added here and in Table.
import (
	"fmt"

	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/reflect/protoregistry"

	_ "github.com/plinth-dev/plinth/libs/api/cnct/kaas/api"
	_ "github.com/plinth-dev/plinth/libs/api/cnpgi/backup/v1"
	_ "github.com/plinth-dev/plinth/libs/api/cnpgi/identity/v1"
	_ "github.com/plinth-dev/plinth/libs/api/cnpgi/metrics/v1"
	_ "github.com/plinth-dev/plinth/libs/api/cnpgi/operator/v1"
	_ "github.com/plinth-dev/plinth/libs/api/cnpgi/operator_lifecycle/v1"
	_ "github.com/plinth-dev/plinth/libs/api/cnpgi/reconciler/v1"
	_ "github.com/plinth-dev/plinth/libs/api/cnpgi/wal/v1"
	_ "github.com/plinth-dev/plinth/libs/api/hashicorp/vagrant"
	_ "github.com/plinth-dev/plinth/libs/api/lvmd"
	_ "github.com/plinth-dev/plinth/libs/api/plinth/auth/v1"
	_ "github.com/plinth-dev/plinth/libs/api/plinth/cnpgi/v1"
	_ "github.com/plinth-dev/plinth/libs/api/plinth/kaas/v1"
	_ "github.com/plinth-dev/plinth/libs/api/plinth/lvmd/v1"
	_ "github.com/plinth-dev/plinth/libs/api/plinth/stats/v1"
	_ "github.com/plinth-dev/plinth/libs/api/plinth/vagrant/v1"
	_ "github.com/plinth-dev/plinth/libs/api/services/auth"
	_ "github.com/plinth-dev/plinth/libs/api/stats"
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
