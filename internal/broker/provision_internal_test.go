package broker

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/kyma-keb/keb/internal/storage"
)

func TestNormalizedParameters(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		raw  json.RawMessage
		want string
	}{
		{name: "absent", raw: nil, want: `{}`},
		{name: "empty", raw: json.RawMessage(``), want: `{}`},
		{name: "whitespace", raw: json.RawMessage(" \n\t "), want: `{}`},
		{name: "null", raw: json.RawMessage(`null`), want: `{}`},
		{name: "null with whitespace", raw: json.RawMessage(" null\n"), want: `{}`},
		{name: "empty object", raw: json.RawMessage(`{}`), want: `{}`},
		{name: "compacted", raw: json.RawMessage("{ \"name\" : \"c1\",\n  \"region\":\"eastus\" }"), want: `{"name":"c1","region":"eastus"}`},
		{name: "key order kept", raw: json.RawMessage(`{"b":1, "a":2}`), want: `{"b":1,"a":2}`},
		{name: "nested", raw: json.RawMessage(`{"oidc": {"clientID" : "x", "groupsClaim": "g"}}`), want: `{"oidc":{"clientID":"x","groupsClaim":"g"}}`},
		{name: "strings keep their spaces", raw: json.RawMessage(`{"name": "a  b"}`), want: `{"name":"a  b"}`},
		{name: "invalid JSON left alone", raw: json.RawMessage(`{"name":`), want: `{"name":`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			if got := string(normalizedParameters(tc.raw)); got != tc.want {
				t.Errorf("normalizedParameters(%q) = %s, want %s", tc.raw, got, tc.want)
			}
		})
	}
}

func TestDifferences(t *testing.T) {
	t.Parallel()
	base := func() storage.Instance {
		return storage.Instance{
			InstanceID: "inst-1", ServiceID: "svc", PlanID: "plan", GlobalAccountID: "ga", SubAccountID: "sa",
			PlatformRegion: "cf-eu10", Parameters: json.RawMessage(`{"name":"c1","region":"eastus","oidc":{"a":1,"b":[1,2]}}`),
		}
	}
	params := func(raw string) func(i *storage.Instance) {
		return func(i *storage.Instance) {
			if raw == "<absent>" {
				i.Parameters = nil
			} else {
				i.Parameters = json.RawMessage(raw)
			}
		}
	}
	tests := []struct {
		name     string
		haveEdit func(i *storage.Instance)
		wantEdit func(i *storage.Instance)
		want     string
	}{
		{name: "identical", want: ""},
		{name: "parameter key order", wantEdit: params(`{"oidc":{"b":[1,2],"a":1},"region":"eastus","name":"c1"}`), want: ""},
		{name: "parameter whitespace", wantEdit: params("{\n \"name\" : \"c1\",\t\"region\": \"eastus\", \"oidc\": {\"a\": 1, \"b\": [1, 2]}\n}"), want: ""},
		{name: "equal numbers written differently", haveEdit: params(`{"n":1}`), wantEdit: params(`{"n":1.0}`), want: ""},
		{name: "absent stored, absent sent", haveEdit: params("<absent>"), wantEdit: params("<absent>"), want: ""},
		{name: "absent equals empty object", haveEdit: params(`{}`), wantEdit: params("<absent>"), want: ""},
		{name: "null equals empty object", haveEdit: params(`{}`), wantEdit: params(`null`), want: ""},
		{name: "absent equals null", haveEdit: params("<absent>"), wantEdit: params(`null`), want: ""},
		{name: "parameter value differs", wantEdit: params(`{"name":"c2","region":"eastus","oidc":{"a":1,"b":[1,2]}}`), want: "parameters differ"},
		{name: "parameter added", wantEdit: params(`{"name":"c1","region":"eastus","oidc":{"a":1,"b":[1,2]},"zonesCount":1}`), want: "parameters differ"},
		{name: "parameter removed", wantEdit: params(`{"name":"c1"}`), want: "parameters differ"},
		{name: "array order matters", wantEdit: params(`{"name":"c1","region":"eastus","oidc":{"a":1,"b":[2,1]}}`), want: "parameters differ"},
		{name: "type differs", wantEdit: params(`{"name":"c1","region":"eastus","oidc":{"a":"1","b":[1,2]}}`), want: "parameters differ"},
		{name: "empty versus set", haveEdit: params(`{}`), want: "parameters differ"},
		{name: "invalid JSON never equal", haveEdit: params(`{"name":`), wantEdit: params(`{"name":`), want: "parameters differ"},
		{name: "service", wantEdit: func(i *storage.Instance) { i.ServiceID = "other" }, want: "service_id differ"},
		{name: "plan", wantEdit: func(i *storage.Instance) { i.PlanID = "other" }, want: "plan_id differ"},
		{name: "global account", wantEdit: func(i *storage.Instance) { i.GlobalAccountID = "other" }, want: "context.globalaccount_id differ"},
		{name: "subaccount", wantEdit: func(i *storage.Instance) { i.SubAccountID = "other" }, want: "context.subaccount_id differ"},
		{name: "platform region", wantEdit: func(i *storage.Instance) { i.PlatformRegion = "cf-us10" }, want: "platform region differ"},
		{
			name: "everything",
			wantEdit: func(i *storage.Instance) {
				i.ServiceID, i.PlanID, i.Parameters, i.GlobalAccountID, i.SubAccountID, i.PlatformRegion = "s", "p", nil, "g", "a", "r"
			},
			want: "service_id, plan_id, parameters, context.globalaccount_id, context.subaccount_id, platform region differ",
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			have, want := base(), base()
			if tc.haveEdit != nil {
				tc.haveEdit(&have)
			}
			if tc.wantEdit != nil {
				tc.wantEdit(&want)
			}
			if got := differences(have, want); got != tc.want {
				t.Errorf("differences = %q, want %q", got, tc.want)
			}
			if got := differences(want, have); got != tc.want {
				t.Errorf("differences is not symmetric: reversed = %q, want %q", got, tc.want)
			}
		})
	}
}

func TestContextWithoutCredentials(t *testing.T) {
	t.Parallel()
	const secret = "the-client-secret"
	creds := `"sm_operator_credentials":{"clientid":"cid","clientsecret":"` + secret + `","sm_url":"https://sm","url":"https://uaa"}`
	tests := []struct {
		name    string
		raw     string
		want    map[string]any
		wantErr bool
	}{
		{name: "absent", raw: "", want: map[string]any{}},
		{name: "whitespace", raw: " \n ", want: map[string]any{}},
		{name: "empty object", raw: `{}`, want: map[string]any{}},
		{
			name: "credentials stripped, everything else kept",
			raw: `{"platform":"cf","globalaccount_id":"ga","subaccount_id":"sa","user_id":"User@X",` + creds +
				`,"license_type":"CUSTOMER","active":true,"x-vendor":{"deep":[1,"two",null]}}`,
			want: map[string]any{"platform": "cf", "globalaccount_id": "ga", "subaccount_id": "sa", "user_id": "User@X",
				"license_type": "CUSTOMER", "active": true, "x-vendor": map[string]any{"deep": []any{1.0, "two", nil}}},
		},
		{name: "only credentials", raw: `{` + creds + `}`, want: map[string]any{}},
		{name: "no credentials", raw: `{"globalaccount_id":"ga"}`, want: map[string]any{"globalaccount_id": "ga"}},
		{name: "null credentials", raw: `{"globalaccount_id":"ga","sm_operator_credentials":null}`, want: map[string]any{"globalaccount_id": "ga"}},
		{name: "no credentials, spaced", raw: " {\n \"globalaccount_id\" : \"ga\" } ", want: map[string]any{"globalaccount_id": "ga"}},
		{
			// The same key in escapes must not pass as an unknown field.
			name: "credentials under an escaped key",
			raw:  `{"globalaccount_id":"ga",` + strings.Replace(creds, "sm_operator", `sm\u005foperator`, 1) + `}`,
			want: map[string]any{"globalaccount_id": "ga"},
		},
		{name: "array", raw: `[1,2]`, wantErr: true},
		{name: "string", raw: `"ctx"`, wantErr: true},
		{name: "invalid JSON", raw: `{"globalaccount_id":`, wantErr: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			out, err := contextWithoutCredentials(json.RawMessage(tc.raw))
			if tc.wantErr {
				if err == nil {
					t.Fatalf("contextWithoutCredentials(%s) = %s, want an error", tc.raw, out)
				}
				if !strings.Contains(err.Error(), "context") {
					t.Errorf("error %q does not say it is about the context", err)
				}
				return
			}
			if err != nil {
				t.Fatalf("contextWithoutCredentials: %v", err)
			}
			if strings.Contains(string(out), secret) || strings.Contains(string(out), "sm_operator_credentials") {
				t.Errorf("credentials survived: %s", out)
			}
			var got map[string]any
			if err := json.Unmarshal(out, &got); err != nil {
				t.Fatalf("output %s is not a JSON object: %v", out, err)
			}
			if got == nil {
				got = map[string]any{}
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("got %v, want %v", got, tc.want)
			}
		})
	}
}
