package hyperscaler

import (
	"errors"
	"fmt"
	"os"
	"regexp"
	"slices"
	"strings"
)

// Rule is one HAP rule: for which provisionings (a plan, optionally one platform region and one
// hyperscaler region) it holds, and which pool they draw from. Upstream's grammar:
//
//	PLAN[(IN=VAL[,IN=VAL])][->OUT[,OUT...]]
//
// with inputs PR=<platform region> and HR=<hyperscaler region> (each at most once, literal values)
// and outputs PR and HR (append _<platform region> and _<hyperscaler region> to the
// hyperscalerType, PR first), S (the shared pool) and EU (euAccess accounts), each at most once.
// Whitespace is ignored.
type Rule struct {
	// Number is the rule's 1-based place in the configured list; Text what was configured.
	Number int
	Text   string

	Plan              string
	PlatformRegion    string // "" when the rule has no PR input
	HyperscalerRegion string // "" when the rule has no HR input

	AppendPlatformRegion, AppendHyperscalerRegion, Shared, EUAccess bool
}

var (
	ruleSyntax  = regexp.MustCompile(`^([a-z0-9][a-z0-9_-]*)(?:\(([^()]*)\))?(?:->(.*))?$`)
	valueSyntax = regexp.MustCompile(`^[a-z0-9][a-z0-9._-]*$`)
)

// ParseRule reads one rule; number is its place in the list, for error messages.
func ParseRule(number int, text string) (Rule, error) {
	r := Rule{Number: number, Text: strings.TrimSpace(text)}
	compact := strings.Join(strings.Fields(text), "")
	if compact == "" {
		return r, errors.New("empty rule")
	}
	m := ruleSyntax.FindStringSubmatch(compact)
	if m == nil {
		return r, fmt.Errorf("%q is not PLAN[(PR=…,HR=…)][->OUTPUTS] (plan names are lower-case letters, digits, '-' and '_')", r.Text)
	}
	r.Plan = m[1]
	if strings.Contains(compact, "(") {
		if m[2] == "" {
			return r, fmt.Errorf("%q: empty input list: name PR=… and/or HR=…, or leave out the parentheses", r.Text)
		}
		for _, in := range strings.Split(m[2], ",") {
			key, val, ok := strings.Cut(in, "=")
			switch {
			case !ok || val == "":
				return r, fmt.Errorf("%q: input %q is not PR=<platform region> or HR=<hyperscaler region>", r.Text, in)
			case !valueSyntax.MatchString(val):
				return r, fmt.Errorf("%q: input %s has value %q: a literal region name (no wildcards)", r.Text, key, val)
			}
			switch key {
			case "PR":
				if r.PlatformRegion != "" {
					return r, fmt.Errorf("%q: input PR given twice", r.Text)
				}
				r.PlatformRegion = val
			case "HR":
				if r.HyperscalerRegion != "" {
					return r, fmt.Errorf("%q: input HR given twice", r.Text)
				}
				r.HyperscalerRegion = val
			default:
				return r, fmt.Errorf("%q: unknown input %q (PR or HR)", r.Text, key)
			}
		}
	}
	if strings.Contains(compact, "->") {
		if m[3] == "" {
			return r, fmt.Errorf("%q: no output after ->", r.Text)
		}
		for _, out := range strings.Split(m[3], ",") {
			var flag *bool
			switch out {
			case "PR":
				flag = &r.AppendPlatformRegion
			case "HR":
				flag = &r.AppendHyperscalerRegion
			case "S":
				flag = &r.Shared
			case "EU":
				flag = &r.EUAccess
			default:
				return r, fmt.Errorf("%q: unknown output %q (PR, HR, S or EU, without values)", r.Text, out)
			}
			if *flag {
				return r, fmt.Errorf("%q: output %s given twice", r.Text, out)
			}
			*flag = true
		}
	}
	return r, nil
}

// inputs is how many inputs the rule has: rules with more are more specific.
func (r Rule) inputs() int {
	n := 0
	if r.PlatformRegion != "" {
		n++
	}
	if r.HyperscalerRegion != "" {
		n++
	}
	return n
}

// key is what makes a rule unique: its plan and inputs.
func (r Rule) key() string { return r.Plan + "(" + r.PlatformRegion + "," + r.HyperscalerRegion + ")" }

// Canonical is the rule written the way upstream prints it.
func (r Rule) Canonical() string {
	var in, out []string
	if r.PlatformRegion != "" {
		in = append(in, "PR="+r.PlatformRegion)
	}
	if r.HyperscalerRegion != "" {
		in = append(in, "HR="+r.HyperscalerRegion)
	}
	for _, o := range []struct {
		on   bool
		name string
	}{{r.AppendPlatformRegion, "PR"}, {r.AppendHyperscalerRegion, "HR"}, {r.Shared, "S"}, {r.EUAccess, "EU"}} {
		if o.on {
			out = append(out, o.name)
		}
	}
	s := r.Plan
	if len(in) > 0 {
		s += "(" + strings.Join(in, ", ") + ")"
	}
	if len(out) > 0 {
		s += " -> " + strings.Join(out, ", ")
	}
	return s
}

// Pool is the pool the rule gives a provisioning on provider's accounts ("aws", "azure", "gcp",
// "openstack": HyperscalerType's answer) from platformRegion in hyperscalerRegion.
func (r Rule) Pool(provider, platformRegion, hyperscalerRegion string) Pool {
	t := provider
	if r.AppendPlatformRegion {
		t += "_" + platformRegion
	}
	if r.AppendHyperscalerRegion {
		t += "_" + hyperscalerRegion
	}
	return Pool{Type: t, EUAccess: r.EUAccess}
}

// Selector is the label selector the rule gives (upstream's form): the pool's, plus shared=true for
// a shared rule.
func (r Rule) Selector(provider, platformRegion, hyperscalerRegion string) string {
	s := r.Pool(provider, platformRegion, hyperscalerRegion).String()
	if r.Shared {
		s += "," + LabelShared + "=true"
	}
	return s
}

// Rules is a validated HAP rule set.
type Rules struct {
	rules []Rule
}

// List returns the rules in configured order.
func (rs *Rules) List() []Rule { return slices.Clone(rs.rules) }

// ErrNoRule means no rule holds for a provisioning's attributes.
var ErrNoRule = errors.New("no matching rule for provisioning attributes")

// Match returns the rule for a provisioning of plan from platformRegion in hyperscalerRegion: of
// the plan's rules whose inputs equal the request's, the most specific (both inputs, then one,
// then none; the configured order breaks ties). ErrNoRule (wrapped, naming the attributes) when
// none holds.
func (rs *Rules) Match(plan, platformRegion, hyperscalerRegion string) (Rule, error) {
	var best *Rule
	for i := range rs.rules {
		r := &rs.rules[i]
		if r.Plan != plan || (r.PlatformRegion != "" && r.PlatformRegion != platformRegion) ||
			(r.HyperscalerRegion != "" && r.HyperscalerRegion != hyperscalerRegion) {
			continue
		}
		if best == nil || r.inputs() > best.inputs() {
			best = r
		}
	}
	if best == nil {
		return Rule{}, fmt.Errorf("%w: plan %s, platform region %s, hyperscaler region %s", ErrNoRule, plan, platformRegion, hyperscalerRegion)
	}
	return *best, nil
}

// ParseRules parses and validates a rule list, reporting every problem at once: parse errors
// (with the rule's number), rules not unique by plan and inputs, a plan's PR-only and HR-only
// rules without the rule of both that settles which wins, rules of plans the catalog does not
// know, and enabled plans no rule names.
func ParseRules(texts, knownPlans, enabledPlans []string) (*Rules, error) {
	var errs []error
	rs := &Rules{}
	first := map[string]Rule{}
	for i, text := range texts {
		r, err := ParseRule(i+1, text)
		if err != nil {
			errs = append(errs, fmt.Errorf("error parsing rule %d: %w", i+1, err))
			continue
		}
		if !slices.Contains(knownPlans, r.Plan) {
			errs = append(errs, fmt.Errorf("rule %d: %s: unknown plan %q (known: %s)", r.Number, r.Text, r.Plan, strings.Join(knownPlans, ", ")))
			continue
		}
		if prev, dup := first[r.key()]; dup {
			errs = append(errs, fmt.Errorf("rule %d: %s is not unique: rule %d (%s) has the same plan and inputs", r.Number, r.Text, prev.Number, prev.Text))
			continue
		}
		first[r.key()] = r
		rs.rules = append(rs.rules, r)
	}
	// A PR-only and an HR-only rule of one plan both hold for a request naming both regions:
	// the rule of both must say which pool it draws from.
	for i, a := range rs.rules {
		for _, b := range rs.rules[i+1:] {
			pr, hr := onlyPR(a, b)
			if b.Plan != a.Plan || pr == nil {
				continue
			}
			both := Rule{Plan: a.Plan, PlatformRegion: pr.PlatformRegion, HyperscalerRegion: hr.HyperscalerRegion}
			if _, ok := first[both.key()]; !ok {
				errs = append(errs, fmt.Errorf("rules %d and %d are ambiguous: missing %s(PR=%s,HR=%s)",
					a.Number, b.Number, a.Plan, pr.PlatformRegion, hr.HyperscalerRegion))
			}
		}
	}
	for _, p := range enabledPlans {
		if !slices.ContainsFunc(rs.rules, func(r Rule) bool { return r.Plan == p }) {
			errs = append(errs, fmt.Errorf("plan %s is enabled but no rule names it", p))
		}
	}
	if len(errs) > 0 {
		return nil, fmt.Errorf("invalid HAP rules:\n%w", errors.Join(errs...))
	}
	return rs, nil
}

// onlyPR returns, of a and b, the rule with only a PR input and the one with only an HR input;
// nil, nil when they are not such a pair.
func onlyPR(a, b Rule) (pr, hr *Rule) {
	prOnly := func(r Rule) bool { return r.PlatformRegion != "" && r.HyperscalerRegion == "" }
	hrOnly := func(r Rule) bool { return r.HyperscalerRegion != "" && r.PlatformRegion == "" }
	switch {
	case prOnly(a) && hrOnly(b):
		return &a, &b
	case hrOnly(a) && prOnly(b):
		return &b, &a
	}
	return nil, nil
}

// defaultRules is keb's rule set when none is configured: the pools keb used before rules (a
// pool per provider, trial and sap-converged-cloud on shared accounts), EU-access accounts for
// every plan on the EU-access platform regions (cf-eu11 on AWS, cf-ch20 on Azure, cf-eu01 and
// cf-eu02 on SAP Cloud Infrastructure) and the KSA pool gcp_cf-sa30. Upstream's default set names
// EU pools only for aws and azure; keb keeps every runtime of an EU-access platform region on
// EU-access accounts.
var defaultRules = []string{
	"azure", "azure(PR=cf-ch20) -> EU",
	"aws", "aws(PR=cf-eu11) -> EU",
	"gcp", "gcp(PR=cf-sa30) -> PR",
	"azure_lite", "azure_lite(PR=cf-ch20) -> EU",
	"preview", "preview(PR=cf-eu11) -> EU",
	"free", "free(PR=cf-eu11) -> EU", "free(PR=cf-ch20) -> EU",
	"trial -> S", "trial(PR=cf-eu11) -> S, EU", "trial(PR=cf-ch20) -> S, EU",
	"sap-converged-cloud -> S", "sap-converged-cloud(PR=cf-eu01) -> S, EU", "sap-converged-cloud(PR=cf-eu02) -> S, EU",
	"build-runtime-aws", "build-runtime-aws(PR=cf-eu11) -> EU",
	"build-runtime-azure", "build-runtime-azure(PR=cf-ch20) -> EU",
	"build-runtime-gcp", "build-runtime-gcp(PR=cf-sa30) -> PR",
	// Upstream's default set names none for these; each draws from its provider's own pool.
	"alicloud", "build-runtime-alicloud", "gdch",
}

// DefaultRules is keb's default rule set for the plans known: the rules of other plans are left
// out, so the set is valid for any catalog.
func DefaultRules(knownPlans []string) []string {
	var out []string
	for _, text := range defaultRules {
		r, err := ParseRule(0, text)
		if err == nil && slices.Contains(knownPlans, r.Plan) {
			out = append(out, text)
		}
	}
	return out
}

// LoadRules returns the configured rule set: rules, then those of file (one a line, blank lines
// and # comments skipped); keb's default set when both are empty. It is validated with ParseRules.
func LoadRules(rules []string, file string, knownPlans, enabledPlans []string) (*Rules, error) {
	texts := slices.Clone(rules)
	if file != "" {
		b, err := os.ReadFile(file)
		if err != nil {
			return nil, fmt.Errorf("reading the HAP rule file: %w", err)
		}
		for _, line := range strings.Split(string(b), "\n") {
			if line = strings.TrimSpace(line); line != "" && !strings.HasPrefix(line, "#") {
				// Helm renders upstream's hap.rule list into the file as YAML list items.
				texts = append(texts, strings.Trim(strings.TrimSpace(strings.TrimPrefix(line, "- ")), `"'`))
			}
		}
	}
	if len(texts) == 0 {
		texts = DefaultRules(knownPlans)
	}
	return ParseRules(texts, knownPlans, enabledPlans)
}
