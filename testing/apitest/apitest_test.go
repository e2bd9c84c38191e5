package apitest_test

import (
	"strings"
	"testing"

	"github.com/kyma-keb/keb/testing/apitest"
)

func TestCheck(t *testing.T) {
	t.Parallel()
	doc, err := apitest.Load()
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name, method, path string
		status             int
		body               string
		wantErr            string
	}{
		{"a runtimes page", "GET", "/info/runtimes", 200, `{"data":[],"count":0,"totalCount":0}`, ""},
		{"a runtimes page without totalCount", "GET", "/runtimes", 200, `{"data":[],"count":0}`, "totalCount"},
		{"an unknown runtime state", "GET", "/runtimes", 200, `{"data":[{"instanceID":"i","runtimeID":"r","globalAccountID":"g",
			"subAccountID":"s","servicePlanID":"p","servicePlanName":"azure","status":{"createdAt":"2026-01-01T00:00:00Z",
			"modifiedAt":"2026-01-01T00:00:00Z","state":"exploded"}}],"count":1,"totalCount":1}`, "exploded"},
		{"last_operation under a region", "GET", "/oauth/cf-eu10/v2/service_instances/x/last_operation", 200, `{"state":"in progress"}`, ""},
		{"a last_operation state OSB does not know", "GET", "/oauth/v2/service_instances/x/last_operation", 200, `{"state":"pending"}`, "pending"},
		{"an OSB error", "PUT", "/oauth/v2/service_instances/x", 409, `{"error":"Conflict","description":"different"}`, ""},
		{"a bind unbound while it was being created", "PUT", "/oauth/v2/service_instances/x/service_bindings/y", 409, `{"error":"Conflict","description":"unbound while it was being created"}`, ""},
		{"a bind 409 without an OSB body", "PUT", "/oauth/v2/service_instances/x/service_bindings/y", 409, `{"description":"no error key"}`, "does not match"},
		{"an error body that is not an object", "PUT", "/oauth/v2/service_instances/x", 400, `["no"]`, "does not match"},
		{"an undocumented path", "GET", "/nowhere", 200, `{}`, "path not in"},
		{"an undocumented method", "POST", "/info/runtimes", 200, `{}`, "method not documented"},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			err := doc.Check(c.method, c.path, c.status, "application/json", []byte(c.body))
			switch {
			case c.wantErr == "" && err != nil:
				t.Fatalf("unexpected error: %v", err)
			case c.wantErr != "" && (err == nil || !strings.Contains(err.Error(), c.wantErr)):
				t.Fatalf("error %v, want one mentioning %q", err, c.wantErr)
			}
		})
	}
}

func TestCheckAllow(t *testing.T) {
	t.Parallel()
	doc, err := apitest.Load()
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name, path, allow string
		wantErr           string
	}{
		{"a GET route: HEAD with it", "/healthz", "GET, HEAD", ""},
		{"the order does not matter", "/healthz", "HEAD, GET", ""},
		{"no Allow header", "/healthz", "", "without an Allow header"},
		{"HEAD left out", "/healthz", "GET", "documents"},
		{"a method the document does not list", "/healthz", "GET, HEAD, POST", "documents"},
		{"an instance's methods", "/oauth/v2/service_instances/x", "GET, HEAD, PUT, PATCH, DELETE", ""},
		{"a binding's, one missing", "/oauth/cf-eu10/v2/service_instances/x/service_bindings/y", "GET, HEAD, PUT", "documents"},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			err := doc.CheckAllow("POST", c.path, c.allow)
			switch {
			case c.wantErr == "" && err != nil:
				t.Fatalf("unexpected error: %v", err)
			case c.wantErr != "" && (err == nil || !strings.Contains(err.Error(), c.wantErr)):
				t.Fatalf("error %v, want one mentioning %q", err, c.wantErr)
			}
		})
	}
}
