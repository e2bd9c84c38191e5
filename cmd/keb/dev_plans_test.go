package main

import (
	"flag"
	"slices"
	"testing"

	"github.com/kyma-keb/keb/internal/config"
)

// keb dev adds the free plan only when the operator chose no plans, under
// keb's name or upstream's.
func TestDevAddsFreeOnlyWhenNoPlansAreSet(t *testing.T) {
	for _, c := range []struct {
		env, value string
		wantFree   bool
	}{
		{"", "", true},
		{"APP_BROKER_ENABLED_PLANS", "azure", false},
		{"APP_BROKER_ENABLE_PLANS", "azure", false},
	} {
		t.Run(c.env, func(t *testing.T) {
			if c.env != "" {
				t.Setenv(c.env, c.value)
			}
			cfg := &config.Config{EnabledPlans: []string{"azure"}}
			devEnabledPlans(flag.NewFlagSet("dev", flag.ContinueOnError), cfg)
			if got := slices.Contains(cfg.EnabledPlans, "free"); got != c.wantFree {
				t.Fatalf("free in %v: %v, want %v", cfg.EnabledPlans, got, c.wantFree)
			}
		})
	}
}
