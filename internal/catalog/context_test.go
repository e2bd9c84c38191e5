package catalog

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
)

func TestValidateContext(t *testing.T) {
	t.Parallel()

	const full = `{"globalaccount_id":"ga","subaccount_id":"sa","user_id":"John.Doe@Example.com","platform":"cloudfoundry",
		"license_type":"SAPDEV","active":true,"organization_guid":"extra fields are fine",
		"sm_operator_credentials":{"clientid":"cid","clientsecret":"secret","sm_url":"https://sm","url":"https://token","xsappname":"app"}}`

	tests := []struct {
		name       string
		raw        string
		wantFields []string
		check      func(t *testing.T, ctx ProvisioningContext)
	}{
		{name: "full context", raw: full, check: func(t *testing.T, ctx ProvisioningContext) {
			if ctx.GlobalAccountID != "ga" || ctx.SubAccountID != "sa" || ctx.Platform != "cloudfoundry" || ctx.LicenseType != "SAPDEV" || ctx.Active == nil || !*ctx.Active {
				t.Errorf("context = %+v", ctx)
			}
			if ctx.UserID != "john.doe@example.com" {
				t.Errorf("user_id = %q, want it lower-cased", ctx.UserID)
			}
			want := SMOperatorCredentials{ClientID: "cid", ClientSecret: "secret", SMURL: "https://sm", URL: "https://token", XSAppName: "app"}
			if ctx.SMOperatorCredentials == nil || *ctx.SMOperatorCredentials != want {
				t.Errorf("credentials = %+v", ctx.SMOperatorCredentials)
			}
		}},
		{name: "required only", raw: `{"globalaccount_id":"ga","subaccount_id":"sa","user_id":"u"}`, check: func(t *testing.T, ctx ProvisioningContext) {
			if ctx.SMOperatorCredentials != nil || ctx.Active != nil {
				t.Errorf("context = %+v", ctx)
			}
		}},
		{name: "missing globalaccount_id", raw: `{"subaccount_id":"sa","user_id":"u"}`, wantFields: []string{"globalaccount_id"}},
		{name: "missing subaccount_id", raw: `{"globalaccount_id":"ga","user_id":"u"}`, wantFields: []string{"subaccount_id"}},
		{name: "missing user_id", raw: `{"globalaccount_id":"ga","subaccount_id":"sa"}`, wantFields: []string{"user_id"}},
		{name: "empty user_id", raw: `{"globalaccount_id":"ga","subaccount_id":"sa","user_id":""}`, wantFields: []string{"user_id"}},
		{name: "nil context", raw: "", wantFields: []string{"globalaccount_id", "subaccount_id", "user_id"}},
		{name: "wrong type", raw: `{"globalaccount_id":1,"subaccount_id":"sa","user_id":"u"}`, wantFields: []string{"globalaccount_id"}},
		{name: "active not boolean", raw: `{"globalaccount_id":"ga","subaccount_id":"sa","user_id":"u","active":"yes"}`, wantFields: []string{"active"}},
		{name: "credentials with empty clientsecret", raw: `{"globalaccount_id":"ga","subaccount_id":"sa","user_id":"u",
			"sm_operator_credentials":{"clientid":"cid","clientsecret":"","sm_url":"https://sm","url":"https://token"}}`,
			wantFields: []string{"sm_operator_credentials.clientsecret"}},
		{name: "credentials missing url", raw: `{"globalaccount_id":"ga","subaccount_id":"sa","user_id":"u",
			"sm_operator_credentials":{"clientid":"cid","clientsecret":"s","sm_url":"https://sm"}}`,
			wantFields: []string{"sm_operator_credentials.url"}},
		{name: "credentials without xsappname", raw: `{"globalaccount_id":"ga","subaccount_id":"sa","user_id":"u",
			"sm_operator_credentials":{"clientid":"cid","clientsecret":"s","sm_url":"https://sm","url":"https://token"}}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var raw json.RawMessage
			if tt.raw != "" {
				raw = json.RawMessage(tt.raw)
			}
			ctx, err := ValidateContext(raw)
			if tt.wantFields == nil {
				if err != nil {
					t.Fatalf("unexpected error: %v", err)
				}
				if tt.check != nil {
					tt.check(t, ctx)
				}
				return
			}
			var verr *ValidationError
			if !errors.As(err, &verr) {
				t.Fatalf("err = %v, want *ValidationError", err)
			}
			if got := verr.Fields(); !slices.Equal(got, tt.wantFields) {
				t.Errorf("fields = %q, want %q (error: %v)", got, tt.wantFields, err)
			}
			if !strings.HasPrefix(err.Error(), "invalid context: ") {
				t.Errorf("error = %q", err)
			}
			for _, f := range tt.wantFields {
				if !strings.Contains(err.Error(), f) {
					t.Errorf("error %q does not name %s", err, f)
				}
			}
		})
	}
}

func TestSMOperatorCredentialsHideSecret(t *testing.T) {
	t.Parallel()
	c := SMOperatorCredentials{ClientID: "cid", ClientSecret: "top-secret"}
	for _, format := range []string{"%v", "%+v", "%s", "%#v"} {
		if s := fmt.Sprintf(format, c); strings.Contains(s, "top-secret") {
			t.Errorf("%s prints the secret: %s", format, s)
		}
	}
}
