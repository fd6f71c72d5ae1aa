package launcher

import "strings"

// gatewayBackends are the binaries the gateway routes to, by the route table's backend names
// (services/gateway/routes), which are the binaries' names.
var gatewayBackends = []string{"auth", "stats", "kaas", "vagrant-server", "lvmd-agent", "cnpgi-plugin"}

// gatewayEnv points the gateway at every backend of this run: TCP addresses, and the unix
// sockets of lvmd-agent and cnpgi-plugin. A backend that is not under services/ is left out,
// and the gateway answers its calls with Unavailable naming it.
func gatewayEnv(_ string, placed map[string]Placement) map[string]string {
	env := map[string]string{}
	for _, b := range gatewayBackends {
		if p, ok := placed[b]; ok && p.GRPC != "" {
			env[GatewayBackendEnv(b)] = p.GRPC
		}
	}
	return env
}

// GatewayBackendEnv is the gateway's variable for a backend's address:
// PLINTH_GATEWAY_BACKEND_<NAME> with the name upper-cased and dashes as underscores.
func GatewayBackendEnv(backend string) string {
	return "PLINTH_GATEWAY_BACKEND_" + strings.ToUpper(strings.ReplaceAll(backend, "-", "_"))
}
