package app_test

import (
	"fmt"
	"io"
	"math"
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
	// Background work (the queue's workers, periodic jobs) can add a
	// statement to any window but never take one away, so the fewest
	// statements seen over a few tries is what the request itself needs.
	fewest := func(request func(i int)) float64 {
		best := math.Inf(1)
		for i := range 3 {
			before := b.metric(counter)
			request(i)
			best = min(best, b.metric(counter)-before)
		}
		return best
	}
	var opID string
	accept := fewest(func(i int) {
		r := b.expect(b.do(http.MethodPut, provisionPath(fmt.Sprintf("inst-count-%d", i)), provisionBody(azurePlanID, fmt.Sprintf(`{"name":"c%d"}`, i+1), "")), http.StatusAccepted)
		opID, _ = r.body["operation"].(string)
	})
	poll := fewest(func(int) {
		b.expect(b.do(http.MethodGet, instancePath("inst-count-2")+"/last_operation?operation="+opID, ""), http.StatusOK)
	})
	catalog := fewest(func(int) {
		b.expect(b.do(http.MethodGet, "/oauth/v2/catalog", ""), http.StatusOK)
	})

	if accept < 5 || accept > 6 || poll != 1 || catalog != 0 {
		t.Errorf("statements: accept %v, poll %v, catalog %v; want 5-6, 1 and 0", accept, poll, catalog)
	}
}
