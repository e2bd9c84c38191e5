// Package guardrails holds what an operator uses to stop operations for a
// fleet during an incident or by policy: the operation blocklist (upstream
// KEB's file format) and the allowed global accounts.
package guardrails

import (
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"

	"sigs.k8s.io/yaml"
)

// Operation is what a blocklist rule applies to: a key of the file.
type Operation string

// Operations a blocklist blocks.
const (
	Provision   Operation = "provision"
	Update      Operation = "update"
	PlanUpgrade Operation = "planUpgrade"
	Deprovision Operation = "deprovision"
)

var operations = []Operation{Provision, Update, PlanUpgrade, Deprovision}

// Filter keys of a rule.
const (
	filterPlan          = "plan"
	filterGlobalAccount = "GA"
)

// Rule blocks an operation when every one of its filters matches (a rule
// without filters blocks them all), answering Message with {plan} and
// {globalAccount} filled in.
type Rule struct {
	Message string
	// Plans / GlobalAccounts: the operation's plan (name) or global account
	// must be one of them (key=a,b); Not*: must be none of them (key!=a,b).
	Plans, NotPlans                   []string
	GlobalAccounts, NotGlobalAccounts []string
}

func (r Rule) matches(plan, globalAccount string) bool {
	in := func(list []string, v string) bool { return slices.Contains(list, v) }
	return (r.Plans == nil || in(r.Plans, plan)) && !in(r.NotPlans, plan) &&
		(r.GlobalAccounts == nil || in(r.GlobalAccounts, globalAccount)) && !in(r.NotGlobalAccounts, globalAccount)
}

// Blocklist is a parsed blocklist file: each operation's rules in the
// file's order; the first that matches wins.
type Blocklist struct {
	rules map[Operation][]Rule
}

// Blocked reports whether op on a runtime of plan (its name) in
// globalAccount is blocked, and the message to answer with (HTTP 400).
func (b *Blocklist) Blocked(op Operation, plan, globalAccount string) (string, bool) {
	if b == nil {
		return "", false
	}
	for _, r := range b.rules[op] {
		if r.matches(plan, globalAccount) {
			return strings.NewReplacer("{plan}", plan, "{globalAccount}", globalAccount).Replace(r.Message), true
		}
	}
	return "", false
}

// Rules is how many rules the blocklist holds.
func (b *Blocklist) Rules() int {
	n := 0
	for _, rs := range b.rules {
		n += len(rs)
	}
	return n
}

// Parse reads a blocklist file: a YAML map from operation (provision,
// update, planUpgrade, deprovision) to a list of rules, each
//
//	"message with {plan} and {globalAccount}", plan=a,b, GA=x,y
//
// (filters plan and GA, with = or !=; all must match). Every mistake is an
// error naming the operation and the rule, so that keb refuses to start
// with a blocklist that would not block what its author meant.
func Parse(data []byte) (*Blocklist, error) {
	var raw map[string][]string
	if err := yaml.UnmarshalStrict(data, &raw); err != nil {
		return nil, fmt.Errorf("blocklist: not a map of operation to a list of rules: %w", err)
	}
	b := &Blocklist{rules: map[Operation][]Rule{}}
	var errs []error
	for key, rules := range raw {
		op := Operation(key)
		if !slices.Contains(operations, op) {
			errs = append(errs, fmt.Errorf("blocklist: unknown operation %q (want provision, update, planUpgrade or deprovision)", key))
			continue
		}
		for i, text := range rules {
			r, err := parseRule(text)
			if err != nil {
				errs = append(errs, fmt.Errorf("blocklist: %s rule %d (%q): %w", key, i+1, text, err))
				continue
			}
			b.rules[op] = append(b.rules[op], r)
		}
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return b, nil
}

var (
	filterRE      = regexp.MustCompile(`^([A-Za-z]+)\s*(!=|=)\s*(.*)$`)
	placeholderRE = regexp.MustCompile(`\{[^}]*\}`)
)

func parseRule(text string) (Rule, error) {
	text = strings.TrimSpace(text)
	if !strings.HasPrefix(text, `"`) {
		return Rule{}, errors.New(`the rule must start with its message in double quotes`)
	}
	end := strings.Index(text[1:], `"`)
	if end < 0 {
		return Rule{}, errors.New("the message's closing quote is missing")
	}
	r := Rule{Message: text[1 : end+1]}
	if strings.TrimSpace(r.Message) == "" {
		return Rule{}, errors.New("the message is empty")
	}
	for _, p := range placeholderRE.FindAllString(r.Message, -1) {
		if p != "{plan}" && p != "{globalAccount}" {
			return Rule{}, fmt.Errorf("unknown placeholder %s (want {plan} or {globalAccount})", p)
		}
	}
	rest := strings.TrimSpace(text[end+2:])
	if rest == "" {
		return r, nil
	}
	if !strings.HasPrefix(rest, ",") {
		return Rule{}, fmt.Errorf("expected a comma and filters after the message, got %q", rest)
	}
	var current *[]string
	seen := map[string]bool{}
	for _, tok := range strings.Split(rest[1:], ",") {
		tok = strings.TrimSpace(tok)
		if m := filterRE.FindStringSubmatch(tok); m != nil {
			key := m[1] + m[2]
			if seen[m[1]] {
				return Rule{}, fmt.Errorf("filter %s given twice", m[1])
			}
			seen[m[1]] = true
			switch key {
			case filterPlan + "=":
				current = &r.Plans
			case filterPlan + "!=":
				current = &r.NotPlans
			case filterGlobalAccount + "=":
				current = &r.GlobalAccounts
			case filterGlobalAccount + "!=":
				current = &r.NotGlobalAccounts
			default:
				return Rule{}, fmt.Errorf("unknown filter %q (want plan or GA)", m[1])
			}
			tok = strings.TrimSpace(m[3])
		}
		switch {
		case current == nil:
			return Rule{}, fmt.Errorf("%q is not a filter (want plan=… or GA=…)", tok)
		case tok == "":
			return Rule{}, errors.New("a filter has an empty value")
		case strings.ContainsAny(tok, `="{}`):
			return Rule{}, fmt.Errorf("%q is not a plan name or global account ID", tok)
		}
		*current = append(*current, tok)
	}
	return r, nil
}
