package catalog

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestOIDCSchemaIsUpstreamsChoice: every plan's oidc parameter is upstream's List/Object oneOf;
// the create form's list starts with the default provider, the update form's with an empty
// entry (the cockpit loads the instance's configuration), and the object form is read-only in
// create only.
func TestOIDCSchemaIsUpstreamsChoice(t *testing.T) {
	t.Parallel()
	c := defaultCatalog(t)
	for _, e := range c.plans {
		for _, form := range []struct {
			name      string
			raw       []byte
			wantEntry OIDCProvider
			readOnly  bool
		}{{"create", e.create.json, c.DefaultOIDC(), true}, {"update", e.update.json, OIDCProvider{}, false}} {
			var schema map[string]any
			if err := json.Unmarshal(form.raw, &schema); err != nil {
				t.Fatal(err)
			}
			oidc := schema["properties"].(map[string]any)["oidc"].(map[string]any)
			branches, _ := oidc["oneOf"].([]any)
			if len(branches) != 2 {
				t.Fatalf("%s %s: oidc oneOf = %v", e.plan.Name, form.name, oidc["oneOf"])
			}
			list, object := branches[0].(map[string]any), branches[1].(map[string]any)
			if list["title"] != "List" || object["title"] != "Object (not recommended)" {
				t.Errorf("%s %s: branch titles %v, %v", e.plan.Name, form.name, list["title"], object["title"])
			}
			listProp := list["properties"].(map[string]any)["list"].(map[string]any)
			def, _ := json.Marshal(listProp["default"])
			want, _ := json.Marshal([]any{form.wantEntry.formEntry()})
			if string(def) != string(want) {
				t.Errorf("%s %s: list default %s, want %s", e.plan.Name, form.name, def, want)
			}
			items := listProp["items"].(map[string]any)
			if got := asStrings(items["_controlsOrder"]); !slices.Equal(got, oidcFieldOrder) {
				t.Errorf("%s %s: list item order %v", e.plan.Name, form.name, got)
			}
			for name, p := range object["properties"].(map[string]any) {
				if p.(map[string]any)["readOnly"] != form.readOnly {
					t.Errorf("%s %s: object field %s readOnly = %v, want %v", e.plan.Name, form.name, name, p.(map[string]any)["readOnly"], form.readOnly)
				}
			}
		}
	}
}

// TestOIDCBothFormsValidate: the validator accepts the list and the object form, in create and
// update, and the create form's default list as the cockpit would submit it.
func TestOIDCBothFormsValidate(t *testing.T) {
	t.Parallel()
	c := defaultCatalog(t)
	def, _ := json.Marshal(map[string]any{"list": []any{c.DefaultOIDC().formEntry()}})
	cases := []struct {
		name, oidc string
		wantList   bool
	}{
		{"the form's default list", string(def), true},
		{"two listed providers", `{"list":[{"clientID":"a","issuerURL":"https://a.example.com","signingAlgs":["RS256"]},` +
			`{"clientID":"b","issuerURL":"https://b.example.com","signingAlgs":["ES256"],"groupsClaim":"groups"}]}`, true},
		{"an empty list", `{"list":[]}`, true},
		{"the legacy object", `{"clientID":"c","issuerURL":"https://i.example.com","groupsClaim":"groups","signingAlgs":["RS256"],` +
			`"usernameClaim":"sub","usernamePrefix":"-","groupsPrefix":"-","requiredClaims":["aud=x"]}`, false},
	}
	for _, tc := range cases {
		for _, planID := range []string{AWSPlanID, TrialPlanID, FreePlanID} {
			p, err := c.ValidateParameters(planID, "cf-eu10", json.RawMessage(`{"name":"n","oidc":`+tc.oidc+`}`))
			if err != nil {
				t.Errorf("%s, create on %s: %v", tc.name, planID, err)
				continue
			}
			if _, _, listForm := p.OIDC.Providers(); listForm != tc.wantList {
				t.Errorf("%s, create on %s: list form %v", tc.name, planID, listForm)
			}
		}
		if _, err := c.ValidateUpdate(UpdateRequest{FromPlanID: AWSPlanID, PlatformRegion: "cf-eu10", ProviderRegion: "eu-central-1",
			Stored: ProvisioningParameters{Name: "n"}, Raw: json.RawMessage(`{"oidc":` + tc.oidc + `}`)}); err != nil {
			t.Errorf("%s, update: %v", tc.name, err)
		}
	}
}

// TestEmptyOIDCObjectIsTheDefault: upstream accepts oidc {} (its schema's List branch does not
// require list) and takes it for no OIDC parameter at all: the default provider on create, no
// change on update. keb accepts it too and names no provider for it; a legacy object with some
// field but no clientID or issuerURL is still refused.
func TestEmptyOIDCObjectIsTheDefault(t *testing.T) {
	t.Parallel()
	c := defaultCatalog(t)
	for _, planID := range []string{AWSPlanID, TrialPlanID, FreePlanID} {
		p, err := c.ValidateParameters(planID, "cf-eu10", json.RawMessage(`{"name":"n","oidc":{}}`))
		if err != nil {
			t.Fatalf("oidc {} on %s: %v", planID, err)
		}
		if legacy, list, listForm := p.OIDC.Providers(); legacy != nil || list != nil || listForm {
			t.Errorf("oidc {} on %s names providers: %v %v %v", planID, legacy, list, listForm)
		}
	}
	up, err := c.ValidateUpdate(UpdateRequest{FromPlanID: AWSPlanID, PlatformRegion: "cf-eu10", ProviderRegion: "eu-central-1",
		Stored: ProvisioningParameters{Name: "n"}, Raw: json.RawMessage(`{"oidc":{}}`)})
	if err != nil {
		t.Fatalf("update with oidc {}: %v", err)
	}
	if legacy, list, listForm := up.OIDC.Providers(); legacy != nil || list != nil || listForm {
		t.Errorf("update with oidc {} names providers: %v %v %v", legacy, list, listForm)
	}
	_, err = c.ValidateParameters(AWSPlanID, "cf-eu10", json.RawMessage(`{"name":"n","oidc":{"groupsClaim":"g"}}`))
	if err == nil || !strings.Contains(err.Error(), "oidc.clientID") || !strings.Contains(err.Error(), "oidc.issuerURL") {
		t.Errorf("a legacy object without clientID and issuerURL: %v", err)
	}
}

// TestPoolLabelsUseTheKeyValueEditor: a pool's labels and annotations are edited in the
// cockpit's key-value editor, in create and update, as upstream's form has them.
func TestPoolLabelsUseTheKeyValueEditor(t *testing.T) {
	t.Parallel()
	c := defaultCatalog(t)
	for _, e := range c.plans {
		if !e.plan.AdditionalPools() {
			continue
		}
		for form, raw := range map[string][]byte{"create": e.create.json, "update": e.update.json} {
			var schema map[string]any
			if err := json.Unmarshal(raw, &schema); err != nil {
				t.Fatal(err)
			}
			pools := schema["properties"].(map[string]any)["additionalWorkerNodePools"].(map[string]any)
			item := pools["items"].(map[string]any)["properties"].(map[string]any)
			for _, k := range []string{"labels", "annotations"} {
				if ct := item[k].(map[string]any)["_controlType"]; ct != "keyvalue" {
					t.Errorf("%s %s: pool %s _controlType = %v", e.plan.Name, form, k, ct)
				}
			}
		}
	}
}

// TestFormOffersTheConfiguredDefaultOIDC: the create form's OIDC list starts with the provider
// keb writes into runtimes (APP_BROKER_OIDC_DEFAULT_FILE), not a second copy of upstream's.
func TestFormOffersTheConfiguredDefaultOIDC(t *testing.T) {
	t.Parallel()
	file := filepath.Join(t.TempDir(), "oidc.yaml")
	if err := os.WriteFile(file, []byte("clientID: my-client\nissuerURL: https://id.example.com\nsigningAlgs: [RS256]\n"+
		"groupsClaim: groups\nusernameClaim: email\nusernamePrefix: \"-\"\ngroupsPrefix: \"-\"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	c, err := Load("", DefaultOIDCFile(file))
	if err != nil {
		t.Fatal(err)
	}
	if c.DefaultOIDC().ClientID != "my-client" {
		t.Fatalf("default OIDC %+v", c.DefaultOIDC())
	}
	for _, e := range c.plans {
		if !strings.Contains(string(e.create.json), `"my-client"`) || strings.Contains(string(e.create.json), "9bd05ed7-a930-44e6-8c79-e6defeb7dec9") {
			t.Errorf("%s: the create form does not offer the configured default OIDC provider", e.plan.Name)
		}
	}
}
