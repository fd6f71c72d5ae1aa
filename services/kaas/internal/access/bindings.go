package access

import (
	"context"
	"errors"
	"fmt"
	"slices"

	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/plinth-dev/plinth/libs/platform/authz"
)

// ManagedBy marks the bindings kaas keeps.
const ManagedBy = "plinth-kaas"

// Bindings are the ClusterRoleBindings every kaas cluster has: one per Plinth role, named
// after its group, binding the group to the role's ClusterRole.
func Bindings() []*rbacv1.ClusterRoleBinding {
	var out []*rbacv1.ClusterRoleBinding
	for _, role := range []authz.Role{authz.Viewer, authz.Operator, authz.Admin} {
		g := grants[role]
		out = append(out, &rbacv1.ClusterRoleBinding{
			ObjectMeta: metav1.ObjectMeta{Name: g.Group, Labels: map[string]string{"app.kubernetes.io/managed-by": ManagedBy}},
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: g.ClusterRole},
			Subjects:   []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.GroupKind, Name: g.Group}},
		})
	}
	return out
}

// Ensure makes the cluster's bindings what Bindings says: created when missing, their
// subjects set back when changed, replaced when bound to another ClusterRole (a binding's
// roleRef cannot change). Clusters made before kaas issued per-role kubeconfigs get them at
// their next reconciler pass.
func Ensure(ctx context.Context, c kubernetes.Interface) error {
	api := c.RbacV1().ClusterRoleBindings()
	var errs []error
	for _, want := range Bindings() {
		got, err := api.Get(ctx, want.Name, metav1.GetOptions{})
		switch {
		case apierrors.IsNotFound(err):
			_, err = api.Create(ctx, want, metav1.CreateOptions{})
		case err != nil:
		case got.RoleRef != want.RoleRef:
			if err = api.Delete(ctx, want.Name, metav1.DeleteOptions{}); err == nil || apierrors.IsNotFound(err) {
				_, err = api.Create(ctx, want, metav1.CreateOptions{})
			}
		case !slices.Equal(got.Subjects, want.Subjects):
			got.Subjects = want.Subjects
			_, err = api.Update(ctx, got, metav1.UpdateOptions{})
		}
		if err != nil && !apierrors.IsAlreadyExists(err) {
			errs = append(errs, fmt.Errorf("ClusterRoleBinding %s: %w", want.Name, err))
		}
	}
	return errors.Join(errs...)
}
