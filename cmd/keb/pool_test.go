package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

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
	c := kcpClient(t)
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
	if err := store.SetInstanceAccount(ctx, "inst-1", "az-used", false); err != nil {
		t.Fatal(err)
	}

	var out bytes.Buffer
	err := releaseAccount(ctx, pool, store, "az-used", &out)
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

// `keb pool rules` prints the rules in force, or the rule a provisioning matches and the selector
// of its pool, in every output format (golden files under testdata).
func TestPoolRules(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		golden string
		q      ruleQuery
		format string
	}{
		{"pool-rules.txt", ruleQuery{platformRegion: "cf-eu10"}, "table"},
		{"pool-rules-wide.txt", ruleQuery{platformRegion: "cf-eu10"}, "wide"},
		{"pool-rules.json", ruleQuery{platformRegion: "cf-eu10"}, "json"},
		{"pool-rules-match.txt", ruleQuery{plan: "aws", platformRegion: "cf-eu11", region: "eu-central-1"}, "table"},
		{"pool-rules-match-wide.txt", ruleQuery{plan: "trial", platformRegion: "cf-eu10", region: "westeurope"}, "wide"},
		{"pool-rules-match.yaml", ruleQuery{plan: "trial", platformRegion: "cf-eu10", region: "westeurope"}, "yaml"},
	} {
		var out bytes.Buffer
		if err := poolRules(config.Defaults, tc.q, poolListing{out: &out, o: listOutput{format: tc.format}}); err != nil {
			t.Fatal(err)
		}
		golden(t, tc.golden, out.String())
	}
	cfg := config.Defaults
	cfg.Engine.HAP.Rules = []string{"aws", "azure"}
	if err := poolRules(cfg, ruleQuery{plan: "gcp", platformRegion: "cf-us30", region: "us-central1"}, poolListing{out: io.Discard}); err == nil ||
		!strings.Contains(err.Error(), "no rule names it") {
		t.Errorf("rules without one for an enabled plan: %v", err)
	}
}

// `keb pool` in every output format, from fixed rows (golden files under testdata): AGE-style
// DIRTY, UPPER_SNAKE headers, -o json/yaml a page as `keb runtimes` prints.
func TestPoolOutputs(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC)
	since := now.Add(-90 * time.Second)
	rows := []poolAccount{
		{Name: "aws-dev-01", HyperscalerType: "aws", State: "claimed", TenantName: "ga-1", Instances: 1, Shoots: []string{"c-1a2b3c4"}},
		{Name: "aws-eu-01", HyperscalerType: "aws", State: "free", EUAccess: true, Shoots: []string{}},
		{Name: "azure-dev-01", HyperscalerType: "azure", State: "dirty", TenantName: "ga-2", Shoots: []string{}, DirtySince: &since},
		{Name: "azure-dev-02", HyperscalerType: "azure", State: "dirty", TenantName: "ga-3", Shoots: []string{}},
		{Name: "azure-shared-01", HyperscalerType: "azure", State: "shared", Instances: 2, Shoots: []string{"c-5d6e7f8", "c-9a0b1c2"}},
		{Name: "gcp-internal", HyperscalerType: "gcp", State: "claimed", Internal: true, TenantName: "ga-4", Shoots: []string{}},
	}
	for golden_, o := range map[string]listOutput{
		"pool.txt":                {format: "table"},
		"pool-no-headers.txt":     {format: "table", noHeaders: true},
		"pool-wide.txt":           {format: "wide"},
		"pool.json":               {format: "json"},
		"pool.yaml":               {format: "yaml"},
		"pool-custom-columns.txt": {format: "custom-columns=NAME:.name,INSTANCES:.instances,SINCE:.dirtySince"},
	} {
		var out bytes.Buffer
		if err := printAccounts(poolListing{out: &out, o: o, now: func() time.Time { return now }}, rows); err != nil {
			t.Fatal(err)
		}
		golden(t, golden_, out.String())
	}
}

// `keb pool` counts each live instance once, on the account it holds now: a trial provisioned on
// the shared account and moved to aws counts on its aws account only (issue 29: it was counted
// on the shared one too), on a real control plane and database.
func TestPoolCountsLiveInstancesAfterPlanMove(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	c := kcpClient(t)
	ns := "garden-" + uuid.NewString()[:8]
	if err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
		t.Fatal(err)
	}
	for name, labels := range map[string]map[string]string{
		"azure-shared-01": {hyperscaler.LabelHyperscalerTypeUpstream: hyperscaler.TypeAzure, hyperscaler.LabelShared: "true"},
		"aws-dev-01":      {hyperscaler.LabelHyperscalerTypeUpstream: hyperscaler.TypeAWS, hyperscaler.LabelTenantNameUpstream: "ga-1"},
	} {
		for _, o := range hyperscaler.AccountObjects(hyperscaler.KindCredentialsBinding, ns, name, hyperscaler.ProviderOf(labels[hyperscaler.LabelHyperscalerTypeUpstream]), labels, nil) {
			if err := c.Create(ctx, o); err != nil {
				t.Fatal(err)
			}
		}
	}
	pool := hyperscaler.NewAccountPool(c, hyperscaler.KindCredentialsBinding, ns, nil)
	store := storage.NewStore(pgtest.NewPool(t), nil, nil)
	inst := storage.Instance{InstanceID: "trial-1", GlobalAccountID: "ga-1", SubAccountID: "sa", UserID: "u",
		ServiceID: catalog.ServiceID, PlanID: catalog.TrialPlanID, PlanName: catalog.TrialPlanName, PlatformRegion: "cf-eu10",
		Provider: "azure", ProviderRegion: "westeurope", Parameters: []byte(`{}`), Context: []byte(`{}`)}
	if err := store.CreateProvisioning(ctx, inst, storage.Operation{ID: "op-1", InstanceID: "trial-1", Data: []byte(`{"hyperscalerSecret":"azure-shared-01"}`),
		Type: storage.OperationTypeProvision, State: storage.OperationInProgress, Deadline: time.Now().Add(time.Hour)}); err != nil {
		t.Fatal(err)
	}
	list := func() map[string]int {
		t.Helper()
		var out bytes.Buffer
		if err := listAccounts(ctx, pool, store, poolListing{out: &out, o: listOutput{format: "json"}, now: time.Now}); err != nil {
			t.Fatal(err)
		}
		var got page[poolAccount]
		if err := json.Unmarshal(out.Bytes(), &got); err != nil {
			t.Fatalf("%v:\n%s", err, out.String())
		}
		n := map[string]int{}
		for _, a := range got.Data {
			n[a.Name] = a.Instances
		}
		return n
	}
	// Provisioned as a trial on the shared account...
	if err := store.SetInstanceAccount(ctx, "trial-1", "azure-shared-01", false); err != nil {
		t.Fatal(err)
	}
	if got := list(); got["azure-shared-01"] != 1 || got["aws-dev-01"] != 0 {
		t.Errorf("trial on the shared account: instances %v, want azure-shared-01: 1", got)
	}
	// ...then moved to aws: the update records its new account.
	if err := store.SetInstanceAccount(ctx, "trial-1", "aws-dev-01", false); err != nil {
		t.Fatal(err)
	}
	if got := list(); got["azure-shared-01"] != 0 || got["aws-dev-01"] != 1 {
		t.Errorf("after the move to aws: instances %v, want aws-dev-01: 1, azure-shared-01: 0", got)
	}
}

// `keb pool summary` counts a fleet's pool per type and state (what is left
// to claim, what waits for cleaning), and --type/--state keep the rows asked for.
func TestPoolSummaryAndFilters(t *testing.T) {
	t.Parallel()
	accounts := []hyperscaler.AccountInfo{
		{Name: "aws-1", Type: "aws", State: hyperscaler.StateFree},
		{Name: "aws-2", Type: "aws", State: hyperscaler.StateFree, EUAccess: true},
		{Name: "aws-3", Type: "aws", State: hyperscaler.StateClaimed},
		{Name: "az-1", Type: "azure", State: hyperscaler.StateDirty},
		{Name: "az-2", Type: "azure", State: hyperscaler.StateShared},
		{Name: "az-3", Type: "azure", State: hyperscaler.StateClaimed},
		{Name: "az-4", Type: "azure", State: hyperscaler.StateClaimed},
	}
	var out bytes.Buffer
	if err := printPoolSummary(poolListing{out: &out, o: listOutput{format: "table"}}, summarise(accounts)); err != nil {
		t.Fatal(err)
	}
	want := "TYPE    FREE   EU_FREE   CLAIMED   SHARED   DIRTY   TOTAL\n" +
		"aws     2      1         1         0        0       3\n" +
		"azure   0      0         2         1        1       4\n"
	if out.String() != want {
		t.Errorf("keb pool summary:\n%s\nwant\n%s", out.String(), want)
	}
	for _, c := range []struct {
		filter poolFilter
		want   []string
	}{
		{poolFilter{}, []string{"aws-1", "aws-2", "aws-3", "az-1", "az-2", "az-3", "az-4"}},
		{poolFilter{hyperscalerType: "azure"}, []string{"az-1", "az-2", "az-3", "az-4"}},
		{poolFilter{state: "claimed"}, []string{"aws-3", "az-3", "az-4"}},
		{poolFilter{hyperscalerType: "aws", state: "free"}, []string{"aws-1", "aws-2"}},
		{poolFilter{hyperscalerType: "gcp"}, nil},
	} {
		var got []string
		for _, a := range accounts {
			if c.filter.keeps(a) {
				got = append(got, a.Name)
			}
		}
		if strings.Join(got, ",") != strings.Join(c.want, ",") {
			t.Errorf("%+v keeps %v, want %v", c.filter, got, c.want)
		}
	}
	if err := (poolFilter{state: "taken"}).check(); err == nil || !strings.Contains(err.Error(), "free, claimed, shared or dirty") {
		t.Errorf("--state taken: %v", err)
	}
}
