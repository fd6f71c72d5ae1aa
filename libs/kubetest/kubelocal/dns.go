package kubelocal

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/utils/ptr"
)

// adminConfig is the admin's client configuration (the kubeconfig Up writes).
func adminConfig(l layout) (*rest.Config, error) {
	cfg, err := clientcmd.BuildConfigFromFlags("", l.path(adminKubeconfig))
	if err != nil {
		return nil, fmt.Errorf("kubelocal: %w", err)
	}
	return cfg, nil
}

// adminClient talks to the cluster as its admin, each request bounded.
func adminClient(l layout) (kubernetes.Interface, error) {
	cfg, err := adminConfig(l)
	if err != nil {
		return nil, err
	}
	cfg.Timeout = 15 * time.Second
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("kubelocal: %w", err)
	}
	return client, nil
}

// setupAPI creates what the cluster's DNS needs before CoreDNS starts: read access for its
// user (kubeadm's system:coredns role) and the kube-dns Service at the kubelet's clusterDNS
// address, whose one endpoint is CoreDNS on the bridge's address.
func setupAPI(ctx context.Context, l layout) error {
	client, err := adminClient(l)
	if err != nil {
		return err
	}
	role := &rbacv1.ClusterRole{
		ObjectMeta: metav1.ObjectMeta{Name: "system:coredns"},
		Rules: []rbacv1.PolicyRule{
			{APIGroups: []string{""}, Resources: []string{"endpoints", "services", "pods", "namespaces"}, Verbs: []string{"list", "watch"}},
			{APIGroups: []string{"discovery.k8s.io"}, Resources: []string{"endpointslices"}, Verbs: []string{"list", "watch"}},
		},
	}
	binding := &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "system:coredns"},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role.Name},
		Subjects:   []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: corednsUser}},
	}
	labels := map[string]string{"k8s-app": "kube-dns", "kubernetes.io/name": "CoreDNS"}
	svc := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: "kube-dns", Namespace: metav1.NamespaceSystem, Labels: labels},
		Spec: corev1.ServiceSpec{
			ClusterIP: l.dnsIP,
			Ports: []corev1.ServicePort{
				{Name: "dns", Port: 53, Protocol: corev1.ProtocolUDP},
				{Name: "dns-tcp", Port: 53, Protocol: corev1.ProtocolTCP},
			},
		},
	}
	slice := &discoveryv1.EndpointSlice{
		ObjectMeta: metav1.ObjectMeta{
			Name: "kube-dns-node", Namespace: metav1.NamespaceSystem,
			Labels: map[string]string{
				discoveryv1.LabelServiceName: "kube-dns",
				discoveryv1.LabelManagedBy:   "kubelocal.plinth.dev",
			},
		},
		AddressType: discoveryv1.AddressTypeIPv4,
		Endpoints: []discoveryv1.Endpoint{{
			Addresses:  []string{l.nodeIP},
			Conditions: discoveryv1.EndpointConditions{Ready: ptr.To(true)},
			NodeName:   ptr.To(l.NodeName),
		}},
		Ports: []discoveryv1.EndpointPort{
			{Name: ptr.To("dns"), Port: ptr.To[int32](53), Protocol: ptr.To(corev1.ProtocolUDP)},
			{Name: ptr.To("dns-tcp"), Port: ptr.To[int32](53), Protocol: ptr.To(corev1.ProtocolTCP)},
		},
	}
	for _, o := range []runtime.Object{role, binding, svc, slice} {
		// The apiserver is ready, but its bootstrap (the kube-system namespace, RBAC's
		// defaults) may still be under way for a moment.
		if err := poll(ctx, time.Minute, func(ctx context.Context) error { return create(ctx, client, o) }); err != nil {
			return fmt.Errorf("kubelocal: cluster DNS objects: %w", err)
		}
	}
	return nil
}
