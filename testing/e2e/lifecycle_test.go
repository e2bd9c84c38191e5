package e2e

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kyma-keb/keb/internal/btpmanager"
	"github.com/kyma-keb/keb/internal/config"
	"github.com/kyma-keb/keb/internal/controlplane"
	"github.com/kyma-keb/keb/internal/gardener/security"
	"github.com/kyma-keb/keb/internal/hyperscaler"
	"github.com/kyma-keb/keb/internal/infrasim"
	"github.com/kyma-keb/keb/internal/infrastructuremanager"
	"github.com/kyma-keb/keb/internal/runtimeclient"
)

const trialPlanID = "7d55d31d-35ae-4438-bf13-6ffdfa107d9f"

func credentials(secret string) string {
	return `{"clientid": "cid", "clientsecret": "` + secret + `", "sm_url": "https://sm.example.com", "url": "https://auth.example.com", "xsappname": "app"}`
}

// btpSecret reads the sap-btp-manager Secret inside a runtime.
func (s *stack) btpSecret(runtimeID string) *corev1.Secret {
	s.t.Helper()
	rc, err := runtimeclient.NewCache(s.kcp, controlplane.Namespace, s.scheme, runtimeclient.Bounds{}).Client(context.Background(), runtimeID)
	if err != nil {
		s.t.Fatal(err)
	}
	sec := &corev1.Secret{}
	if err := rc.Get(context.Background(), client.ObjectKey{Namespace: btpmanager.Namespace, Name: btpmanager.SecretName}, sec); err != nil {
		s.t.Fatalf("sap-btp-manager Secret of runtime %s: %v", runtimeID, err)
	}
	return sec
}

// accepted expects a 202 and returns its operation.
func (s *stack) accepted(what string, code int, body map[string]any) string {
	s.t.Helper()
	op, _ := body["operation"].(string)
	if code != http.StatusAccepted || op == "" {
		s.t.Fatalf("%s: %d %v", what, code, body)
	}
	return op
}

// TestSuspendResumeAndRotateCredentials follows a runtime through a credential
// rotation, a suspension and a resumption on real parts.
func TestSuspendResumeAndRotateCredentials(t *testing.T) {
	s := newStack(t, infrasim.ModeDedicated, 2)
	// Two accounts of its own: the suspension releases the first (dirty), the resumption claims
	// the second.
	for _, name := range []string{"azure-life-1", "azure-life-2"} {
		if err := createAccount(t.Context(), s.kcp, name, hyperscaler.TypeAzure); err != nil {
			t.Fatal(err)
		}
	}
	ctx := t.Context()
	const id = "e2e-life-1"
	path := "/oauth/v2/service_instances/" + id + "?accepts_incomplete=true"
	patch := func(context string) (int, map[string]any) {
		return s.call(http.MethodPatch, path, `{"service_id": "`+serviceID+`", "context": `+context+`}`)
	}
	code, body := s.call(http.MethodPut, path, `{"service_id": "`+serviceID+`", "plan_id": "`+azurePlanID+`",
		"context": {"globalaccount_id": "ga-life", "subaccount_id": "sa-life", "user_id": "owner@example.com",
			"sm_operator_credentials": `+credentials("secret-1")+`},
		"parameters": {"name": "life", "region": "westeurope"}}`)
	if state, desc := s.waitFor(id, s.accepted("provision", code, body), 4*time.Minute); state != "succeeded" {
		t.Fatalf("provisioning ended %s: %s", state, desc)
	}
	first := s.runtime(id)
	runtimeID := first["runtimeID"].(string)
	clusterID := string(s.btpSecret(runtimeID).Data[btpmanager.KeyClusterID])

	// Instance details: the resolved parameters, never a credential.
	code, inst := s.call(http.MethodGet, "/oauth/v2/service_instances/"+id, "")
	params, _ := inst["parameters"].(map[string]any)
	if code != http.StatusOK || params["region"] != "westeurope" || params["machineType"] == nil ||
		params["autoScalerMin"] == nil || params["targetSecret"] == nil || params["zones"] == nil || inst["dashboard_url"] == "" {
		t.Fatalf("GET instance: %d %v", code, inst)
	}

	// Rotation: pushed at once by an update operation, cluster_id kept.
	code, body = patch(`{"sm_operator_credentials": ` + credentials("secret-2") + `}`)
	if state, desc := s.waitFor(id, s.accepted("rotate", code, body), time.Minute); state != "succeeded" {
		t.Fatalf("update ended %s: %s", state, desc)
	}
	sec := s.btpSecret(runtimeID)
	if string(sec.Data["clientsecret"]) != "secret-2" || string(sec.Data[btpmanager.KeyClusterID]) != clusterID {
		t.Fatalf("after rotation: clientsecret %q cluster_id %q (was %q)", sec.Data["clientsecret"], sec.Data[btpmanager.KeyClusterID], clusterID)
	}
	// Re-sending the same context changes nothing.
	if code, body := patch(`{"sm_operator_credentials": ` + credentials("secret-2") + `}`); code != http.StatusOK {
		t.Fatalf("same credentials again: %d %v", code, body)
	}

	// A Secret the user took over (skip-reconciliation) is left alone.
	sec.Labels[btpmanager.LabelSkipReconciliation] = "true"
	rc, err := runtimeclient.NewCache(s.kcp, controlplane.Namespace, s.scheme, runtimeclient.Bounds{}).Client(ctx, runtimeID)
	if err != nil {
		t.Fatal(err)
	}
	if err := rc.Update(ctx, sec); err != nil {
		t.Fatal(err)
	}
	code, body = patch(`{"sm_operator_credentials": ` + credentials("secret-3") + `}`)
	if state, desc := s.waitFor(id, s.accepted("rotate again", code, body), time.Minute); state != "succeeded" {
		t.Fatalf("update ended %s: %s", state, desc)
	}
	if got := string(s.btpSecret(runtimeID).Data["clientsecret"]); got != "secret-2" {
		t.Fatalf("skip-reconciliation Secret was rewritten: clientsecret %q", got)
	}

	// Suspension: the runtime goes, the instance stays, the tenant keeps
	// its account.
	code, body = patch(`{"active": false}`)
	if state, desc := s.waitFor(id, s.accepted("suspend", code, body), 3*time.Minute); state != "succeeded" {
		t.Fatalf("suspension ended %s: %s", state, desc)
	}
	if err := s.kcp.Get(ctx, client.ObjectKey{Namespace: kcpNS, Name: strings.ToLower(runtimeID)}, &infrastructuremanager.Runtime{}); !apierrors.IsNotFound(err) {
		t.Fatalf("Runtime CR of a suspended instance still there: %v", err)
	}
	if st := status(s.runtime(id)); st["state"] != "suspended" || st["expiredAt"] != nil {
		t.Fatalf("suspended runtime as operators see it: %v", st)
	}
	code, inst = s.call(http.MethodGet, "/oauth/v2/service_instances/"+id, "")
	if code != http.StatusOK || inst["dashboard_url"] != nil && inst["dashboard_url"] != "" {
		t.Fatalf("GET suspended instance: %d %v", code, inst)
	}
	// As upstream: a suspension releases the account once its Shoot is gone (no Shoot uses it).
	var bindings security.CredentialsBindingList
	if err := s.kcp.List(ctx, &bindings, client.InNamespace(poolNS), client.MatchingLabels{"tenantName": "ga-life"}); err != nil ||
		len(bindings.Items) != 1 || bindings.Items[0].Labels["dirty"] != "true" {
		t.Fatalf("tenant's account after suspension: %v %+v", err, bindings.Items)
	}

	// Resumption: a new runtime, the same cluster ID, the newest credentials.
	code, body = patch(`{"active": true}`)
	if state, desc := s.waitFor(id, s.accepted("resume", code, body), 4*time.Minute); state != "succeeded" {
		t.Fatalf("resumption ended %s: %s", state, desc)
	}
	resumed := s.runtime(id)
	newID := resumed["runtimeID"].(string)
	if newID == "" || newID == runtimeID || status(resumed)["state"] != "succeeded" {
		t.Fatalf("resumed runtime %s (was %s), state %v", newID, runtimeID, status(resumed)["state"])
	}
	// The resumed runtime runs on a fresh account: the released one is never handed out again.
	if err := s.kcp.List(ctx, &bindings, client.InNamespace(poolNS), client.MatchingLabels{"tenantName": "ga-life"}); err != nil ||
		len(bindings.Items) != 2 {
		t.Fatalf("tenant's accounts after resumption: %v %+v", err, bindings.Items)
	}
	sec = s.btpSecret(newID)
	if string(sec.Data[btpmanager.KeyClusterID]) != clusterID || string(sec.Data["clientsecret"]) != "secret-3" {
		t.Fatalf("resumed runtime's Secret: cluster_id %q (want %q), clientsecret %q (want secret-3)",
			sec.Data[btpmanager.KeyClusterID], clusterID, sec.Data["clientsecret"])
	}

	// And a real deprovisioning ends it.
	code, body = s.call(http.MethodDelete, "/oauth/v2/service_instances/"+id+"?accepts_incomplete=true&service_id="+serviceID+"&plan_id="+azurePlanID, "")
	if state, _ := s.waitFor(id, s.accepted("deprovision", code, body), 3*time.Minute); state != "succeeded" && state != "gone" {
		t.Fatalf("deprovisioning ended %s", state)
	}
	if code, _ := s.call(http.MethodGet, "/oauth/v2/service_instances/"+id, ""); code != http.StatusNotFound {
		t.Fatalf("GET after deprovisioning: %d", code)
	}
}

// TestTrialExpiry expires one trial by hand and lets the periodic job expire
// another.
func TestTrialExpiry(t *testing.T) {
	s := newStack(t, infrasim.ModeShared, 0, func(c *config.Config) {
		// Every trial is overdue at once; the job runs every second and
		// expires each as soon as its provisioning ended.
		c.TrialDuration = time.Millisecond
		c.Engine.ExpiryInterval = time.Second
	})
	provisionTrial := func(id, account string) {
		t.Helper()
		code, body := s.call(http.MethodPut, "/oauth/v2/service_instances/"+id+"?accepts_incomplete=true",
			`{"service_id": "`+serviceID+`", "plan_id": "`+trialPlanID+`",
			"context": {"globalaccount_id": "`+account+`", "subaccount_id": "sa-`+id+`", "user_id": "u@example.com"},
			"parameters": {"name": "`+id+`"}}`)
		if state, desc := s.waitFor(id, s.accepted("provision "+id, code, body), 4*time.Minute); state != "succeeded" {
			t.Fatalf("provisioning %s ended %s: %s", id, state, desc)
		}
	}
	waitSuspended := func(id string) map[string]any {
		t.Helper()
		deadline := time.Now().Add(2 * time.Minute)
		for time.Now().Before(deadline) {
			if st := status(s.runtime(id)); st["state"] == "suspended" {
				return st
			}
			time.Sleep(500 * time.Millisecond)
		}
		t.Fatalf("trial %s not suspended: %v", id, status(s.runtime(id)))
		return nil
	}

	provisionTrial("e2e-trial-1", "ga-trial-1")
	st := waitSuspended("e2e-trial-1")
	if st["expiredAt"] == nil {
		t.Fatalf("expired trial without expiredAt: %v", st)
	}
	code, inst := s.call(http.MethodGet, "/oauth/v2/service_instances/e2e-trial-1", "")
	if code != http.StatusOK || inst["dashboard_url"] != nil && inst["dashboard_url"] != "" {
		t.Fatalf("GET expired trial: %d %v", code, inst)
	}
	// Its labels say it expired and link to the documentation, not to a
	// runtime that is gone.
	labels, _ := inst["metadata"].(map[string]any)["labels"].(map[string]any)
	expiry, _ := labels["Trial account expiration details"].(string)
	if labels["Name"] != "e2e-trial-1" || !strings.Contains(expiry, "has expired") || labels["Trial documentation"] == nil ||
		labels["KubeconfigURL"] != nil || labels["APIServerURL"] != nil {
		t.Fatalf("labels of an expired trial: %v", labels)
	}
	// Expired is for good: no resumption, no second trial for the account.
	code, body := s.call(http.MethodPatch, "/oauth/v2/service_instances/e2e-trial-1?accepts_incomplete=true",
		`{"service_id": "`+serviceID+`", "context": {"active": true}}`)
	if code != http.StatusUnprocessableEntity || body["error"] != "InstanceExpired" {
		t.Fatalf("resuming an expired trial: %d %v", code, body)
	}
	code, body = s.call(http.MethodPut, "/oauth/v2/service_instances/e2e-trial-2?accepts_incomplete=true",
		`{"service_id": "`+serviceID+`", "plan_id": "`+trialPlanID+`",
		"context": {"globalaccount_id": "ga-trial-1", "subaccount_id": "sa-2", "user_id": "u@example.com"}, "parameters": {"name": "t2"}}`)
	if code != http.StatusBadRequest || body["error"] != "TrialExists" {
		t.Fatalf("second trial of an account with an expired one: %d %v", code, body)
	}
	// Expiring it again by hand: already done.
	code, body = s.call(http.MethodPut, "/expire/service_instance/e2e-trial-1", "")
	if code != http.StatusOK || body["expiredAt"] == nil {
		t.Fatalf("expiring an expired trial: %d %v", code, body)
	}
}
