package httpapi

import (
	"encoding/json"
	"fmt"
	"io"
	stdlog "log"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
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

// A handler's panic is answered, not dropped: the client gets a 500 with an
// OSB error body (net/http alone would close the connection unanswered, and
// the client would read EOF), and the panic is in the JSON log with its
// stack and the request's ID. After the status is written the answer can
// only be cut, so the connection is aborted.
func TestPanicIsAnsweredAndLogged(t *testing.T) {
	t.Parallel()
	log, hook := test.NewNullLogger()
	r := mux.NewRouter()
	r.Use(requestContext(log), accessLog)
	r.Handle("/early", http.HandlerFunc(func(http.ResponseWriter, *http.Request) {
		var m map[string]int
		m["boom"]++ // a nil map: the kind of bug a recovery must not hide
	}))
	r.Handle("/late", http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.WriteHeader(http.StatusOK)
		_, _ = w.Write([]byte("partial"))
		w.(http.Flusher).Flush()
		panic("after the status")
	}))
	srv := httptest.NewServer(r)
	defer srv.Close()
	srv.Config.ErrorLog = stdlog.New(io.Discard, "", 0)

	resp, err := http.Get(srv.URL + "/early")
	if err != nil {
		t.Fatalf("GET /early: %v (want a 500, not a dropped connection)", err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	var osb map[string]string
	if resp.StatusCode != http.StatusInternalServerError || json.Unmarshal(body, &osb) != nil || osb["error"] != "InternalError" || osb["description"] == "" {
		t.Errorf("GET /early: %d %s, want 500 with an OSB error body", resp.StatusCode, body)
	}
	var logged *logrus.Entry
	for _, e := range hook.AllEntries() {
		if e.Message == "request handler panicked" {
			logged = e
		}
	}
	switch {
	case logged == nil:
		t.Fatalf("no log line for the panic; lines: %v", hook.AllEntries())
	case logged.Level != logrus.ErrorLevel || !strings.Contains(fmt.Sprint(logged.Data["panic"]), "nil map") ||
		!strings.Contains(fmt.Sprint(logged.Data["stack"]), "middleware_test.go") ||
		logged.Data["request_id"] != resp.Header.Get(headerRequestID):
		t.Errorf("panic line %v %v, want error level, the panic, its stack and request ID %q", logged.Level, logged.Data, resp.Header.Get(headerRequestID))
	}

	resp, err = http.Get(srv.URL + "/late")
	if err == nil {
		_, err = io.ReadAll(resp.Body)
		resp.Body.Close()
	}
	if err == nil {
		t.Errorf("GET /late: the cut answer (status %d) read as complete; want the connection aborted", resp.StatusCode)
	}
}

// The header names keb assigns to header maps directly are canonical:
// another spelling would be a second header on the wire beside Set's.
func TestHeaderNamesAreCanonical(t *testing.T) {
	t.Parallel()
	for _, name := range []string{headerRequestID, headerRequestIdentity, headerAPIVersion, headerCorrelationID} {
		if c := http.CanonicalHeaderKey(name); c != name {
			t.Errorf("header name %q is not canonical (%q)", name, c)
		}
	}
}

// validAPIVersion accepts what the regular expression it replaced accepted
// (`^2\.(0|[1-9][0-9]{0,3})$`), and nothing else.
func FuzzValidAPIVersion(f *testing.F) {
	syntax := regexp.MustCompile(`^2\.(0|[1-9][0-9]{0,3})$`)
	for _, v := range []string{"2.17", "2.0", "2.00", "2.9999", "2.10000", "2.", "2", "02.14", "2.14banana", "2.-1",
		"+2.14", "2.14\n", "3.0", "2.0x10", "", "2.01", "2.1 "} {
		f.Add(v)
	}
	f.Fuzz(func(t *testing.T, v string) {
		if got, want := validAPIVersion(v), syntax.MatchString(v); got != want {
			t.Errorf("validAPIVersion(%q) = %v, the syntax says %v", v, got, want)
		}
	})
}
