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
# The emulators barman-cloud's own CI tests its Azure and Google Cloud Storage support against:
# Azurite's blob service (npm; tools/azurite/package.json and its lock pin it) and
# fake-gcs-server (tools/gcs/go.mod pins it).
AZURITE := $(BIN)/azurite-blob
GCS_SERVER := $(BIN)/fake-gcs-server
# The gRPC load generator the benchmarks use (tools/ghz/go.mod pins it: it needs an older grpc
# than the codegen tools, so it has a module of its own).
GHZ := $(BIN)/ghz
# The Kubernetes control planes tests and kaas run (tools/k8s/v1.NN/go.mod pin each version) and
# kwok for their fake Nodes; libs/kubetest finds them by these names.
K8S_V133 := $(shell awk '$$1 == "k8s.io/kubernetes" { print $$2 }' tools/k8s/v1.33/go.mod)
K8S_V132 := $(shell awk '$$1 == "k8s.io/kubernetes" { print $$2 }' tools/k8s/v1.32/go.mod)
# kaas's local clusters (and `make up`'s background build) need only the control planes and
# kwok (tools-kaas); `make kube-up` runs a whole node: v1.33's kube-scheduler, kubelet,
# kube-proxy and kubectl, CoreDNS and cert-manager's controller and CA injector besides.
K8S_KAAS_TOOLS := $(foreach v,$(K8S_V133) $(K8S_V132),$(BIN)/kube-apiserver-$(v) $(BIN)/kube-controller-manager-$(v)) $(BIN)/kwok
K8S_NODE_TOOLS := $(foreach c,kube-scheduler kubelet kube-proxy kubectl,$(BIN)/$(c)-$(K8S_V133))
K8S_TOOLS := $(K8S_KAAS_TOOLS) $(K8S_NODE_TOOLS) $(BIN)/coredns $(BIN)/cert-manager-controller $(BIN)/cert-manager-cainjector $(BIN)/topolvm-node $(BIN)/topolvm-node-v0.41 $(BIN)/local-path-provisioner
# CloudNativePG's operator (its manager, also the instance manager of every PostgreSQL pod),
# its kubectl plugin and its config/ (CRDs, RBAC, the operator's Deployment), which
# tools/k8s/cnpg pins.
CNPG_TOOLS := $(BIN)/cnpg-manager $(BIN)/kubectl-cnpg $(BIN)/cnpg-config/default/kustomization.yaml
# Tilt, built from its module source (tools/tilt/go.mod pins it).
TILT := $(BIN)/tilt
# Container tools (tools/docker/go.mod pins them): Compose v2 and buildx as CLI plugins of the
# docker client that the compose targets run (DOCKER_CONFIG), and the programs of the base-image
# stand-ins (BuildKit's Dockerfile frontend, nats-server, grpcurl).
DOCKER_PLUGINS := $(BIN)/docker-config/cli-plugins
DOCKER_TOOLS := $(DOCKER_PLUGINS)/docker-compose $(DOCKER_PLUGINS)/docker-buildx $(BIN)/images/dockerfile-frontend $(BIN)/images/nats-server $(BIN)/images/grpcurl

# Flags for the launcher, e.g. `make up UP_FLAGS='-port-offset 100'`.
UP_FLAGS ?=
# Flags for go test, e.g. `make test TEST_FLAGS='-run TestMakeUp -v'`.
TEST_FLAGS ?=

.PHONY: console-test console-dist help up images kube-up kube-demo kube-down tools tools-ghz tools-s3 tools-kaas tools-k8s tools-cnpg tools-tilt tools-docker base-images compose-up compose-down generate generate-deploy generate-envoy generate-nats lint lint-proto lint-generated lint-breaking lint-go vet test fuzz bench

help: ## list the targets
	@grep -E '^[a-z0-9-]+:.*## ' $(MAKEFILE_LIST) | sed -E 's/:.*## /\t/' | expand -t 18

up: ## run the whole suite here until Ctrl-C; as root installs missing Debian packages (UP_FLAGS=-no-install: never)
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

tools-s3: $(S3_SERVER) $(AZURITE) $(GCS_SERVER) ## build the pinned object-store servers for tests into bin/: versitygw (S3; ~4 min cold), Azurite (Azure Blob) and fake-gcs-server (GCS)

# Static (no cgo): the same binary runs on the host for tests, in compose's Debian container and
# alone in kube-up's image.
$(S3_SERVER): tools/s3/go.mod tools/s3/go.sum
	cd tools/s3 && GOWORK=off CGO_ENABLED=0 GOBIN=$(BIN) $(GO) install tool
	@touch $(S3_SERVER)

# npm ci into a directory outside the checkout, kept by version; bin/azurite-blob runs it.
$(AZURITE): tools/azurite/package.json tools/azurite/package-lock.json tools/azurite/install.sh
	tools/azurite/install.sh $(BIN)

$(GCS_SERVER): tools/gcs/go.mod tools/gcs/go.sum
	cd tools/gcs && GOWORK=off CGO_ENABLED=0 GOBIN=$(BIN) $(GO) install tool
	@touch $(GCS_SERVER)

tools-kaas: $(K8S_KAAS_TOOLS) ## build what kaas's local clusters run: kube-apiserver/-controller-manager (two versions) and kwok; what make up builds in the background

tools-k8s: $(K8S_TOOLS) ## build kube-apiserver/-controller-manager (two versions), kube-scheduler, kubelet, kube-proxy, kubectl, kwok, CoreDNS, cert-manager's controller and CA injector, TopoLVM's node plugin (v0.11 and v0.41) and local-path-provisioner into bin/; slow once, then cached outside the checkout

# Each rule reruns only when its pins change. Rules of one tools module run one after the other
# (order-only prerequisites) so that under `make -j` they share the Go build cache instead of
# compiling the same packages twice at once.
$(BIN)/kube-apiserver-$(K8S_V133) $(BIN)/kube-controller-manager-$(K8S_V133) &: tools/k8s/v1.33/go.mod tools/k8s/v1.33/go.sum tools/k8s/build.sh
	tools/k8s/build.sh tools/k8s/v1.33 $(BIN) kube-apiserver kube-controller-manager

$(K8S_NODE_TOOLS) &: tools/k8s/v1.33/go.mod tools/k8s/v1.33/go.sum tools/k8s/build.sh | $(BIN)/kube-apiserver-$(K8S_V133)
	tools/k8s/build.sh tools/k8s/v1.33 $(BIN) kube-scheduler kubelet kube-proxy kubectl

$(BIN)/kube-apiserver-$(K8S_V132) $(BIN)/kube-controller-manager-$(K8S_V132) &: tools/k8s/v1.32/go.mod tools/k8s/v1.32/go.sum tools/k8s/build.sh
	tools/k8s/build.sh tools/k8s/v1.32 $(BIN)

$(BIN)/kwok: tools/k8s/kwok/go.mod tools/k8s/kwok/go.sum
	cd tools/k8s/kwok && GOWORK=off CGO_ENABLED=0 GOBIN=$(BIN) $(GO) install -trimpath -ldflags '-s -w' tool
	@touch $(BIN)/kwok

# CoreDNS with only the plugins kube-up's cluster DNS uses (tools/k8s/coredns/main.go).
$(BIN)/coredns: tools/k8s/coredns/go.mod tools/k8s/coredns/go.sum tools/k8s/coredns/main.go
	cd tools/k8s/coredns && GOWORK=off CGO_ENABLED=0 $(GO) build -trimpath -ldflags '-s -w' -o $(BIN)/coredns.tmp .
	mv -f $(BIN)/coredns.tmp $(BIN)/coredns

# cert-manager's controller, wired from its module's packages (tools/k8s/cert-manager/main.go
# says why), stamped with the version tools/k8s/cert-manager/go.mod pins.
$(BIN)/cert-manager-controller: tools/k8s/cert-manager/go.mod tools/k8s/cert-manager/go.sum tools/k8s/cert-manager/main.go
	cd tools/k8s/cert-manager && v="$$(GOWORK=off $(GO) list -m -f '{{.Version}}' github.com/cert-manager/cert-manager)" && \
		GOWORK=off CGO_ENABLED=0 $(GO) build -trimpath -ldflags "-s -w -X github.com/cert-manager/cert-manager/pkg/util.AppVersion=$$v" -o $(BIN)/cert-manager-controller.tmp .
	mv -f $(BIN)/cert-manager-controller.tmp $(BIN)/cert-manager-controller

# cert-manager's CA injector, the module's pkg/controller/cainjector run as upstream's main does
# (tools/k8s/cert-manager/cainjector/main.go).
$(BIN)/cert-manager-cainjector: tools/k8s/cert-manager/go.mod tools/k8s/cert-manager/go.sum tools/k8s/cert-manager/cainjector/main.go | $(BIN)/cert-manager-controller
	cd tools/k8s/cert-manager && v="$$(GOWORK=off $(GO) list -m -f '{{.Version}}' github.com/cert-manager/cert-manager)" && \
		GOWORK=off CGO_ENABLED=0 $(GO) build -trimpath -ldflags "-s -w -X github.com/cert-manager/cert-manager/pkg/util.AppVersion=$$v" -o $(BIN)/cert-manager-cainjector.tmp ./cainjector
	mv -f $(BIN)/cert-manager-cainjector.tmp $(BIN)/cert-manager-cainjector

# Where built tools are kept outside the checkout, as tools/k8s/build.sh and
# tools/docker/build.sh keep theirs: a fresh clone on a machine that built them once copies them.
TOOLS_CACHE := $(or $(PLINTH_TOOLS_CACHE),$(or $(XDG_CACHE_HOME),$(HOME)/.cache)/plinth/tools)

# $(call topolvm-node,MODULE_DIR,PACKAGE): TopoLVM's node plugin from PACKAGE of the TopoLVM
# version MODULE_DIR/go.mod pins, stamped with that version, into $@ — copied from TOOLS_CACHE
# when a build with the same version, go.sum, flags and Go version is there (a copy instead of
# minutes of compiling), else built and cached. Built next to $@ and renamed, so an interrupted
# build never leaves a half binary make would take for up to date.
define topolvm-node
cd $(1) && export GOWORK=off CGO_ENABLED=0 && \
	v="$$($(GO) list -m -f '{{.Version}}' github.com/topolvm/topolvm)" && \
	ldflags="-s -w -X github.com/topolvm/topolvm.Version=$$v" && \
	key="$$( { printf '%s\n' $(2) "$$v" "$$ldflags" "$$($(GO) env GOVERSION)"; cat go.sum; } | sha256sum | cut -c1-16)" && \
	cached="$(TOOLS_CACHE)/$(notdir $@)-$$v-$$key" && \
	if [ -x "$$cached" ]; then \
		install -m 0755 "$$cached" $@.tmp && echo "$(notdir $@) $$v: from $$cached"; \
	else \
		$(GO) build -trimpath -ldflags "$$ldflags" -o $@.tmp $(2) && \
		mkdir -p "$(TOOLS_CACHE)" && cp -f $@.tmp "$$cached.tmp" && mv -f "$$cached.tmp" "$$cached"; \
	fi
mv -f $@.tmp $@
endef

# TopoLVM's node plugins, which e2e runs against lvmd-agent's DaemonSet on kube-up's cluster:
# v0.11 (the fork's lvmd wire, topolvm.cybozu.com) and v0.41 (today's wire, topolvm.io).
$(BIN)/topolvm-node: tools/k8s/topolvm/go.mod tools/k8s/topolvm/go.sum
	$(call topolvm-node,tools/k8s/topolvm,github.com/topolvm/topolvm/pkg/topolvm-node)

$(BIN)/topolvm-node-v0.41: tools/k8s/topolvm041/go.mod tools/k8s/topolvm041/go.sum
	$(call topolvm-node,tools/k8s/topolvm041,github.com/topolvm/topolvm/cmd/topolvm-node)

tools-cnpg: $(CNPG_TOOLS) ## build CloudNativePG's operator and kubectl plugin and copy its config/ (CRDs, RBAC, Deployment) to bin/cnpg-config

# Stamped as upstream's Makefile stamps them (version without the v, the release's commit time).
$(BIN)/cnpg-manager $(BIN)/kubectl-cnpg &: tools/k8s/cnpg/go.mod tools/k8s/cnpg/go.sum
	cd tools/k8s/cnpg && v="$$(GOWORK=off $(GO) list -m -f '{{.Version}}' github.com/cloudnative-pg/cloudnative-pg)" && \
		d="$$(GOWORK=off $(GO) list -m -f '{{.Time.UTC.Format "2006-01-02T15:04:05Z"}}' github.com/cloudnative-pg/cloudnative-pg)" && \
		rm -rf $(BIN)/.cnpg-build && mkdir -p $(BIN)/.cnpg-build && \
		GOWORK=off CGO_ENABLED=0 $(GO) build -trimpath -ldflags "-s -w -X github.com/cloudnative-pg/cloudnative-pg/pkg/versions.buildVersion=$${v#v} -X github.com/cloudnative-pg/cloudnative-pg/pkg/versions.buildCommit=$$v -X github.com/cloudnative-pg/cloudnative-pg/pkg/versions.buildDate=$$d" \
			-o $(BIN)/.cnpg-build/ github.com/cloudnative-pg/cloudnative-pg/cmd/manager github.com/cloudnative-pg/cloudnative-pg/cmd/kubectl-cnpg
	mv -f $(BIN)/.cnpg-build/manager $(BIN)/cnpg-manager
	mv -f $(BIN)/.cnpg-build/kubectl-cnpg $(BIN)/kubectl-cnpg
	rm -rf $(BIN)/.cnpg-build

# The module's config/ as released (read-only in the module cache: copied writable), which
# deploy/k8s/cnpg builds on with kustomize.
$(BIN)/cnpg-config/default/kustomization.yaml: tools/k8s/cnpg/go.mod tools/k8s/cnpg/go.sum
	cd tools/k8s/cnpg && src="$$(GOWORK=off $(GO) mod download -json github.com/cloudnative-pg/cloudnative-pg | awk -F'"' '$$2 == "Dir" { print $$4 }')" && \
		test -d "$$src/config" && \
		mkdir -p $(BIN) && rm -rf $(BIN)/cnpg-config.tmp && cp -R "$$src/config" $(BIN)/cnpg-config.tmp && chmod -R u+w $(BIN)/cnpg-config.tmp
	rm -rf $(BIN)/cnpg-config && mv $(BIN)/cnpg-config.tmp $(BIN)/cnpg-config

# local-path-provisioner, the default StorageClass of kube-up's cluster (tools/k8s/local-path).
$(BIN)/local-path-provisioner: tools/k8s/local-path/go.mod tools/k8s/local-path/go.sum
	cd tools/k8s/local-path && GOWORK=off CGO_ENABLED=0 $(GO) build -trimpath -ldflags '-s -w' -o $(BIN)/local-path-provisioner.tmp github.com/rancher/local-path-provisioner
	mv -f $(BIN)/local-path-provisioner.tmp $(BIN)/local-path-provisioner

tools-tilt: $(TILT) ## build the pinned tilt from its Go module source into bin/; slow

$(TILT): tools/tilt/go.mod tools/tilt/go.sum tools/tilt/build.sh
	tools/tilt/build.sh $(BIN)

tools-docker: $(DOCKER_TOOLS) ## build compose v2, buildx and the base-image stand-ins' programs into bin/; slow once, then cached outside the checkout

$(DOCKER_TOOLS) &: tools/docker/go.mod tools/docker/go.sum tools/docker/build.sh
	tools/docker/build.sh $(BIN)

base-images: tools-docker ## make local stand-ins for the base images that can be neither found nor pulled (needs a Docker engine)
	tools/docker/base-images.sh $(BIN)

# The compose project (containers, volumes, network, lvmd VG are named after it) and flags for
# plinth-compose up, e.g. `make compose-up COMPOSE_PROJECT=p2 COMPOSE_FLAGS='-subnet 172.29.72.0/24'`;
# PLINTH_COMPOSE_PORT_OFFSET (default 1000) shifts every published port.
COMPOSE_PROJECT ?= plinth
COMPOSE_FLAGS ?=
COMPOSE := DOCKER_CONFIG=$(BIN)/docker-config $(BIN)/plinth-compose

compose-up: base-images ## build the images and start every service in containers (docker-compose.yaml), waiting until all are healthy
	$(GO) build -o $(BIN)/plinth-compose ./deploy/cmd/plinth-compose
	$(COMPOSE) up -root $(CURDIR) -project $(COMPOSE_PROJECT) $(COMPOSE_FLAGS)

# The archive of the images deploy/k8s runs, which `make kube-up` imports.
KUBE_IMAGES ?= $(BIN)/images/kube.tar

images: base-images ## build the images deploy/k8s runs (as compose builds them), tagged as its manifests name them, into $(KUBE_IMAGES)
	$(GO) build -o $(BIN)/plinth-compose ./deploy/cmd/plinth-compose
	$(COMPOSE) images -root $(CURDIR) -out $(KUBE_IMAGES)

compose-down: ## remove compose-up's containers, networks, volumes and its lvmd volume group and loop device
	$(GO) build -o $(BIN)/plinth-compose ./deploy/cmd/plinth-compose
	$(COMPOSE) down -root $(CURDIR) -project $(COMPOSE_PROJECT)

# Where `make kube-up` keeps its cluster (state, logs, images, pods), and flags for plinth-kube up,
# e.g. `make kube-up KUBE_FLAGS='-overlay='` for the cluster alone.
KUBE_DIR ?= /var/lib/plinth-kube
KUBE_FLAGS ?=
# overlays/local's S3 server (s3.yaml names this image): make tools-s3's static versitygw; and
# the Kubernetes binaries kaas's machines run (kaas.yaml copies them out of this image).
KUBE_S3_IMAGE := plinth.local/versitygw:$(shell awk '$$1 == "github.com/versity/versitygw" { print $$2 }' tools/s3/go.mod)
KUBE_BIN_IMAGE := plinth.local/kube-bin:$(K8S_V133)
comma := ,
empty :=
space := $(empty) $(empty)

kube-up: tools-k8s tools-s3 images ## run a real single-node Kubernetes here in the background with the suite (overlays/local) on it (root; installs missing Debian packages); prints KUBECONFIG=
	$(GO) build -o $(BIN)/plinth-kube ./deploy/cmd/plinth-kube
	$(BIN)/plinth-kube up -dir $(KUBE_DIR) -bin $(BIN) -root $(CURDIR) -image $(KUBE_IMAGES) -program $(KUBE_S3_IMAGE)=$(S3_SERVER) \
		-program $(KUBE_BIN_IMAGE)=$(subst $(space),$(comma),$(K8S_KAAS_TOOLS)) $(KUBE_FLAGS)

kube-demo: tools-cnpg ## on a running kube-up cluster: CloudNativePG's operator and the example Cluster whose WAL and backups go through cnpgi-plugin (deploy/k8s/README.md)
	$(GO) build -o $(BIN)/plinth-kube ./deploy/cmd/plinth-kube
	$(BIN)/plinth-kube demo -dir $(KUBE_DIR) -bin $(BIN) -root $(CURDIR)

kube-down: ## stop kube-up's cluster and undo what it changed on this machine (mounts, cgroups, iptables, sysctls, bridge)
	$(GO) build -o $(BIN)/plinth-kube ./deploy/cmd/plinth-kube
	$(BIN)/plinth-kube down -dir $(KUBE_DIR)

generate: tools ## regenerate libs/api from proto/
	find libs/api -name '*.pb.go' -delete
	find libs/api -mindepth 1 -type d -empty -delete
	buf generate

generate-deploy: ## regenerate the Envoy configs (from services/gateway/routes) and the NATS authorization (from libs/platform/events/access.go) of compose and k8s
	cd deploy && $(GO) run ./cmd/deploygen -root ..

generate-envoy generate-nats: generate-deploy

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
test: vet lint console-test tools-s3 tools-k8s tools-cnpg tools-tilt ## vet, lint, every module's tests with the race detector, then each fuzz target briefly
	$(GO) test -race -timeout 50m $(TEST_FLAGS) $(PACKAGES)
	FUZZTIME=$(TEST_FUZZTIME) .ci/fuzz

fuzz: ## run every fuzz target for FUZZTIME (default 60s) each
	FUZZTIME=$${FUZZTIME:-60s} .ci/fuzz

bench: ## run the benchmark scripts under bench/
	@shopt -s nullglob; scripts=(bench/*.sh); \
	if [ $${#scripts[@]} -eq 0 ]; then echo "no benchmarks yet (bench/*.sh)"; fi; \
	for s in "$${scripts[@]}"; do echo "== $$s"; bash "$$s"; done

console-test: tools ## the web console: npm ci, its unit tests, and the committed clients and build are fresh
	cd console && npm ci --no-audit --no-fund && npx --no-install vitest run && ./check-gen && ./check-dist

console-dist: tools ## rebuild the web console's committed clients and build (services/gateway/console/dist)
	cd console && npm ci --no-audit --no-fund && ./check-gen -w && ./check-dist -w
