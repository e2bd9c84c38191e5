// Package httpapi is keb's HTTP front door: it routes with gorilla/mux, mounts
// brokerapi's OSB handlers under /oauth/v2 and /oauth/{region}/v2, and wraps
// every route with request IDs, access logs, metrics and auth.
package httpapi

import (
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/gorilla/mux"
	"github.com/pivotal-cf/brokerapi/v10"
	"github.com/pivotal-cf/brokerapi/v10/domain"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/sirupsen/logrus"

	"github.com/kyma-keb/keb/internal/auth"
	"github.com/kyma-keb/keb/internal/broker"
	"github.com/kyma-keb/keb/internal/logging"
)

// authorizer builds middleware that demands a bearer token with a scope.
type authorizer interface {
	Require(scope string) func(http.Handler) http.Handler
}

// Options are the parts the router wires together.
type Options struct {
	Broker   domain.ServiceBroker
	Auth     authorizer
	Log      logrus.FieldLogger
	Registry *prometheus.Registry
	// Ready checks whether the server can do useful work (database
	// reachable, schema current, control plane, watch and workers).
	Ready Readiness
	// DevToken, when set, is served at POST /oauth2/token. Only `keb dev`
	// sets it: a production broker never issues tokens.
	DevToken http.Handler
	// Runtimes serves the operators' runtime listing at GET /info/runtimes
	// and GET /runtimes; nil answers 501.
	Runtimes http.Handler
	// Console registers the operations console's routes (/console...); nil
	// serves none.
	Console interface{ Register(r *mux.Router) }
	// Expire serves PUT /expire/service_instance/{instance_id}, which
	// expires a trial or free instance at once; nil answers 501.
	Expire http.Handler
	// RequestTimeout bounds each API request's work (database included);
	// past it the request is answered 503. Zero means no bound.
	RequestTimeout time.Duration
}

// osbRoutes are brokerapi's routes, registered one by one so that metrics
// and logs name the route template, not the raw path.
var osbRoutes = []struct {
	path    string
	methods []string
}{
	{"/v2/catalog", []string{http.MethodGet}},
	{"/v2/service_instances/{instance_id}", []string{http.MethodGet, http.MethodPut, http.MethodPatch, http.MethodDelete}},
	{"/v2/service_instances/{instance_id}/last_operation", []string{http.MethodGet}},
	{"/v2/service_instances/{instance_id}/service_bindings/{binding_id}", []string{http.MethodGet, http.MethodPut, http.MethodDelete}},
	{"/v2/service_instances/{instance_id}/service_bindings/{binding_id}/last_operation", []string{http.MethodGet}},
}

// NewRouter returns keb's HTTP handler.
func NewRouter(opts Options) http.Handler {
	m := newMetrics(opts.Registry)
	r := mux.NewRouter()
	r.Use(requestContext(opts.Log), m.middleware, accessLog)
	r.NotFoundHandler = m.wrapUnmatched(requestContext(opts.Log)(accessLog(http.HandlerFunc(notFound))))
	r.MethodNotAllowedHandler = m.wrapUnmatched(requestContext(opts.Log)(accessLog(http.HandlerFunc(methodNotAllowed))))

	r.HandleFunc("/healthz", healthz).Methods(http.MethodGet)
	r.Handle("/readyz", readyz(opts.Ready)).Methods(http.MethodGet)
	r.Handle("/metrics", promhttp.HandlerFor(opts.Registry, promhttp.HandlerOpts{})).Methods(http.MethodGet)
	r.HandleFunc("/openapi.yaml", openAPI).Methods(http.MethodGet)
	if opts.DevToken != nil {
		r.Handle("/oauth2/token", opts.DevToken).Methods(http.MethodPost)
	}

	bounded := withDeadline(opts.RequestTimeout)
	osb := brokerapi.NewWithOptions(opts.Broker, logging.NewLager("brokerapi", opts.Log))
	requireWrite := opts.Auth.Require(auth.ScopeBrokerWrite)
	// /oauth/v2 is registered before /oauth/{region}/v2 so that "v2" is never
	// taken for a region.
	for _, prefix := range []string{"/oauth", "/oauth/{region}"} {
		h := withRegion(requireWrite(checkAPIVersion(withResponseHints(bounded(stripToV2(osb))))))
		for _, rt := range osbRoutes {
			// mux upper-cases the slice it is given in place: a copy keeps
			// routers built concurrently (tests) from racing on it.
			r.Handle(prefix+rt.path, h).Methods(slices.Clone(rt.methods)...)
		}
	}

	// The runtime listing is served at KEB's path and at the shorter one
	// its CLI uses; both need cld:read.
	runtimes := opts.Runtimes
	if runtimes == nil {
		runtimes = http.HandlerFunc(notYetServed)
	}
	requireCLDRead := opts.Auth.Require(auth.ScopeCLDRead)
	r.Handle("/info/runtimes", requireCLDRead(bounded(runtimes))).Methods(http.MethodGet)
	r.Handle("/runtimes", requireCLDRead(bounded(runtimes))).Methods(http.MethodGet)

	// Expiring an instance changes it as a PATCH would: broker:write.
	expire := opts.Expire
	if expire == nil {
		expire = http.HandlerFunc(notYetServed)
	}
	r.Handle("/expire/service_instance/{instance_id}", requireWrite(bounded(expire))).Methods(http.MethodPut)

	// The console checks its own token (a cookie, scope cld:read).
	if opts.Console != nil {
		opts.Console.Register(r)
	}

	// Operator endpoints get their auth rules now; their handlers arrive
	// with the operator issues and answer 501 until then.
	r.Handle("/orchestrations", opts.Auth.Require(auth.ScopeUpgradeRead)(http.HandlerFunc(notYetServed))).Methods(http.MethodGet)
	r.PathPrefix("/orchestrations/").Handler(opts.Auth.Require(auth.ScopeUpgradeRead)(http.HandlerFunc(notYetServed))).Methods(http.MethodGet)
	r.PathPrefix("/upgrade/").Handler(opts.Auth.Require(auth.ScopeUpgradeWrite)(http.HandlerFunc(notYetServed)))
	return r
}

// stripToV2 hands brokerapi the path it routes on (/v2/...), without the
// /oauth[/{region}] prefix.
func stripToV2(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		r2 := req.Clone(req.Context())
		if i := strings.Index(r2.URL.Path, "/v2/"); i >= 0 {
			r2.URL.Path = r2.URL.Path[i:]
		}
		if i := strings.Index(r2.URL.RawPath, "/v2/"); i >= 0 {
			r2.URL.RawPath = r2.URL.RawPath[i:]
		}
		next.ServeHTTP(w, r2)
	})
}

// withRegion records the {region} path segment as the platform region.
func withRegion(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if region := mux.Vars(req)["region"]; region != "" {
			req = req.WithContext(broker.ContextWithRegion(req.Context(), region))
		}
		next.ServeHTTP(w, req)
	})
}
