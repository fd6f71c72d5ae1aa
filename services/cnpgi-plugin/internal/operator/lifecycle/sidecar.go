// Package lifecycle injects the plugin's instance sidecar into the Pods and recovery Jobs
// CloudNativePG creates for a cluster that uses the plugin (CNPG-I OperatorLifecycle): a
// Kubernetes native sidecar (an init container with restartPolicy Always) running this same
// binary, serving the plugin's socket in the shared /plugins volume for the instance manager.
package lifecycle

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"

	"github.com/plinth-dev/plinth/libs/platform/config"

	cnpgiplugin "github.com/plinth-dev/plinth/services/cnpgi-plugin/plugin"
)

// Paths inside the Pod. /plugins is CloudNativePG's PLUGIN_SOCKET_DIR; /controller is the
// scratch volume CloudNativePG mounts in every instance and job container, the one writable
// place the sidecar (read-only root file system) shares with PostgreSQL.
const (
	PluginsVolume    = "plugins"
	PluginsMountPath = "/plugins"
	ConfigMountPath  = "/etc/plinth/cnpgi"
	// ConfigFileKey is the ConfigMap key holding the store configuration file.
	ConfigFileKey = "config.yaml"
	// restoreCommand is restore_command in a recovery Job and a recovering Pod: PostgreSQL's
	// container has CloudNativePG's instance manager (copied to /controller) but not this
	// binary, and the manager's wal-restore asks every plugin of the cluster, its recovery
	// source's included, over /plugins.
	restoreCommand = "/controller/manager wal-restore --log-destination /controller/log/postgres.json %f %p"
)

// SidecarName is the container injected for the plugin of that name; finding it again keeps
// injection idempotent. The default plugin's is plinth-cnpgi; another name (a second
// Deployment of this binary, one Cluster using both) gets its own, so that the two sidecars,
// their configuration volumes and their directories on /controller do not collide.
func SidecarName(plugin string) string {
	const prefix = "plinth-cnpgi"
	if plugin == cnpgiplugin.DefaultName {
		return prefix
	}
	label := strings.Trim(strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= '0' && r <= '9' {
			return r
		}
		return '-'
	}, strings.ToLower(plugin)), "-")
	name := prefix + "-" + label
	// A DNS label, with room for ConfigVolume's suffix; a long name keeps its start and a
	// hash of the whole, so two long names still differ.
	if limit := 63 - len(configSuffix); len(name) > limit {
		sum := sha256.Sum256([]byte(plugin))
		name = strings.TrimRight(name[:limit-9], "-") + "-" + hex.EncodeToString(sum[:4])
	}
	return name
}

const configSuffix = "-config"

// ConfigVolume is the Pod volume holding the plugin's store configuration (its ConfigMap).
func ConfigVolume(plugin string) string { return SidecarName(plugin) + configSuffix }

// ImageBinary is the plugin binary's path in the image (deploy/docker/Dockerfile).
const ImageBinary = "/usr/local/bin/plinth-service"

// Sidecar configures the injected container.
type Sidecar struct {
	// Image runs the plugin (this binary), e.g. ghcr.io/plinth-dev/cnpgi-plugin:v1.
	Image string
	// PluginName is the name the sidecar serves (its socket's file name).
	PluginName string
	// EnvSecret, when set, names a Secret in the cluster's namespace whose keys become the
	// sidecar's environment (envFrom): PLINTH_DATABASE_URL and the store credentials the
	// configuration file refers to. Secrets never pass through the Cluster or the patch.
	EnvSecret string
	// ConfigMap, when set, names a ConfigMap in the cluster's namespace whose config.yaml is
	// the sidecar's store configuration (PLINTH_CNPGI_CONFIG).
	ConfigMap string
}

// The Kubernetes fields of the injected container, in Kubernetes' JSON names.
type (
	container struct {
		Name            string          `json:"name"`
		Image           string          `json:"image"`
		ImagePullPolicy string          `json:"imagePullPolicy,omitempty"`
		Args            []string        `json:"args"`
		Env             []envVar        `json:"env"`
		EnvFrom         []envFrom       `json:"envFrom,omitempty"`
		VolumeMounts    []any           `json:"volumeMounts"`
		RestartPolicy   string          `json:"restartPolicy"`
		StartupProbe    *probe          `json:"startupProbe,omitempty"`
		SecurityContext securityContext `json:"securityContext"`
	}
	probe struct {
		Exec struct {
			Command []string `json:"command"`
		} `json:"exec"`
		PeriodSeconds    int `json:"periodSeconds"`
		TimeoutSeconds   int `json:"timeoutSeconds"`
		FailureThreshold int `json:"failureThreshold"`
	}
	envVar struct {
		Name  string `json:"name"`
		Value string `json:"value"`
	}
	envFrom struct {
		SecretRef struct {
			Name string `json:"name"`
		} `json:"secretRef"`
	}
	securityContext struct {
		AllowPrivilegeEscalation bool `json:"allowPrivilegeEscalation"`
		Privileged               bool `json:"privileged"`
		RunAsNonRoot             bool `json:"runAsNonRoot"`
		ReadOnlyRootFilesystem   bool `json:"readOnlyRootFilesystem"`
		SeccompProfile           struct {
			Type string `json:"type"`
		} `json:"seccompProfile"`
		Capabilities struct {
			Drop []string `json:"drop"`
		} `json:"capabilities"`
	}
)

// container builds the sidecar. mounts are the main container's volume mounts (PGDATA, the
// scratch volume, /plugins), so the sidecar reads pg_wal and writes restored WAL where
// PostgreSQL expects them.
func (s Sidecar) container(pullPolicy string, mounts []any) container {
	name := SidecarName(s.PluginName)
	// The plugin's name and socket directory, as the binary declares them (plugin.Endpoint).
	var env []envVar
	for _, kv := range config.Environ(&cnpgiplugin.Endpoint{PluginName: s.PluginName, PluginDir: PluginsMountPath}) {
		k, v, _ := strings.Cut(kv, "=")
		env = append(env, envVar{k, v})
	}
	env = append(env, []envVar{
		{"PLINTH_CNPGI_SPOOL_DIR", "/controller/" + name + "-spool"},
		// Without a configuration the binary falls back to a local POSIX store; keep that on
		// the scratch volume (the root file system is read-only). It is lost with the Pod:
		// configure a real store through ConfigMap.
		{"PLINTH_CNPGI_DEFAULT_STORE_DIR", "/controller/" + name + "-store"},
		{"PLINTH_CNPGI_RESTORE_COMMAND", restoreCommand},
		{"PLINTH_ADMIN_ADDR", "off"},
		{"PLINTH_LOG_FORMAT", "json"},
		// barmanObjectName: ObjectStore resources and their Secrets are read with the Pod's
		// service account (CloudNativePG mounts its token), within the Cluster's namespace.
		{"PLINTH_CNPGI_KUBE_IN_CLUSTER", "true"},
	}...)
	if s.ConfigMap != "" {
		env = append(env, envVar{"PLINTH_CNPGI_CONFIG", ConfigMountPath + "/" + ConfigFileKey})
		mounts = append(mounts, map[string]any{"name": ConfigVolume(s.PluginName), "mountPath": ConfigMountPath, "readOnly": true})
	}
	c := container{
		Name: name, Image: s.Image, ImagePullPolicy: pullPolicy, Args: []string{"serve"},
		Env: env, VolumeMounts: mounts, RestartPolicy: "Always",
	}
	if s.EnvSecret != "" {
		var ef envFrom
		ef.SecretRef.Name = s.EnvSecret
		c.EnvFrom = []envFrom{ef}
	}
	// A native sidecar's startup probe holds back the containers after it: PostgreSQL
	// starts archiving only once the plugin answers on its socket (up to a minute: the
	// catalog migrations run at start).
	c.StartupProbe = &probe{PeriodSeconds: 1, TimeoutSeconds: 5, FailureThreshold: 60}
	c.StartupProbe.Exec.Command = []string{ImageBinary, "health", "-socket=" + PluginsMountPath + "/" + s.PluginName}
	c.SecurityContext.RunAsNonRoot = true
	c.SecurityContext.ReadOnlyRootFilesystem = true
	c.SecurityContext.SeccompProfile.Type = "RuntimeDefault"
	c.SecurityContext.Capabilities.Drop = []string{"ALL"}
	return c
}
