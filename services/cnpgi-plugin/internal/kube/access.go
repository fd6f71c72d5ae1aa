package kube

import (
	"context"
	"fmt"
	"maps"
	"reflect"
	"slices"

	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/plinth-dev/plinth/libs/platform/input"
)

// RBACName names the Role and RoleBinding that let a Cluster's instances (their sidecars,
// which run as the Cluster's service account, named after it) read the ObjectStores they use.
func RBACName(cluster string) string { return cluster + "-plinth-cnpgi" }

// GrantInstances makes the Role and RoleBinding of RBACName(cluster) in namespace, owned by
// the Cluster (uid; deleted with it), say exactly what its instances need and nothing more:
// get on the ObjectStores named, get and update on their status (the recovery window), and
// get on the Secrets those ObjectStores name — the rules plugin-barman-cloud grants, by name.
// Each ObjectStore is read first (through Get), so a missing one or a missing Secret is the
// error, and a Secret added to an ObjectStore is granted on the next call. Unchanged objects
// are not written.
func (s *ObjectStores) GrantInstances(ctx context.Context, namespace, cluster, uid string, objectStores []string) error {
	secrets := map[string]bool{}
	for _, name := range objectStores {
		if _, err := s.Get(ctx, namespace, name); err != nil {
			return err
		}
		for _, sec := range s.secretsOf(namespace, name) {
			secrets[sec] = true
		}
	}
	stores := slices.Sorted(slices.Values(objectStores))
	rules := []rbacv1.PolicyRule{
		{APIGroups: []string{ObjectStoreResource.Group}, Resources: []string{"objectstores"}, Verbs: []string{"get"}, ResourceNames: stores},
		{APIGroups: []string{ObjectStoreResource.Group}, Resources: []string{"objectstores/status"}, Verbs: []string{"get", "update"}, ResourceNames: stores},
	}
	if len(secrets) > 0 {
		rules = append(rules, rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"secrets"}, Verbs: []string{"get"},
			ResourceNames: slices.Sorted(maps.Keys(secrets))})
	}
	meta := metav1.ObjectMeta{
		Name: RBACName(cluster), Namespace: namespace,
		Labels: map[string]string{"cnpg.io/cluster": cluster, "app.kubernetes.io/managed-by": "cnpgi-plugin"},
	}
	if uid != "" {
		meta.OwnerReferences = []metav1.OwnerReference{{
			APIVersion: "postgresql.cnpg.io/v1", Kind: "Cluster", Name: cluster, UID: types.UID(uid),
			Controller: new(true), BlockOwnerDeletion: new(true),
		}}
	}
	cctx, cancel := context.WithTimeout(ctx, s.opts.CallTimeout)
	defer cancel()
	if err := s.ensureRole(cctx, &rbacv1.Role{ObjectMeta: meta, Rules: rules}); err != nil {
		return err
	}
	return s.ensureRoleBinding(cctx, &rbacv1.RoleBinding{
		ObjectMeta: meta,
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: cluster, Namespace: namespace}},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: meta.Name},
	})
}

func (s *ObjectStores) ensureRole(ctx context.Context, want *rbacv1.Role) error {
	roles := s.core.RbacV1().Roles(want.Namespace)
	what := fmt.Sprintf("Role %s in namespace %s", input.Quote(want.Name), input.Quote(want.Namespace))
	have, err := roles.Get(ctx, want.Name, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		_, err = roles.Create(ctx, want, metav1.CreateOptions{FieldManager: "cnpgi-plugin"})
		return writeErr(err, "create", what, rbacGrant("create"))
	case err != nil:
		return writeErr(err, "read", what, rbacGrant("read"))
	case reflect.DeepEqual(have.Rules, want.Rules) && reflect.DeepEqual(have.OwnerReferences, want.OwnerReferences):
		return nil
	}
	have.Rules, have.OwnerReferences, have.Labels = want.Rules, want.OwnerReferences, want.Labels
	_, err = roles.Update(ctx, have, metav1.UpdateOptions{FieldManager: "cnpgi-plugin"})
	return writeErr(err, "update", what, rbacGrant("update"))
}

func (s *ObjectStores) ensureRoleBinding(ctx context.Context, want *rbacv1.RoleBinding) error {
	bindings := s.core.RbacV1().RoleBindings(want.Namespace)
	what := fmt.Sprintf("RoleBinding %s in namespace %s", input.Quote(want.Name), input.Quote(want.Namespace))
	have, err := bindings.Get(ctx, want.Name, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		_, err = bindings.Create(ctx, want, metav1.CreateOptions{FieldManager: "cnpgi-plugin"})
		return writeErr(err, "create", what, rbacGrant("create"))
	case err != nil:
		return writeErr(err, "read", what, rbacGrant("read"))
	case have.RoleRef != want.RoleRef:
		// A binding's roleRef cannot change: it is made again.
		if err := bindings.Delete(ctx, want.Name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			return writeErr(err, "delete", what, rbacGrant("delete"))
		}
		_, err = bindings.Create(ctx, want, metav1.CreateOptions{FieldManager: "cnpgi-plugin"})
		return writeErr(err, "create", what, rbacGrant("create"))
	case reflect.DeepEqual(have.Subjects, want.Subjects) && reflect.DeepEqual(have.OwnerReferences, want.OwnerReferences):
		return nil
	}
	have.Subjects, have.OwnerReferences, have.Labels = want.Subjects, want.OwnerReferences, want.Labels
	_, err = bindings.Update(ctx, have, metav1.UpdateOptions{FieldManager: "cnpgi-plugin"})
	return writeErr(err, "update", what, rbacGrant("update"))
}

// writeErr says what the plugin could not do to what: forbidden with grant (the permission
// its service account lacks), an API answer as such, anything else as the API unreachable.
func writeErr(err error, verb, what, grant string) error {
	switch {
	case err == nil:
		return nil
	case apierrors.IsForbidden(err):
		return fmt.Errorf("the plugin may not %s %s: %s: %w", verb, what, grant, err)
	case isAPIError(err):
		return fmt.Errorf("%s %s: %w", verb, what, err)
	}
	return fmt.Errorf("%w: %s %s: %w", ErrAPIUnreachable, verb, what, err)
}

// rbacGrant is what the operator side's service account needs to grant instances their
// access (RBAC lets it grant only what it holds).
func rbacGrant(verb string) string {
	return "its service account needs " + verb + " on roles and rolebindings, and itself get on objectstores, " +
		"objectstores/status and secrets (deploy/k8s/base/cnpgi-plugin/rbac.yaml)"
}
