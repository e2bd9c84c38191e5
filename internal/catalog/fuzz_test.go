package catalog

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"
)

// caseVariantIn reports a key of obj that differs from one of known only in
// letter case.
func caseVariantIn(obj map[string]json.RawMessage, known []string) string {
	for k := range obj {
		for _, want := range known {
			if k != want && strings.EqualFold(k, want) {
				return k
			}
		}
	}
	return ""
}

// checkAcceptedContext holds what an accepted context guarantees: within
// the size limit, keys exactly as keb reads them, and credentials, when
// sent, complete.
func checkAcceptedContext(t *testing.T, raw []byte, creds *SMOperatorCredentials) {
	t.Helper()
	if len(raw) > MaxContextSize {
		t.Fatalf("accepted a %d-byte context", len(raw))
	}
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(raw, &obj); err == nil {
		if k := caseVariantIn(obj, contextKeys); k != "" {
			t.Fatalf("accepted case variant %q", k)
		}
		var c map[string]json.RawMessage
		if json.Unmarshal(obj["sm_operator_credentials"], &c) == nil {
			if k := caseVariantIn(c, credentialKeys); k != "" {
				t.Fatalf("accepted credentials case variant %q", k)
			}
		}
	}
	if creds != nil && (creds.ClientID == "" || creds.ClientSecret == "" || creds.SMURL == "" || creds.URL == "") {
		t.Fatalf("accepted incomplete credentials %v", creds)
	}
}

// FuzzValidateContext: a PUT's context.
func FuzzValidateContext(f *testing.F) {
	f.Add([]byte(`{"globalaccount_id":"ga","subaccount_id":"sa","user_id":"u"}`))
	f.Fuzz(func(t *testing.T, raw []byte) {
		ctx, err := ValidateContext(raw)
		if err != nil {
			return
		}
		if ctx.GlobalAccountID == "" || ctx.SubAccountID == "" || ctx.UserID == "" {
			t.Fatalf("accepted a context without its required fields: %+v", ctx)
		}
		checkAcceptedContext(t, raw, ctx.SMOperatorCredentials)
	})
}

// FuzzValidateUpdateContext: a PATCH's context.
func FuzzValidateUpdateContext(f *testing.F) {
	f.Add([]byte(`{"active":false}`))
	f.Fuzz(func(t *testing.T, raw []byte) {
		ctx, err := ValidateUpdateContext(raw)
		if err != nil {
			return
		}
		checkAcceptedContext(t, raw, ctx.SMOperatorCredentials)
	})
}

// FuzzValidateParameters: a PUT's parameters for each plan and a few
// platform regions. Accepted parameters always resolve.
func FuzzValidateParameters(f *testing.F) {
	cat, err := Load("")
	if err != nil {
		f.Fatal(err)
	}
	var planIDs []string
	for id := range cat.plans {
		planIDs = append(planIDs, id)
	}
	slices.Sort(planIDs)
	regions := []string{"cf-eu10", "cf-eu20", "cf-us30", "cf-eu01", "mars"}
	f.Add(uint8(0), uint8(0), []byte(`{"name":"c1"}`))
	f.Fuzz(func(t *testing.T, plan, region uint8, raw []byte) {
		planID := planIDs[int(plan)%len(planIDs)]
		r := regions[int(region)%len(regions)]
		params, err := cat.ValidateParameters(planID, r, raw)
		if err != nil {
			return
		}
		if len(raw) > MaxParametersSize {
			t.Fatalf("accepted %d bytes of parameters", len(raw))
		}
		if _, err := cat.Resolve(planID, r, params); err != nil {
			t.Fatalf("accepted parameters do not resolve: %v (%s)", err, raw)
		}
	})
}
