// Package runtimetest builds Runtime CRs for tests: valid under the Runtime
// CRD (every required field, every label the infrastructure manager
// requires), and status written as the infrastructure manager writes it.
package runtimetest

import (
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kyma-keb/keb/internal/controlplane"
	im "github.com/kyma-keb/keb/internal/infrastructuremanager"
)

// Runtime is an azure runtime's Runtime CR in ns, named after runtimeID (in
// lower case) and labelled with it.
func Runtime(ns, runtimeID string) *im.Runtime {
	name := strings.ToLower(runtimeID)
	short := strings.ReplaceAll(name, "-", "")
	if len(short) > 7 {
		short = short[:7]
	}
	return &im.Runtime{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: map[string]string{
			controlplane.LabelRuntimeID: runtimeID, controlplane.LabelInstanceID: "inst-" + name,
			controlplane.LabelRegion: "westeurope", controlplane.LabelKymaName: name,
			controlplane.LabelPlanID: "4deee563-e5ec-4731-b9b1-53b42d855f0c", controlplane.LabelPlanName: "azure",
			controlplane.LabelGlobalAccountID: "ga-" + name, controlplane.LabelSubAccountID: "sa-" + name,
		}},
		Spec: im.RuntimeSpec{
			Shoot: im.RuntimeShoot{
				Name: "c-" + short, Purpose: "development", PlatformRegion: "cf-eu20", Region: "westeurope", SecretBindingName: "sb-azure",
				Provider: im.Provider{Type: "azure", Workers: []im.Worker{{
					Name: im.KymaWorkerName, Machine: im.Machine{Type: "Standard_D2s_v5"}, Minimum: 3, Maximum: 20, Zones: []string{"1", "2", "3"}}}},
				Networking: im.Networking{Nodes: "10.250.0.0/16", Pods: "10.96.0.0/13", Services: "10.104.0.0/13"},
			},
			Security: im.Security{Administrators: []string{"admin@example.com"},
				Networking: im.NetworkingSecurity{Filter: im.Filter{Egress: im.Egress{Enabled: true}}}},
		},
	}
}

// Conditions are conditions of a status in state: the Provisioned one with
// reason and message (Failed: False, Pending: Unknown, else True), at now.
func Conditions(state im.State, reason, message string) []metav1.Condition {
	status := metav1.ConditionTrue
	switch state {
	case im.StateFailed:
		status = metav1.ConditionFalse
	case im.StatePending, im.StateTerminating:
		status = metav1.ConditionUnknown
	}
	if reason == "" {
		reason = im.ReasonProcessing
	}
	return []metav1.Condition{{Type: im.ConditionProvisioned, Status: status, Reason: reason, Message: message,
		LastTransitionTime: metav1.NewTime(time.Now())}}
}

// SetStatus writes rt's status through the status subresource as the
// infrastructure manager would: the state, and the Provisioned condition
// with reason and message (its transition time moved only when its status
// changes).
func SetStatus(t testing.TB, c client.Client, rt *im.Runtime, state im.State, reason, message string) {
	t.Helper()
	rt.Status.State = state
	for _, cond := range Conditions(state, reason, message) {
		meta.SetStatusCondition(&rt.Status.Conditions, cond)
	}
	if state == im.StateReady {
		rt.Status.ProvisioningCompleted = true
	}
	if err := c.Status().Update(t.Context(), rt); err != nil {
		t.Fatalf("setting Runtime %s to %s: %v", rt.Name, state, err)
	}
}
