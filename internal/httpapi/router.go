// Package httpapi is keb's HTTP front door: it routes with gorilla/mux, mounts
// brokerapi's OSB handlers under /oauth/v2 and /oauth/{region}/v2, and wraps
// every route with request IDs, access logs, metrics and auth.
package httpapi

import (
	"context"
	"fmt"
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
	"github.com/kyma-keb/keb/internal/catalog"
	"github.com/kyma-keb/keb/internal/logging"
)

// authorizer builds middleware that demands a bearer token with a scope:
// Require hands the token's claims on in the request's context, Check does
// not (for handlers that don't read them).
type authorizer interface {
	Require(scope string) func(http.Handler) http.Handler
	Check(scope string) func(http.Handler) http.Handler
}

// Options are the parts the router wires together.
type Options struct {
	Broker   domain.ServiceBroker
	Auth     authorizer
	Log      logrus.FieldLogger
	Registry *prometheus.Registry
	// Ready reports whether the server can do useful work (database
	// reachable, schema current, control plane, watch and workers), from
	// checks it runs in the background.
	Ready *Readiness
	// DevToken, when set, is served at POST /oauth2/token. Only `keb dev`
	// sets it: a production broker never issues tokens.
	DevToken http.Handler
	// Runtimes serves the operators' runtime listing at GET /info/runtimes
	// and GET /runtimes; nil answers 501.
	Runtimes http.Handler
	// Console registers the operations console's routes (/console...); nil
	// serves none. Its forms are read through readForm: bounded, under a
	// short deadline, a bounded number at once.
	Console interface {
		Register(r *mux.Router, readForm func(http.Handler) http.Handler)
	}
	// Expire serves PUT /expire/service_instance/{instance_id}, which
	// expires a trial or free instance at once; nil answers 501.
	Expire http.Handler
	// Orchestrations serves POST /upgrade/** and /orchestrations/**; nil
	// answers 501.
	Orchestrations OrchestrationAPI
	// Kubeconfig serves GET /kubeconfig/{instance_id} to callers with the
	// kubeconfig:read scope or from KubeconfigOrigins (kubeconfigAccess);
	// nil answers 501.
	Kubeconfig        http.Handler
	KubeconfigOrigins []string
	// Events serves GET /events (scope cld:read); nil answers 501.
	Events http.Handler
	// RequestTimeout bounds each API request's work (database included);
	// past it the request is answered 503. Zero means no bound.
	RequestTimeout time.Duration
	// MaxBodyBytes caps request bodies on the OSB routes (413 beyond);
	// 0 means 1 MiB.
	MaxBodyBytes int64
	// FormReadTimeout bounds reading a body sent before anyone is
	// authenticated (the console's login form, dev token requests); 0
	// means 5 s.
	FormReadTimeout time.Duration
	// MetricsElsewhere leaves /metrics off this router: it is served on a
	// listener of its own (MetricsHandler).
	MetricsElsewhere bool
	// Mounts are `keb dev`'s stand-ins, served by path prefix (e.g.
	// /dev/cis/); their bodies are read as the console's forms are.
	Mounts map[string]http.Handler
}

// OrchestrationAPI is the handlers of the orchestration routes
// (*orchestration.Handler).
type OrchestrationAPI interface {
	Upgrade(opType string) http.Handler
	List() http.Handler
	One() http.Handler
	Operations() http.Handler
	Operation() http.Handler
	Cancel() http.Handler
	Retry() http.Handler
}

// maxScrapes bounds the /metrics answers encoded at once: Prometheus scrapes
// a replica every few seconds, and anyone can reach /metrics, so a thousand
// concurrent scrapes would otherwise cost a thousand encodings' memory
// (64 → 190 MiB measured).
const maxScrapes = 4

// MetricsHandler serves the registry's metrics in Prometheus' format; more
// than maxScrapes at once are answered 503.
func MetricsHandler(reg *prometheus.Registry) http.Handler {
	return promhttp.HandlerFor(reg, promhttp.HandlerOpts{MaxRequestsInFlight: maxScrapes})
}

// regionalCatalogs is a broker whose catalog depends on the platform region;
// *broker.Broker is one.
type regionalCatalogs interface {
	Catalogs() (byRegion, others map[string][]domain.Service, defaultRegion string)
}

// catalogHandlers serves each platform region its catalog, every variant
// encoded and compressed once at start; a broker without regional catalogs
// serves services everywhere.
func catalogHandlers(b domain.ServiceBroker, services []domain.Service) (http.Handler, error) {
	rc, ok := b.(regionalCatalogs)
	if !ok {
		return serveCatalog(services)
	}
	byRegion, others, defaultRegion := rc.Catalogs()
	handlers := make(map[string]http.Handler, len(byRegion))
	for pr, s := range byRegion {
		h, err := serveCatalog(s)
		if err != nil {
			return nil, fmt.Errorf("platform region %s: %w", pr, err)
		}
		handlers[pr] = h
	}
	// Every other platform region gets its class's catalog (the plans whose provider follows the
	// platform region offer that provider's regions).
	other := make(map[string]http.Handler, len(others))
	for class, s := range others {
		h, err := serveCatalog(s)
		if err != nil {
			return nil, fmt.Errorf("other platform regions (%q): %w", class, err)
		}
		other[class] = h
	}
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		region, ok := mux.Vars(req)["region"]
		if !ok {
			region = defaultRegion
		}
		if h, ok := handlers[region]; ok {
			h.ServeHTTP(w, req)
			return
		}
		other[catalog.OtherRegionClass(region)].ServeHTTP(w, req)
	}), nil
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
func NewRouter(opts Options) (http.Handler, error) {
	services, err := opts.Broker.Services(context.Background())
	if err != nil {
		return nil, fmt.Errorf("reading the catalog: %w", err)
	}
	catalogHandler, err := catalogHandlers(opts.Broker, services)
	if err != nil {
		return nil, fmt.Errorf("encoding the catalog: %w", err)
	}
	maxBody := opts.MaxBodyBytes
	if maxBody <= 0 {
		maxBody = 1 << 20
	}
	m := newMetrics(opts.Registry)
	r := mux.NewRouter()
	// Paths are routed as sent: mux would answer a path with dot segments
	// or doubled slashes with a redirect to its cleaned form.
	r.SkipClean(true)
	r.Use(requestContext(opts.Log), m.middleware, accessLog, strictRequest)
	r.NotFoundHandler = m.wrapUnmatched(requestContext(opts.Log)(accessLog(http.HandlerFunc(notFound))))
	r.MethodNotAllowedHandler = m.wrapUnmatched(requestContext(opts.Log)(accessLog(methodNotAllowed(r))))
	// Bodies read before anyone is authenticated: small, quick, few at once.
	formDeadline := opts.FormReadTimeout
	if formDeadline <= 0 {
		formDeadline = 5 * time.Second
	}
	readForm := bufferBody(bodyLimits{max: maxFormBody, deadline: formDeadline, slots: make(chan struct{}, FormSlots)})

	r.HandleFunc("/healthz", healthz).Methods(http.MethodGet)
	r.HandleFunc("/version", versionHandler()).Methods(http.MethodGet)
	r.Handle("/readyz", readyz(opts.Ready)).Methods(http.MethodGet)
	if !opts.MetricsElsewhere {
		r.Handle("/metrics", MetricsHandler(opts.Registry)).Methods(http.MethodGet)
	}
	r.HandleFunc("/openapi.yaml", openAPI).Methods(http.MethodGet)
	if opts.DevToken != nil {
		r.Handle("/oauth2/token", readForm(opts.DevToken)).Methods(http.MethodPost)
	}
	for prefix, h := range opts.Mounts {
		r.PathPrefix(prefix).Handler(readForm(h))
	}

	bounded := withDeadline(opts.RequestTimeout)
	osbLog := logging.NewLager("brokerapi", opts.Log)
	osb := brokerapi.NewWithOptions(opts.Broker, osbLog)
	requireWrite, checkWrite := opts.Auth.Require(auth.ScopeBrokerWrite), opts.Auth.Check(auth.ScopeBrokerWrite)
	// /oauth/v2 is registered before /oauth/{region}/v2 so that "v2" is never
	// taken for a region.
	guard := guardOSB(offering{services: services}, maxBody)
	for _, prefix := range []string{"/oauth", "/oauth/{region}"} {
		// Auth comes first: nothing of an unauthenticated request is read.
		h := requireWrite(checkAPIVersion(withRegion(guard(withResponseHints(bounded(osbErrorShape(bindingMetadata(
			serveProvision(opts.Broker, osbLog, stripToV2(osb))))))))))
		r.Handle(prefix+"/v2/catalog", checkWrite(checkAPIVersion(checkRegion(catalogHandler)))).Methods(http.MethodGet)
		for _, rt := range osbRoutes[1:] {
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
	events := opts.Events
	if events == nil {
		events = http.HandlerFunc(notYetServed)
	}
	r.Handle("/events", requireCLDRead(bounded(events))).Methods(http.MethodGet)

	// Expiring an instance changes it as a PATCH would: broker:write.
	expire := opts.Expire
	if expire == nil {
		expire = http.HandlerFunc(notYetServed)
	}
	r.Handle("/expire/service_instance/{instance_id}", requireWrite(bounded(expire))).Methods(http.MethodPut)

	kubeconfig := opts.Kubeconfig
	if kubeconfig == nil {
		kubeconfig = http.HandlerFunc(notYetServed)
	}
	r.Handle("/kubeconfig/{instance_id}", kubeconfigAccess(opts.KubeconfigOrigins, opts.Auth.Require(auth.ScopeKubeconfigRead))(bounded(kubeconfig))).
		Methods(http.MethodGet, http.MethodOptions)

	// The console checks its own token (a cookie, scope cld:read).
	if opts.Console != nil {
		opts.Console.Register(r, readForm)
	}

	registerOrchestrations(r, opts, bounded)
	return routed{Handler: securityHeaders(releaseUnreadBodies(headAsGet(r))), router: r}, nil
}

// allowMethods are the methods a 405's Allow header may list, in its order.
var allowMethods = []string{http.MethodGet, http.MethodHead, http.MethodPost, http.MethodPut, http.MethodPatch,
	http.MethodDelete, http.MethodOptions}

// allowed lists the methods r routes req's path for: HEAD wherever GET is
// (RFC 9110, 9.3.2).
func allowed(r *mux.Router, req *http.Request) []string {
	var out []string
	for _, m := range allowMethods {
		probe := m
		if m == http.MethodHead {
			probe = http.MethodGet
		}
		var match mux.RouteMatch
		if r.Match(&http.Request{Method: probe, URL: req.URL, Host: req.Host, Header: req.Header}, &match) && match.MatchErr == nil {
			out = append(out, m)
		}
	}
	return out
}

// headAsGet serves HEAD where r routes GET, as the GET (net/http sends no
// body for a HEAD request, whatever the handler writes).
func headAsGet(r *mux.Router) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if req.Method == http.MethodHead {
			get := req.WithContext(req.Context())
			get.Method = http.MethodGet
			var match mux.RouteMatch
			if r.Match(get, &match) && match.MatchErr == nil {
				r.ServeHTTP(w, get)
				return
			}
		}
		r.ServeHTTP(w, req)
	})
}

// registerOrchestrations routes the orchestration API: reading needs
// broker-upgrade:read, creating and steering broker-upgrade:write.
func registerOrchestrations(r *mux.Router, opts Options, bounded func(http.Handler) http.Handler) {
	read, write := opts.Auth.Require(auth.ScopeUpgradeRead), opts.Auth.Require(auth.ScopeUpgradeWrite)
	o := opts.Orchestrations
	if o == nil {
		r.Handle("/orchestrations", read(http.HandlerFunc(notYetServed))).Methods(http.MethodGet)
		r.PathPrefix("/orchestrations/").Handler(read(http.HandlerFunc(notYetServed))).Methods(http.MethodGet)
		r.PathPrefix("/upgrade/").Handler(write(http.HandlerFunc(notYetServed)))
		return
	}
	body := bufferBody(bodyLimits{max: maxUpgradeBody})
	ids := checkPathIDs("orchestration_id", "operation_id")
	r.Handle("/upgrade/kyma", write(body(bounded(o.Upgrade("upgrade_kyma"))))).Methods(http.MethodPost)
	r.Handle("/upgrade/cluster", write(body(bounded(o.Upgrade("upgrade_cluster"))))).Methods(http.MethodPost)
	r.Handle("/orchestrations", read(bounded(o.List()))).Methods(http.MethodGet)
	r.Handle("/orchestrations/{orchestration_id}", read(ids(bounded(o.One())))).Methods(http.MethodGet)
	r.Handle("/orchestrations/{orchestration_id}/operations", read(ids(bounded(o.Operations())))).Methods(http.MethodGet)
	r.Handle("/orchestrations/{orchestration_id}/operations/{operation_id}", read(ids(bounded(o.Operation())))).Methods(http.MethodGet)
	r.Handle("/orchestrations/{orchestration_id}/cancel", write(ids(bounded(o.Cancel())))).Methods(http.MethodPut)
	r.Handle("/orchestrations/{orchestration_id}/retry", write(ids(bounded(o.Retry())))).Methods(http.MethodPut)
}

// routed is the router behind its outer middleware; Router lets tests walk
// the routes (the OpenAPI document is checked against them).
type routed struct {
	http.Handler
	router *mux.Router
}

// Router returns the route table.
func (r routed) Router() *mux.Router { return r.router }

// stripToV2 hands brokerapi the path it routes on (/v2/...), without the
// /oauth[/{region}] prefix, and keb's request ID as the correlation ID,
// which brokerapi takes from this header first: its log lines then carry
// keb's request ID.
func stripToV2(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		r2 := req.Clone(req.Context())
		if id := logging.RequestID(req.Context()); id != "" {
			r2.Header.Set(headerCorrelationID, id)
		}
		if i := strings.Index(r2.URL.Path, "/v2/"); i >= 0 {
			r2.URL.Path = r2.URL.Path[i:]
		}
		if i := strings.Index(r2.URL.RawPath, "/v2/"); i >= 0 {
			r2.URL.RawPath = r2.URL.RawPath[i:]
		}
		next.ServeHTTP(w, r2)
	})
}

// withRegion records the {region} path segment as the platform region, and
// refuses one keb cannot place runtimes for on every OSB route alike. It
// records the Host the platform addressed too (the instance labels' link).
func withRegion(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		region, ok, valid := platformRegion(w, req)
		if !valid {
			return
		}
		ctx := broker.ContextWithRequestHost(req.Context(), req.Host)
		if ok {
			ctx = broker.ContextWithRegion(ctx, region)
		}
		next.ServeHTTP(w, req.WithContext(ctx))
	})
}

// checkRegion refuses the platform regions withRegion refuses, for a
// handler that reads neither region nor Host from the context (the
// catalog's, which takes the region from the path).
func checkRegion(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if _, _, valid := platformRegion(w, req); valid {
			next.ServeHTTP(w, req)
		}
	})
}

// platformRegion is the {region} path segment (ok: there is one); an
// invalid one is answered 400 (valid false).
func platformRegion(w http.ResponseWriter, req *http.Request) (region string, ok, valid bool) {
	region, ok = mux.Vars(req)["region"]
	if ok {
		if err := catalog.ValidatePlatformRegion(region); err != nil {
			writeError(w, http.StatusBadRequest, "BadRequest", err.Error())
			return region, ok, false
		}
	}
	return region, ok, true
}
