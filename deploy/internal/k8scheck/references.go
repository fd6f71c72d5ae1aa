package k8scheck

import (
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// Ref is a reference from one object to a Secret or ConfigMap (and one key of it, when the
// reference names one).
type Ref struct {
	Kind      string // "Secret" or "ConfigMap"
	Namespace string
	Name      string
	Key       string // "" when the whole object is used
	From      string // the referring object and field, for messages
}

// Documented lists the Secrets (and ConfigMaps) a user creates before applying, as README.md
// documents them: name → keys (an empty set when the README names no key).
type Documented map[string]map[string]bool

// References lists every Secret and ConfigMap the build's objects refer to: env and envFrom,
// volumes (projected ones included), image pull secrets, the environment variables by which
// Plinth binaries name a Secret or ConfigMap for another pod (…_SECRET, …_CONFIG_MAP), the
// Secrets CloudNativePG's plugin annotations name, and the CA Secret of cert-manager CA
// Issuers.
func References(s *Set) []Ref {
	var refs []Ref
	for _, w := range s.Workloads {
		refs = append(refs, podRefs(w.String(), w.GetNamespace(), w.Template.Spec)...)
	}
	for _, svc := range s.Services {
		a := svc.GetAnnotations()
		if name := a["cnpg.io/pluginServerSecret"]; name != "" {
			refs = append(refs, Ref{"Secret", svc.GetNamespace(), name, "tls.crt", svc.String() + ": annotation cnpg.io/pluginServerSecret"})
		}
		if name := a["cnpg.io/pluginClientSecret"]; name != "" {
			for _, k := range []string{"tls.crt", "tls.key"} {
				refs = append(refs, Ref{"Secret", svc.GetNamespace(), name, k, svc.String() + ": annotation cnpg.io/pluginClientSecret"})
			}
		}
	}
	for _, o := range s.Objects {
		if o.GVK().Group == "cert-manager.io" && (o.GetKind() == "Issuer" || o.GetKind() == "ClusterIssuer") {
			if name, _, _ := unstructured.NestedString(o.Object, "spec", "ca", "secretName"); name != "" {
				for _, k := range []string{"tls.crt", "tls.key"} {
					refs = append(refs, Ref{"Secret", o.GetNamespace(), name, k, o.String() + ": spec.ca.secretName"})
				}
			}
		}
	}
	return refs
}

// allContainers is a pod's init containers, then its containers.
func allContainers(spec corev1.PodSpec) []corev1.Container {
	return append(slices.Clone(spec.InitContainers), spec.Containers...)
}

func podRefs(owner, ns string, spec corev1.PodSpec) []Ref {
	var refs []Ref
	add := func(kind, name, key, from string) {
		refs = append(refs, Ref{kind, ns, name, key, owner + ": " + from})
	}
	for _, c := range allContainers(spec) {
		for _, e := range c.Env {
			where := fmt.Sprintf("container %q env %s", c.Name, e.Name)
			if e.ValueFrom != nil && e.ValueFrom.SecretKeyRef != nil {
				add("Secret", e.ValueFrom.SecretKeyRef.Name, e.ValueFrom.SecretKeyRef.Key, where)
			}
			if e.ValueFrom != nil && e.ValueFrom.ConfigMapKeyRef != nil {
				add("ConfigMap", e.ValueFrom.ConfigMapKeyRef.Name, e.ValueFrom.ConfigMapKeyRef.Key, where)
			}
			// A Plinth setting naming an object another pod loads (cnpgi-plugin's sidecar).
			if e.Value != "" && strings.HasSuffix(e.Name, "_SECRET") {
				add("Secret", e.Value, "", where)
			}
			if e.Value != "" && strings.HasSuffix(e.Name, "_CONFIG_MAP") {
				add("ConfigMap", e.Value, "", where)
			}
		}
		for i, e := range c.EnvFrom {
			where := fmt.Sprintf("container %q envFrom[%d]", c.Name, i)
			if e.SecretRef != nil {
				add("Secret", e.SecretRef.Name, "", where)
			}
			if e.ConfigMapRef != nil {
				add("ConfigMap", e.ConfigMapRef.Name, "", where)
			}
		}
	}
	for _, v := range spec.Volumes {
		where := fmt.Sprintf("volume %q", v.Name)
		if v.Secret != nil {
			add("Secret", v.Secret.SecretName, "", where)
			for _, it := range v.Secret.Items {
				add("Secret", v.Secret.SecretName, it.Key, where)
			}
		}
		if v.ConfigMap != nil {
			add("ConfigMap", v.ConfigMap.Name, "", where)
			for _, it := range v.ConfigMap.Items {
				add("ConfigMap", v.ConfigMap.Name, it.Key, where)
			}
		}
		if v.Projected != nil {
			for _, src := range v.Projected.Sources {
				if src.Secret != nil {
					add("Secret", src.Secret.Name, "", where)
					for _, it := range src.Secret.Items {
						add("Secret", src.Secret.Name, it.Key, where)
					}
				}
				if src.ConfigMap != nil {
					add("ConfigMap", src.ConfigMap.Name, "", where)
					for _, it := range src.ConfigMap.Items {
						add("ConfigMap", src.ConfigMap.Name, it.Key, where)
					}
				}
			}
		}
	}
	for _, p := range spec.ImagePullSecrets {
		add("Secret", p.Name, "", "imagePullSecrets")
	}
	return refs
}

// Declared returns the Secrets and ConfigMaps the build itself provides, keyed by
// "Kind/namespace/name", with their keys: Secret and ConfigMap objects, and the Secrets
// cert-manager writes for each Certificate (tls.crt, tls.key, ca.crt).
func Declared(s *Set) map[string]map[string]bool {
	out := map[string]map[string]bool{}
	keysOf := func(o Object, fields ...string) map[string]bool {
		keys := map[string]bool{}
		for _, f := range fields {
			m, _, _ := unstructured.NestedMap(o.Object, f)
			for k := range m {
				keys[k] = true
			}
		}
		return keys
	}
	for _, o := range s.Objects {
		switch {
		case o.GVK().Group == "" && o.GetKind() == "Secret":
			out["Secret/"+o.GetNamespace()+"/"+o.GetName()] = keysOf(o, "data", "stringData")
		case o.GVK().Group == "" && o.GetKind() == "ConfigMap":
			out["ConfigMap/"+o.GetNamespace()+"/"+o.GetName()] = keysOf(o, "data", "binaryData")
		case o.GVK().Group == "cert-manager.io" && o.GetKind() == "Certificate":
			if name, _, _ := unstructured.NestedString(o.Object, "spec", "secretName"); name != "" {
				out["Secret/"+o.GetNamespace()+"/"+name] = map[string]bool{"tls.crt": true, "tls.key": true, "ca.crt": true}
			}
		}
	}
	return out
}

// CheckReferences checks that every reference resolves: to an object the build declares
// (which must then hold the key), or to a Secret the README documents (with that key, when a
// key is named). ConfigMaps must be declared or documented just the same.
func CheckReferences(s *Set, doc Documented) []error {
	declared := Declared(s)
	var errs []error
	for _, r := range References(s) {
		if keys, ok := declared[r.Kind+"/"+r.Namespace+"/"+r.Name]; ok {
			if r.Key != "" && !keys[r.Key] {
				errs = append(errs, fmt.Errorf("%s: %s %q has no key %q (it has %v)", r.From, r.Kind, r.Name, r.Key, sortedKeys(keys)))
			}
			continue
		}
		keys, ok := doc[r.Name]
		switch {
		case !ok:
			errs = append(errs, fmt.Errorf("%s: %s %q is neither in the kustomization nor documented in deploy/k8s/README.md", r.From, r.Kind, r.Name))
		case r.Key != "" && !keys[r.Key]:
			errs = append(errs, fmt.Errorf("%s: key %q of %s %q is not documented in deploy/k8s/README.md (documented: %v)", r.From, r.Key, r.Kind, r.Name, sortedKeys(keys)))
		}
	}
	return errs
}

func sortedKeys(m map[string]bool) []string {
	var keys []string
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
