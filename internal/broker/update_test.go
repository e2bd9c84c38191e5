package broker

import (
	"encoding/json"
	"errors"
	"net/http"
	"testing"
	"time"

	"github.com/pivotal-cf/brokerapi/v10/domain"

	"github.com/kyma-keb/keb/internal/catalog"
	"github.com/kyma-keb/keb/internal/storage"
)

const (
	oldCreds = `{"clientid":"id-1","clientsecret":"s-1","sm_url":"https://sm.example.com","url":"https://auth.example.com"}`
	newCreds = `{"clientid":"id-2","clientsecret":"s-2","sm_url":"https://sm.example.com","url":"https://auth.example.com"}`
)

// TestUpdate drives Update through every decision it makes on the stored
// instance, with a fake store that calls decide as ChangeInstance would.
func TestUpdate(t *testing.T) {
	t.Parallel()
	expired := time.Date(2026, 10, 1, 0, 0, 0, 0, time.UTC)
	inst := func(state storage.RuntimeState) storage.Instance {
		i := storedAzure()
		i.State, i.Credentials, i.DashboardURL = state, []byte(oldCreds), "https://console.c-1.example.com"
		i.Context = json.RawMessage(`{"globalaccount_id":"ga-1","subaccount_id":"sa-1","user_id":"u","license_type":"X"}`)
		return i
	}
	running := opOf("op-running", storage.OperationTypeProvision, storage.OperationInProgress)
	tests := []struct {
		name       string
		inst       storage.Instance
		running    *storage.Operation
		details    domain.UpdateDetails
		wantStatus int                   // failure status; 0: success
		wantKey    string                // failure key
		wantOp     storage.OperationType // type of the started operation; "": none (200)
		wantTemp   bool
		wantCreds  bool // new credentials stored
		wantCtx    string
		// wantRequest is the started update's request: plan name and parameters.
		wantRequest *storage.UpdateRequest
	}{
		{name: "active false suspends", inst: inst(storage.RuntimeSucceeded),
			details: upd(`{"globalaccount_id":"ga-1","active":false}`, ""), wantOp: storage.OperationTypeDeprovision, wantTemp: true,
			wantCtx: `{"active":false,"globalaccount_id":"ga-1","license_type":"X","subaccount_id":"sa-1","user_id":"u"}`},
		{name: "active false on a suspended instance: nothing to run", inst: inst(storage.RuntimeSuspended),
			details: upd(`{"active":false}`, "")},
		{name: "active true resumes a suspended instance", inst: inst(storage.RuntimeSuspended),
			details: upd(`{"active":true}`, ""), wantOp: storage.OperationTypeProvision},
		{name: "active true on a running instance: nothing to run", inst: inst(storage.RuntimeSucceeded),
			details: upd(`{"active":true}`, "")},
		{name: "an expired instance is not resumed", inst: func() storage.Instance {
			i := inst(storage.RuntimeSuspended)
			i.ExpiredAt = &expired
			return i
		}(), details: upd(`{"active":true}`, ""), wantStatus: http.StatusUnprocessableEntity, wantKey: "InstanceExpired"},
		{name: "new credentials are pushed to a running runtime", inst: inst(storage.RuntimeSucceeded),
			details: upd(`{"sm_operator_credentials":`+newCreds+`}`, ""), wantOp: storage.OperationTypeUpdate, wantCreds: true},
		{name: "same credentials: nothing to run", inst: inst(storage.RuntimeSucceeded),
			details: upd(`{"sm_operator_credentials":`+oldCreds+`}`, "")},
		{name: "new credentials of a suspended instance are kept for its resumption", inst: inst(storage.RuntimeSuspended),
			details: upd(`{"sm_operator_credentials":`+newCreds+`}`, ""), wantCreds: true},
		{name: "resume with new credentials stores them, then provisions", inst: inst(storage.RuntimeSuspended),
			details: upd(`{"active":true,"sm_operator_credentials":`+newCreds+`}`, ""), wantOp: storage.OperationTypeProvision, wantCreds: true},
		{name: "incomplete credentials are a 400 naming the fields", inst: inst(storage.RuntimeSucceeded),
			details: upd(`{"sm_operator_credentials":{"clientid":"x"}}`, ""), wantStatus: http.StatusBadRequest, wantKey: "BadRequest"},
		{name: "new parameters start an update, recorded only by it", inst: inst(storage.RuntimeSucceeded),
			details: upd(`{}`, `{"autoScalerMax":5}`), wantOp: storage.OperationTypeUpdate,
			wantRequest: &storage.UpdateRequest{PlanName: catalog.AzurePlanName, Parameters: json.RawMessage(`{"name":"c1","autoScalerMax":5}`)}},
		{name: "parameters and credentials in one update", inst: inst(storage.RuntimeSucceeded),
			details: upd(`{"sm_operator_credentials":`+newCreds+`}`, `{"machineType":"Standard_D8s_v5"}`), wantOp: storage.OperationTypeUpdate, wantCreds: true,
			wantRequest: &storage.UpdateRequest{PlanName: catalog.AzurePlanName, Credentials: true,
				Parameters: json.RawMessage(`{"name":"c1","machineType":"Standard_D8s_v5"}`)}},
		{name: "recorded parameters again: nothing to run", inst: func() storage.Instance {
			i := inst(storage.RuntimeSucceeded)
			i.Parameters = json.RawMessage(`{"name":"c1","autoScalerMax":5}`)
			return i
		}(), details: upd(`{}`, `{"autoScalerMax":5}`)},
		{name: "empty parameters are no change", inst: inst(storage.RuntimeSucceeded),
			details: upd(`{"active":true}`, `{}`)},
		{name: "parameters of a suspended runtime are refused", inst: inst(storage.RuntimeSuspended),
			details: upd(`{}`, `{"autoScalerMax":5}`), wantStatus: http.StatusUnprocessableEntity, wantKey: "UpdateNotSupported"},
		{name: "parameters with a suspension are refused", inst: inst(storage.RuntimeSucceeded),
			details: upd(`{"active":false}`, `{"autoScalerMax":5}`), wantStatus: http.StatusUnprocessableEntity, wantKey: "UpdateNotSupported"},
		{name: "a fixed parameter is a 400", inst: inst(storage.RuntimeSucceeded),
			details: upd(`{}`, `{"region":"westeurope"}`), wantStatus: http.StatusBadRequest, wantKey: "BadRequest"},
		{name: "crossed autoscaler bounds are a 400", inst: inst(storage.RuntimeSucceeded),
			details: upd(`{}`, `{"autoScalerMax":3,"autoScalerMin":4}`), wantStatus: http.StatusBadRequest, wantKey: "BadRequest"},
		{name: "a plan not in upgradableToPlans is a 400", inst: inst(storage.RuntimeSucceeded),
			details:    func() domain.UpdateDetails { d := upd(`{}`, ""); d.PlanID = catalog.AWSPlanID; return d }(),
			wantStatus: http.StatusBadRequest, wantKey: "BadRequest"},
		{name: "trial to aws", inst: func() storage.Instance {
			i := inst(storage.RuntimeSucceeded)
			i.PlanID, i.PlanName, i.ProviderRegion = catalog.TrialPlanID, catalog.TrialPlanName, "westeurope"
			return i
		}(), details: func() domain.UpdateDetails { d := upd(`{}`, ""); d.PlanID = catalog.AWSPlanID; return d }(),
			wantOp:      storage.OperationTypeUpdate,
			wantRequest: &storage.UpdateRequest{PlanName: catalog.AWSPlanName, Parameters: json.RawMessage(`{"name":"c1","region":"eu-central-1"}`)}},
		{name: "moving to another global account is refused", inst: inst(storage.RuntimeSucceeded),
			details: upd(`{"globalaccount_id":"ga-2"}`, ""), wantStatus: http.StatusUnprocessableEntity, wantKey: "UpdateNotSupported"},
		{name: "another operation runs: ConcurrencyError", inst: inst(storage.RuntimeProvisioning), running: &running,
			details: upd(`{"active":false}`, ""), wantStatus: http.StatusUnprocessableEntity, wantKey: "ConcurrencyError"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var change storage.InstanceChange
			var decided bool
			b, _ := newTestBroker(t, &fakeStore{changeInstance: func(id string, decide func(storage.Instance, *storage.Operation) (storage.InstanceChange, error)) error {
				if id != "inst-1" {
					t.Errorf("changed instance %s", id)
				}
				c, err := decide(tc.inst, tc.running)
				change, decided = c, err == nil
				return err
			}})
			spec, err := b.Update(t.Context(), "inst-1", tc.details, true)
			if tc.wantStatus != 0 {
				if f := asFailure(t, err); f.status != tc.wantStatus || f.key != tc.wantKey {
					t.Errorf("got %+v, want %d %s", f, tc.wantStatus, tc.wantKey)
				}
				if decided {
					t.Errorf("a refused update wrote %+v", change)
				}
				return
			}
			if err != nil {
				t.Fatalf("Update: %v", err)
			}
			switch {
			case tc.wantOp == "" && (spec.IsAsync || change.Operation != nil):
				t.Errorf("started %+v (async %v), want nothing to run", change.Operation, spec.IsAsync)
			case tc.wantOp != "" && change.Operation == nil:
				t.Fatalf("no operation started, want %s", tc.wantOp)
			case tc.wantOp != "":
				op := change.Operation
				if op.Type != tc.wantOp || op.Temporary != tc.wantTemp || !op.InProgress() || op.InstanceID != "inst-1" {
					t.Errorf("started %+v, want %s temporary=%v", op, tc.wantOp, tc.wantTemp)
				}
				if !spec.IsAsync || spec.OperationData != op.ID {
					t.Errorf("answer %+v, want 202 with operation %s", spec, op.ID)
				}
			}
			if tc.wantRequest != nil {
				r := change.Operation.Request
				if r == nil || r.PlanName != tc.wantRequest.PlanName || string(r.Parameters) != string(tc.wantRequest.Parameters) ||
					r.Credentials != tc.wantRequest.Credentials {
					t.Errorf("request %+v, want %+v", r, tc.wantRequest)
				}
			}
			if got := change.Credentials != nil; got != tc.wantCreds {
				t.Errorf("credentials stored: %v, want %v", got, tc.wantCreds)
			}
			if tc.wantCreds && !sameCredentials(change.Credentials, mustCreds(t, newCreds)) {
				t.Errorf("stored credentials %s, want %s", change.Credentials, newCreds)
			}
			if tc.wantCtx != "" && string(change.Context) != tc.wantCtx {
				t.Errorf("stored context %s, want %s", change.Context, tc.wantCtx)
			}
			if json.Valid(change.Context) && string(change.Context) != "" {
				var c map[string]any
				_ = json.Unmarshal(change.Context, &c)
				if _, ok := c["sm_operator_credentials"]; ok {
					t.Error("credentials stored in the plain context")
				}
			}
		})
	}
}

func TestUpdateNeedsAsync(t *testing.T) {
	t.Parallel()
	b, _ := newTestBroker(t, &fakeStore{})
	_, err := b.Update(t.Context(), "inst-1", upd(`{"active":false}`, ""), false)
	if f := asFailure(t, err); f.status != http.StatusUnprocessableEntity || f.key != "AsyncRequired" {
		t.Errorf("got %+v, want 422 AsyncRequired", f)
	}
}

func TestUpdateUnknownInstance(t *testing.T) {
	t.Parallel()
	b, _ := newTestBroker(t, &fakeStore{changeInstance: func(string, func(storage.Instance, *storage.Operation) (storage.InstanceChange, error)) error {
		return storage.ErrNotFound
	}})
	_, err := b.Update(t.Context(), "inst-1", upd(`{"active":false}`, ""), true)
	if f := asFailure(t, err); f.status != http.StatusNotFound {
		t.Errorf("got %+v, want 404", f)
	}
	b, _ = newTestBroker(t, &fakeStore{changeInstance: func(string, func(storage.Instance, *storage.Operation) (storage.InstanceChange, error)) error {
		return errors.New("db down " + secretDetail)
	}})
	_, err = b.Update(t.Context(), "inst-1", upd(`{"active":false}`, ""), true)
	if f := asFailure(t, err); f.status != http.StatusInternalServerError {
		t.Errorf("got %+v, want 500", f)
	}
}

func upd(ctx, params string) domain.UpdateDetails {
	d := domain.UpdateDetails{ServiceID: catalog.ServiceID, PlanID: catalog.AzurePlanID, RawContext: json.RawMessage(ctx)}
	if params != "" {
		d.RawParameters = json.RawMessage(params)
	}
	return d
}

func mustCreds(t *testing.T, raw string) catalog.SMOperatorCredentials {
	t.Helper()
	var c catalog.SMOperatorCredentials
	if err := json.Unmarshal([]byte(raw), &c); err != nil {
		t.Fatal(err)
	}
	return c
}
