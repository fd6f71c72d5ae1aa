package kubetest

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"testing"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiextensionsclient "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/yaml"
)

// crdTimeout bounds how long installed CRDs may take to be Established.
const crdTimeout = 60 * time.Second

// ParseCRDs returns the CustomResourceDefinitions (apiextensions.k8s.io/v1) in a stream of
// YAML or JSON documents, skipping every other kind and empty documents.
func ParseCRDs(data []byte) ([]*apiextensionsv1.CustomResourceDefinition, error) {
	reader := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(data)))
	var crds []*apiextensionsv1.CustomResourceDefinition
	for i := 0; ; i++ {
		doc, err := reader.Read()
		if errors.Is(err, io.EOF) {
			return crds, nil
		}
		if err != nil {
			return nil, fmt.Errorf("document %d: %w", i, err)
		}
		var meta metav1.TypeMeta
		if err := yaml.Unmarshal(doc, &meta); err != nil {
			return nil, fmt.Errorf("document %d: %w", i, err)
		}
		if meta.Kind != "CustomResourceDefinition" {
			continue
		}
		if meta.APIVersion != apiextensionsv1.SchemeGroupVersion.String() {
			return nil, fmt.Errorf("document %d: CustomResourceDefinition of %s, want %s",
				i, meta.APIVersion, apiextensionsv1.SchemeGroupVersion)
		}
		crd := &apiextensionsv1.CustomResourceDefinition{}
		// Strict: a field the apiserver would drop means the YAML is not what we think.
		if err := yaml.UnmarshalStrict(doc, crd); err != nil {
			return nil, fmt.Errorf("document %d: %w", i, err)
		}
		crds = append(crds, crd)
	}
}

// InstallCRDs creates the CRDs (or leaves one that already exists) and waits until the
// apiserver serves every one of them: Established and NamesAccepted.
func (c *Cluster) InstallCRDs(t testing.TB, crds ...*apiextensionsv1.CustomResourceDefinition) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), crdTimeout)
	defer cancel()
	if err := createCRDs(ctx, c.apiext, crds); err != nil {
		t.Fatal(err)
	}
}

// CreateCRDs is InstallCRDs on any cluster the client configuration reaches (make kube-up's,
// a test's own): the CRDs created (one that exists is left as it is) and served, within ctx.
func CreateCRDs(ctx context.Context, config *rest.Config, crds ...*apiextensionsv1.CustomResourceDefinition) error {
	client, err := apiextensionsclient.NewForConfig(config)
	if err != nil {
		return fmt.Errorf("kubetest: %w", err)
	}
	return createCRDs(ctx, client, crds)
}

func createCRDs(ctx context.Context, client apiextensionsclient.Interface, crds []*apiextensionsv1.CustomResourceDefinition) error {
	api := client.ApiextensionsV1().CustomResourceDefinitions()
	for _, crd := range crds {
		in := crd.DeepCopy()
		in.ResourceVersion = ""
		if _, err := api.Create(ctx, in, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("kubetest: create CRD %s: %w", crd.Name, err)
		}
	}
	for _, crd := range crds {
		var last *apiextensionsv1.CustomResourceDefinition
		err := wait.PollUntilContextCancel(ctx, 50*time.Millisecond, true, func(ctx context.Context) (bool, error) {
			got, err := api.Get(ctx, crd.Name, metav1.GetOptions{})
			if err != nil {
				return false, err
			}
			last = got
			return crdCondition(got, apiextensionsv1.Established) && crdCondition(got, apiextensionsv1.NamesAccepted), nil
		})
		if err != nil {
			var conds []apiextensionsv1.CustomResourceDefinitionCondition
			if last != nil {
				conds = last.Status.Conditions
			}
			return fmt.Errorf("kubetest: CRD %s not Established: %w (conditions %+v)", crd.Name, err, conds)
		}
	}
	return nil
}

func crdCondition(crd *apiextensionsv1.CustomResourceDefinition, kind apiextensionsv1.CustomResourceDefinitionConditionType) bool {
	for _, cond := range crd.Status.Conditions {
		if cond.Type == kind {
			return cond.Status == apiextensionsv1.ConditionTrue
		}
	}
	return false
}
