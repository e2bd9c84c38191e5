package app

import (
	"context"
	"net/http"

	"github.com/jackc/pgx/v5"
	"github.com/prometheus/client_golang/prometheus"
)

// workCounters count the SQL statements keb sends and the requests it makes
// to kube-apiservers, so that the cost of an operation can be read off
// /metrics (`make bench` divides them by the provisionings it ran).
type workCounters struct {
	statements prometheus.Counter
	apiserver  *prometheus.CounterVec
}

func newWorkCounters(reg prometheus.Registerer) *workCounters {
	c := &workCounters{
		statements: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "keb_database_statements_total",
			Help: "SQL statements sent to PostgreSQL (each statement of a batch counts), queue included.",
		}),
		apiserver: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "keb_apiserver_requests_total",
			Help: "HTTP requests to kube-apiservers by target: control_plane (KCP, account pool) or runtime.",
		}, []string{"target"}),
	}
	reg.MustRegister(c.statements, c.apiserver)
	return c
}

// statementTracer is a pgx tracer that counts statements.
type statementTracer struct{ c prometheus.Counter }

var (
	_ pgx.QueryTracer = statementTracer{}
	_ pgx.BatchTracer = statementTracer{}
)

func (t statementTracer) TraceQueryStart(ctx context.Context, _ *pgx.Conn, _ pgx.TraceQueryStartData) context.Context {
	t.c.Inc()
	return ctx
}

func (statementTracer) TraceQueryEnd(context.Context, *pgx.Conn, pgx.TraceQueryEndData) {}

func (statementTracer) TraceBatchStart(ctx context.Context, _ *pgx.Conn, _ pgx.TraceBatchStartData) context.Context {
	return ctx
}

func (t statementTracer) TraceBatchQuery(context.Context, *pgx.Conn, pgx.TraceBatchQueryData) {
	t.c.Inc()
}

func (statementTracer) TraceBatchEnd(context.Context, *pgx.Conn, pgx.TraceBatchEndData) {}

func (c *workCounters) tracer() pgx.QueryTracer { return statementTracer{c.statements} }

// countRequests returns a rest.Config WrapTransport that counts requests to
// target.
func (c *workCounters) countRequests(target string) func(http.RoundTripper) http.RoundTripper {
	n := c.apiserver.WithLabelValues(target)
	return func(next http.RoundTripper) http.RoundTripper {
		return roundTripperFunc(func(req *http.Request) (*http.Response, error) {
			n.Inc()
			return next.RoundTrip(req)
		})
	}
}

type roundTripperFunc func(*http.Request) (*http.Response, error)

func (f roundTripperFunc) RoundTrip(req *http.Request) (*http.Response, error) { return f(req) }
