package launcher

import (
	"strings"

	"github.com/plinth-dev/plinth/libs/platform/config"
)

// The settings of the service binaries that the launcher sets or reads, named once. Each is
// the env tag of a field of that binary's Config (services/<svc>/internal/app, which the
// launcher cannot import; the settings every binary shares come from libs/platform/config).
// Where a service exports the declaration of what the launcher sets, the launcher fills that
// instead and names nothing (declared): cnpgi-plugin's plugin.Endpoint and OperatorTLS, the
// gateway's routes.BackendEnv.
// TestLauncherSetsOnlySettingsOfItsBinaries checks every name the launcher gives a binary
// against configcheck/settings, which reads those tags, and TestNoSettingSpelledOutside that
// no other file of the launcher spells a service setting: a typo fails a test instead of
// leaving a binary on its default.
const (
	envGRPCAddr     = config.EnvGRPCAddr
	envAdminAddr    = config.EnvAdminAddr
	envDatabaseURL  = config.EnvDatabaseURL
	envNATSURL      = config.EnvNATSURL
	envNATSUser     = config.EnvNATSUser
	envNATSPassword = config.EnvNATSPassword
	envLogFormat    = config.EnvLogFormat
	envLogCalls     = config.EnvLogCalls

	envMaxConnsPerClient = config.EnvMaxConnsPerClient
	envMaxCallsPerClient = config.EnvMaxCallsPerClient

	// auth
	envAuthGatewayAddr = "PLINTH_AUTH_GATEWAY_ADDR"
	envAdminPassword   = "PLINTH_ADMIN_PASSWORD"
	// auth's OpenID providers, with -dev-oidc (devoidc.go)
	envAuthOIDCProvidersFile = "PLINTH_AUTH_OIDC_PROVIDERS_FILE"

	// gateway: the Koor listener, which the user may set; -dev-oidc registers its callback
	envGatewayKoorAddr = "PLINTH_GATEWAY_KOOR_ADDR"

	// stats
	envStatsCephURL          = "PLINTH_STATS_CEPH_URL"
	envStatsCephUser         = "PLINTH_STATS_CEPH_USER"
	envStatsCephPasswordFile = "PLINTH_STATS_CEPH_PASSWORD_FILE"

	// stats, kaas and vagrant-server: auth's address for their token checks (the gateway's
	// is the same name, routes.BackendEnv(routes.Auth), pointed at auth's gateway socket).
	envAuthAddr = "PLINTH_AUTH_ADDR"

	// kaas
	envKaasProvider               = "PLINTH_KAAS_PROVIDER"
	envKaasRESTAddr               = "PLINTH_KAAS_REST_ADDR"
	envKaasSecretKeyFile          = "PLINTH_KAAS_SECRET_KEY_FILE"
	envKaasVagrantAddr            = "PLINTH_KAAS_VAGRANT_ADDR"
	envKaasVagrantTokenFile       = "PLINTH_KAAS_VAGRANT_TOKEN_FILE"
	envKaasVagrantMachineDir      = "PLINTH_KAAS_VAGRANT_MACHINE_DIR"
	envKaasVagrantRunnerID        = "PLINTH_KAAS_VAGRANT_RUNNER_ID"
	envKaasVagrantKubeBuildStatus = "PLINTH_KAAS_VAGRANT_KUBE_BUILD_STATUS"
	envKaasVagrantKubeBinDir      = "PLINTH_KAAS_VAGRANT_KUBE_BIN_DIR"
	envKaasVagrantEtcd            = "PLINTH_KAAS_VAGRANT_ETCD"

	// vagrant-runner
	envVagrantServerAddr       = "PLINTH_VAGRANT_SERVER_ADDR"
	envVagrantRunnerStateDir   = "PLINTH_VAGRANT_RUNNER_STATE_DIR"
	envVagrantRunnerReservedID = "PLINTH_VAGRANT_RUNNER_RESERVED_ID"
	envVagrantNetnsShare       = "PLINTH_VAGRANT_NETNS_SHARE"

	// lvmd-agent
	envLvmdConfig                 = "PLINTH_LVMD_CONFIG"
	envLvmdDefaultS3Endpoint      = "PLINTH_LVMD_DEFAULT_S3_ENDPOINT"
	envLvmdDefaultS3AccessKeyFile = "PLINTH_LVMD_DEFAULT_S3_ACCESS_KEY_ID_FILE"
	envLvmdDefaultS3SecretKeyFile = "PLINTH_LVMD_DEFAULT_S3_SECRET_ACCESS_KEY_FILE"

	// cnpgi-plugin
	envCNPGIConfig = "PLINTH_CNPGI_CONFIG"
)

// What the Specs' Settings claim beyond the names above: the prefixes of the services' own
// settings, and the names that tell vagrant-server's settings from the runner's. A name
// ending in "_" is a prefix, which TestNoSettingSpelledOutside checks some setting starts with.
const (
	prefixAuth           = "PLINTH_AUTH_"
	prefixDevOIDC        = "PLINTH_DEV_OIDC_" // auth dev-oidc's, the same binary's
	prefixStats          = "PLINTH_STATS_"
	prefixKaas           = "PLINTH_KAAS_"
	prefixVagrant        = "PLINTH_VAGRANT_"
	prefixVagrantJob     = "PLINTH_VAGRANT_JOB_"
	prefixLvmd           = "PLINTH_LVMD_"
	prefixCNPGI          = "PLINTH_CNPGI_"
	prefixGateway        = "PLINTH_GATEWAY_"
	envVagrantJobsKept   = "PLINTH_VAGRANT_JOBS_KEPT"
	envVagrantRunnerTTL  = "PLINTH_VAGRANT_RUNNER_TIMEOUT"
	envVagrantSessionTTL = "PLINTH_VAGRANT_SESSION_TOKEN_TTL"
	envVagrantMaxJobs    = "PLINTH_VAGRANT_MAX_QUEUED_JOBS_PER_USER"
	envVagrantMaxTokens  = "PLINTH_VAGRANT_MAX_TOKENS_PER_USER"
)

// declared is the environment of settings declarations a service exports (structs with env
// tags, as its Config embeds them), filled by the launcher: config.Environ of each, so the
// names are the service's own. Zero fields are left out.
func declared(settings ...any) map[string]string {
	env := map[string]string{}
	for _, s := range settings {
		for _, kv := range config.Environ(s) {
			k, v, _ := strings.Cut(kv, "=")
			env[k] = v
		}
	}
	return env
}
