package metrics

import (
	"context"
	"net/http"

	"github.com/jackc/pgx/v5"
	"github.com/prometheus/client_golang/prometheus"
)

// Work counts the SQL statements keb sends and the requests it makes to
// kube-apiservers, so that the cost of an operation can be read off /metrics
// (`make bench` divides them by the provisionings it ran).
type Work struct {
	statements prometheus.Counter
	apiserver  *prometheus.CounterVec
}

// NewWork registers the work counters on reg.
func NewWork(reg prometheus.Registerer) *Work {
	c := &Work{
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

// StatementTracer is a pgx tracer counting every statement, batched ones
// included, for storage.Open.
func (c *Work) StatementTracer() pgx.QueryTracer { return statementTracer{c.statements} }

// CountRequests returns a rest.Config WrapTransport that counts requests to
// target.
func (c *Work) CountRequests(target string) func(http.RoundTripper) http.RoundTripper {
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
