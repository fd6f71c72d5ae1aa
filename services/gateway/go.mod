module github.com/plinth-dev/plinth/services/gateway

go 1.26.7

require (
	github.com/plinth-dev/plinth/libs/api v0.0.0-00010101000000-000000000000
	google.golang.org/grpc v1.84.0
	google.golang.org/protobuf v1.36.12
)
