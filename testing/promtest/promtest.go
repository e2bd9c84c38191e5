// Package promtest reads a /metrics page the way Prometheus does, for tests
// that assert what an operator's dashboard would show.
package promtest

import (
	"net/http"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// Page is one scrape.
type Page map[string]*dto.MetricFamily

// Scrape GETs url (a /metrics endpoint) and parses it.
func Scrape(t testing.TB, url string) Page {
	t.Helper()
	res, err := http.Get(url)
	if err != nil {
		t.Fatalf("scraping %s: %v", url, err)
	}
	defer res.Body.Close()
	if res.StatusCode != http.StatusOK {
		t.Fatalf("scraping %s: status %d", url, res.StatusCode)
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(res.Body)
	if err != nil {
		t.Fatalf("parsing %s: %v", url, err)
	}
	return Page(fams)
}

// ScrapeUntil scrapes url until the series of metric name with labels is on
// the page, for up to a minute, and returns that page. A worker counts an
// operation after committing its end, so a client that has just polled
// "succeeded" can scrape before the count moves.
func ScrapeUntil(t testing.TB, url, name string, labels map[string]string) Page {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for {
		p := Scrape(t, url)
		if _, ok := p.Value(name, labels); ok || time.Now().After(deadline) {
			return p
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// Value returns the value of the series of metric name whose labels include
// all of labels: a counter's or gauge's value, a histogram's count.
func (p Page) Value(name string, labels map[string]string) (float64, bool) {
	fam, ok := p[name]
	if !ok {
		return 0, false
	}
	for _, m := range fam.GetMetric() {
		if !matches(m, labels) {
			continue
		}
		switch {
		case m.Counter != nil:
			return m.Counter.GetValue(), true
		case m.Gauge != nil:
			return m.Gauge.GetValue(), true
		case m.Histogram != nil:
			return float64(m.Histogram.GetSampleCount()), true
		}
	}
	return 0, false
}

// Must is Value that fails the test when the series is missing.
func (p Page) Must(t testing.TB, name string, labels map[string]string) float64 {
	t.Helper()
	v, ok := p.Value(name, labels)
	if !ok {
		t.Fatalf("no series %s%v on the metrics page", name, labels)
	}
	return v
}

func matches(m *dto.Metric, want map[string]string) bool {
	have := map[string]string{}
	for _, l := range m.GetLabel() {
		have[l.GetName()] = l.GetValue()
	}
	for k, v := range want {
		if have[k] != v {
			return false
		}
	}
	return true
}
