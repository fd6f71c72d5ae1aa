package kube

import (
	"encoding/json"
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/plinth-dev/plinth/libs/platform/input"
	"github.com/plinth-dev/plinth/services/stats/internal/cluster"
)

// koorCluster is a storage.koor.tech/v1alpha1 KoorCluster as koor-operator writes it.
type koorCluster struct {
	object
	Spec struct {
		UseAllDevices     *bool `json:"useAllDevices"`
		MonitoringEnabled *bool `json:"monitoringEnabled"`
		DashboardEnabled  *bool `json:"dashboardEnabled"`
		ToolboxEnabled    *bool `json:"toolboxEnabled"`
		UpgradeOptions    struct {
			Mode     string `json:"mode"`
			Endpoint string `json:"endpoint"`
			Schedule string `json:"schedule"`
		} `json:"upgradeOptions"`
		KsdReleaseName        string `json:"ksdReleaseName"`
		KsdClusterReleaseName string `json:"ksdClusterReleaseName"`
	} `json:"spec"`
	Status struct {
		TotalResources struct {
			Nodes   json.RawMessage `json:"nodesCount"`
			Storage json.RawMessage `json:"storage"`
			CPU     json.RawMessage `json:"cpu"`
			Memory  json.RawMessage `json:"memory"`
		} `json:"totalResources"`
		MeetsMinimumResources bool `json:"meetsMinimumResources"`
		CurrentVersions       struct {
			Kube         string `json:"kube"`
			KoorOperator string `json:"koorOperator"`
			Ksd          string `json:"ksd"`
			Ceph         string `json:"ceph"`
		} `json:"currentVersions"`
		LatestVersions *struct {
			KoorOperator *detailedVersion `json:"koorOperator"`
			Ksd          *detailedVersion `json:"ksd"`
			Ceph         *detailedVersion `json:"ceph"`
		} `json:"latestVersions"`
	} `json:"status"`
}

type detailedVersion struct {
	Version        string `json:"version"`
	ImageURI       string `json:"imageUri"`
	ImageHash      string `json:"imageHash"`
	HelmRepository string `json:"helmRepository"`
	HelmChart      string `json:"helmChart"`
}

// DecodeKoorCluster reads a KoorCluster as upstream maps it: the spec's switches as they are
// (unset stays unset), the totals as Kubernetes prints quantities, the latest versions only
// once the operator looked them up.
func DecodeKoorCluster(data []byte) (*cluster.KoorCluster, error) {
	var k koorCluster
	if err := json.Unmarshal(data, &k); err != nil {
		return nil, fmt.Errorf("KoorCluster: %w", err)
	}
	if err := input.Required("metadata.name", k.Metadata.Name, input.MaxName); err != nil {
		return nil, fmt.Errorf("KoorCluster: %w", err)
	}
	s, st := k.Spec, k.Status
	out := &cluster.KoorCluster{
		Name: safe(k.Metadata.Name), Namespace: safe(k.Metadata.Namespace),
		UseAllDevices: s.UseAllDevices, MonitoringEnabled: s.MonitoringEnabled, DashboardEnabled: s.DashboardEnabled, ToolboxEnabled: s.ToolboxEnabled,
		UpgradeMode: safe(s.UpgradeOptions.Mode), UpgradeEndpoint: safe(s.UpgradeOptions.Endpoint), UpgradeSchedule: safe(s.UpgradeOptions.Schedule),
		KsdReleaseName: safe(s.KsdReleaseName), KsdClusterReleaseName: safe(s.KsdClusterReleaseName),
		TotalNodes: quantity(st.TotalResources.Nodes), TotalStorage: quantity(st.TotalResources.Storage),
		TotalCPU: quantity(st.TotalResources.CPU), TotalMemory: quantity(st.TotalResources.Memory),
		MeetsMinimumResources: st.MeetsMinimumResources,
		Current: cluster.ProductVersions{Kube: safe(st.CurrentVersions.Kube), KoorOperator: safe(st.CurrentVersions.KoorOperator),
			Ksd: safe(st.CurrentVersions.Ksd), Ceph: safe(st.CurrentVersions.Ceph)},
	}
	if l := st.LatestVersions; l != nil {
		out.Latest = &cluster.LatestVersions{KoorOperator: l.KoorOperator.domain(), Ksd: l.Ksd.domain(), Ceph: l.Ceph.domain()}
	}
	return out, nil
}

func (v *detailedVersion) domain() *cluster.DetailedVersion {
	if v == nil {
		return nil
	}
	return &cluster.DetailedVersion{Version: safe(v.Version), ImageURI: safe(v.ImageURI), ImageHash: safe(v.ImageHash),
		HelmRepository: safe(v.HelmRepository), HelmChart: safe(v.HelmChart)}
}

// quantity is an int-or-string resource.Quantity in canonical form ("500G", "19", "44Gi"), as
// upstream's Quantity.String() printed it; "0" when unset (as a zero Quantity prints), ""
// when it is not a quantity.
func quantity(raw json.RawMessage) string {
	s := strings.TrimSpace(string(raw))
	if s == "" || s == "null" {
		return "0"
	}
	var str string
	if json.Unmarshal(raw, &str) == nil {
		s = str
	}
	if len(s) > 64 {
		return ""
	}
	q, err := resource.ParseQuantity(s)
	if err != nil {
		return ""
	}
	return q.String()
}

// safe bounds a string from the cluster for an API answer.
func safe(s string) string { return cluster.SafeText(s, input.MaxName) }
