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

# Flags for the launcher, e.g. `make up UP_FLAGS='-port-offset 100'`.
UP_FLAGS ?=
# Flags for go test, e.g. `make test TEST_FLAGS='-run TestMakeUp -v'`.
TEST_FLAGS ?=

.PHONY: help up tools tools-s3 generate lint lint-proto lint-generated lint-breaking lint-go vet test bench

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

tools-s3: $(S3_SERVER) ## build the pinned versitygw (S3 server for tests) into bin/; ~4 min cold

$(S3_SERVER): tools/s3/go.mod tools/s3/go.sum
	cd tools/s3 && GOWORK=off GOBIN=$(BIN) $(GO) install tool
	@touch $(S3_SERVER)

generate: tools ## regenerate libs/api from proto/
	find libs/api -name '*.pb.go' -delete
	find libs/api -mindepth 1 -type d -empty -delete
	buf generate

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

test: vet lint ## vet, lint, then every module's tests with the race detector
	$(GO) test -race -timeout 20m $(TEST_FLAGS) $(PACKAGES)

bench: ## run the benchmark scripts under bench/
	@shopt -s nullglob; scripts=(bench/*.sh); \
	if [ $${#scripts[@]} -eq 0 ]; then echo "no benchmarks yet (bench/*.sh)"; fi; \
	for s in "$${scripts[@]}"; do echo "== $$s"; bash "$$s"; done
