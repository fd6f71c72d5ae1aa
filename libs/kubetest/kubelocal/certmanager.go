package kubelocal

import (
	"context"
	"fmt"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"

	"github.com/plinth-dev/plinth/libs/kubetest"
)

const certManagerNamespace = "cert-manager"

// installCertManager installs cert-manager's CRDs (from the module tools/crds pins, the
// version the controller is built from), a service account with the permissions its
// controllers use, and the controller as a Deployment, and waits until it is Available.
func installCertManager(ctx context.Context, l layout, client kubernetes.Interface) error {
	crds, err := kubetest.ModuleCRDs(kubetest.CertManagerModule, "deploy/crds/*.yaml")
	if err != nil {
		return fmt.Errorf("kubelocal: cert-manager CRDs: %w", err)
	}
	cfg, err := adminConfig(l)
	if err != nil {
		return err
	}
	if err := kubetest.CreateCRDs(ctx, cfg, crds...); err != nil {
		return fmt.Errorf("kubelocal: cert-manager: %w", err)
	}

	labels := map[string]string{"app.kubernetes.io/name": "cert-manager", "app.kubernetes.io/component": "controller"}
	objects := []func() error{
		func() error {
			_, err := client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: certManagerNamespace}}, metav1.CreateOptions{})
			return err
		},
		func() error {
			_, err := client.CoreV1().ServiceAccounts(certManagerNamespace).Create(ctx, &corev1.ServiceAccount{
				ObjectMeta: metav1.ObjectMeta{Name: "cert-manager", Labels: labels},
			}, metav1.CreateOptions{})
			return err
		},
		func() error {
			_, err := client.RbacV1().ClusterRoles().Create(ctx, &rbacv1.ClusterRole{
				ObjectMeta: metav1.ObjectMeta{Name: "cert-manager-controller", Labels: labels},
				Rules: []rbacv1.PolicyRule{
					// Its own resources, including approving requests for its issuers (signers).
					{APIGroups: []string{"cert-manager.io", "acme.cert-manager.io"}, Resources: []string{"*"}, Verbs: []string{"*"}},
					// The key pairs it writes and reads.
					{APIGroups: []string{""}, Resources: []string{"secrets"}, Verbs: []string{"get", "list", "watch", "create", "update", "patch", "delete"}},
					{APIGroups: []string{"", "events.k8s.io"}, Resources: []string{"events"}, Verbs: []string{"create", "patch", "update"}},
					{APIGroups: []string{"authorization.k8s.io"}, Resources: []string{"subjectaccessreviews"}, Verbs: []string{"create"}},
					// Informers it starts for the ACME HTTP-01 solver's objects (never made here).
					{APIGroups: []string{""}, Resources: []string{"pods", "services"}, Verbs: []string{"get", "list", "watch"}},
					{APIGroups: []string{"networking.k8s.io"}, Resources: []string{"ingresses"}, Verbs: []string{"get", "list", "watch"}},
					{APIGroups: []string{"certificates.k8s.io"}, Resources: []string{"certificatesigningrequests"}, Verbs: []string{"get", "list", "watch"}},
				},
			}, metav1.CreateOptions{})
			return err
		},
		func() error {
			_, err := client.RbacV1().ClusterRoleBindings().Create(ctx, &rbacv1.ClusterRoleBinding{
				ObjectMeta: metav1.ObjectMeta{Name: "cert-manager-controller", Labels: labels},
				RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "cert-manager-controller"},
				Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: "cert-manager", Namespace: certManagerNamespace}},
			}, metav1.CreateOptions{})
			return err
		},
		func() error {
			_, err := client.AppsV1().Deployments(certManagerNamespace).Create(ctx, certManagerDeployment(labels), metav1.CreateOptions{})
			return err
		},
	}
	for _, create := range objects {
		if err := create(); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("kubelocal: cert-manager: %w", err)
		}
	}
	return poll(ctx, 2*time.Minute, func(ctx context.Context) error {
		d, err := client.AppsV1().Deployments(certManagerNamespace).Get(ctx, "cert-manager", metav1.GetOptions{})
		if err != nil {
			return err
		}
		if d.Status.AvailableReplicas < 1 {
			return fmt.Errorf("cert-manager's Deployment is not Available (%d replicas ready)", d.Status.ReadyReplicas)
		}
		return nil
	})
}

func certManagerDeployment(labels map[string]string) *appsv1.Deployment {
	probe := func(path string) *corev1.Probe {
		return &corev1.Probe{
			ProbeHandler:  corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: path, Port: intstr.FromString("healthz")}},
			PeriodSeconds: 5,
		}
	}
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "cert-manager", Namespace: certManagerNamespace, Labels: labels},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To[int32](1),
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{
					ServiceAccountName: "cert-manager",
					SecurityContext: &corev1.PodSecurityContext{
						RunAsNonRoot: ptr.To(true), RunAsUser: ptr.To[int64](65532),
						SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
					},
					Containers: []corev1.Container{{
						Name:            "cert-manager-controller",
						Image:           CertManagerImage,
						ImagePullPolicy: corev1.PullNever,
						Args:            []string{"--cluster-resource-namespace=" + certManagerNamespace, "--healthz-address=0.0.0.0:9403"},
						Ports:           []corev1.ContainerPort{{Name: "healthz", ContainerPort: 9403}},
						ReadinessProbe:  probe("/readyz"),
						LivenessProbe:   probe("/livez"),
						SecurityContext: &corev1.SecurityContext{
							AllowPrivilegeEscalation: ptr.To(false), ReadOnlyRootFilesystem: ptr.To(true),
							Capabilities: &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
						},
					}},
				},
			},
		},
	}
}
