// Package configcheck validates the deployment files (the Envoy configs deploy/envoy/envoy.yaml
// and deploy/k8s/base/gateway/envoy.yaml, docker-compose.yaml, deploy/docker/Dockerfile,
// Tiltfile) with the schemas and parsers of the tools that run them, so a broken file fails
// `make test` instead of `docker compose up`.
package configcheck

import (
	"encoding/json"
	"errors"
	"fmt"

	bootstrapv3 "github.com/envoyproxy/go-control-plane/envoy/config/bootstrap/v3"
	"go.yaml.in/yaml/v4"
	"google.golang.org/protobuf/encoding/protojson"

	// Every extension envoy.yaml names by "@type" must be linked in, or its Any cannot be
	// resolved: add the package here when the gateway config uses a new one.
	_ "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/body_size_limit/v3"
	_ "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/cors/v3"
	_ "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/ext_authz/v3"
	_ "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/grpc_web/v3"
	_ "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/router/v3"
	_ "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/connection_limit/v3"
	_ "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/http_connection_manager/v3"
	_ "github.com/envoyproxy/go-control-plane/envoy/extensions/http/early_header_mutation/header_mutation/v3"
	_ "github.com/envoyproxy/go-control-plane/envoy/extensions/resource_monitors/downstream_connections/v3"
	_ "github.com/envoyproxy/go-control-plane/envoy/extensions/transport_sockets/tls/v3"
	_ "github.com/envoyproxy/go-control-plane/envoy/extensions/upstreams/http/v3"
)

// ParseEnvoy reads an Envoy bootstrap written in YAML the way Envoy does (YAML → JSON → proto,
// unknown fields rejected) and checks what Envoy would check at start-up and more:
//   - protoc-gen-validate rules of the bootstrap and of every typed_config/typed_*_config Any
//     inside it, however deep (ValidateAll stops at an Any);
//   - no deprecated field or enum value is set (Envoy refuses some of them outright);
//   - every cluster a route, a weighted cluster or an envoy_grpc service names is defined once
//     in static_resources.clusters, and each cluster's load_assignment names the cluster itself;
//   - every HTTP filter chain ends with the router, and every typed_per_filter_config key names
//     a configured HTTP filter (a misspelt key would silently not apply).
//
// It returns all the problems it found, joined.
func ParseEnvoy(doc []byte) (*bootstrapv3.Bootstrap, error) {
	var tree any
	if err := yaml.Unmarshal(doc, &tree); err != nil {
		return nil, fmt.Errorf("envoy config is not YAML: %w", err)
	}
	tree, err := jsonTree(tree, "")
	if err != nil {
		return nil, err
	}
	js, err := json.Marshal(tree)
	if err != nil {
		return nil, fmt.Errorf("envoy config: %w", err)
	}
	b := &bootstrapv3.Bootstrap{}
	if err := protojson.Unmarshal(js, b); err != nil {
		return nil, fmt.Errorf("envoy config does not match the Envoy v3 API (a misspelt field, or an extension not linked into configcheck): %w", err)
	}
	var errs []error
	if err := b.ValidateAll(); err != nil {
		errs = append(errs, err)
	}
	w := newEnvoyWalk()
	w.message(b.ProtoReflect(), "")
	errs = append(errs, w.errs...)
	errs = append(errs, checkClusterRefs(b, w)...)
	for _, k := range w.perFilterKeys {
		if !w.httpFilters[k.name] {
			errs = append(errs, fmt.Errorf("%s: typed_per_filter_config key %q names no configured HTTP filter", k.path, k.name))
		}
	}
	return b, errors.Join(errs...)
}

// checkClusterRefs checks that the clusters the walk saw referenced exist, exactly once each.
func checkClusterRefs(b *bootstrapv3.Bootstrap, w *envoyWalk) []error {
	var errs []error
	clusters := map[string]bool{}
	for _, c := range b.GetStaticResources().GetClusters() {
		if clusters[c.GetName()] {
			errs = append(errs, fmt.Errorf("cluster %q is defined twice", c.GetName()))
		}
		clusters[c.GetName()] = true
		if la := c.GetLoadAssignment(); la != nil && la.GetClusterName() != c.GetName() {
			errs = append(errs, fmt.Errorf("cluster %q: load_assignment.cluster_name is %q", c.GetName(), la.GetClusterName()))
		}
	}
	for _, r := range w.clusterRefs {
		if !clusters[r.name] {
			errs = append(errs, fmt.Errorf("%s: cluster %q is not in static_resources.clusters", r.path, r.name))
		}
	}
	return errs
}

// jsonTree turns a decoded YAML tree into one encoding/json can marshal: YAML allows mapping
// keys that are not strings, JSON (and so Envoy) does not.
func jsonTree(v any, path string) (any, error) {
	switch v := v.(type) {
	case map[string]any:
		for k, e := range v {
			c, err := jsonTree(e, path+"."+k)
			if err != nil {
				return nil, err
			}
			v[k] = c
		}
		return v, nil
	case map[any]any:
		m := make(map[string]any, len(v))
		for k, e := range v {
			ks, ok := k.(string)
			if !ok {
				return nil, fmt.Errorf("envoy config%s: mapping key %v is not a string", path, k)
			}
			c, err := jsonTree(e, path+"."+ks)
			if err != nil {
				return nil, err
			}
			m[ks] = c
		}
		return m, nil
	case []any:
		for i, e := range v {
			c, err := jsonTree(e, fmt.Sprintf("%s[%d]", path, i))
			if err != nil {
				return nil, err
			}
			v[i] = c
		}
		return v, nil
	default:
		return v, nil
	}
}
