package kubelocal

import (
	"context"
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
)

// create creates obj, one of the kinds the cluster's own components are made of (cluster DNS,
// cert-manager, the storage provisioner); one that exists is kept as it is.
func create(ctx context.Context, client kubernetes.Interface, obj runtime.Object) error {
	var err error
	opts := metav1.CreateOptions{}
	switch o := obj.(type) {
	case *corev1.Namespace:
		_, err = client.CoreV1().Namespaces().Create(ctx, o, opts)
	case *corev1.ServiceAccount:
		_, err = client.CoreV1().ServiceAccounts(o.Namespace).Create(ctx, o, opts)
	case *corev1.ConfigMap:
		_, err = client.CoreV1().ConfigMaps(o.Namespace).Create(ctx, o, opts)
	case *corev1.Service:
		_, err = client.CoreV1().Services(o.Namespace).Create(ctx, o, opts)
	case *discoveryv1.EndpointSlice:
		_, err = client.DiscoveryV1().EndpointSlices(o.Namespace).Create(ctx, o, opts)
	case *rbacv1.Role:
		_, err = client.RbacV1().Roles(o.Namespace).Create(ctx, o, opts)
	case *rbacv1.RoleBinding:
		_, err = client.RbacV1().RoleBindings(o.Namespace).Create(ctx, o, opts)
	case *rbacv1.ClusterRole:
		_, err = client.RbacV1().ClusterRoles().Create(ctx, o, opts)
	case *rbacv1.ClusterRoleBinding:
		_, err = client.RbacV1().ClusterRoleBindings().Create(ctx, o, opts)
	case *appsv1.Deployment:
		_, err = client.AppsV1().Deployments(o.Namespace).Create(ctx, o, opts)
	case *storagev1.StorageClass:
		_, err = client.StorageV1().StorageClasses().Create(ctx, o, opts)
	default:
		return fmt.Errorf("no way to create a %T", obj)
	}
	if apierrors.IsAlreadyExists(err) {
		return nil
	}
	return err
}
