package overrides

import (
	"context"
	"errors"
	"maps"
	"reflect"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
)

// overrideLabels returns the override label plus extra key, value pairs.
func overrideLabels(kv ...string) map[string]string {
	l := map[string]string{LabelOverride: "true"}
	for i := 0; i+1 < len(kv); i += 2 {
		l[kv[i]] = kv[i+1]
	}
	return l
}

func configMap(name string, labels map[string]string, data map[string]string) *corev1.ConfigMap {
	return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels}, Data: data}
}

func secret(name string, labels map[string]string, data map[string]string) *corev1.Secret {
	s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels}, Data: map[string][]byte{}}
	for k, v := range data {
		s.Data[k] = []byte(v)
	}
	return s
}

func TestResolve(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		objs    []client.Object
		lite    bool
		want    Overrides
		wantErr bool
	}{
		{
			name: "global and component overrides",
			objs: []client.Object{
				configMap("global-overrides", overrideLabels(), map[string]string{"global.disableLegacyConnectivity": "true"}),
				configMap("core-overrides", overrideLabels(LabelComponent, "core"), map[string]string{"replicas": "2"}),
				configMap("istio-overrides", overrideLabels(LabelComponent, "istio"), map[string]string{"mtls": "strict"}),
			},
			want: Overrides{
				Global: map[string]string{"global.disableLegacyConnectivity": "true"},
				Components: map[string]map[string]string{
					"core":  {"replicas": "2"},
					"istio": {"mtls": "strict"},
				},
			},
		},
		{
			name: "secret values decoded",
			objs: []client.Object{
				// The seed's example: data database.password: YWRtaW4xMjMK.
				secret("core-overrides", overrideLabels(LabelComponent, "core"), map[string]string{"database.password": "admin123\n"}),
				secret("global-secret", overrideLabels(), map[string]string{"token": "s3cr3t"}),
			},
			want: Overrides{
				Global:     map[string]string{"token": "s3cr3t"},
				Components: map[string]map[string]string{"core": {"database.password": "admin123\n"}},
			},
		},
		{
			name: "unlabelled and not-true sources ignored",
			objs: []client.Object{
				configMap("plain", nil, map[string]string{"a": "1"}),
				configMap("off", map[string]string{LabelOverride: "false"}, map[string]string{"b": "2"}),
				secret("plain-secret", map[string]string{LabelComponent: "core"}, map[string]string{"c": "3"}),
			},
			want: Overrides{Global: map[string]string{}, Components: map[string]map[string]string{}},
		},
		{
			name: "default-for-lite applied to other plans",
			objs: []client.Object{
				configMap("global-overrides", overrideLabels(LabelDefaultForLite, "true"), map[string]string{"a": "1"}),
				secret("core-overrides", overrideLabels(LabelComponent, "core", LabelDefaultForLite, "true"), map[string]string{"b": "2"}),
			},
			want: Overrides{Global: map[string]string{"a": "1"}, Components: map[string]map[string]string{"core": {"b": "2"}}},
		},
		{
			name: "default-for-lite not applied to lite plans",
			objs: []client.Object{
				configMap("global-overrides", overrideLabels(LabelDefaultForLite, "true"), map[string]string{"a": "1"}),
				secret("core-overrides", overrideLabels(LabelComponent, "core", LabelDefaultForLite, "true"), map[string]string{"b": "2"}),
				configMap("for-all", overrideLabels(), map[string]string{"c": "3"}),
				secret("core-for-all", overrideLabels(LabelComponent, "core", LabelDefaultForLite, "false"), map[string]string{"d": "4"}),
			},
			lite: true,
			want: Overrides{Global: map[string]string{"c": "3"}, Components: map[string]map[string]string{"core": {"d": "4"}}},
		},
		{
			name: "later name wins, a secret after a config map of the same name",
			objs: []client.Object{
				configMap("b-overrides", overrideLabels(), map[string]string{"k": "from b", "only-b": "b"}),
				configMap("a-overrides", overrideLabels(), map[string]string{"k": "from a", "only-a": "a"}),
				secret("c-overrides", overrideLabels(LabelComponent, "core"), map[string]string{"k": "secret c"}),
				configMap("c-overrides", overrideLabels(LabelComponent, "core"), map[string]string{"k": "config map c"}),
			},
			want: Overrides{
				Global:     map[string]string{"k": "from b", "only-a": "a", "only-b": "b"},
				Components: map[string]map[string]string{"core": {"k": "secret c"}},
			},
		},
		{
			name: "binary config map data",
			objs: []client.Object{
				&corev1.ConfigMap{
					ObjectMeta: metav1.ObjectMeta{Name: "bin", Labels: overrideLabels()},
					BinaryData: map[string][]byte{"cert": []byte("PEM")},
				},
			},
			want: Overrides{Global: map[string]string{"cert": "PEM"}, Components: map[string]map[string]string{}},
		},
		{
			name:    "component named global rejected",
			objs:    []client.Object{configMap("bad", overrideLabels(LabelComponent, "global"), map[string]string{"a": "1"})},
			wantErr: true,
		},
		{
			name:    "component with a dot rejected",
			objs:    []client.Object{configMap("bad", overrideLabels(LabelComponent, "core.v2"), map[string]string{"a": "1"})},
			wantErr: true,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			c, ns := setup(t, tt.objs...)
			got, err := Resolve(t.Context(), c, ns, tt.lite)
			if (err != nil) != tt.wantErr {
				t.Fatalf("err = %v, wantErr %v", err, tt.wantErr)
			}
			if tt.wantErr {
				return
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("Resolve =\n%+v\nwant\n%+v", got, tt.want)
			}
		})
	}
}

func TestResolveReadsOnlyItsNamespace(t *testing.T) {
	t.Parallel()
	c, other := setup(t, configMap("global-overrides", overrideLabels(), map[string]string{"a": "1"}))
	_, ns := setup(t, configMap("global-overrides", overrideLabels(), map[string]string{"b": "2"}))
	got, err := Resolve(t.Context(), c, ns, false)
	if err != nil {
		t.Fatalf("Resolve: %v", err)
	}
	if want := map[string]string{"b": "2"}; !maps.Equal(got.Global, want) {
		t.Errorf("Resolve(%s).Global = %v, want %v (nothing from %s)", ns, got.Global, want, other)
	}
}

func TestResolveListErrors(t *testing.T) {
	t.Parallel()
	errBoom := errors.New("boom")
	tests := []struct {
		name string
		fail client.ObjectList
	}{
		{name: "config maps", fail: &corev1.ConfigMapList{}},
		{name: "secrets", fail: &corev1.SecretList{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			c := fake.NewClientBuilder().WithInterceptorFuncs(interceptor.Funcs{
				List: func(ctx context.Context, c client.WithWatch, list client.ObjectList, opts ...client.ListOption) error {
					if reflect.TypeOf(list) == reflect.TypeOf(tt.fail) {
						return errBoom
					}
					return c.List(ctx, list, opts...)
				},
			}).Build()
			if _, err := Resolve(t.Context(), c, "kcp-system", false); !errors.Is(err, errBoom) {
				t.Errorf("err = %v, want %v", err, errBoom)
			}
		})
	}
}
