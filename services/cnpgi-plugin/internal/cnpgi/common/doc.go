// Package common is what every role's CNPG-I transport shares: the Identity service (which
// lists exactly the services the binary registers), the one mapping of domain errors to gRPC
// status codes (errors.go) and the parsing of a Cluster sent in a request field. Each role's
// package (instance, operator, restore, catalog) serves one file per proto service; every
// handler bounds and validates its input, calls the domain package and maps errors here.
package common
