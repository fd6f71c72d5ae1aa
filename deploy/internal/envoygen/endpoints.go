package envoygen

// Endpoint is one of the plain HTTP endpoints Koor data-control-center's web UI asks of its
// server besides the RPCs (services/gateway/internal/koor.Endpoints answers them in the Go
// gateway): Envoy answers it itself with a direct_response, without ext_authz.
type Endpoint struct {
	Method, Path string
	ContentType  string
	Body         string
	// Headers are added to the answer besides Content-Type and Cache-Control.
	Headers [][2]string
}

// KoorVersion is the "version" POST /api/config reports. The Go gateway reports its build;
// a static Envoy configuration has none, so it names the suite.
const KoorVersion = "plinth"

// KoorEndpoints are the UI's endpoints with upstream's answers (pkg/server/api at 22f234c).
func KoorEndpoints() []Endpoint {
	const jsonType, textType = "application/json; charset=utf-8", "text/plain; charset=utf-8"
	return []Endpoint{
		{Method: "POST", Path: "/api/config", ContentType: jsonType, Body: `{"version":"` + KoorVersion + `","login":{"providers":[]}}`},
		{Method: "GET", Path: "/api/ping", ContentType: jsonType, Body: `{"message":"Pong"}`},
		{Method: "GET", Path: "/readiness", ContentType: textType, Body: "OK"},
		{Method: "GET", Path: "/api/clear-site-data", ContentType: textType,
			Body:    "Your local site data should be cleared now, please go back to the data-control-center homepage yourself.",
			Headers: [][2]string{{"Clear-Site-Data", `"cache", "cookies", "storage"`}}},
	}
}
