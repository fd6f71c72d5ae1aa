// Package kube reads a cluster's own Kubernetes API as kaas itself (pki.Self): whether the
// API server is ready and which version it serves, and its nodes' readiness and versions.
package kube

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/plinth-dev/plinth/services/kaas/internal/pki"
)

// Unknown is what kaas says of a node when the cluster's API cannot tell: never an invented
// value.
const Unknown = "unknown"

// NotRegistered is a machine whose node the API does not have (yet).
const NotRegistered = "not registered"

// Client is a cluster's API as kaas.
type Client struct {
	kubernetes.Interface
	Config *rest.Config
}

// Connect builds a client for the cluster whose API server is at endpoint (host:port); each
// request is bounded by timeout.
func Connect(keys *pki.Cluster, cluster, endpoint string, timeout time.Duration) (*Client, error) {
	kc, err := pki.SelfKubeconfig(keys, cluster, endpoint)
	if err != nil {
		return nil, err
	}
	cfg, err := clientcmd.RESTConfigFromKubeConfig(kc)
	if err != nil {
		return nil, err
	}
	cfg.Timeout = timeout
	cfg.UserAgent = "plinth-kaas"
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	return &Client{Interface: cs, Config: cfg}, nil
}

// Version is the API server's /version gitVersion.
func (c *Client) Version(ctx context.Context) (string, error) {
	body, err := c.Discovery().RESTClient().Get().AbsPath("/version").Do(ctx).Raw()
	if err != nil {
		return "", err
	}
	var v struct {
		GitVersion string `json:"gitVersion"`
	}
	if err := json.Unmarshal(body, &v); err != nil {
		return "", fmt.Errorf("read /version: %w", err)
	}
	return v.GitVersion, nil
}

// Ready reports whether the API server answers /readyz with ok.
func (c *Client) Ready(ctx context.Context) error {
	body, err := c.Discovery().RESTClient().Get().AbsPath("/readyz").Do(ctx).Raw()
	if err != nil {
		return err
	}
	if string(body) != "ok" {
		return fmt.Errorf("readyz: %.200s", body)
	}
	return nil
}

// Node is a node's readiness and kubelet version as the API has them.
type Node struct {
	// Status is "Ready", "NotReady" or "Unknown" (the Ready condition), or NotRegistered.
	Status  string
	Version string
}

// Nodes reads every node of the cluster by name.
func (c *Client) Nodes(ctx context.Context) (map[string]Node, error) {
	list, err := c.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, err
	}
	out := make(map[string]Node, len(list.Items))
	for _, n := range list.Items {
		out[n.Name] = Node{Status: Readiness(&n), Version: n.Status.NodeInfo.KubeletVersion}
	}
	return out, nil
}

// Readiness spells a node's Ready condition as kubectl does.
func Readiness(n *corev1.Node) string {
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady {
			switch c.Status {
			case corev1.ConditionTrue:
				return "Ready"
			case corev1.ConditionFalse:
				return "NotReady"
			}
			return "Unknown"
		}
	}
	return "Unknown"
}
