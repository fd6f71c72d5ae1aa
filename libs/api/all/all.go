// Package all links in every generated package of libs/api, so that their descriptors are in
// protoregistry.GlobalFiles and their methods' kinds are declared (libs/api/access): authz,
// the gateway's routes and the conformance checks import it. TestEveryGeneratedPackageIsLinked
// fails when a generated package is missing here.
package all

import (
	_ "github.com/plinth-dev/plinth/libs/api/api/resources/ceph/v1"
	_ "github.com/plinth-dev/plinth/libs/api/api/resources/k8s/v1"
	_ "github.com/plinth-dev/plinth/libs/api/api/services/auth/v1"
	_ "github.com/plinth-dev/plinth/libs/api/api/services/stats/v1"
	_ "github.com/plinth-dev/plinth/libs/api/cnct/kaas/api"
	_ "github.com/plinth-dev/plinth/libs/api/cnpgi/backup/v1"
	_ "github.com/plinth-dev/plinth/libs/api/cnpgi/identity/v1"
	_ "github.com/plinth-dev/plinth/libs/api/cnpgi/metrics/v1"
	_ "github.com/plinth-dev/plinth/libs/api/cnpgi/operator/v1"
	_ "github.com/plinth-dev/plinth/libs/api/cnpgi/operator_lifecycle/v1"
	_ "github.com/plinth-dev/plinth/libs/api/cnpgi/reconciler/v1"
	_ "github.com/plinth-dev/plinth/libs/api/cnpgi/wal/v1"
	_ "github.com/plinth-dev/plinth/libs/api/hashicorp/vagrant"
	_ "github.com/plinth-dev/plinth/libs/api/hashicorp/vagrant/sdk"
	_ "github.com/plinth-dev/plinth/libs/api/lvmd"
	_ "github.com/plinth-dev/plinth/libs/api/plinth/auth/v1"
	_ "github.com/plinth-dev/plinth/libs/api/plinth/cnpgi/v1"
	_ "github.com/plinth-dev/plinth/libs/api/plinth/events/v1"
	_ "github.com/plinth-dev/plinth/libs/api/plinth/kaas/v1"
	_ "github.com/plinth-dev/plinth/libs/api/plinth/lvmd/v1"
	_ "github.com/plinth-dev/plinth/libs/api/plinth/stats/v1"
	_ "github.com/plinth-dev/plinth/libs/api/plinth/vagrant/v1"
	_ "github.com/plinth-dev/plinth/libs/api/protostructure"
	_ "github.com/plinth-dev/plinth/libs/api/resources/stats"
	_ "github.com/plinth-dev/plinth/libs/api/resources/timestamp"
	_ "github.com/plinth-dev/plinth/libs/api/services/auth"
	_ "github.com/plinth-dev/plinth/libs/api/stats"
)
