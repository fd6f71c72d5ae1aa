# Plinth: the two commands are `make up` (run the suite here) and `make test` (what CI runs).
# Everything else is a step of those two.

SHELL := /bin/bash
.SHELLFLAGS := -eu -o pipefail -c
.DEFAULT_GOAL := help

GO ?= go
BIN := $(CURDIR)/bin
# Pinned protobuf tools (tools/go.mod) come first, whatever else is installed.
export PATH := $(BIN):$(PATH)

# One `go` pattern per workspace module (go.work's use list), e.g. github.com/.../deploy/...
# Recursive (=) so it is computed only by the targets that need it.
PACKAGES = $(shell $(GO) list -m -f '{{.Path}}/...')
MODULE_DIRS = $(shell $(GO) list -m -f '{{.Dir}}')

TOOLS := $(BIN)/buf $(BIN)/protoc-gen-go $(BIN)/protoc-gen-go-grpc $(BIN)/grpcurl
# The S3-compatible server the object-store tests run against (tools/s3/go.mod pins it).
S3_SERVER := $(BIN)/versitygw
# The gRPC load generator the benchmarks use (tools/ghz/go.mod pins it: it needs an older grpc
# than the codegen tools, so it has a module of its own).
GHZ := $(BIN)/ghz
# The Kubernetes control planes tests and kaas run (tools/k8s/v1.NN/go.mod pin each version) and
# kwok for their fake Nodes; libs/kubetest finds them by these names.
K8S_V133 := $(shell awk '$$1 == "k8s.io/kubernetes" { print $$2 }' tools/k8s/v1.33/go.mod)
K8S_V132 := $(shell awk '$$1 == "k8s.io/kubernetes" { print $$2 }' tools/k8s/v1.32/go.mod)
K8S_TOOLS := $(foreach v,$(K8S_V133) $(K8S_V132),$(BIN)/kube-apiserver-$(v) $(BIN)/kube-controller-manager-$(v)) $(BIN)/kwok
# Tilt, built from its module source (tools/tilt/go.mod pins it).
TILT := $(BIN)/tilt

# Flags for the launcher, e.g. `make up UP_FLAGS='-port-offset 100'`.
UP_FLAGS ?=
# Flags for go test, e.g. `make test TEST_FLAGS='-run TestMakeUp -v'`.
TEST_FLAGS ?=

.PHONY: help up tools tools-ghz tools-s3 tools-k8s tools-tilt generate generate-envoy lint lint-proto lint-generated lint-breaking lint-go vet test fuzz bench

help: ## list the targets
	@grep -E '^[a-z0-9-]+:.*## ' $(MAKEFILE_LIST) | sed -E 's/:.*## /\t/' | expand -t 18

up: ## run the whole suite on this machine (NATS, Postgres, every service) until Ctrl-C
	$(GO) build -o $(BIN)/plinth-up ./deploy/cmd/plinth-up
	$(BIN)/plinth-up $(UP_FLAGS)

tools: $(TOOLS) ## build the pinned buf, protoc plugins and grpcurl into bin/

# One `go install` builds all four; it reruns only when the pins change.
$(TOOLS) &: tools/go.mod tools/go.sum
	cd tools && GOWORK=off GOBIN=$(BIN) $(GO) install tool
	@touch $(TOOLS)

tools-ghz: $(GHZ) ## build the pinned ghz (gRPC load generator for bench/) into bin/

$(GHZ): tools/ghz/go.mod tools/ghz/go.sum
	cd tools/ghz && GOWORK=off GOBIN=$(BIN) $(GO) install tool
	@touch $(GHZ)

tools-s3: $(S3_SERVER) ## build the pinned versitygw (S3 server for tests) into bin/; ~4 min cold

$(S3_SERVER): tools/s3/go.mod tools/s3/go.sum
	cd tools/s3 && GOWORK=off GOBIN=$(BIN) $(GO) install tool
	@touch $(S3_SERVER)

tools-k8s: $(K8S_TOOLS) ## build kube-apiserver/-controller-manager (two versions) and kwok into bin/; slow

# Each rule reruns only when its pins change.
$(BIN)/kube-apiserver-$(K8S_V133) $(BIN)/kube-controller-manager-$(K8S_V133) &: tools/k8s/v1.33/go.mod tools/k8s/v1.33/go.sum tools/k8s/build.sh
	tools/k8s/build.sh tools/k8s/v1.33 $(BIN)

$(BIN)/kube-apiserver-$(K8S_V132) $(BIN)/kube-controller-manager-$(K8S_V132) &: tools/k8s/v1.32/go.mod tools/k8s/v1.32/go.sum tools/k8s/build.sh
	tools/k8s/build.sh tools/k8s/v1.32 $(BIN)

$(BIN)/kwok: tools/k8s/kwok/go.mod tools/k8s/kwok/go.sum
	cd tools/k8s/kwok && GOWORK=off GOBIN=$(BIN) $(GO) install -trimpath -ldflags '-s -w' tool
	@touch $(BIN)/kwok

tools-tilt: $(TILT) ## build the pinned tilt from its Go module source into bin/; slow

$(TILT): tools/tilt/go.mod tools/tilt/go.sum tools/tilt/build.sh
	tools/tilt/build.sh $(BIN)

generate: tools ## regenerate libs/api from proto/
	find libs/api -name '*.pb.go' -delete
	find libs/api -mindepth 1 -type d -empty -delete
	buf generate

generate-envoy: ## regenerate the Envoy configs (compose, k8s) from services/gateway/routes
	cd deploy && $(GO) run ./cmd/envoygen -root ..

lint: lint-proto lint-generated lint-breaking lint-go ## every static check

lint-proto: tools
	buf lint
	buf format -d --exit-code

lint-generated: tools ## libs/api is exactly what `make generate` makes from proto/
	.ci/check-generated

lint-breaking: tools ## buf breaking against main (see .ci/check-breaking for which commit)
	.ci/check-breaking

lint-go:
	@unformatted="$$(gofmt -l $(MODULE_DIRS))"; \
	if [ -n "$$unformatted" ]; then \
		echo "gofmt: these files need \`gofmt -w\`:"; echo "$$unformatted"; exit 1; \
	fi

vet: ## go vet every workspace module
	$(GO) vet $(PACKAGES)

# Fuzz time per target in `make test`; `make fuzz` gives each a minute.
TEST_FUZZTIME ?= 3s

# The test servers and tools the tests run (S3, kube-apiserver, tilt) are prerequisites, so a
# newcomer's `make test` runs everything; each builds once and only again when its pins change.
test: vet lint tools-s3 tools-k8s tools-tilt ## vet, lint, every module's tests with the race detector, then each fuzz target briefly
	$(GO) test -race -timeout 20m $(TEST_FLAGS) $(PACKAGES)
	FUZZTIME=$(TEST_FUZZTIME) .ci/fuzz

fuzz: ## run every fuzz target for FUZZTIME (default 60s) each
	FUZZTIME=$${FUZZTIME:-60s} .ci/fuzz

bench: ## run the benchmark scripts under bench/
	@shopt -s nullglob; scripts=(bench/*.sh); \
	if [ $${#scripts[@]} -eq 0 ]; then echo "no benchmarks yet (bench/*.sh)"; fi; \
	for s in "$${scripts[@]}"; do echo "== $$s"; bash "$$s"; done
