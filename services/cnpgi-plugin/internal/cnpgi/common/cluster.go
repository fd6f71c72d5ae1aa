package common

import (
	"errors"

	"github.com/plinth-dev/plinth/libs/platform/input"
	"github.com/plinth-dev/plinth/services/cnpgi-plugin/internal/cluster"
)

// ParseCluster parses a Cluster sent in the named request field, naming that field on failure.
func ParseCluster(definition []byte, field string) (*cluster.Cluster, error) {
	c, err := cluster.Parse(definition)
	if cerr := (*input.Error)(nil); errors.As(err, &cerr) && cerr.Field == "cluster_definition" {
		return nil, &input.Error{Field: field, Reason: cerr.Reason}
	}
	return c, err
}
