package kyma

import (
	"errors"
	"reflect"
	"strings"
	"testing"
	"testing/fstest"
)

func names(cs []Component) []string {
	out := make([]string, 0, len(cs))
	for _, c := range cs {
		out = append(out, c.Name)
	}
	return out
}

// TestComponentsEmbedded runs the shipped 2.x list: per-plan disabling, all-plans disabling and
// optional components.
func TestComponentsEmbedded(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name, version, plan string
		optional            []string
		want                []string
	}{
		{name: "aws, no optional", version: "2.4.1", plan: "aws",
			want: []string{"cluster-essentials", "istio", "certificates", "logging", "monitoring", "eventing", "ory", "api-gateway", "serverless", "application-connector", "cluster-users", "compass-runtime-agent"}},
		{name: "aws, kiali and tracing", version: "2.4.1", plan: "aws", optional: []string{"kiali", "tracing"},
			want: []string{"cluster-essentials", "istio", "certificates", "logging", "tracing", "kiali", "monitoring", "eventing", "ory", "api-gateway", "serverless", "application-connector", "cluster-users", "compass-runtime-agent"}},
		{name: "azure, kiali only", version: "v2.0.0", plan: "azure", optional: []string{"kiali", "unknown"},
			want: []string{"cluster-essentials", "istio", "certificates", "logging", "kiali", "monitoring", "eventing", "ory", "api-gateway", "serverless", "application-connector", "cluster-users", "compass-runtime-agent"}},
		{name: "azure_lite drops monitoring", version: "2.1", plan: "azure_lite", optional: []string{"tracing"},
			want: []string{"cluster-essentials", "istio", "certificates", "logging", "tracing", "eventing", "ory", "api-gateway", "serverless", "application-connector", "cluster-users", "compass-runtime-agent"}},
		{name: "trial: optional disabled for the plan too", version: "2.4.1", plan: "trial", optional: []string{"kiali", "tracing"},
			want: []string{"cluster-essentials", "istio", "certificates", "logging", "eventing", "ory", "api-gateway", "serverless", "application-connector", "cluster-users"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got, err := Components(tc.version, tc.plan, tc.optional)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(names(got), tc.want) {
				t.Errorf("components = %v\nwant %v", names(got), tc.want)
			}
			for _, c := range got {
				if c.Name == "service-catalog" {
					t.Error("service-catalog is disabled for all plans")
				}
				if c.Namespace == "" {
					t.Errorf("%s has no namespace", c.Name)
				}
			}
		})
	}
}

func TestComponentsFileSelection(t *testing.T) {
	t.Parallel()
	dir := fstest.MapFS{
		"2.x.yaml":   {Data: []byte("components:\n- {name: wildcard, namespace: ns}\n")},
		"2.4.1.yaml": {Data: []byte("components:\n- {name: exact, namespace: ns}\n- {name: off, namespace: ns, disabledForPlans: ['*']}\n")},
		"PR-7.yaml":  {Data: []byte("components:\n- {name: pr, namespace: ns}\n")},
		"3.x.yaml":   {Data: []byte("components:\n- {name: a, namespace: ns}\n- {name: a, namespace: ns}\n")},
		"4.x.yaml":   {Data: []byte("components:\n- {name: a}\n")},
	}
	cases := []struct {
		name, version string
		want          []string
		wantErr       string
		unknown       bool
	}{
		{name: "exact file wins", version: "2.4.1", want: []string{"exact"}},
		{name: "major wildcard", version: "2.4.2", want: []string{"wildcard"}},
		{name: "exact non-semver", version: "PR-7", want: []string{"pr"}},
		{name: "no file names the version", version: "5.0.0", wantErr: `"5.0.0"`, unknown: true},
		{name: "non-semver without file", version: "PR-8", wantErr: `"PR-8"`, unknown: true},
		{name: "path is not a version", version: "../2.x", wantErr: "not a valid version", unknown: true},
		{name: "empty version", version: "", wantErr: "not a valid version", unknown: true},
		{name: "duplicate component", version: "3.0.0", wantErr: "listed twice"},
		{name: "missing namespace", version: "4.0.0", wantErr: "has no namespace"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got, err := componentsFrom(dir, tc.version, "aws", nil)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err = %v, want it to contain %q", err, tc.wantErr)
				}
				if errors.Is(err, ErrUnknownKymaVersion) != tc.unknown {
					t.Errorf("errors.Is(err, ErrUnknownKymaVersion) = %v, want %v", !tc.unknown, tc.unknown)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(names(got), tc.want) {
				t.Errorf("components = %v, want %v", names(got), tc.want)
			}
		})
	}
}
