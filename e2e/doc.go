// Package e2e holds the cross-service tests: they build and run the suite the way a developer
// does (`make up`) and talk to it only over its public endpoints. TestJourneys walks the user
// journeys through the gateway (login and each service's token rule, logout, browser
// protocols, a vagrant job, a cnpgi WAL archive, lvmd capacity in stats, a kaas cluster's
// machine) on one suite shared by its subtests.
package e2e
