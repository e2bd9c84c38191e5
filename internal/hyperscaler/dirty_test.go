package hyperscaler

import (
	"testing"
)

func TestMarkDirty(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		secrets []poolSecret
		// wantDirty is every secret's dirty label afterwards ("" for none).
		wantDirty map[string]string
	}{
		{
			name:      "tenant's secret marked",
			secrets:   []poolSecret{azureSecret("a-1", LabelTenantName, "ga-1"), azureSecret("a-2")},
			wantDirty: map[string]string{"a-1": "true", "a-2": ""},
		},
		{
			name:      "no secret is no error",
			secrets:   []poolSecret{azureSecret("a-1")},
			wantDirty: map[string]string{"a-1": ""},
		},
		{
			name: "other tenants, types and shared secrets left alone",
			secrets: []poolSecret{
				azureSecret("a-1", LabelTenantName, "ga-other"),
				secretOf(TypeGCP, "g-1", LabelTenantName, "ga-1"),
				azureSecret("s-1", LabelShared, "true", LabelTenantName, "ga-1"),
			},
			wantDirty: map[string]string{"a-1": "", "g-1": "", "s-1": ""},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			b := setup(t, nil, tt.secrets...)
			if err := b.pool.MarkDirty(t.Context(), azure, "ga-1"); err != nil {
				t.Fatalf("MarkDirty: %v", err)
			}
			labels := b.labelsOf(t)
			for name, want := range tt.wantDirty {
				if got := labels[name][LabelDirty]; got != want {
					t.Errorf("secret %s: dirty = %q, want %q", name, got, want)
				}
			}
		})
	}
}

func TestMarkDirtyIsIdempotentAndTheTenantGetsAFreshSecret(t *testing.T) {
	t.Parallel()
	b := setup(t, nil, azureSecret("a-1"), azureSecret("a-2"))
	ctx := t.Context()
	first, err := b.pool.Claim(ctx, azure, "ga-1")
	if err != nil {
		t.Fatalf("Claim: %v", err)
	}
	if err := b.pool.MarkDirty(ctx, azure, "ga-1"); err != nil {
		t.Fatalf("MarkDirty: %v", err)
	}
	s := b.object(t, first.Name)
	if s.Labels[LabelDirty] != "true" || s.Labels[LabelTenantName] != "ga-1" {
		t.Fatalf("after MarkDirty labels = %v, want dirty and still the tenant's", s.Labels)
	}
	// A step may run twice: the second call writes nothing.
	if err := b.pool.MarkDirty(ctx, azure, "ga-1"); err != nil {
		t.Fatalf("second MarkDirty: %v", err)
	}
	if rv := b.object(t, first.Name).ResourceVersion; rv != s.ResourceVersion {
		t.Errorf("second MarkDirty rewrote the secret: resourceVersion %s, was %s", rv, s.ResourceVersion)
	}
	next, err := b.pool.Claim(ctx, azure, "ga-1")
	if err != nil {
		t.Fatalf("Claim after MarkDirty: %v", err)
	}
	if next.Name == first.Name {
		t.Errorf("Claim after MarkDirty handed out the dirty secret %s again", next.Name)
	}
}

func TestMarkDirtyNeedsTypeAndTenant(t *testing.T) {
	t.Parallel()
	b := setup(t, nil)
	if err := b.pool.MarkDirty(t.Context(), azure, ""); err == nil {
		t.Error("MarkDirty with an empty tenant succeeded")
	}
}
