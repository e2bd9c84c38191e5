package hyperscaler

import (
	"errors"
	"reflect"
	"testing"
)

// upstreamSecret is a pool Secret labelled the way current upstream pools label them.
func upstreamSecret(typ, name string, kv ...string) poolSecret {
	l := map[string]string{LabelHyperscalerTypeUpstream: typ}
	for i := 0; i+1 < len(kv); i += 2 {
		l[kv[i]] = kv[i+1]
	}
	return poolSecret{name: name, labels: l}
}

// A pool mixing both spellings works as one pool: upstream's hyperscalerType/tenantName are read,
// a claim is written in the Secret's own spelling, and euAccess accounts are never handed out.
func TestUpstreamLabelNames(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	b := setup(t, nil,
		upstreamSecret(TypeAzure, "a-1", LabelEUAccess, "true"),
		upstreamSecret(TypeAzure, "a-2", LabelEUAccess, "false"),
		azureSecret("a-3"),
		upstreamSecret(TypeAzure, "a-4", LabelTenantNameUpstream, "ga-owner"),
		upstreamSecret(TypeAzure, "a-5", LabelShared, "true"),
	)
	got, err := b.pool.Claim(ctx, azure, "ga-1")
	if err != nil || got.Name != "a-2" {
		t.Fatalf("Claim = %+v, %v; want a-2 (a-1 is EU-access only)", got, err)
	}
	if l := b.labelsOf(t)["a-2"]; l[LabelTenantNameUpstream] != "ga-1" || l[LabelTenantName] != "" {
		t.Errorf("a-2 labels after the claim: %v, want tenantName=ga-1", l)
	}
	// An account claimed under upstream's label is the tenant's, in both directions.
	if got, err := b.pool.Claim(ctx, azure, "ga-owner"); err != nil || got.Name != "a-4" {
		t.Errorf("Claim for the owner of a-4 = %+v, %v", got, err)
	}
	if got, err := b.pool.Claim(ctx, azure, "ga-2"); err != nil || got.Name != "a-3" {
		t.Errorf("Claim for a new tenant = %+v, %v; want a-3", got, err)
	}
	if _, err := b.pool.Claim(ctx, azure, "ga-3"); !errors.Is(err, ErrNoAccount) {
		t.Errorf("Claim with only an EU-access account left: %v, want ErrNoAccount", err)
	}
	if got, err := b.pool.ClaimShared(ctx, azure); err != nil || got.Name != "a-5" {
		t.Errorf("ClaimShared = %+v, %v; want a-5", got, err)
	}
	if err := b.pool.MarkDirty(ctx, azure, "ga-1"); err != nil {
		t.Fatal(err)
	}
	if l := b.labelsOf(t)["a-2"]; l[LabelDirty] != "true" || l[LabelTenantNameUpstream] != "ga-1" {
		t.Errorf("a-2 after MarkDirty: %v", l)
	}

	census, err := b.pool.Census(ctx)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]map[string]int{TypeAzure: {"free": 1, "claimed": 2, "dirty": 1, "shared": 1}}
	if !reflect.DeepEqual(census, want) {
		t.Errorf("Census = %v, want %v", census, want)
	}
}

func TestReleaseRemovesEitherSpelling(t *testing.T) {
	t.Parallel()
	b := setup(t, nil, upstreamSecret(TypeAzure, "a-1", LabelTenantNameUpstream, "ga-1"))
	if err := b.pool.release(t.Context(), "a-1", "ga-1"); err != nil {
		t.Fatal(err)
	}
	if l := b.labelsOf(t)["a-1"]; l[LabelTenantNameUpstream] != "" || l[LabelTenantName] != "" {
		t.Errorf("labels after release: %v", l)
	}
}
