package httpapi

import (
	"net/http"
	"slices"
)

// kubeconfigAccess decides who may fetch /kubeconfig/{instance_id}. The
// kubeconfig holds no secret (each user logs in at an OIDC provider), but
// it names a runtime's API server, so it is not served to anyone who asks:
//
//   - a bearer token with the kubeconfig:read scope (what the platform's
//     proxy in front of keb holds) is served from anywhere;
//   - a request whose Origin is in origins (APP_KUBECONFIG_ALLOW_ORIGINS: the
//     cockpit the user downloads it from, in a browser, without a keb token)
//     is served without a token, with CORS headers for that origin. A browser
//     sets Origin and no script can change it; a client outside a browser can
//     send any Origin, so the allowlist opens the route to anyone who knows an
//     instance ID, and is empty by default. "*" allows every origin.
//
// Preflights (OPTIONS) from an allowed origin are answered 204; from another
// origin 403.
func kubeconfigAccess(origins []string, requireScope func(http.Handler) http.Handler) func(http.Handler) http.Handler {
	allowed := func(origin string) bool {
		return origin != "" && (slices.Contains(origins, "*") || slices.Contains(origins, origin))
	}
	return func(next http.Handler) http.Handler {
		withToken := requireScope(next)
		return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
			origin := req.Header.Get("Origin")
			w.Header().Add("Vary", "Origin")
			if !allowed(origin) {
				if req.Method == http.MethodOptions {
					writeError(w, http.StatusForbidden, "Forbidden", "cross-origin requests from this origin are not allowed")
					return
				}
				withToken.ServeHTTP(w, req)
				return
			}
			h := w.Header()
			h.Set("Access-Control-Allow-Origin", origin)
			h.Set("Access-Control-Expose-Headers", "Content-Disposition")
			if req.Method == http.MethodOptions {
				h.Set("Access-Control-Allow-Methods", "GET")
				h.Set("Access-Control-Allow-Headers", "Authorization")
				h.Set("Access-Control-Max-Age", "600")
				w.WriteHeader(http.StatusNoContent)
				return
			}
			next.ServeHTTP(w, req)
		})
	}
}
