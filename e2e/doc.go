// Package e2e holds the cross-service tests: they build and run the suite the way a developer
// does (`make up`) and talk to it only over its public endpoints.
package e2e
