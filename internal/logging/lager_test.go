package logging

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"code.cloudfoundry.org/lager/v3"
	"github.com/pivotal-cf/brokerapi/v10/domain"
)

func TestLagerSinkRedactsCredentials(t *testing.T) {
	t.Parallel()
	var buf bytes.Buffer
	log, err := New(&buf, "json", "debug")
	if err != nil {
		t.Fatal(err)
	}
	l := NewLager("brokerapi", log)
	details := domain.ProvisionDetails{
		ServiceID:  "svc",
		RawContext: json.RawMessage(`{"globalaccount_id":"ga","sm_operator_credentials":{"clientid":"id","clientsecret":"s3cr3t-value"}}`),
	}
	l.Session("provision").Error("provision-failed", errors.New("boom"), lager.Data{"instance-details": details})

	out := buf.String()
	if strings.Contains(out, "s3cr3t-value") {
		t.Fatalf("secret leaked into log: %s", out)
	}
	var rec map[string]any
	if err := json.Unmarshal(buf.Bytes(), &rec); err != nil {
		t.Fatalf("log line is not JSON: %v: %s", err, out)
	}
	if rec["level"] != "warning" || rec["msg"] != "brokerapi.provision.provision-failed" || rec["error"] != "boom" {
		t.Fatalf("unexpected record: %v", rec)
	}
	// The raw context is not logged at all: only its size.
	if got, _ := rec["instance-details"].(map[string]any)["context"].(string); !strings.HasPrefix(got, "[omitted: ") {
		t.Fatalf("context logged as %v, want only its size", rec["instance-details"])
	}
}

func TestLagerSinkBoundsHugeRequests(t *testing.T) {
	t.Parallel()
	var buf bytes.Buffer
	log, err := New(&buf, "json", "debug")
	if err != nil {
		t.Fatal(err)
	}
	huge := strings.Repeat("x", 1<<20)
	details := domain.ProvisionDetails{ServiceID: huge,
		RawParameters: json.RawMessage(`{"name":"` + huge + `"}`), RawContext: json.RawMessage(`{"a":"` + huge + `"}`)}
	NewLager("brokerapi", log).Session("provision").Error("provision-failed", errors.New("boom"), lager.Data{"instance-details": details})
	if n := buf.Len(); n > 4<<10 {
		t.Fatalf("a 3 MiB request gave a %d-byte log line", n)
	}
}
