package app_test

import (
	"context"
	"strings"
	"testing"

	"github.com/sirupsen/logrus"

	"github.com/kyma-keb/keb/internal/app"
	"github.com/kyma-keb/keb/internal/config"
	"github.com/kyma-keb/keb/testing/pgtest"
)

// A bad HAP rule set stops keb at start-up with every problem listed, before it serves anything.
func TestBadHAPRulesStopTheBroker(t *testing.T) {
	t.Parallel()
	cfg := config.Defaults
	cfg.DatabaseURL = pgtest.NewDatabase(t)
	cfg.DatabaseSecretKey = testSecretKey
	cfg.Engine.Workers = 0
	cfg.EnabledPlans = []string{"azure", "aws", "trial"}
	cfg.Engine.HAP.Rules = []string{"azure", "aws(PR=cf-eu11) -> EU, EU", "azure", "kyma-lite"}
	log := logrus.New()
	log.SetOutput(&strings.Builder{})
	a, err := app.New(context.Background(), cfg, log, nil)
	if err == nil {
		a.Close()
		t.Fatal("keb started with a bad rule set")
	}
	for _, want := range []string{
		"error parsing rule 2:", "output EU given twice",
		"rule 3: azure is not unique: rule 1 (azure) has the same plan and inputs",
		`rule 4: kyma-lite: unknown plan "kyma-lite"`,
		"plan aws is enabled but no rule names it", "plan trial is enabled but no rule names it",
	} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("start-up error does not say %q:\n%v", want, err)
		}
	}
}
