package kubelocal

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/yaml"

	"github.com/plinth-dev/plinth/libs/kubetest"
)

const (
	// LocalPathModule is Rancher's local-path-provisioner, the cluster's storage provisioner
	// (Options.Storage): its deploy/local-path-storage.yaml at the version tools/crds pins,
	// BinDir/local-path-provisioner built from the version tools/k8s/local-path pins.
	LocalPathModule = "github.com/rancher/local-path-provisioner"
	// LocalPathImage holds BinDir/local-path-provisioner (make tools-k8s).
	LocalPathImage = "plinth.local/local-path-provisioner:v0.0.30"
	// StorageClass is the default StorageClass Options.Storage makes: a PersistentVolumeClaim
	// that names none gets a directory under Dir/volumes.
	StorageClass = "local-path"
	// localPathNamespace is where upstream's manifest runs the provisioner.
	localPathNamespace = "local-path-storage"
)

func (l layout) localPathBinary() string { return filepath.Join(l.BinDir, "local-path-provisioner") }

// volumesDir is where the provisioner makes each volume's directory (its nodePathMap).
func (l layout) volumesDir() string { return l.path("volumes") }

// installLocalPath installs local-path-provisioner from its module's own manifest (namespace,
// RBAC, Deployment, StorageClass, ConfigMap), changed only where this cluster differs: the
// image made here from BinDir's program (run by its path: the stand-in has no PATH), volumes
// under Dir/volumes, the helper pods on the busybox stand-in, and the StorageClass the
// default. It waits until the provisioner is Available.
func installLocalPath(ctx context.Context, l layout, client kubernetes.Interface) error {
	dir, err := kubetest.ModuleDir(LocalPathModule)
	if err != nil {
		return fmt.Errorf("kubelocal: local-path-provisioner: %w", err)
	}
	manifest, err := os.ReadFile(filepath.Join(dir, "deploy", "local-path-storage.yaml"))
	if err != nil {
		return fmt.Errorf("kubelocal: local-path-provisioner: %w", err)
	}
	objs, err := localPathObjects(manifest, l.volumesDir(), "/"+inImage(l.localPathBinary()))
	if err != nil {
		return err
	}
	if err := os.MkdirAll(l.volumesDir(), 0o755); err != nil {
		return err
	}
	for _, o := range objs {
		if err := create(ctx, client, o); err != nil {
			return fmt.Errorf("kubelocal: local-path-provisioner: %w", err)
		}
	}
	return poll(ctx, 2*time.Minute, func(ctx context.Context) error {
		d, err := client.AppsV1().Deployments(localPathNamespace).Get(ctx, "local-path-provisioner", metav1.GetOptions{})
		if err != nil {
			return err
		}
		if d.Status.AvailableReplicas < 1 {
			return fmt.Errorf("local-path-provisioner's Deployment is not Available (%d replicas ready)", d.Status.ReadyReplicas)
		}
		return nil
	})
}

// localPathObjects decodes upstream's manifest and makes this cluster's changes to it: volumes
// under volumes, the provisioner run as program (its path in LocalPathImage).
func localPathObjects(manifest []byte, volumes, program string) ([]runtime.Object, error) {
	var out []runtime.Object
	var sawDeployment, sawConfig, sawClass bool
	r := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(manifest)))
	for {
		doc, err := r.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("kubelocal: local-path-storage.yaml: %w", err)
		}
		if len(bytes.TrimSpace(doc)) == 0 {
			continue
		}
		obj, _, err := scheme.Codecs.UniversalDeserializer().Decode(doc, nil, nil)
		if err != nil {
			return nil, fmt.Errorf("kubelocal: local-path-storage.yaml: %w", err)
		}
		switch o := obj.(type) {
		case *appsv1.Deployment:
			c := &o.Spec.Template.Spec.Containers[0]
			c.Image, c.ImagePullPolicy = LocalPathImage, corev1.PullNever
			if len(c.Command) == 0 || c.Command[0] != "local-path-provisioner" {
				return nil, fmt.Errorf("kubelocal: local-path-storage.yaml: the provisioner runs %q, not local-path-provisioner", c.Command)
			}
			c.Command[0] = program
			sawDeployment = true
		case *corev1.ConfigMap:
			if err := localPathConfig(o, volumes); err != nil {
				return nil, err
			}
			sawConfig = true
		case *storagev1.StorageClass:
			if o.Annotations == nil {
				o.Annotations = map[string]string{}
			}
			o.Annotations["storageclass.kubernetes.io/is-default-class"] = "true"
			sawClass = o.Name == StorageClass
		}
		out = append(out, obj)
	}
	if !sawDeployment || !sawConfig || !sawClass {
		return nil, fmt.Errorf("kubelocal: local-path-storage.yaml lacks its Deployment, ConfigMap or StorageClass %s", StorageClass)
	}
	return out, nil
}

// localPathConfig points the provisioner's nodePathMap at volumes and its helper pods at the
// busybox stand-in.
func localPathConfig(cm *corev1.ConfigMap, volumes string) error {
	var cfg struct {
		NodePathMap []struct {
			Node  string   `json:"node"`
			Paths []string `json:"paths"`
		} `json:"nodePathMap"`
	}
	if err := json.Unmarshal([]byte(cm.Data["config.json"]), &cfg); err != nil || len(cfg.NodePathMap) == 0 {
		return fmt.Errorf("kubelocal: local-path-storage.yaml: config.json has no nodePathMap (%v)", err)
	}
	for i := range cfg.NodePathMap {
		cfg.NodePathMap[i].Paths = []string{volumes}
	}
	data, err := json.Marshal(cfg)
	if err != nil {
		return err
	}
	cm.Data["config.json"] = string(data)

	var helper corev1.Pod
	if err := yaml.UnmarshalStrict([]byte(cm.Data["helperPod.yaml"]), &helper); err != nil || len(helper.Spec.Containers) == 0 {
		return fmt.Errorf("kubelocal: local-path-storage.yaml: helperPod.yaml: %v", err)
	}
	helper.Spec.Containers[0].Image = BusyboxImage
	helper.Spec.Containers[0].ImagePullPolicy = corev1.PullNever
	data, err = yaml.Marshal(&helper)
	if err != nil {
		return err
	}
	cm.Data["helperPod.yaml"] = string(data)
	return nil
}
