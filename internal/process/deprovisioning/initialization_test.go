package deprovisioning_test

import (
	"encoding/json"
	"errors"
	"testing"

	"github.com/kyma-keb/keb/internal/process"
	"github.com/kyma-keb/keb/internal/process/deprovisioning"
	"github.com/kyma-keb/keb/internal/process/processtest"
	"github.com/kyma-keb/keb/internal/storage"
)

func TestInitialization(t *testing.T) {
	t.Parallel()
	full := process.Record{
		RuntimeID: "runtime-id-in-provisioning-data", ShootName: "c-abc1234", ClusterID: "cluster-1",
		KymaVersion: "2.20.0", Provider: "azure", Region: "westeurope", ProviderRegion: "westeurope",
		HyperscalerType: "azure", HyperscalerSecret: "az-7", OverridesSecret: "overrides-x",
		Components: []string{"istio"},
	}
	shared := process.Record{ShootName: "c-def5678", Provider: "azure", Region: "europe",
		HyperscalerType: "azure", HyperscalerSecret: "az-shared", HyperscalerShared: true}
	halted := process.Record{RuntimeID: "r", ClusterID: "c"} // halted right after naming the runtime
	tests := []struct {
		name string
		// prov is the provisioning's data (nil: no data); noProv: no provisioning found.
		prov    *process.Record
		rawData string // overrides prov with raw JSON
		noProv  bool
		provErr error
		want    processtest.Outcome
		// wantData is what the step records; RuntimeID always comes from the instance.
		wantData process.Record
	}{
		{name: "copies runtime and hyperscaler data from the provisioning", prov: &full, want: processtest.Done,
			wantData: process.Record{ShootName: "c-abc1234", Provider: "azure", Region: "westeurope",
				HyperscalerType: "azure", HyperscalerSecret: "az-7", OverridesSecret: "overrides-x"}},
		{name: "shared account stays marked shared", prov: &shared, want: processtest.Done,
			wantData: process.Record{ShootName: "c-def5678", Provider: "azure", Region: "europe",
				HyperscalerType: "azure", HyperscalerSecret: "az-shared", HyperscalerShared: true}},
		{name: "provisioning halted early: provider from the instance", prov: &halted, want: processtest.Done,
			wantData: process.Record{Provider: "azure"}},
		{name: "provisioning without data: provider from the instance", want: processtest.Done,
			wantData: process.Record{Provider: "azure"}},
		{name: "no provisioning at all: provider from the instance", noProv: true, want: processtest.Done,
			wantData: process.Record{Provider: "azure"}},
		{name: "corrupt provisioning data: temporary error", rawData: `{"shootName":`, want: processtest.Temporary},
		{name: "store unavailable: temporary error", provErr: errors.New("db down"), want: processtest.Temporary},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			op := newOp(t)
			store := &fakeStore{provErr: tc.provErr}
			if !tc.noProv {
				store.provisioning = storage.Operation{ID: "prov-1", InstanceID: op.InstanceID,
					Type: storage.OperationTypeProvision, State: storage.OperationSucceeded}
				if tc.prov != nil {
					raw, _ := json.Marshal(tc.prov)
					store.provisioning.Data = raw
				}
				if tc.rawData != "" {
					store.provisioning.Data = json.RawMessage(tc.rawData)
				}
			}
			step := &deprovisioning.Initialization{Store: store}
			res, err := step.Run(t.Context(), op)
			processtest.MustOutcome(t, "initialization", tc.want, res, err)
			if len(store.opTypesAsked) != 1 || store.opTypesAsked[0] != storage.OperationTypeProvision {
				t.Errorf("asked the store for %v, want one provision lookup", store.opTypesAsked)
			}
			if tc.want != processtest.Done {
				return
			}
			if op.Description == "" {
				t.Error("no description set")
			}
			want := tc.wantData
			// The instance row is the authority on the runtime ID.
			want.RuntimeID = op.Instance.RuntimeID
			if g, w := processtest.MustJSON(t, op.Record), processtest.MustJSON(t, want); g != w {
				t.Errorf("data:\n got %s\nwant %s", g, w)
			}
		})
	}
}
