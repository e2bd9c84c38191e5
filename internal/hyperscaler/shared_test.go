package hyperscaler

import (
	"context"
	"errors"
	"reflect"
	"slices"
	"testing"
)

func TestClaimShared(t *testing.T) {
	t.Parallel()
	errCount := errors.New("count failed")
	tests := []struct {
		name    string
		secrets []poolSecret
		usage   map[string]int
		// usageErr makes the counter fail.
		usageErr error
		want     string
		wantErr  error
	}{
		{
			name: "least used first",
			secrets: []poolSecret{
				azureSecret("s-1", LabelShared, "true"), azureSecret("s-2", LabelShared, "true"), azureSecret("s-3", LabelShared, "true"),
			},
			usage: map[string]int{"s-1": 5, "s-2": 1, "s-3": 3},
			want:  "s-2",
		},
		{
			name: "tie goes to the lowest name",
			secrets: []poolSecret{
				azureSecret("s-3", LabelShared, "true"), azureSecret("s-2", LabelShared, "true"), azureSecret("s-1", LabelShared, "true"),
			},
			usage: map[string]int{"s-1": 4, "s-2": 2, "s-3": 2},
			want:  "s-2",
		},
		{
			name:    "unassigned and dirty secrets are not shared",
			secrets: []poolSecret{azureSecret("a-1"), azureSecret("s-1", LabelShared, "true", LabelDirty, "true"), azureSecret("s-2", LabelShared, "true")},
			usage:   map[string]int{"s-1": 0, "s-2": 9},
			want:    "s-2",
		},
		{
			name:    "other type ignored",
			secrets: []poolSecret{secretOf(TypeGCP, "g-1", LabelShared, "true")},
			wantErr: ErrNoAccount,
		},
		{
			name:    "no shared secret",
			secrets: []poolSecret{azureSecret("a-1")},
			wantErr: ErrNoAccount,
		},
		{
			name:     "counter failure",
			secrets:  []poolSecret{azureSecret("s-1", LabelShared, "true")},
			usageErr: errCount,
			wantErr:  errCount,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			usage := func(_ context.Context, names []string) (map[string]int, error) {
				out := map[string]int{}
				for _, n := range names {
					if c, ok := tt.usage[n]; ok {
						out[n] = c
					}
				}
				return out, tt.usageErr
			}
			b := setup(t, usage, tt.secrets...)
			before := b.labelsOf(t)
			got, err := b.pool.ClaimShared(t.Context(), azure)
			if tt.wantErr != nil {
				if !errors.Is(err, tt.wantErr) {
					t.Fatalf("err = %v, want %v", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("ClaimShared: %v", err)
			}
			if want := (Account{Name: tt.want, Shared: true}); got != want {
				t.Errorf("ClaimShared = %+v, want %+v", got, want)
			}
			// Shared secrets are never claimed: nothing is labelled.
			after := b.labelsOf(t)
			for name, l := range before {
				if len(after[name]) != len(l) || after[name][LabelTenantName] != "" {
					t.Errorf("secret %s labels changed: %v -> %v", name, l, after[name])
				}
			}
		})
	}
}

func TestClaimSharedWithoutCounterPicksLowestName(t *testing.T) {
	t.Parallel()
	b := setup(t, nil, azureSecret("s-2", LabelShared, "true"), azureSecret("s-1", LabelShared, "true"))
	got, err := b.pool.ClaimShared(t.Context(), azure)
	if err != nil {
		t.Fatalf("ClaimShared: %v", err)
	}
	if want := (Account{Name: "s-1", Shared: true}); got != want {
		t.Errorf("ClaimShared = %+v, want %+v", got, want)
	}
}

// One count per claim, for every shared Secret of the type: a count per Secret
// made each claim cost as many usage reads as the shared pool has Secrets.
func TestClaimSharedCountsUsageOnceForAllSharedSecrets(t *testing.T) {
	t.Parallel()
	var calls [][]string
	usage := func(_ context.Context, names []string) (map[string]int, error) {
		calls = append(calls, slices.Clone(names))
		return map[string]int{"s-1": 2, "s-3": 1}, nil
	}
	b := setup(t, usage, azureSecret("s-3", LabelShared, "true"), azureSecret("s-1", LabelShared, "true"),
		azureSecret("s-2", LabelShared, "true"), azureSecret("a-1"))
	got, err := b.pool.ClaimShared(t.Context(), azure)
	if err != nil {
		t.Fatalf("ClaimShared: %v", err)
	}
	// s-2 is absent from the counts: nobody uses it.
	if want := (Account{Name: "s-2", Shared: true}); got != want {
		t.Errorf("ClaimShared = %+v, want %+v", got, want)
	}
	if want := [][]string{{"s-1", "s-2", "s-3"}}; !reflect.DeepEqual(calls, want) {
		t.Errorf("usage counted with %v, want one call with every shared secret %v", calls, want)
	}
}
