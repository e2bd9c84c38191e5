package provisioning_test

import (
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kyma-keb/keb/internal/catalog"
	"github.com/kyma-keb/keb/internal/ias"
	"github.com/kyma-keb/keb/internal/iassim"
	"github.com/kyma-keb/keb/internal/overrides"
	"github.com/kyma-keb/keb/internal/process"
	"github.com/kyma-keb/keb/internal/process/processtest"
	"github.com/kyma-keb/keb/internal/process/provisioning"
	"github.com/kyma-keb/keb/internal/storage"
)

func iasStandIn(t *testing.T) (*iassim.Server, *ias.Client) {
	t.Helper()
	sim := iassim.New("keb", "s3cret", "corporate-idp")
	srv := httptest.NewServer(sim.Handler())
	t.Cleanup(srv.Close)
	return sim, ias.NewClient(ias.Config{URL: srv.URL, UserID: "keb", UserSecret: "s3cret", IdentityProvider: "corporate-idp"},
		srv.Client(), nil)
}

// iasOp is a provisioning whose overrides Secret exists in a namespace of
// its own, as the overrides step leaves it.
func iasOp(t *testing.T) (*process.Operation, client.Client, string) {
	t.Helper()
	c, ns := kcpClient(t), newNamespace(t)
	inst := processtest.Instance(t, catalog.AWSPlanID)
	inst.ShootName, inst.RuntimeID = "c-1a2b3c", "rt-"+inst.InstanceID[:8]
	op := processtest.Operation(storage.OperationTypeProvision, inst)
	op.Record.OverridesSecret = overrides.SecretName(inst.RuntimeID)
	if err := overrides.Store(t.Context(), c, ns, op.Record.OverridesSecret, nil,
		overrides.Overrides{Components: map[string]map[string]string{"monitoring": {"keep": "me"}}}); err != nil {
		t.Fatal(err)
	}
	return op, c, ns
}

func overridesData(t *testing.T, c client.Client, ns, name string) map[string][]byte {
	t.Helper()
	s := &corev1.Secret{}
	if err := c.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: name}, s); err != nil {
		t.Fatal(err)
	}
	return s.Data
}

// TestIASRegistration runs the step against the stand-in and a real API
// server: one service provider, configured as the contract says, whose
// client lands in the overrides Secret (and not in the record); a re-run
// after a crash creates no second one and rotates the secret; IAS down is
// retried, a refusal or a missing identity provider fails the provisioning.
func TestIASRegistration(t *testing.T) {
	t.Parallel()

	t.Run("registered once, rotated after a crash", func(t *testing.T) {
		t.Parallel()
		sim, client := iasStandIn(t)
		op, c, ns := iasOp(t)
		step := &provisioning.IASRegistration{IAS: client, KCP: c, Namespace: ns, IdentityProvider: "corporate-idp"}
		res, err := step.Run(t.Context(), op)
		processtest.MustOutcome(t, "first run", processtest.Done, res, err)
		name := ias.DisplayName(op.InstanceID)
		sp, ok := sim.ServiceProviders()[name]
		if !ok || len(sim.ServiceProviders()) != 1 {
			t.Fatalf("service providers %v, want one named %q", sim.ServiceProviders(), name)
		}
		if sp.NameID != "mail" || sp.DefaultIdP == "" || sp.DefaultAction != "Deny" ||
			!slices.Equal(sp.Rules, []string{"Allow:skr-monitoring-admin:Cloud", "Allow:skr-monitoring-viewer:Cloud"}) ||
			len(sp.AssertionAttributes) != 4 || len(sp.ClientSecrets) != 1 {
			t.Errorf("service provider %+v", sp)
		}
		data := overridesData(t, c, ns, op.Record.OverridesSecret)
		first := string(data["monitoring."+ias.OverrideClientSecret])
		if string(data["monitoring."+ias.OverrideClientID]) != sp.UserForRest || first != sp.Secrets[sp.ClientSecrets[0].ID] ||
			string(data["monitoring.keep"]) != "me" {
			t.Errorf("overrides %v, want the client %s and the stand-in's secret, the rest kept", data, sp.UserForRest)
		}
		if r := op.Record.IAS; r == nil || r.ServiceProviderID != sp.ID || r.ClientID != sp.UserForRest {
			t.Errorf("record %+v", r)
		}
		if j := processtest.MustJSON(t, op.Record); first == "" || strings.Contains(j, first) {
			t.Errorf("the client secret is in the record: %s", j)
		}
		// A crash before the checkpoint: the next run finds the provider.
		res, err = step.Run(t.Context(), op)
		processtest.MustOutcome(t, "re-run", processtest.Done, res, err)
		sp2 := sim.ServiceProviders()[name]
		again := string(overridesData(t, c, ns, op.Record.OverridesSecret)["monitoring."+ias.OverrideClientSecret])
		if len(sim.ServiceProviders()) != 1 || sp2.ID != sp.ID || len(sp2.ClientSecrets) != 1 || again == first ||
			again != sp2.Secrets[sp2.ClientSecrets[0].ID] {
			t.Errorf("after a re-run: %d providers, %+v, secret rotated %v", len(sim.ServiceProviders()), sp2, again != first)
		}
	})

	t.Run("IAS down, refusing, no identity provider", func(t *testing.T) {
		t.Parallel()
		sim, client := iasStandIn(t)
		op, c, ns := iasOp(t)
		step := &provisioning.IASRegistration{IAS: client, KCP: c, Namespace: ns, IdentityProvider: "corporate-idp"}
		sim.FailNext(1, http.StatusServiceUnavailable)
		if res, err := step.Run(t.Context(), op); err == nil {
			t.Errorf("503: %+v, no error to retry", res)
		}
		sim.FailNext(1, http.StatusForbidden)
		res, err := step.Run(t.Context(), op)
		processtest.MustOutcome(t, "403", processtest.Failure, res, err)
		step.IdentityProvider = "nope"
		res, err = step.Run(t.Context(), op)
		processtest.MustOutcome(t, "no identity provider", processtest.Failure, res, err)
		if _, ok := process.Step(step).(process.SkippableStep); ok {
			t.Errorf("the registration is skippable: upstream's failed the provisioning")
		}
	})
}

// TestIASType: the runtime's Grafana host and redirect on its service
// provider; the step is skippable, and a missing provider or a refusal
// skips it at once, IAS down is retried.
func TestIASType(t *testing.T) {
	t.Parallel()
	sim, client := iasStandIn(t)
	op, c, ns := iasOp(t)
	reg := &provisioning.IASRegistration{IAS: client, KCP: c, Namespace: ns, IdentityProvider: "corporate-idp"}
	step := &provisioning.IASType{IAS: client, ShootDomain: "kyma.example.com"}
	if _, ok := process.Step(step).(process.SkippableStep); !ok {
		t.Fatalf("IAS_Type is not skippable: upstream's never failed a provisioning")
	}
	res, err := step.Run(t.Context(), op)
	processtest.MustOutcome(t, "no service provider", processtest.Failure, res, err)
	res, err = reg.Run(t.Context(), op)
	processtest.MustOutcome(t, "registration", processtest.Done, res, err)
	sim.FailNext(1, http.StatusBadGateway)
	if _, err := step.Run(t.Context(), op); err == nil {
		t.Errorf("502: no error to retry")
	}
	res, err = step.Run(t.Context(), op)
	processtest.MustOutcome(t, "type", processtest.Done, res, err)
	sp := sim.ServiceProviders()[ias.DisplayName(op.InstanceID)]
	if sp.SSOType != "openIdConnect" || sp.SPName != "grafana.c-1a2b3c.kyma.example.com" ||
		!slices.Equal(sp.RedirectURIs, []string{"https://grafana.c-1a2b3c.kyma.example.com/login/generic_oauth"}) {
		t.Errorf("service provider %+v", sp)
	}
}

// TestIASStepsJoinOnlyWhenEnabled: without APP_IAS_URL, or with
// APP_IAS_DISABLED, the pipeline is keb's own; enabled, the registration
// follows the overrides before the cluster and the type ends it.
func TestIASStepsJoinOnlyWhenEnabled(t *testing.T) {
	t.Parallel()
	own := stepNames(provisioning.Deps{})
	d := provisioning.Deps{Config: provisioning.Config{IAS: ias.Config{URL: "https://ias.example.com", Disabled: true}}}
	if got := stepNames(d); !slices.Equal(got, own) {
		t.Errorf("IAS disabled: steps %v, want %v", got, own)
	}
	d.Config.IAS.Disabled = false
	got := stepNames(d)
	want := slices.Insert(slices.Clone(own), slices.Index(own, "create_runtime"), "ias_registration")
	want = append(want, "ias_type")
	if !slices.Equal(got, want) {
		t.Errorf("IAS enabled: steps %v, want %v", got, want)
	}
}
