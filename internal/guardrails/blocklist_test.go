package guardrails

import (
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/sirupsen/logrus"
)

func TestBlockedFirstMatchWins(t *testing.T) {
	t.Parallel()
	b, err := Parse([]byte(`provision:
  - '"first: {plan} in {globalAccount}", plan=aws,gcp, GA!=ga-vip'
  - '"second", GA=ga-1,ga-2'
  - '"everyone else"'
`))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ plan, ga, want string }{
		{"aws", "ga-1", "first: aws in ga-1"},
		{"gcp", "ga-9", "first: gcp in ga-9"},
		{"aws", "ga-vip", "everyone else"},
		{"azure", "ga-2", "second"},
		{"azure", "ga-3", "everyone else"},
	} {
		msg, ok := b.Blocked(Provision, tc.plan, tc.ga)
		if !ok || msg != tc.want {
			t.Errorf("Blocked(provision, %s, %s) = %q, %v; want %q", tc.plan, tc.ga, msg, ok, tc.want)
		}
	}
	if msg, ok := b.Blocked(Deprovision, "aws", "ga-1"); ok {
		t.Errorf("deprovision blocked by provision rules: %q", msg)
	}
}

// TestReloadKeepsTheLastGoodRules: a changed file is taken; one that does
// not parse is refused and the rules before it stay.
func TestReloadKeepsTheLastGoodRules(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "bl.yaml")
	write := func(s string) {
		if err := os.WriteFile(path, []byte(s), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write(`update: ['"frozen", GA=ga-1']`)
	log := logrus.New()
	log.SetOutput(io.Discard)
	f, err := LoadFile(path, log)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := f.Blocked(Update, "azure", "ga-1"); !ok {
		t.Fatal("rule not in force")
	}
	write(`update: ['"frozen", GA=ga-2']`)
	if changed, err := f.Reload(); !changed || err != nil {
		t.Fatalf("Reload = %v, %v", changed, err)
	}
	if _, ok := f.Blocked(Update, "azure", "ga-1"); ok {
		t.Error("old rule still in force after the reload")
	}
	write(`update: ['frozen, GA=ga-3']`)
	if changed, err := f.Reload(); changed || err == nil {
		t.Fatalf("Reload of a bad file = %v, %v; want refused", changed, err)
	}
	if _, ok := f.Blocked(Update, "azure", "ga-2"); !ok {
		t.Error("the last good rules were dropped with the bad file")
	}
}

// FuzzParse: no input makes Parse panic, and a parsed blocklist answers.
func FuzzParse(f *testing.F) {
	f.Add([]byte(`provision: ['"x {plan}", plan=a,b, GA!=c']`))
	f.Add([]byte(`update: ['"", GA=']`))
	f.Add([]byte(`deprovision: ['"a"b", plan=x']`))
	f.Fuzz(func(t *testing.T, data []byte) {
		b, err := Parse(data)
		if err != nil {
			return
		}
		for _, op := range operations {
			b.Blocked(op, "azure", "ga-1")
		}
	})
}
