package hyperscaler

import (
	"errors"
	"testing"
	"time"
)

func TestAccountsAndRelease(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	b := setup(t, nil,
		azureSecret("az-free"),
		azureSecret("az-claimed", LabelTenantName, "ga-1"),
		azureSecret("az-shared", LabelShared, "true"),
		secretOf(TypeAWS, "aws-old-dirty", LabelTenantName, "ga-3", LabelDirty, "true"))
	if _, err := b.pool.Claim(ctx, azure, "ga-2"); err != nil { // takes az-free
		t.Fatal(err)
	}
	before := time.Now().Add(-time.Second)
	if err := b.pool.MarkDirty(ctx, azure, "ga-2"); err != nil {
		t.Fatal(err)
	}
	accounts, err := b.pool.Accounts(ctx)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]AccountInfo{}
	var order []string
	for _, a := range accounts {
		got[a.Name] = a
		order = append(order, a.Name)
	}
	if want := "[aws-old-dirty az-claimed az-free az-shared]"; fmtList(order) != want {
		t.Fatalf("order %v, want %s (by type, then name)", order, want)
	}
	if a := got["az-free"]; a.State != StateDirty || a.Tenant != "ga-2" || a.DirtySince == nil || a.DirtySince.Before(before) {
		t.Fatalf("az-free after MarkDirty: %+v; want dirty for ga-2 since now", a)
	}
	if a := got["az-claimed"]; a.State != StateClaimed || a.Tenant != "ga-1" {
		t.Fatalf("az-claimed: %+v", a)
	}
	if a := got["aws-old-dirty"]; a.State != StateDirty || a.DirtySince != nil {
		t.Fatalf("aws-old-dirty (marked before dirty-since was kept): %+v; want dirty since unknown", a)
	}
	if got["az-shared"].State != StateShared {
		t.Fatalf("az-shared: %+v", got["az-shared"])
	}

	// Released, the dirty account is free and the next tenant may claim it.
	if err := b.pool.Release(ctx, "az-free"); err != nil {
		t.Fatal(err)
	}
	s := b.object(t, "az-free")
	if _, ok := s.Labels[LabelTenantName]; ok || s.Labels[LabelDirty] != "" || s.Annotations[AnnotationDirtySince] != "" {
		t.Fatalf("released secret keeps labels %v annotations %v", s.Labels, s.Annotations)
	}
	if acc, err := b.pool.Claim(ctx, azure, "ga-4"); err != nil || acc.Name != "az-free" {
		t.Fatalf("claim after release: %+v, %v; want az-free", acc, err)
	}
	if err := b.pool.Release(ctx, "az-shared"); !errors.Is(err, ErrNotReleasable) {
		t.Fatalf("releasing a shared account: %v, want ErrNotReleasable", err)
	}
}

func fmtList(s []string) string {
	out := "["
	for i, x := range s {
		if i > 0 {
			out += " "
		}
		out += x
	}
	return out + "]"
}
