package process_test

import (
	"testing"

	"github.com/kyma-keb/keb/internal/ias"
	"github.com/kyma-keb/keb/internal/lms"
	"github.com/kyma-keb/keb/internal/process"
	"github.com/kyma-keb/keb/internal/process/deprovisioning"
	"github.com/kyma-keb/keb/internal/process/provisioning"
	"github.com/kyma-keb/keb/internal/process/update"
	"github.com/kyma-keb/keb/internal/process/upgrade"
)

// TestEveryStepHasAComponent holds every pipeline's steps to the table of
// components: a failure in a step the table lacks would be blamed on keb.
func TestEveryStepHasAComponent(t *testing.T) {
	t.Parallel()
	pipelines := map[string]process.Pipeline{
		"provisioning":    provisioning.Pipeline(provisioning.Deps{}),
		"deprovisioning":  deprovisioning.Pipeline(deprovisioning.Deps{}),
		"update":          update.Pipeline(update.Deps{}),
		"upgrade_kyma":    upgrade.KymaPipeline(upgrade.Deps{}),
		"upgrade_cluster": upgrade.ClusterPipeline(upgrade.Deps{}),
		// The IAS integration's steps, which join only when it is enabled.
		"provisioning with IAS": provisioning.Pipeline(provisioning.Deps{Config: provisioning.Config{
			IAS: ias.Config{URL: "https://ias.example.com"}}}),
		// And the LMS integration's.
		"provisioning with LMS": provisioning.Pipeline(provisioning.Deps{Config: provisioning.Config{
			LMS: lms.Config{URL: "https://lms.example.com", EnabledForGlobalAccounts: "all"}}}),
		"deprovisioning with IAS": deprovisioning.Pipeline(deprovisioning.Deps{
			IAS: ias.NewClient(ias.Config{URL: "https://ias.example.com"}, nil, nil)}),
	}
	for name, p := range pipelines {
		for _, s := range p.Steps {
			if _, ok := process.StepComponent(s.Name()); !ok {
				t.Errorf("%s: step %s has no component", name, s.Name())
			}
		}
	}
}
