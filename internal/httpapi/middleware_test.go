package httpapi

import (
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/gorilla/mux"
	"github.com/sirupsen/logrus"
	"github.com/sirupsen/logrus/hooks/test"

	"github.com/kyma-keb/keb/internal/logging"
)

// What a handler adds to its access line is logged on that line, beside
// what the access log writes itself; the handler writes no line of its own.
func TestAccessLineCarriesTheHandlersFields(t *testing.T) {
	t.Parallel()
	log, hook := test.NewNullLogger()
	r := mux.NewRouter()
	r.Use(requestContext(log), accessLog)
	r.Handle("/oauth/v2/service_instances/{instance_id}", http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if !logging.AddAccessFields(req.Context(), logrus.Fields{"accepted": "provisioning", "operation_id": "op-1"}) {
			t.Error("AddAccessFields found no access line to add to")
		}
		w.WriteHeader(http.StatusAccepted)
	})).Methods(http.MethodPut)
	r.Handle("/oauth/v2/service_instances/{instance_id}", http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.WriteHeader(http.StatusAccepted)
	})).Methods(http.MethodDelete)

	r.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest(http.MethodPut, "/oauth/v2/service_instances/i-1", nil))
	entries := hook.AllEntries()
	if len(entries) != 1 {
		t.Fatalf("logged %d lines, want the access line only", len(entries))
	}
	want := logrus.Fields{"accepted": "provisioning", "operation_id": "op-1", "method": http.MethodPut, "status": http.StatusAccepted}
	for k, v := range want {
		if entries[0].Data[k] != v {
			t.Errorf("access line field %s = %v, want %v (line: %v)", k, entries[0].Data[k], v, entries[0].Data)
		}
	}

	// A request whose handler adds nothing keeps the plain line.
	hook.Reset()
	r.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest(http.MethodDelete, "/oauth/v2/service_instances/i-1", nil))
	if e := hook.LastEntry(); e == nil || e.Data["accepted"] != nil || e.Data["status"] != http.StatusAccepted {
		t.Errorf("plain access line %v", e)
	}
}
