package k8scheck

import (
	"fmt"
	"strings"
)

// CheckPostgresTrustsNoOne refuses a container that would start PostgreSQL with trust
// authentication (issue #36): every pod of the cluster reaches a Service, so every client
// must prove a password. It reads the official image's POSTGRES_HOST_AUTH_METHOD and
// POSTGRES_INITDB_ARGS.
func CheckPostgresTrustsNoOne(s *Set) []error {
	var errs []error
	for _, w := range s.Workloads {
		for _, c := range allContainers(w.Template.Spec) {
			for _, e := range c.Env {
				if (e.Name == "POSTGRES_HOST_AUTH_METHOD" || e.Name == "POSTGRES_INITDB_ARGS") && strings.Contains(e.Value, "trust") {
					errs = append(errs, fmt.Errorf("%s: container %q: %s=%s lets every client in without a password: use scram-sha-256",
						w, c.Name, e.Name, e.Value))
				}
			}
		}
	}
	return errs
}
