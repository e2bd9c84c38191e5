package app_test

import (
	"fmt"
	"net/http"
	"testing"

	"github.com/google/uuid"

	"github.com/kyma-keb/keb/internal/logging"
	"github.com/kyma-keb/keb/testing/logtest"
)

// Every line a request logs, brokerapi's included, carries the request ID
// the client sees in X-Request-Id. At info level an answered poll logs
// nothing (platforms poll every operation every few seconds) and a failed
// poll its access-log line.
func TestOneRequestIDOnEveryLogLine(t *testing.T) {
	t.Parallel()
	for _, level := range []string{"debug", "info"} {
		t.Run(level, func(t *testing.T) {
			t.Parallel()
			var buf logtest.Buffer
			log, err := logging.New(&buf, "json", level)
			if err != nil {
				t.Fatal(err)
			}
			b := setupWithLog(t, log)
			id := uuid.NewString()
			put := b.expect(b.do(http.MethodPut, "/oauth/v2/service_instances/"+id+"?accepts_incomplete=true", provisionBody(azurePlanID, `{"name":"trace"}`, "")), http.StatusAccepted)
			// A client's own correlation header does not split the trace.
			poll := b.do(http.MethodGet, fmt.Sprintf("/oauth/v2/service_instances/%s/last_operation?operation=%s", id, put.body["operation"]), "",
				withHeader("X-Correlation-ID", "client-chosen"))
			b.expect(poll, http.StatusOK)
			failed := b.do(http.MethodGet, fmt.Sprintf("/oauth/v2/service_instances/%s/last_operation?operation=unknown-op", id), "")
			if failed.status == http.StatusOK {
				t.Fatalf("poll for an unknown operation answered 200")
			}

			byRequest := map[string]int{}
			brokerapiLines := 0
			for _, rec := range b.logLines(&buf) {
				rid, _ := rec["request_id"].(string)
				if rid == "" {
					t.Errorf("log line without request_id: %v", rec)
					continue
				}
				byRequest[rid]++
				if _, ok := rec["source"]; ok {
					brokerapiLines++
					if rec["level"] == "info" {
						t.Errorf("brokerapi line at info: %v", rec)
					}
				}
			}
			putID, pollID, failedID := put.header.Get("X-Request-Id"), poll.header.Get("X-Request-Id"), failed.header.Get("X-Request-Id")
			if putID == "" || pollID == "" || failedID == "" || putID == pollID || pollID == failedID {
				t.Fatalf("request IDs %q, %q and %q", putID, pollID, failedID)
			}
			if byRequest[failedID] == 0 {
				t.Errorf("the failed poll logged nothing at %s, want its access-log line", level)
			}
			switch level {
			case "debug":
				if brokerapiLines == 0 || byRequest[pollID] < 2 {
					t.Errorf("at debug the poll logged %d lines (brokerapi's: %d in all), want brokerapi's lines under its ID", byRequest[pollID], brokerapiLines)
				}
				if len(byRequest) != 3 {
					t.Errorf("lines under %d request IDs, want 3 (%v)", len(byRequest), byRequest)
				}
			case "info":
				if byRequest[pollID] != 0 {
					t.Errorf("at info the answered poll logged %d lines, want none", byRequest[pollID])
				}
				if len(byRequest) != 2 {
					t.Errorf("lines under %d request IDs, want 2: the PUT and the failed poll (%v)", len(byRequest), byRequest)
				}
			}
		})
	}
}

func (b *bundle) logLines(buf *logtest.Buffer) []map[string]any { return buf.Lines(b.t) }
