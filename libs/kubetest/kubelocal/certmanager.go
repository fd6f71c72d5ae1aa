package kubelocal

import (
	"context"
	"fmt"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"

	"github.com/plinth-dev/plinth/libs/kubetest"
)

const certManagerNamespace = "cert-manager"

// installCertManager installs cert-manager's CRDs (from the module tools/crds pins, the
// version the programs are built from) and its controller and CA injector, each a Deployment
// with a service account holding the permissions it uses, and waits until both are Available.
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

	if err := create(ctx, client, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: certManagerNamespace}}); err != nil {
		return fmt.Errorf("kubelocal: cert-manager: %w", err)
	}
	for _, p := range certManagerParts() {
		if err := p.install(ctx, client); err != nil {
			return err
		}
	}
	return poll(ctx, 2*time.Minute, func(ctx context.Context) error {
		for _, p := range certManagerParts() {
			d, err := client.AppsV1().Deployments(certManagerNamespace).Get(ctx, p.name, metav1.GetOptions{})
			if err != nil {
				return err
			}
			if d.Status.AvailableReplicas < 1 {
				return fmt.Errorf("%s's Deployment is not Available (%d replicas ready)", p.name, d.Status.ReadyReplicas)
			}
		}
		return nil
	})
}

// certManagerPart is one of cert-manager's programs as a Deployment of its own, with its
// service account and cluster role.
type certManagerPart struct {
	name, image string
	args        []string
	healthz     int32
	rules       []rbacv1.PolicyRule
}

func certManagerParts() []certManagerPart {
	read := []string{"get", "list", "watch"}
	events := rbacv1.PolicyRule{APIGroups: []string{"", "events.k8s.io"}, Resources: []string{"events"}, Verbs: []string{"create", "patch", "update"}}
	return []certManagerPart{
		{
			name: "cert-manager", image: CertManagerImage, healthz: 9403,
			args: []string{"--cluster-resource-namespace=" + certManagerNamespace, "--healthz-address=0.0.0.0:9403"},
			rules: []rbacv1.PolicyRule{
				// Its own resources, including approving requests for its issuers (signers).
				{APIGroups: []string{"cert-manager.io", "acme.cert-manager.io"}, Resources: []string{"*"}, Verbs: []string{"*"}},
				// The key pairs it writes and reads.
				{APIGroups: []string{""}, Resources: []string{"secrets"}, Verbs: []string{"get", "list", "watch", "create", "update", "patch", "delete"}},
				events,
				{APIGroups: []string{"authorization.k8s.io"}, Resources: []string{"subjectaccessreviews"}, Verbs: []string{"create"}},
				// Informers it starts for the ACME HTTP-01 solver's objects (never made here).
				{APIGroups: []string{""}, Resources: []string{"pods", "services"}, Verbs: read},
				{APIGroups: []string{"networking.k8s.io"}, Resources: []string{"ingresses"}, Verbs: read},
				{APIGroups: []string{"certificates.k8s.io"}, Resources: []string{"certificatesigningrequests"}, Verbs: read},
			},
		},
		{
			// The CA injector: reads Certificates and their Secrets, writes caBundle fields.
			name: "cert-manager-cainjector", image: CAInjectorImage, healthz: 9404,
			args: []string{"--healthz-address=0.0.0.0:9404"},
			rules: []rbacv1.PolicyRule{
				{APIGroups: []string{"cert-manager.io"}, Resources: []string{"certificates"}, Verbs: read},
				{APIGroups: []string{""}, Resources: []string{"secrets"}, Verbs: read},
				events,
				{APIGroups: []string{"admissionregistration.k8s.io"}, Resources: []string{"validatingwebhookconfigurations", "mutatingwebhookconfigurations"}, Verbs: []string{"get", "list", "watch", "update", "patch"}},
				{APIGroups: []string{"apiregistration.k8s.io"}, Resources: []string{"apiservices"}, Verbs: []string{"get", "list", "watch", "update", "patch"}},
				{APIGroups: []string{"apiextensions.k8s.io"}, Resources: []string{"customresourcedefinitions"}, Verbs: []string{"get", "list", "watch", "update", "patch"}},
			},
		},
	}
}

// install creates the part's service account, cluster role and binding and Deployment (any
// that exists is left as it is).
func (p certManagerPart) install(ctx context.Context, client kubernetes.Interface) error {
	labels := map[string]string{"app.kubernetes.io/name": p.name, "app.kubernetes.io/part-of": "cert-manager"}
	meta := metav1.ObjectMeta{Name: p.name, Labels: labels}
	for _, o := range []runtime.Object{
		&corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: p.name, Namespace: certManagerNamespace, Labels: labels}},
		&rbacv1.ClusterRole{ObjectMeta: meta, Rules: p.rules},
		&rbacv1.ClusterRoleBinding{
			ObjectMeta: meta,
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: p.name},
			Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: p.name, Namespace: certManagerNamespace}},
		},
		p.deployment(labels),
	} {
		if err := create(ctx, client, o); err != nil {
			return fmt.Errorf("kubelocal: %s: %w", p.name, err)
		}
	}
	return nil
}

func (p certManagerPart) deployment(labels map[string]string) *appsv1.Deployment {
	probe := func(path string) *corev1.Probe {
		return &corev1.Probe{
			ProbeHandler:  corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: path, Port: intstr.FromString("healthz")}},
			PeriodSeconds: 5,
		}
	}
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: p.name, Namespace: certManagerNamespace, Labels: labels},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To[int32](1),
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{
					ServiceAccountName: p.name,
					SecurityContext: &corev1.PodSecurityContext{
						RunAsNonRoot: ptr.To(true), RunAsUser: ptr.To[int64](65532),
						SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
					},
					Containers: []corev1.Container{{
						Name:            p.name,
						Image:           p.image,
						ImagePullPolicy: corev1.PullNever,
						Args:            p.args,
						Ports:           []corev1.ContainerPort{{Name: "healthz", ContainerPort: p.healthz}},
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
