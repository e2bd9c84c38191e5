package kyma

import (
	"strings"
	"testing"
	"testing/fstest"

	"github.com/kyma-keb/keb/internal/controlplane"
	"github.com/kyma-keb/keb/resources"
)

func TestDefaultModulesFile(t *testing.T) {
	t.Parallel()
	m, err := loadDefaultModules(resources.Kyma, resources.ModulesFile)
	if err != nil {
		t.Fatal(err)
	}
	names := map[string]string{}
	for _, mod := range m {
		names[mod.Name] = mod.CustomResourcePolicy
	}
	for _, want := range []string{"btp-operator", "istio", "api-gateway"} {
		if names[want] != controlplane.CustomResourcePolicyCreateAndDelete {
			t.Errorf("default module %s: policy %q, want it listed with CreateAndDelete", want, names[want])
		}
	}
}

func TestLoadDefaultModulesRejects(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name, content, wantErr string
	}{
		{name: "no btp-operator", content: "modules:\n- name: istio\n", wantErr: "btp-operator is missing"},
		{name: "duplicate", content: "modules:\n- name: btp-operator\n- name: btp-operator\n", wantErr: "listed twice"},
		{name: "no name", content: "modules:\n- channel: fast\n", wantErr: "has no name"},
		{name: "bad policy", content: "modules:\n- name: btp-operator\n  customResourcePolicy: Keep\n", wantErr: "unknown customResourcePolicy"},
		{name: "unknown field", content: "modules:\n- name: btp-operator\n  version: 1\n", wantErr: "decoding"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			fsys := fstest.MapFS{"m.yaml": {Data: []byte(tc.content)}}
			_, err := loadDefaultModules(fsys, "m.yaml")
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("err = %v, want it to contain %q", err, tc.wantErr)
			}
		})
	}
}
