package main

import (
	"bytes"
	"context"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kyma-keb/keb/internal/app"
	"github.com/kyma-keb/keb/internal/catalog"
	"github.com/kyma-keb/keb/internal/config"
	"github.com/kyma-keb/keb/internal/hyperscaler"
	"github.com/kyma-keb/keb/internal/storage"
	"github.com/kyma-keb/keb/testing/pgtest"
)

// TestPoolReleaseRefusedWhileInUse: `keb pool release` leaves an account
// alone while a live instance runs on it, and frees it once the instance is
// gone, on a real control plane and database.
func TestPoolReleaseRefusedWhileInUse(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	scheme, err := app.Scheme()
	if err != nil {
		t.Fatal(err)
	}
	c, err := client.New(kcp.Config, client.Options{Scheme: scheme})
	if err != nil {
		t.Fatal(err)
	}
	ns := "garden-" + uuid.NewString()[:8]
	if err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
		t.Fatal(err)
	}
	for _, o := range hyperscaler.AccountObjects(hyperscaler.KindCredentialsBinding, ns, "az-used", "azure", map[string]string{
		hyperscaler.LabelHyperscalerTypeUpstream: hyperscaler.TypeAzure, hyperscaler.LabelTenantNameUpstream: "ga-1",
		hyperscaler.LabelDirty: "true"}, nil) {
		if err := c.Create(ctx, o); err != nil {
			t.Fatal(err)
		}
	}
	pool := hyperscaler.NewAccountPool(c, hyperscaler.KindCredentialsBinding, ns, nil)

	dbPool := pgtest.NewPool(t)
	store := storage.NewStore(dbPool, nil, nil)
	inst := storage.Instance{InstanceID: "inst-1", GlobalAccountID: "ga-1", SubAccountID: "sa", UserID: "u",
		ServiceID: catalog.ServiceID, PlanID: catalog.AzurePlanID, PlanName: catalog.AzurePlanName, PlatformRegion: "cf-eu10",
		Provider: "azure", ProviderRegion: "westeurope", Parameters: []byte(`{}`), Context: []byte(`{}`)}
	if err := store.CreateProvisioning(ctx, inst, storage.Operation{ID: "op-1", InstanceID: "inst-1",
		Type: storage.OperationTypeProvision, State: storage.OperationInProgress, Deadline: time.Now().Add(time.Hour)}); err != nil {
		t.Fatal(err)
	}
	// The provisioning has claimed the account (as hyperscaler secret
	// resolution records it).
	if _, err := dbPool.Exec(ctx, `UPDATE operations SET data = '{"hyperscalerSecret":"az-used"}' WHERE operation_id = 'op-1'`); err != nil {
		t.Fatal(err)
	}

	var out bytes.Buffer
	err = releaseAccount(ctx, pool, store, "az-used", &out)
	if err == nil || !strings.Contains(err.Error(), "1 live instance") {
		t.Fatalf("release while in use: %v (printed %q); want a refusal naming the live instance", err, out.String())
	}
	if a, err := pool.Account(ctx, "az-used"); err != nil || a.State != hyperscaler.StateDirty || a.Tenant != "ga-1" {
		t.Fatalf("after the refusal the account is %+v, %v; want it dirty for ga-1 as before", a, err)
	}

	if _, err := dbPool.Exec(ctx, `DELETE FROM instances WHERE instance_id = 'inst-1'`); err != nil {
		t.Fatal(err)
	}
	out.Reset()
	if err := releaseAccount(ctx, pool, store, "az-used", &out); err != nil {
		t.Fatalf("release with no live instance: %v", err)
	}
	if !strings.Contains(out.String(), "is free again") {
		t.Fatalf("release printed %q", out.String())
	}
	if a, err := pool.Account(ctx, "az-used"); err != nil || a.State != hyperscaler.StateFree {
		t.Fatalf("after the release the account is %+v, %v; want free", a, err)
	}
}

// `keb pool rules` prints the rule a provisioning matches and the selector of its pool, and the
// rules in force without --plan.
func TestPoolRules(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		q    ruleQuery
		want []string
	}{
		{ruleQuery{plan: "aws", platformRegion: "cf-eu11", region: "eu-central-1"},
			[]string{"rule 4: aws(PR=cf-eu11) -> EU", "selector: hyperscalerType=aws,euAccess=true"}},
		{ruleQuery{plan: "trial", platformRegion: "cf-eu10", region: "westeurope"},
			[]string{"trial -> S", "selector: hyperscalerType=azure,!euAccess,shared=true", "shared: yes"}},
		{ruleQuery{platformRegion: "cf-eu10"}, []string{"  1  azure\n", " 6  gcp(PR=cf-sa30) -> PR\n"}},
	} {
		var out bytes.Buffer
		if err := poolRules(config.Defaults, tc.q, &out); err != nil {
			t.Fatal(err)
		}
		for _, w := range tc.want {
			if !strings.Contains(out.String(), w) {
				t.Errorf("%+v: output %q lacks %q", tc.q, out.String(), w)
			}
		}
	}
	cfg := config.Defaults
	cfg.Engine.HAP.Rules = []string{"aws", "azure"}
	if err := poolRules(cfg, ruleQuery{plan: "gcp", platformRegion: "cf-us30", region: "us-central1"}, io.Discard); err == nil ||
		!strings.Contains(err.Error(), "no rule names it") {
		t.Errorf("rules without one for an enabled plan: %v", err)
	}
}
