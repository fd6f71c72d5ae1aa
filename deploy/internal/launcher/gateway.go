package launcher

import "github.com/plinth-dev/plinth/services/gateway/routes"

// gatewayEnv points the gateway at every backend of its route table that runs here (the
// backend names are the binaries' names): TCP addresses, and the unix sockets of lvmd-agent
// and cnpgi-plugin; auth on its gateway listener (authGatewaySocket), where auth believes the
// client address the gateway names. A backend that is not under services/ is left out, and the
// gateway answers its calls with Unavailable naming it.
func gatewayEnv(c Config, placed map[string]Placement) map[string]string {
	env := map[string]string{}
	for _, b := range routes.Backends() {
		if p, ok := placed[b]; ok && p.GRPC != "" {
			env[routes.BackendEnv(b)] = p.GRPC
		}
	}
	if _, ok := placed["auth"]; ok {
		env[routes.BackendEnv("auth")] = authGatewaySocket(c.Home)
	}
	return env
}
