package hyperscaler

import (
	"context"
	"errors"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
)

// The fake client only reaches the error branches the real apiserver won't produce on demand.
func TestPoolErrors(t *testing.T) {
	t.Parallel()
	errBoom := errors.New("boom")
	conflict := apierrors.NewConflict(schema.GroupResource{Resource: "secrets"}, "a-1", errors.New("changed"))
	failList := interceptor.Funcs{List: func(context.Context, client.WithWatch, client.ObjectList, ...client.ListOption) error {
		return errBoom
	}}
	failUpdate := func(err error) interceptor.Funcs {
		return interceptor.Funcs{Patch: func(context.Context, client.WithWatch, client.Object, client.Patch, ...client.PatchOption) error {
			return err
		}}
	}
	failGet := interceptor.Funcs{Get: func(context.Context, client.WithWatch, client.ObjectKey, client.Object, ...client.GetOption) error {
		return errBoom
	}}
	tests := []struct {
		name    string
		secrets []poolSecret
		funcs   interceptor.Funcs
		call    func(context.Context, *AccountPool) error
		// wantErr is matched with errors.Is; wantConflict instead asks for a wrapped 409.
		wantErr      error
		wantConflict bool
	}{
		{
			name:    "claim: listing fails",
			funcs:   failList,
			call:    claimAzure,
			wantErr: errBoom,
		},
		{
			name:    "claim: labelling fails",
			secrets: []poolSecret{azureSecret("a-1")},
			funcs:   failUpdate(errBoom),
			call:    claimAzure,
			wantErr: errBoom,
		},
		{
			name:         "claim: every candidate lost, every round",
			secrets:      []poolSecret{azureSecret("a-1"), azureSecret("a-2")},
			funcs:        failUpdate(conflict),
			call:         claimAzure,
			wantConflict: true,
		},
		{
			name:    "claim: releasing a duplicate fails",
			secrets: []poolSecret{azureSecret("a-1", LabelTenantName, "ga-1"), azureSecret("a-2", LabelTenantName, "ga-1")},
			funcs:   failGet,
			call:    claimAzure,
			wantErr: errBoom,
		},
		{
			name:  "claim shared: listing fails",
			funcs: failList,
			call: func(ctx context.Context, p *AccountPool) error {
				_, err := p.ClaimShared(ctx, azure)
				return err
			},
			wantErr: errBoom,
		},
		{
			name:    "mark dirty: listing fails",
			funcs:   failList,
			call:    markAzureDirty,
			wantErr: errBoom,
		},
		{
			name:    "mark dirty: labelling fails",
			secrets: []poolSecret{azureSecret("a-1", LabelTenantName, "ga-1")},
			funcs:   failUpdate(errBoom),
			call:    markAzureDirty,
			wantErr: errBoom,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var objs []client.Object
			for _, s := range tt.secrets {
				objs = append(objs, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: s.name, Namespace: "garden-test", Labels: s.labels}})
			}
			c := fake.NewClientBuilder().WithObjects(objs...).WithInterceptorFuncs(tt.funcs).Build()
			err := tt.call(t.Context(), NewAccountPool(c, KindSecret, "garden-test", nil))
			if tt.wantConflict {
				if !apierrors.IsConflict(err) {
					t.Fatalf("err = %v, want a conflict", err)
				}
				return
			}
			if !errors.Is(err, tt.wantErr) {
				t.Fatalf("err = %v, want %v", err, tt.wantErr)
			}
		})
	}
}

func claimAzure(ctx context.Context, p *AccountPool) error {
	_, err := p.Claim(ctx, azure, "ga-1")
	return err
}

func markAzureDirty(ctx context.Context, p *AccountPool) error {
	return p.MarkDirty(ctx, azure, "ga-1")
}
