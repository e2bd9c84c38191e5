package hyperscaler

import (
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kyma-keb/keb/internal/gardener/core"
	"github.com/kyma-keb/keb/internal/gardener/security"
)

// Every pool kind works the same way: a claim labels the kind's object (never the Secret behind
// a binding), dirty marks it, Release frees it. Pools of labelled Secrets keep working behind
// APP_HAP_POOL_KIND=Secret.
func TestEveryPoolKind(t *testing.T) {
	t.Parallel()
	for _, kind := range Kinds {
		t.Run(string(kind), func(t *testing.T) {
			t.Parallel()
			ctx := t.Context()
			b := setupKind(t, kind, nil,
				upstreamSecret(TypeAWS, "aws-1"), upstreamSecret(TypeAWS, "aws-eu-1", LabelEUAccess, "true"))
			got, err := b.pool.Claim(ctx, Pool{Type: TypeAWS}, "ga-1")
			if err != nil || got.Name != "aws-1" {
				t.Fatalf("Claim = %+v, %v; want aws-1", got, err)
			}
			got, err = b.pool.Claim(ctx, Pool{Type: TypeAWS, EUAccess: true}, "ga-1")
			if err != nil || got.Name != "aws-eu-1" {
				t.Fatalf("EU Claim = %+v, %v; want aws-eu-1", got, err)
			}
			if l := b.labelsOf(t)["aws-1"]; l[LabelTenantNameUpstream] != "ga-1" {
				t.Fatalf("claimed %s labels %v, want tenantName=ga-1", kind, l)
			}
			if kind != KindSecret {
				// The Secret behind the binding is never touched.
				s := &metav1.PartialObjectMetadata{}
				s.SetGroupVersionKind(KindSecret.GroupVersionKind())
				if err := b.c.Get(ctx, client.ObjectKey{Namespace: b.ns, Name: "aws-1"}, s); err != nil || len(s.Labels) != 0 {
					t.Fatalf("the Secret behind the binding: %v labels %v", err, s.Labels)
				}
			}
			if err := b.pool.MarkDirty(ctx, Pool{Type: TypeAWS}, "ga-1"); err != nil {
				t.Fatal(err)
			}
			if l := b.labelsOf(t); l["aws-1"][LabelDirty] != "true" || l["aws-eu-1"][LabelDirty] != "" {
				t.Fatalf("after MarkDirty of the plain pool: %v", l)
			}
			if err := b.pool.Release(ctx, "aws-1"); err != nil {
				t.Fatal(err)
			}
			if l := b.labelsOf(t)["aws-1"]; l[LabelDirty] != "" || l[LabelTenantNameUpstream] != "" {
				t.Fatalf("released: %v", l)
			}
		})
	}
}

// keb's copies of Gardener's types refuse what Gardener's API server refuses, for the fields
// modelled: so the dev stack and the tests never accept a binding or Shoot a landscape would not.
func TestGardenerCRDsValidateLikeGardener(t *testing.T) {
	t.Parallel()
	c, err := apiClient()
	if err != nil {
		t.Fatal(err)
	}
	ns := setup(t, nil).ns
	ref := security.CredentialsReference{APIVersion: "v1", Kind: "Secret", Name: "s", Namespace: ns}
	binding := func(name string, edit func(*security.CredentialsBinding)) *security.CredentialsBinding {
		b := &security.CredentialsBinding{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
			Provider: security.Provider{Type: "aws"}, CredentialsRef: ref}
		if edit != nil {
			edit(b)
		}
		return b
	}
	tests := []struct {
		name    string
		obj     client.Object
		wantErr string // "" accepted
	}{
		{"a binding to a Secret", binding("ok", nil), ""},
		{"a binding to a WorkloadIdentity", binding("wi", func(b *security.CredentialsBinding) {
			b.CredentialsRef = security.CredentialsReference{APIVersion: "security.gardener.cloud/v1alpha1", Kind: "WorkloadIdentity", Name: "w", Namespace: ns}
		}), ""},
		{"no provider type", binding("np", func(b *security.CredentialsBinding) { b.Provider.Type = "" }), "provider.type"},
		{"two provider types", binding("tp", func(b *security.CredentialsBinding) { b.Provider.Type = "aws,gcp" }), "multiple providers specified"},
		{"a ConfigMap as credentials", binding("cm", func(b *security.CredentialsBinding) { b.CredentialsRef.Kind = "ConfigMap" }), "supported values"},
		{"no credentials namespace", binding("nn", func(b *security.CredentialsBinding) { b.CredentialsRef.Namespace = "" }), "credentialsRef.namespace"},
		{"a credentials name that is no DNS subdomain", binding("bad", func(b *security.CredentialsBinding) { b.CredentialsRef.Name = "Not_A_Name" }), "credentialsRef.name"},
		{"a SecretBinding without a Secret name", &core.SecretBinding{ObjectMeta: metav1.ObjectMeta{Name: "sb", Namespace: ns},
			SecretRef: core.SecretReference{Namespace: ns}}, "secretRef.name"},
		{"a Shoot naming both bindings", &core.Shoot{ObjectMeta: metav1.ObjectMeta{Name: "both", Namespace: ns},
			Spec: core.ShootSpec{CredentialsBindingName: ptr.To("a"), SecretBindingName: ptr.To("a"), Region: "r", Provider: core.ShootProvider{Type: "aws"}}},
			"is incompatible with spec.credentialsBindingName"},
		{"a Shoot without a region", &core.Shoot{ObjectMeta: metav1.ObjectMeta{Name: "noregion", Namespace: ns},
			Spec: core.ShootSpec{CredentialsBindingName: ptr.To("a"), Provider: core.ShootProvider{Type: "aws"}}}, "spec.region"},
	}
	for _, tt := range tests {
		err := c.Create(t.Context(), tt.obj)
		switch {
		case tt.wantErr == "" && err != nil:
			t.Errorf("%s: refused: %v", tt.name, err)
		case tt.wantErr != "" && (!apierrors.IsInvalid(err) || !strings.Contains(err.Error(), tt.wantErr)):
			t.Errorf("%s: %v, want Invalid naming %q", tt.name, err, tt.wantErr)
		}
	}
	// credentialsRef is immutable.
	b := &security.CredentialsBinding{}
	if err := c.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: "ok"}, b); err != nil {
		t.Fatal(err)
	}
	b.CredentialsRef.Name = "other"
	if err := c.Update(t.Context(), b); !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), "immutable") {
		t.Errorf("changing credentialsRef: %v, want refused as immutable", err)
	}
}
