package hyperscaler

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

var testPlans = []string{"aws", "azure", "gcp", "azure_lite", "trial", "free", "preview", "sap-converged-cloud"}

// Every example of upstream's rule documentation gives the selector upstream gives.
func TestRuleExamplesGiveUpstreamsSelectors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		rule               string
		provider, pr, hr   string
		wantSelector       string
		wantType           string
		wantShared, wantEU bool
		wantCanonical      string
	}{
		{"aws(PR=cf-eu11) -> EU", "aws", "cf-eu11", "eu-central-1",
			"hyperscalerType=aws,euAccess=true", "aws", false, true, "aws(PR=cf-eu11) -> EU"},
		{"gcp(PR=cf-sa30) -> PR", "gcp", "cf-sa30", "me-central2",
			"hyperscalerType=gcp_cf-sa30,!euAccess", "gcp_cf-sa30", false, false, "gcp(PR=cf-sa30) -> PR"},
		{"azure(PR=cf-ch20) -> EU, PR", "azure", "cf-ch20", "switzerlandnorth",
			"hyperscalerType=azure_cf-ch20,euAccess=true", "azure_cf-ch20", false, true, "azure(PR=cf-ch20) -> PR, EU"},
		{"aws(PR=cf-eu11, HR=westeu) -> EU, S, PR, HR", "aws", "cf-eu11", "westeu",
			"hyperscalerType=aws_cf-eu11_westeu,euAccess=true,shared=true", "aws_cf-eu11_westeu", true, true,
			"aws(PR=cf-eu11, HR=westeu) -> PR, HR, S, EU"},
		// Upstream's default set.
		{"aws", "aws", "cf-eu10", "eu-central-1", "hyperscalerType=aws,!euAccess", "aws", false, false, "aws"},
		{"trial -> S", "azure", "cf-eu10", "westeurope", "hyperscalerType=azure,!euAccess,shared=true", "azure", true, false, "trial -> S"},
		{"sap-converged-cloud -> HR, S", "openstack", "cf-eu20", "eu-de-1",
			"hyperscalerType=openstack_eu-de-1,!euAccess,shared=true", "openstack_eu-de-1", true, false, "sap-converged-cloud -> HR, S"},
		// Whitespace is ignored.
		{" gcp ( PR = cf-sa30 )->  PR ", "gcp", "cf-sa30", "me-central2", "hyperscalerType=gcp_cf-sa30,!euAccess", "gcp_cf-sa30", false, false, "gcp(PR=cf-sa30) -> PR"},
	}
	for _, tt := range tests {
		r, err := ParseRule(1, tt.rule)
		if err != nil {
			t.Errorf("%s: %v", tt.rule, err)
			continue
		}
		if got := r.Selector(tt.provider, tt.pr, tt.hr); got != tt.wantSelector {
			t.Errorf("%s: selector %q, want %q", tt.rule, got, tt.wantSelector)
		}
		if p := r.Pool(tt.provider, tt.pr, tt.hr); p.Type != tt.wantType || p.EUAccess != tt.wantEU || r.Shared != tt.wantShared {
			t.Errorf("%s: pool %+v shared %v", tt.rule, p, r.Shared)
		}
		if got := r.Canonical(); got != tt.wantCanonical {
			t.Errorf("%s: canonical %q, want %q", tt.rule, got, tt.wantCanonical)
		}
	}
}

// The most specific rule wins: both inputs, then one, then none; order breaks ties.
func TestRuleMatching(t *testing.T) {
	t.Parallel()
	rs, err := ParseRules([]string{
		"aws", "aws(PR=cf-eu11) -> EU", "aws(HR=us-east-1) -> S", "aws(PR=cf-eu11,HR=us-east-1) -> EU, S, HR", "azure",
	}, testPlans, []string{"aws", "azure"})
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct{ plan, pr, hr, want string }{
		{"aws", "cf-eu10", "eu-central-1", "aws"},
		{"aws", "cf-eu11", "eu-central-1", "aws(PR=cf-eu11) -> EU"},
		{"aws", "cf-eu10", "us-east-1", "aws(HR=us-east-1) -> S"},
		{"aws", "cf-eu11", "us-east-1", "aws(PR=cf-eu11, HR=us-east-1) -> HR, S, EU"},
		{"azure", "cf-eu11", "westeurope", "azure"},
	} {
		r, err := rs.Match(tt.plan, tt.pr, tt.hr)
		if err != nil || r.Canonical() != tt.want {
			t.Errorf("%s from %s in %s: %s, %v; want %s", tt.plan, tt.pr, tt.hr, r.Canonical(), err, tt.want)
		}
	}
	_, err = rs.Match("gcp", "cf-eu10", "europe-west3")
	if !errors.Is(err, ErrNoRule) || !strings.Contains(err.Error(), "plan gcp, platform region cf-eu10, hyperscaler region europe-west3") {
		t.Errorf("no rule for gcp: %v", err)
	}
}

// Start-up validation refuses every kind of bad rule set, naming every problem at once.
func TestRuleValidation(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		rules   []string
		enabled []string
		want    []string // every one in the error
	}{
		{"parse errors with the rule number", []string{"aws", "aws(PR=)", "azure -> X", "gcp(PR=a,PR=b)", "azure(XX=1)", "aws(PR=cf-*)", "trial ->", "free -> S, S"},
			nil, []string{
				"error parsing rule 2:", "error parsing rule 3: \"azure -> X\": unknown output \"X\"", "error parsing rule 4:", "input PR given twice",
				"error parsing rule 5:", "unknown input \"XX\"", "error parsing rule 6:", "no wildcards", "error parsing rule 7:", "no output after ->",
				"error parsing rule 8:", "output S given twice",
			}},
		{"duplicates by plan and inputs, outputs ignored", []string{"aws", "aws(PR=cf-eu11) -> EU", "aws(PR=cf-eu11) -> S"}, nil,
			[]string{"rule 3: aws(PR=cf-eu11) -> S is not unique: rule 2"}},
		{"ambiguous PR-only and HR-only", []string{"aws", "aws(PR=cf-eu11) -> EU", "aws(HR=us-east-1) -> S"}, nil,
			[]string{"rules 2 and 3 are ambiguous: missing aws(PR=cf-eu11,HR=us-east-1)"}},
		{"ambiguity in either order", []string{"aws(HR=us-east-1)", "aws(PR=cf-eu11)"}, nil,
			[]string{"rules 1 and 2 are ambiguous: missing aws(PR=cf-eu11,HR=us-east-1)"}},
		{"unknown plans", []string{"aws", "kyma-lite"}, nil, []string{"rule 2: kyma-lite: unknown plan \"kyma-lite\""}},
		{"enabled plans without a rule", []string{"aws"}, []string{"aws", "azure", "trial"},
			[]string{"plan azure is enabled but no rule names it", "plan trial is enabled but no rule names it"}},
	}
	for _, tt := range tests {
		_, err := ParseRules(tt.rules, testPlans, tt.enabled)
		if err == nil {
			t.Errorf("%s: accepted", tt.name)
			continue
		}
		for _, w := range tt.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%s: error does not say %q:\n%v", tt.name, w, err)
			}
		}
	}
	// Unambiguous once the rule of both is there.
	if _, err := ParseRules([]string{"aws(PR=cf-eu11)", "aws(HR=us-east-1)", "aws(PR=cf-eu11,HR=us-east-1)"}, testPlans, nil); err != nil {
		t.Errorf("with the rule of both: %v", err)
	}
}

// keb's default set is valid for every catalog and gives today's pools plus EU access and KSA.
func TestDefaultRules(t *testing.T) {
	t.Parallel()
	rs, err := LoadRules(nil, "", testPlans, testPlans)
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct{ plan, provider, pr, hr, want string }{
		{"azure", "azure", "cf-eu20", "westeurope", "hyperscalerType=azure,!euAccess"},
		{"azure", "azure", "cf-ch20", "switzerlandnorth", "hyperscalerType=azure,euAccess=true"},
		{"aws", "aws", "cf-eu11", "eu-central-1", "hyperscalerType=aws,euAccess=true"},
		{"free", "aws", "cf-eu11", "eu-central-1", "hyperscalerType=aws,euAccess=true"},
		{"trial", "azure", "cf-eu10", "westeurope", "hyperscalerType=azure,!euAccess,shared=true"},
		{"trial", "aws", "cf-eu11", "eu-central-1", "hyperscalerType=aws,euAccess=true,shared=true"},
		{"sap-converged-cloud", "openstack", "cf-eu01", "eu-de-2", "hyperscalerType=openstack,euAccess=true,shared=true"},
		{"sap-converged-cloud", "openstack", "cf-eu20", "eu-de-1", "hyperscalerType=openstack,!euAccess,shared=true"},
		{"gcp", "gcp", "cf-sa30", "me-central2", "hyperscalerType=gcp_cf-sa30,!euAccess"},
	} {
		r, err := rs.Match(tt.plan, tt.pr, tt.hr)
		if err != nil {
			t.Errorf("%s from %s: %v", tt.plan, tt.pr, err)
		} else if got := r.Selector(tt.provider, tt.pr, tt.hr); got != tt.want {
			t.Errorf("%s from %s: %s, want %s", tt.plan, tt.pr, got, tt.want)
		}
	}
	// Plans the catalog does not have are left out, not refused.
	if rules := DefaultRules([]string{"aws"}); !slices.Equal(rules, []string{"aws", "aws(PR=cf-eu11) -> EU"}) {
		t.Errorf("default rules for a catalog of aws alone: %v", rules)
	}
}

// Rules come from the setting and from a file (Helm's list rendered as YAML items, comments).
func TestLoadRulesFromAFile(t *testing.T) {
	t.Parallel()
	file := filepath.Join(t.TempDir(), "rules.yaml")
	if err := os.WriteFile(file, []byte("# pools\n- aws\n- \"aws(PR=cf-eu11) -> EU\"\n\nazure\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	rs, err := LoadRules([]string{"gcp"}, file, testPlans, []string{"aws", "azure", "gcp"})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, r := range rs.List() {
		got = append(got, r.Canonical())
	}
	if want := []string{"gcp", "aws", "aws(PR=cf-eu11) -> EU", "azure"}; !slices.Equal(got, want) {
		t.Errorf("rules %v, want %v", got, want)
	}
	if _, err := LoadRules(nil, filepath.Join(t.TempDir(), "missing"), testPlans, nil); err == nil {
		t.Error("a missing rule file was accepted")
	}
}

// The rule parser takes operators' text: it never panics, and what it accepts it prints back in a
// form it reads as the same rule.
func FuzzParseRule(f *testing.F) {
	for _, seed := range append(DefaultRules(testPlans), "aws(PR=cf-eu11, HR=westeu) -> EU, S, PR, HR", "aws(", "->", "a(PR=x,HR=y,PR=z)", "") {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, text string) {
		r, err := ParseRule(1, text)
		if err != nil {
			return
		}
		again, err := ParseRule(1, r.Canonical())
		if err != nil {
			t.Fatalf("%q parsed, its canonical form %q does not: %v", text, r.Canonical(), err)
		}
		again.Text, r.Text = "", ""
		if again != r {
			t.Fatalf("%q: %+v, canonical %q: %+v", text, r, r.Canonical(), again)
		}
	})
}
