package front

import (
	"fmt"
	"net/http"
	"strings"

	"connectrpc.com/connect"
)

// connectVersion serves a Connect unary POST as connect-go's handlers do (its
// connectCheckProtocolVersion): the Connect-Protocol-Version header may be left out (curl
// examples and hand-written clients do; connect-go requires it only of handlers built with
// WithRequireConnectProtocolHeader), and when present must be "1". Vanguard tells Connect
// from REST by that header alone, so without it a Connect call got a bare 404; the header is
// added for it. It reports whether it refused the request (the answer is written).
func connectVersion(w http.ResponseWriter, r *http.Request, proto string) bool {
	ct := strings.ToLower(r.Header.Get("Content-Type"))
	if proto != "connect" || r.Method != http.MethodPost || strings.HasPrefix(ct, "application/connect+") {
		return false // streaming Connect is told by its content type; GET by its query
	}
	switch v := r.Header.Values("Connect-Protocol-Version"); {
	case len(v) == 0:
		r.Header.Set("Connect-Protocol-Version", "1")
	case len(v) > 1 || v[0] != "1":
		errorWriter.Write(w, r, connect.NewError(connect.CodeInvalidArgument,
			fmt.Errorf("Connect-Protocol-Version must be %q: got %q", "1", strings.Join(v, ", "))))
		return true
	}
	return false
}
