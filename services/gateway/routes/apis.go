package routes

// Every API package the route table names: importing routes registers their descriptors
// (protoregistry.GlobalFiles), so the Go gateway's catalog, the Envoy generator and the
// table's own test see every routed service. A new API is added here and in Table.
import (
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
	_ "github.com/plinth-dev/plinth/libs/api/plinth/lvmd/v1"
	_ "github.com/plinth-dev/plinth/libs/api/plinth/stats/v1"
	_ "github.com/plinth-dev/plinth/libs/api/plinth/vagrant/v1"
	_ "github.com/plinth-dev/plinth/libs/api/services/auth"
	_ "github.com/plinth-dev/plinth/libs/api/stats"
)
