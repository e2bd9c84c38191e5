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
// the client sees in X-Request-Id; at info level a poll logs one line.
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
			putID, pollID := put.header.Get("X-Request-Id"), poll.header.Get("X-Request-Id")
			if putID == "" || pollID == "" || putID == pollID {
				t.Fatalf("request IDs %q and %q", putID, pollID)
			}
			switch level {
			case "debug":
				if brokerapiLines == 0 || byRequest[pollID] < 2 {
					t.Errorf("at debug the poll logged %d lines (brokerapi's: %d in all), want brokerapi's lines under its ID", byRequest[pollID], brokerapiLines)
				}
			case "info":
				if byRequest[pollID] != 1 {
					t.Errorf("at info the poll logged %d lines, want its one access-log line", byRequest[pollID])
				}
			}
			if len(byRequest) != 2 {
				t.Errorf("lines under %d request IDs, want 2 (%v)", len(byRequest), byRequest)
			}
		})
	}
}

func (b *bundle) logLines(buf *logtest.Buffer) []map[string]any { return buf.Lines(b.t) }
