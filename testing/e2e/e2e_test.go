package e2e

import (
	"net/http"
	"os"
	"sort"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kyma-keb/keb/internal/btpmanager"
	btpstandin "github.com/kyma-keb/keb/internal/btpmanagersim"
	"github.com/kyma-keb/keb/internal/controlplane"
	"github.com/kyma-keb/keb/internal/gardener/core"
	"github.com/kyma-keb/keb/internal/infrasim"
	"github.com/kyma-keb/keb/internal/infrastructuremanager"
	"github.com/kyma-keb/keb/internal/kyma"
	"github.com/kyma-keb/keb/internal/runtimeclient"
	"github.com/kyma-keb/keb/testing/k8stest"
	"github.com/kyma-keb/keb/testing/pgtest"
)

// kcp is the control plane shared by this package's tests.
var kcp *k8stest.Environment

func TestMain(m *testing.M) { os.Exit(k8stest.Run(m, &kcp, pgtest.Run)) }

// TestProvisionAndDeprovision follows one runtime through its whole life on
// real parts and checks what a platform and an operator would see.
func TestProvisionAndDeprovision(t *testing.T) {
	s := newStack(t, infrasim.ModeDedicated, 3)
	ctx := t.Context()
	const instanceID = "e2e-inst-1"
	code, body := s.call(http.MethodPut, "/oauth/cf-eu20/v2/service_instances/"+instanceID+"?accepts_incomplete=true", `{
		"service_id": "`+serviceID+`", "plan_id": "`+azurePlanID+`",
		"context": {"globalaccount_id": "ga-e2e", "subaccount_id": "sa-e2e", "user_id": "owner@example.com",
			"sm_operator_credentials": {"clientid": "cid", "clientsecret": "csecret", "sm_url": "https://sm.example.com",
				"url": "https://auth.example.com", "xsappname": "app"}},
		"parameters": {"name": "e2e", "region": "westeurope", "machineType": "Standard_D4s_v5",
			"autoScalerMin": 3, "autoScalerMax": 5, "modules": {"list": [{"name": "btp-operator", "customResourcePolicy": "CreateAndDelete"}]}}}`)
	if code != http.StatusAccepted {
		t.Fatalf("provision: %d %v", code, body)
	}
	provOp := body["operation"].(string)
	if state, desc := s.waitFor(instanceID, provOp, 4*time.Minute); state != "succeeded" {
		t.Fatalf("provisioning ended %s: %s", state, desc)
	}

	// The instance as the platform sees it.
	code, inst := s.call(http.MethodGet, "/oauth/v2/service_instances/"+instanceID, "")
	if code != http.StatusOK || !strings.HasPrefix(inst["dashboard_url"].(string), "https://console.") {
		t.Fatalf("GET instance: %d %v", code, inst)
	}

	// The control plane: one Runtime CR and one Kyma CR as specified.
	var rts infrastructuremanager.RuntimeList
	if err := s.kcp.List(ctx, &rts, client.InNamespace(kcpNS), client.MatchingLabels{"kyma-project.io/instance-id": instanceID}); err != nil {
		t.Fatal(err)
	}
	if len(rts.Items) != 1 {
		t.Fatalf("want one Runtime CR, got %d", len(rts.Items))
	}
	rt := rts.Items[0]
	runtimeID := rt.Labels[controlplane.LabelRuntimeID]
	w := rt.Spec.Shoot.Provider.Workers
	if rt.Spec.Shoot.Provider.Type != "azure" || rt.Spec.Shoot.Region != "westeurope" || rt.Spec.Shoot.PlatformRegion != "cf-eu20" ||
		len(w) != 1 || w[0].Machine.Type != "Standard_D4s_v5" || w[0].Minimum != 3 || w[0].Maximum != 5 ||
		rt.Spec.Shoot.SecretBindingName == "" || rt.Spec.Shoot.Purpose != "development" ||
		len(rt.Spec.Security.Administrators) != 1 || rt.Spec.Security.Administrators[0] != "owner@example.com" {
		t.Fatalf("Runtime CR spec not as requested: %+v", rt.Spec)
	}
	k := &kyma.Kyma{}
	if err := s.kcp.Get(ctx, client.ObjectKey{Namespace: kcpNS, Name: strings.ToLower(runtimeID)}, k); err != nil {
		t.Fatalf("Kyma CR: %v", err)
	}
	for label, want := range map[string]string{
		"kyma-project.io/instance-id": instanceID, "kyma-project.io/runtime-id": runtimeID,
		"kyma-project.io/global-account-id": "ga-e2e", "kyma-project.io/subaccount-id": "sa-e2e",
		"kyma-project.io/broker-plan-id": azurePlanID, "kyma-project.io/broker-plan-name": "azure",
		"kyma-project.io/platform-region": "cf-eu20", "operator.kyma-project.io/managed-by": "lifecycle-manager",
	} {
		if k.Labels[label] != want {
			t.Errorf("Kyma CR label %s = %q, want %q", label, k.Labels[label], want)
		}
	}
	if len(k.Spec.Modules) != 1 || k.Spec.Modules[0].Name != "btp-operator" || k.Spec.Channel != "regular" {
		t.Errorf("Kyma CR spec: %+v", k.Spec)
	}

	// The operators' listing as upstream's tools read it: the Runtime CR
	// itself (runtime_config=true, from the control plane), the account
	// it was created with, and the platform's context.
	listed := runtimeListing(t, s, instanceID)
	rtCR, _ := listed["runtimeConfig"].(map[string]any)
	meta, _ := rtCR["metadata"].(map[string]any)
	crSpec, _ := rtCR["spec"].(map[string]any)
	shootSpec, _ := crSpec["shoot"].(map[string]any)
	if meta["name"] != rt.Name || meta["uid"] != string(rt.UID) || shootSpec["region"] != "westeurope" || meta["managedFields"] != nil {
		t.Errorf("runtimeConfig is not the Runtime CR %s (without managedFields): %v", rt.Name, rtCR)
	}
	if listed["subscriptionSecretName"] != rt.Spec.Shoot.SecretBindingName || listed["subscriptionGlobalAccountID"] != "ga-e2e" ||
		listed["licenseType"] != nil {
		t.Errorf("listing: subscriptionSecretName %v (want %s), subscriptionGlobalAccountID %v, licenseType %v",
			listed["subscriptionSecretName"], rt.Spec.Shoot.SecretBindingName, listed["subscriptionGlobalAccountID"], listed["licenseType"])
	}

	// The pool: the tenant's account carries its label.
	pool := poolAccount(t, s.kcp, rt.Spec.Shoot.SecretBindingName)
	if pool.Labels["tenantName"] != "ga-e2e" {
		t.Fatalf("pool binding labels: %v", pool.Labels)
	}
	// The infrastructure manager's Shoot uses the binding.
	shoot := &core.Shoot{}
	if err := s.kcp.Get(ctx, client.ObjectKey{Namespace: poolNS, Name: rt.Spec.Shoot.Name}, shoot); err != nil || shoot.BindingName() != pool.Name {
		t.Fatalf("Shoot %s: %v, binding %q; want %s", rt.Spec.Shoot.Name, err, shoot.BindingName(), pool.Name)
	}

	// The runtime: the sap-btp-manager Secret as BTP Manager needs it, the
	// BtpOperator CR, and BTP Manager's verdict.
	rc, err := runtimeclient.NewCache(s.kcp, controlplane.Namespace, s.scheme, runtimeclient.Bounds{}).Client(ctx, runtimeID)
	if err != nil {
		t.Fatal(err)
	}
	sec := &corev1.Secret{}
	if err := rc.Get(ctx, client.ObjectKey{Namespace: "kyma-system", Name: "sap-btp-manager"}, sec); err != nil {
		t.Fatalf("sap-btp-manager Secret: %v", err)
	}
	var keys []string
	for k, v := range sec.Data {
		if len(v) == 0 {
			t.Errorf("Secret key %s is empty", k)
		}
		keys = append(keys, k)
	}
	sort.Strings(keys)
	if strings.Join(keys, ",") != "clientid,clientsecret,cluster_id,sm_url,tokenurl" ||
		string(sec.Data["tokenurl"]) != "https://auth.example.com" || string(sec.Data["clientsecret"]) != "csecret" {
		t.Fatalf("Secret data keys %v", keys)
	}
	if sec.Labels["app.kubernetes.io/managed-by"] != "kcp-kyma-environment-broker" ||
		sec.Labels["app.kubernetes.io/watched-by"] != "kcp-kyma-environment-broker" {
		t.Fatalf("Secret labels %v", sec.Labels)
	}
	// The simulated Lifecycle Manager runs the same stand-in in the runtime:
	// two writers of the CR's status, so a conflict is retried, as BTP
	// Manager's controller would.
	if err := retry.RetryOnConflict(retry.DefaultBackoff, func() error { return btpstandin.Reconcile(ctx, rc) }); err != nil {
		t.Fatal(err)
	}
	cr := &btpmanager.BtpOperator{}
	if err := rc.Get(ctx, client.ObjectKey{Namespace: "kyma-system", Name: "btpoperator"}, cr); err != nil {
		t.Fatalf("BtpOperator CR: %v", err)
	}
	if cr.Status.State != btpmanager.StateReady {
		t.Fatalf("BTP Manager stand-in says %s: %+v", cr.Status.State, cr.Status.Conditions)
	}

	// Deprovisioning: succeeded, CRs gone, account dirty, instance gone.
	code, body = s.call(http.MethodDelete, "/oauth/v2/service_instances/"+instanceID+"?accepts_incomplete=true&service_id="+serviceID+"&plan_id="+azurePlanID, "")
	if code != http.StatusAccepted {
		t.Fatalf("deprovision: %d %v", code, body)
	}
	if state, desc := s.waitFor(instanceID, body["operation"].(string), 3*time.Minute); state != "succeeded" {
		t.Fatalf("deprovisioning ended %s: %s", state, desc)
	}
	if err := s.kcp.Get(ctx, client.ObjectKey{Namespace: kcpNS, Name: strings.ToLower(runtimeID)}, &infrastructuremanager.Runtime{}); !apierrors.IsNotFound(err) {
		t.Fatalf("Runtime CR still there: %v", err)
	}
	if err := s.kcp.Get(ctx, client.ObjectKey{Namespace: kcpNS, Name: strings.ToLower(runtimeID)}, &kyma.Kyma{}); !apierrors.IsNotFound(err) {
		t.Fatalf("Kyma CR still there: %v", err)
	}
	if err := s.kcp.Get(ctx, client.ObjectKeyFromObject(pool), pool); err != nil || pool.Labels["dirty"] != "true" {
		t.Fatalf("pool binding not dirty: %v %v", err, pool.Labels)
	}
	if err := s.kcp.Get(ctx, client.ObjectKeyFromObject(shoot), &core.Shoot{}); !apierrors.IsNotFound(err) {
		t.Fatalf("Shoot still there: %v", err)
	}
	if code, _ := s.call(http.MethodGet, "/oauth/v2/service_instances/"+instanceID, ""); code != http.StatusNotFound {
		t.Fatalf("GET after deprovisioning: %d", code)
	}
	// Archived, its Runtime CR gone: listed without runtimeConfig.
	if listed := runtimeListing(t, s, instanceID); listed["runtimeConfig"] != nil || status(listed)["state"] != "deprovisioned" {
		t.Errorf("archived runtime with runtime_config=true: %v", listed)
	}
	if code, _ := s.call(http.MethodDelete, "/oauth/v2/service_instances/"+instanceID+"?accepts_incomplete=true&service_id="+serviceID+"&plan_id="+azurePlanID, ""); code != http.StatusGone {
		t.Fatalf("DELETE after deprovisioning: %d", code)
	}
}

// runtimeListing is the instance's row of /runtimes with upstream's
// runtime_config=true.
func runtimeListing(t *testing.T, s *stack, instanceID string) map[string]any {
	t.Helper()
	code, body := s.call(http.MethodGet, "/runtimes?state=all&runtime_config=true&instance_id="+instanceID, "")
	data, _ := body["data"].([]any)
	if code != http.StatusOK || len(data) != 1 {
		t.Fatalf("GET /runtimes?runtime_config=true for %s: %d %v", instanceID, code, body)
	}
	return data[0].(map[string]any)
}
