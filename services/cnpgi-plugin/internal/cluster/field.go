package cluster

import (
	"errors"

	"github.com/plinth-dev/plinth/libs/platform/input"
)

// ParseField parses a Cluster sent in the named request field (the Operator service's
// definition, old_cluster, new_cluster...), naming that field on failure.
func ParseField(definition []byte, field string) (*Cluster, error) {
	c, err := Parse(definition)
	if cerr := (*input.Error)(nil); errors.As(err, &cerr) && cerr.Field == "cluster_definition" {
		return nil, &input.Error{Field: field, Reason: cerr.Reason}
	}
	return c, err
}
