package app_test

import (
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/kyma-keb/keb/internal/config"
)

// metric reads one unlabelled counter from /metrics.
func (b *bundle) metric(name string) float64 {
	b.t.Helper()
	r := b.expect(b.do(http.MethodGet, "/metrics", ""), http.StatusOK)
	for line := range strings.SplitSeq(r.raw, "\n") {
		if v, ok := strings.CutPrefix(line, name+" "); ok {
			f, err := strconv.ParseFloat(v, 64)
			if err != nil {
				b.t.Fatalf("%s: %v", line, err)
			}
			return f
		}
	}
	b.t.Fatalf("/metrics has no %s", name)
	return 0
}

// The front door's statements per request are counted and stay at what the
// requests need: a poll is one statement, an accept one transaction of
// BEGIN, River's job insert and its notification (which River sends at most
// once per short interval), the instance and the operation with its job's ID
// (pipelined; each insert checks the archive itself) and COMMIT: 5 or 6
// statements in 4 round trips. River reads the server version once,
// on the first insert, which is why the second accept is measured.
func TestStatementsPerRequestAreCounted(t *testing.T) {
	t.Parallel()
	// The counter is the process's: the readiness checks' statements (every
	// 2 s by default) must not land in a measured window on a slow machine.
	b := setupWith(t, func(c *config.Config) {
		c.MetricsCensusInterval = time.Hour
		c.ReadinessInterval = time.Hour
	}, io.Discard)
	const counter = "keb_database_statements_total"
	// The first scrape takes the metrics census (instances, queue), whose
	// statements would otherwise land in the first difference; it is then
	// cached for the census interval, far longer than this test.
	b.metric(counter)
	b.expect(b.do(http.MethodPut, provisionPath("inst-first"), provisionBody(azurePlanID, `{"name":"c0"}`, `"globalaccount_id":"ga-0","subaccount_id":"sa-0","user_id":"u"`)), http.StatusAccepted)
	before := b.metric(counter)
	r := b.expect(b.do(http.MethodPut, provisionPath("inst-count"), provisionBody(azurePlanID, `{"name":"c1"}`, "")), http.StatusAccepted)
	accept := b.metric(counter) - before
	opID, _ := r.body["operation"].(string)

	before = b.metric(counter)
	b.expect(b.do(http.MethodGet, instancePath("inst-count")+"/last_operation?operation="+opID, ""), http.StatusOK)
	poll := b.metric(counter) - before

	before = b.metric(counter)
	b.expect(b.do(http.MethodGet, "/oauth/v2/catalog", ""), http.StatusOK)
	catalog := b.metric(counter) - before

	if accept < 5 || accept > 6 || poll != 1 || catalog != 0 {
		t.Errorf("statements: accept %v, poll %v, catalog %v; want 5-6, 1 and 0", accept, poll, catalog)
	}
}
