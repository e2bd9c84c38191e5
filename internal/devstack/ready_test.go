package devstack

import (
	"context"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
)

// TestReportReady: "broker ready" is reported once, when /readyz first answers 200, not before.
func TestReportReady(t *testing.T) {
	t.Parallel()
	var asked atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		if asked.Add(1) < 3 {
			w.WriteHeader(http.StatusServiceUnavailable)
			return
		}
		w.WriteHeader(http.StatusOK)
	}))
	t.Cleanup(srv.Close)
	var reported atomic.Int32
	var askedWhenReported int32
	reportReady(context.Background(), srv.URL, func() {
		reported.Add(1)
		askedWhenReported = asked.Load()
	})
	if reported.Load() != 1 || askedWhenReported != 3 {
		t.Fatalf("reported %d times, after %d answers; want once, after the third (the first 200)", reported.Load(), askedWhenReported)
	}
}

// TestReportReadyStops: a keb dev stopped before it was ready reports nothing.
func TestReportReadyStops(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(context.Background())
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		cancel()
		w.WriteHeader(http.StatusServiceUnavailable)
	}))
	t.Cleanup(srv.Close)
	reportReady(ctx, srv.URL, func() { t.Error("reported ready") })
}
