// Pins the container tools `make tools-docker` builds (tools/docker/build.sh): Docker Compose
// v2 and buildx (CLI plugins; Debian's docker.io has neither) and BuildKit's Dockerfile
// frontend (so `# syntax=docker/dockerfile:1` resolves without Docker Hub). Nothing here is
// compiled: each has replace or exclude directives that only apply when it is the main
// module, so build.sh builds each from a copy of its module source.
module github.com/plinth-dev/plinth/tools/docker

go 1.26.7

require (
	github.com/docker/buildx v0.38.2
	github.com/docker/compose/v2 v2.40.3
	github.com/moby/buildkit v0.34.2
)

// The programs of two local stand-ins for base images (tools/docker/base-images.sh), at the
// versions their docker-compose.yaml tags name: nats:2.11-alpine, fullstorydev/grpcurl:v1.9.3-alpine.
require (
	github.com/fullstorydev/grpcurl v1.9.3
	github.com/nats-io/nats-server/v2 v2.11.10
)
