package e2e

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client"
	osb "sigs.k8s.io/go-open-service-broker-client/v2"

	"github.com/kyma-keb/keb/internal/config"
	"github.com/kyma-keb/keb/internal/controlplane"
	"github.com/kyma-keb/keb/internal/hyperscaler"
	"github.com/kyma-keb/keb/internal/infrasim"
	"github.com/kyma-keb/keb/internal/infrastructuremanager"
	"github.com/kyma-keb/keb/internal/kyma"
	"github.com/kyma-keb/keb/testing/k8stest"
)

const awsPlanID = "361c511f-f939-4621-b228-d0fb79a1fe15"

// osbClient is the Kubernetes service catalog's OSB client on the stack, as
// a platform would drive keb.
func (s *stack) osbClient() osb.Client {
	s.t.Helper()
	cfg := osb.DefaultClientConfiguration()
	cfg.URL = s.url + "/oauth/cf-eu10"
	cfg.APIVersion = osb.Version2_14()
	cfg.AuthConfig = &osb.AuthConfig{BearerConfig: &osb.BearerConfig{Token: s.token}}
	cfg.EnableAlphaFeatures = true // GetBinding is an alpha method of the client
	c, err := osb.NewClient(cfg)
	if err != nil {
		s.t.Fatal(err)
	}
	return c
}

// osbWait polls last_operation through the client until the operation ends.
func (s *stack) osbWait(c osb.Client, instanceID string, key *osb.OperationKey, within time.Duration) *osb.LastOperationResponse {
	s.t.Helper()
	deadline := time.Now().Add(within)
	for time.Now().Before(deadline) {
		last, err := c.PollLastOperation(&osb.LastOperationRequest{InstanceID: instanceID, OperationKey: key})
		if err != nil {
			s.t.Fatalf("last_operation of %s: %v", instanceID, err)
		}
		if last.State != osb.StateInProgress {
			return last
		}
		time.Sleep(500 * time.Millisecond)
	}
	s.t.Fatalf("operation %v of %s still in progress after %s", key, instanceID, within)
	return nil
}

// runtimeCR reads an instance's Runtime CR from the control plane.
func (s *stack) runtimeCR(runtimeID string) *infrastructuremanager.Runtime {
	s.t.Helper()
	rt := &infrastructuremanager.Runtime{}
	if err := s.kcp.Get(context.Background(), client.ObjectKey{Namespace: kcpNS, Name: kyma.Name(runtimeID)}, rt); err != nil {
		s.t.Fatal(err)
	}
	return rt
}

func description(err error) string {
	if e, ok := osb.IsHTTPError(err); ok && e.Description != nil {
		return *e.Description
	}
	return ""
}

// TestOSBClientFlow drives keb on real parts with the upstream OSB client,
// the way a platform does: provision, update the parameters (scaling up),
// refused and identical updates, an update the infrastructure fails, and a
// trial moved to aws, then a binding of that runtime (bind, get-binding,
// unbind) whose kubeconfig lists namespaces in it until the unbind.
func TestOSBClientFlow(t *testing.T) {
	// A change the infrastructure manager fails is waited through until the
	// step's timeout: short here, but the same timeout bounds the first
	// cluster's creation, which on a loaded 2-core machine has taken over
	// 20 s (the provisioning failed in CI with 20 s).
	s := newStack(t, infrasim.ModeShared, 2, func(c *config.Config) { c.Engine.RuntimeTimeout = time.Minute })
	ctx := t.Context()
	// The tenant's own aws account the upgraded trial moves to.
	if err := createAccount(ctx, s.kcp, "aws-osb-000", hyperscaler.TypeAWS); err != nil {
		t.Fatal(err)
	}
	// And an azure account of its own: the stacks of earlier tests on this control plane may have
	// left the seeded ones dirty (every deprovisioning and suspension releases its account).
	if err := createAccount(ctx, s.kcp, "azure-osb-000", hyperscaler.TypeAzure); err != nil {
		t.Fatal(err)
	}
	c := s.osbClient()
	azure, trial, aws := azurePlanID, trialPlanID, awsPlanID

	// Provision an azure runtime.
	const id = "e2e-osb-1"
	prov, err := c.ProvisionInstance(&osb.ProvisionRequest{InstanceID: id, AcceptsIncomplete: true, ServiceID: serviceID,
		PlanID: azure, OrganizationGUID: "org", SpaceGUID: "space", Parameters: map[string]any{"name": "osb-scaled"},
		Context: map[string]any{"globalaccount_id": "ga-osb", "subaccount_id": "sa-osb", "user_id": "owner@example.com"}})
	if err != nil || !prov.Async {
		t.Fatalf("provision: %+v, %v", prov, err)
	}
	if last := s.osbWait(c, id, prov.OperationKey, 4*time.Minute); last.State != osb.StateSucceeded {
		t.Fatalf("provisioning ended %s: %v", last.State, last.Description)
	}
	runtimeID := s.runtime(id)["runtimeID"].(string)

	// Update the parameters: scale up.
	upd, err := c.UpdateInstance(&osb.UpdateInstanceRequest{InstanceID: id, AcceptsIncomplete: true, ServiceID: serviceID,
		Parameters: map[string]any{"machineType": "Standard_D8s_v5", "autoScalerMin": 4, "autoScalerMax": 12}})
	if err != nil || !upd.Async || upd.OperationKey == nil {
		t.Fatalf("update parameters: %+v, %v", upd, err)
	}
	if last := s.osbWait(c, id, upd.OperationKey, 2*time.Minute); last.State != osb.StateSucceeded ||
		!strings.Contains(*last.Description, "new parameters") {
		t.Fatalf("parameter update ended %s: %v", last.State, *last.Description)
	}
	rt := s.runtimeCR(runtimeID)
	w := rt.Spec.Shoot.Provider.Workers[0]
	if w.Machine.Type != "Standard_D8s_v5" || w.Minimum != 4 || w.Maximum != 12 ||
		rt.Status.State != infrastructuremanager.StateReady {
		t.Fatalf("Runtime CR after the update: workers %+v, status %+v, generation %d", w, rt.Status, rt.Generation)
	}
	inst, err := c.GetInstance(&osb.GetInstanceRequest{InstanceID: id})
	if err != nil || inst.Parameters["machineType"] != "Standard_D8s_v5" || inst.Parameters["autoScalerMax"] != 12.0 ||
		inst.Parameters["autoScalerMin"] != 4.0 {
		t.Fatalf("GET instance after the update: %+v, %v", inst, err)
	}

	// Refused: crossed bounds against the recorded minimum, a plan the
	// instance cannot change to.
	_, err = c.UpdateInstance(&osb.UpdateInstanceRequest{InstanceID: id, AcceptsIncomplete: true, ServiceID: serviceID,
		Parameters: map[string]any{"autoScalerMax": 3}})
	if e, ok := osb.IsHTTPError(err); !ok || e.StatusCode != http.StatusBadRequest || !strings.Contains(description(err), "autoScalerMax") {
		t.Fatalf("max below the recorded min: %v", err)
	}
	_, err = c.UpdateInstance(&osb.UpdateInstanceRequest{InstanceID: id, AcceptsIncomplete: true, ServiceID: serviceID, PlanID: &trial})
	if e, ok := osb.IsHTTPError(err); !ok || e.StatusCode != http.StatusBadRequest || !strings.Contains(description(err), "plan azure cannot change to trial") {
		t.Fatalf("azure → trial: %v", err)
	}
	// The same parameters again: nothing to run.
	same, err := c.UpdateInstance(&osb.UpdateInstanceRequest{InstanceID: id, AcceptsIncomplete: true, ServiceID: serviceID,
		Parameters: map[string]any{"autoScalerMax": 12}})
	if err != nil || same.Async {
		t.Fatalf("identical update: %+v, %v", same, err)
	}

	// The infrastructure manager fails the next change for good: the update
	// waits for it to recover until its step's timeout, then fails saying
	// why; the instance keeps the parameters it had.
	s.failing.Store(runtimeID, "simulated: quota for Standard_D16s_v5 exceeded in eastus")
	upd, err = c.UpdateInstance(&osb.UpdateInstanceRequest{InstanceID: id, AcceptsIncomplete: true, ServiceID: serviceID,
		Parameters: map[string]any{"machineType": "Standard_D16s_v5"}})
	if err != nil || !upd.Async {
		t.Fatalf("update to fail: %+v, %v", upd, err)
	}
	if last := s.osbWait(c, id, upd.OperationKey, 2*time.Minute); last.State != osb.StateFailed ||
		!strings.Contains(*last.Description, "quota for Standard_D16s_v5 exceeded") {
		t.Fatalf("failing update ended %s: %v", last.State, *last.Description)
	}
	inst, err = c.GetInstance(&osb.GetInstanceRequest{InstanceID: id})
	if err != nil || inst.Parameters["machineType"] != "Standard_D8s_v5" {
		t.Fatalf("GET instance after a failed update: %+v, %v", inst, err)
	}
	if st := status(s.runtime(id)); st["state"] != "succeeded" {
		t.Fatalf("a failed update moved the instance to %v", st["state"])
	}

	// A trial moves to aws: the tenant's own aws account, the aws region for
	// the trial's region, aws's defaults, and the plan change in the history.
	const trialID = "e2e-osb-trial"
	prov, err = c.ProvisionInstance(&osb.ProvisionRequest{InstanceID: trialID, AcceptsIncomplete: true, ServiceID: serviceID,
		PlanID: trial, OrganizationGUID: "org", SpaceGUID: "space", Parameters: map[string]any{"name": "osb-trial"},
		Context: map[string]any{"globalaccount_id": "ga-osb-trial", "subaccount_id": "sa-osb-trial", "user_id": "owner@example.com"}})
	if err != nil {
		t.Fatalf("provision trial: %v", err)
	}
	if last := s.osbWait(c, trialID, prov.OperationKey, 4*time.Minute); last.State != osb.StateSucceeded {
		t.Fatalf("trial provisioning ended %s: %v", last.State, *last.Description)
	}
	trialRuntime := s.runtime(trialID)["runtimeID"].(string)
	upd, err = c.UpdateInstance(&osb.UpdateInstanceRequest{InstanceID: trialID, AcceptsIncomplete: true, ServiceID: serviceID,
		PlanID: &aws, Parameters: map[string]any{"autoScalerMax": 6}})
	if err != nil || !upd.Async {
		t.Fatalf("update plan: %+v, %v", upd, err)
	}
	if last := s.osbWait(c, trialID, upd.OperationKey, 2*time.Minute); last.State != osb.StateSucceeded ||
		*last.Description != "Operation succeeded: the runtime moved from plan trial to plan aws" {
		t.Fatalf("plan update ended %s: %v", last.State, *last.Description)
	}
	inst, err = c.GetInstance(&osb.GetInstanceRequest{InstanceID: trialID})
	if err != nil || inst.PlanID != awsPlanID || inst.Parameters["region"] != "eu-central-1" || inst.Parameters["provider"] != "aws" ||
		inst.Parameters["autoScalerMax"] != 6.0 || inst.Parameters["machineType"] != "mi.large" || inst.Parameters["targetSecret"] != "aws-osb-000" {
		t.Fatalf("GET instance after the plan update: %+v, %v", inst, err)
	}
	rt = s.runtimeCR(trialRuntime)
	if rt.Spec.Shoot.Provider.Type != "aws" || rt.Spec.Shoot.Region != "eu-central-1" || rt.Spec.Shoot.SecretBindingName != "aws-osb-000" ||
		rt.Labels["kyma-project.io/broker-plan-name"] != "aws" {
		t.Fatalf("Runtime CR after the plan update: %+v, labels %v", rt.Spec.Shoot, rt.Labels)
	}
	k := &kyma.Kyma{}
	if err := s.kcp.Get(ctx, client.ObjectKey{Namespace: kcpNS, Name: kyma.Name(trialRuntime)}, k); err != nil || k.Labels[controlplane.LabelPlanID] != awsPlanID {
		t.Fatalf("Kyma CR after the plan update: %v, labels %v", err, k.Labels)
	}
	code, listing := s.call(http.MethodGet, "/runtimes?actions=true&instance_id="+trialID, "")
	data, _ := listing["data"].([]any)
	if code != http.StatusOK || len(data) != 1 {
		t.Fatalf("GET /runtimes?actions=true: %d %v", code, listing)
	}
	listed := data[0].(map[string]any)
	actions, _ := listed["actions"].([]any)
	if listed["servicePlanName"] != "aws" || len(actions) != 1 || actions[0].(map[string]any)["oldValue"] != "trial" ||
		actions[0].(map[string]any)["newValue"] != "aws" {
		t.Fatalf("the upgraded trial as operators see it: %v", listed)
	}
	// The global account may hold a trial again.
	code, body := s.call(http.MethodPut, "/oauth/v2/service_instances/e2e-osb-trial-2?accepts_incomplete=true",
		`{"service_id": "`+serviceID+`", "plan_id": "`+trialPlanID+`", "context": {"globalaccount_id": "ga-osb-trial",
		"subaccount_id": "sa-2", "user_id": "u@example.com"}, "parameters": {"name": "t2"}}`)
	if code != http.StatusAccepted {
		t.Fatalf("a new trial after the upgrade: %d %v", code, body)
	}
	s.waitFor("e2e-osb-trial-2", s.accepted("second trial", code, body), 4*time.Minute)

	// Bind the upgraded runtime (aws is bindable, trial was not): the
	// kubeconfig works in the runtime until the unbind.
	bound, err := c.Bind(&osb.BindRequest{BindingID: "osb-flow-1", InstanceID: trialID, ServiceID: serviceID, PlanID: aws,
		Parameters: map[string]any{"expiration_seconds": 600}})
	if err != nil || bound.Async {
		t.Fatalf("bind: %+v, %v", bound, err)
	}
	kubeconfig, _ := bound.Credentials["kubeconfig"].(string)
	if err := k8stest.ListNamespaces(ctx, kubeconfig); err != nil {
		t.Fatalf("the bound kubeconfig cannot list namespaces in the runtime: %v", err)
	}
	if got, err := c.GetBinding(&osb.GetBindingRequest{InstanceID: trialID, BindingID: "osb-flow-1"}); err != nil ||
		got.Credentials["kubeconfig"] != kubeconfig {
		t.Fatalf("get binding: %+v, %v", got, err)
	}
	if _, err := c.Unbind(&osb.UnbindRequest{InstanceID: trialID, BindingID: "osb-flow-1", ServiceID: serviceID, PlanID: aws}); err != nil {
		t.Fatalf("unbind: %v", err)
	}
	k8stest.WaitRefused(t, "after unbind", kubeconfig)

	for _, i := range []struct{ id, plan string }{{id, azure}, {trialID, aws}, {"e2e-osb-trial-2", trial}} {
		dep, err := c.DeprovisionInstance(&osb.DeprovisionRequest{InstanceID: i.id, AcceptsIncomplete: true, ServiceID: serviceID, PlanID: i.plan})
		if err != nil {
			t.Fatalf("deprovision %s: %v", i.id, err)
		}
		if dep.Async {
			if state, _ := s.waitFor(i.id, string(*dep.OperationKey), 3*time.Minute); state != "succeeded" && state != "gone" {
				t.Fatalf("deprovisioning %s ended %s", i.id, state)
			}
		}
	}
}
