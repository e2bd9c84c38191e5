package infrasim

import (
	"fmt"
	"strings"

	"github.com/kyma-keb/keb/internal/controlplane"
	im "github.com/kyma-keb/keb/internal/infrastructuremanager"
)

// Fault kinds of ParseFaults.
const (
	FaultTransient = "transient"
	FaultPermanent = "permanent"
)

// ParseFaults reads `keb dev --runtime-faults`: a comma-separated list of
// KIND or KIND=SUBACCOUNT, KIND being transient (every creation and every
// change of a runtime fails once with a Gardener error, then recovers) or
// permanent (they fail for as long as keb dev runs). With a subaccount ID
// the fault hits only that subaccount's runtimes; the first entry that
// matches wins. "" injects nothing (nil).
func ParseFaults(spec string) (func(rt *im.Runtime) *Fault, error) {
	if strings.TrimSpace(spec) == "" {
		return nil, nil
	}
	type rule struct{ kind, subaccount string }
	var rules []rule
	for _, entry := range strings.Split(spec, ",") {
		kind, subaccount, _ := strings.Cut(strings.TrimSpace(entry), "=")
		if kind != FaultTransient && kind != FaultPermanent {
			return nil, fmt.Errorf("runtime faults: %q: the kind must be %s or %s (optionally =<subaccount ID>)", entry, FaultTransient, FaultPermanent)
		}
		rules = append(rules, rule{kind: kind, subaccount: subaccount})
	}
	return func(rt *im.Runtime) *Fault {
		for _, r := range rules {
			if r.subaccount != "" && rt.Labels[controlplane.LabelSubAccountID] != r.subaccount {
				continue
			}
			if r.kind == FaultPermanent {
				return &Fault{Permanent: true, Message: fmt.Sprintf(
					"simulated Gardener error: quota exceeded for machine type %s in region %s", machineType(rt), rt.Spec.Shoot.Region)}
			}
			return &Fault{Message: "simulated Gardener error: the cloud provider throttled the request; retrying"}
		}
		return nil
	}, nil
}

func machineType(rt *im.Runtime) string {
	if i := rt.Spec.KymaWorker(); i >= 0 {
		return rt.Spec.Shoot.Provider.Workers[i].Machine.Type
	}
	return "(none)"
}
