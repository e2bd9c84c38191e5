package broker

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/pivotal-cf/brokerapi/v10/domain"

	"github.com/kyma-keb/keb/internal/catalog"
	"github.com/kyma-keb/keb/internal/logging"
	"github.com/kyma-keb/keb/internal/process"
	"github.com/kyma-keb/keb/internal/storage"
)

const testContext = `{"globalaccount_id":"ga-1","subaccount_id":"sa-1","user_id":"User@Example.com"}`

func provisionDetails(planID, params, rawContext string) domain.ProvisionDetails {
	d := domain.ProvisionDetails{ServiceID: catalog.ServiceID, PlanID: planID, RawContext: json.RawMessage(rawContext)}
	if params != "" {
		d.RawParameters = json.RawMessage(params)
	}
	return d
}

func azureDetails() domain.ProvisionDetails {
	return provisionDetails(catalog.AzurePlanID, `{"name":"c1"}`, testContext)
}

// storedAzure is the instance a Provision of azureDetails writes.
func storedAzure() storage.Instance {
	return storage.Instance{
		InstanceID: "inst-1", GlobalAccountID: "ga-1", SubAccountID: "sa-1", UserID: "user@example.com",
		ServiceID: catalog.ServiceID, PlanID: catalog.AzurePlanID, PlanName: catalog.AzurePlanName,
		PlatformRegion: "cf-eu10", Parameters: json.RawMessage(`{"name":"c1"}`), Context: json.RawMessage(`{}`),
	}
}

func opOf(id string, typ storage.OperationType, state storage.OperationState) storage.Operation {
	return storage.Operation{ID: id, InstanceID: "inst-1", Type: typ, State: state, Description: string(typ) + " is " + string(state)}
}

func TestUnexpectedStoreErrorsAreGeneric500s(t *testing.T) {
	t.Parallel()
	alreadyExists := func(storage.Instance, storage.Operation) error {
		return fmt.Errorf("inserting instance: %w", storage.ErrAlreadyExists)
	}
	provisioned := func(string) (storage.Instance, error) { return storedAzure(), nil }
	failDriver := func(string) (storage.Instance, error) { return storage.Instance{}, errDriver }
	tests := []struct {
		name  string
		store *fakeStore
		call  func(b *Broker) error
	}{
		{
			name:  "Provision: writing fails",
			store: &fakeStore{createProvisioning: func(storage.Instance, storage.Operation) error { return errDriver }},
			call: func(b *Broker) error {
				_, err := b.Provision(t.Context(), "inst-1", azureDetails(), true)
				return err
			},
		},
		{
			name: "Provision: wrapped driver error",
			store: &fakeStore{createProvisioning: func(storage.Instance, storage.Operation) error {
				return fmt.Errorf("inserting instance: %w", errDriver)
			}},
			call: func(b *Broker) error {
				_, err := b.Provision(t.Context(), "inst-1", azureDetails(), true)
				return err
			},
		},
		{
			name:  "Provision again: reading the instance fails",
			store: &fakeStore{createProvisioning: alreadyExists, instance: failDriver},
			call: func(b *Broker) error {
				_, err := b.Provision(t.Context(), "inst-1", azureDetails(), true)
				return err
			},
		},
		{
			name: "Provision again: reading the last operation fails",
			store: &fakeStore{createProvisioning: alreadyExists, instance: provisioned,
				lastOperation: func(string) (storage.Operation, error) { return storage.Operation{}, errDriver }},
			call: func(b *Broker) error {
				_, err := b.Provision(t.Context(), "inst-1", azureDetails(), true)
				return err
			},
		},
		{
			name: "Deprovision: writing fails",
			store: &fakeStore{createDeprovisioning: func(storage.Operation) (storage.Operation, bool, error) {
				return storage.Operation{}, false, errDriver
			}, instance: func(string) (storage.Instance, error) { return storage.Instance{}, storage.ErrNotFound }},
			call: func(b *Broker) error {
				_, err := b.Deprovision(t.Context(), "inst-1", domain.DeprovisionDetails{}, true)
				return err
			},
		},
		{
			name:  "Deprovision: reading the instance fails",
			store: &fakeStore{instance: failDriver},
			call: func(b *Broker) error {
				_, err := b.Deprovision(t.Context(), "inst-1", domain.DeprovisionDetails{}, true)
				return err
			},
		},
		{
			name:  "GetInstance: reading the instance fails",
			store: &fakeStore{instance: failDriver},
			call: func(b *Broker) error {
				_, err := b.GetInstance(t.Context(), "inst-1", domain.FetchInstanceDetails{})
				return err
			},
		},
		{
			name: "GetInstance: reading the last operation fails",
			store: &fakeStore{instance: provisioned,
				lastOperation: func(string) (storage.Operation, error) { return storage.Operation{}, errDriver }},
			call: func(b *Broker) error {
				_, err := b.GetInstance(t.Context(), "inst-1", domain.FetchInstanceDetails{})
				return err
			},
		},
		{
			name:  "LastOperation: reading the instance fails",
			store: &fakeStore{instance: failDriver},
			call: func(b *Broker) error {
				_, err := b.LastOperation(t.Context(), "inst-1", domain.PollDetails{OperationData: "op-1"})
				return err
			},
		},
		{
			name: "LastOperation: reading the named operation fails",
			store: &fakeStore{instance: provisioned,
				operation: func(string, string) (storage.Operation, error) { return storage.Operation{}, errDriver }},
			call: func(b *Broker) error {
				_, err := b.LastOperation(t.Context(), "inst-1", domain.PollDetails{OperationData: "op-1"})
				return err
			},
		},
		{
			name: "LastOperation: reading the newest operation fails",
			store: &fakeStore{instance: provisioned,
				lastOperation: func(string) (storage.Operation, error) { return storage.Operation{}, errDriver }},
			call: func(b *Broker) error {
				_, err := b.LastOperation(t.Context(), "inst-1", domain.PollDetails{})
				return err
			},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			b, hook := newTestBroker(t, tc.store)
			err := tc.call(b)
			f := asFailure(t, err)
			if f.status != http.StatusInternalServerError || f.key != "InternalError" {
				t.Errorf("status %d, error key %q; want 500 InternalError", f.status, f.key)
			}
			for _, leak := range []string{secretDetail, "pq:", "connection refused", "db.internal"} {
				if strings.Contains(f.description, leak) || strings.Contains(err.Error(), leak) {
					t.Errorf("response description %q leaks %q", f.description, leak)
				}
			}
			if f.description == "" {
				t.Error("empty description: the platform shows the user nothing")
			}
			// The cause is not lost: it is logged.
			logged := false
			for _, e := range hook.AllEntries() {
				if cause, ok := e.Data["error"].(error); ok && strings.Contains(cause.Error(), secretDetail) {
					logged = true
				}
			}
			if !logged {
				t.Error("the store error was not logged")
			}
		})
	}
}

func TestAsyncRequired(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		call func(b *Broker) error
	}{
		{name: "Provision", call: func(b *Broker) error {
			_, err := b.Provision(t.Context(), "inst-1", azureDetails(), false)
			return err
		}},
		{name: "Provision with an invalid request", call: func(b *Broker) error {
			_, err := b.Provision(t.Context(), "inst-1", provisionDetails("no-such-plan", "", ""), false)
			return err
		}},
		{name: "Deprovision", call: func(b *Broker) error {
			_, err := b.Deprovision(t.Context(), "inst-1", domain.DeprovisionDetails{}, false)
			return err
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			store := &fakeStore{}
			b, _ := newTestBroker(t, store)
			f := asFailure(t, tc.call(b))
			if f.status != http.StatusUnprocessableEntity || f.key != "AsyncRequired" {
				t.Errorf("status %d, key %q; want 422 AsyncRequired", f.status, f.key)
			}
			if calls := store.called(); len(calls) != 0 {
				t.Errorf("store was called: %v", calls)
			}
		})
	}
}

func TestProvisionWritesWhatThePlatformSent(t *testing.T) {
	t.Parallel()
	const secret = "the-client-secret"
	creds := `"sm_operator_credentials":{"clientid":"cid","clientsecret":"` + secret + `","sm_url":"https://sm","url":"https://uaa"}`
	tests := []struct {
		name        string
		ctx         context.Context
		details     domain.ProvisionDetails
		wantRegion  string
		wantParams  string
		wantContext map[string]any
		wantCreds   bool
	}{
		{
			name:        "default request region",
			ctx:         t.Context(),
			details:     provisionDetails(catalog.AzurePlanID, `{ "name" : "c1" }`, testContext),
			wantRegion:  "cf-eu10",
			wantParams:  `{"name":"c1"}`,
			wantContext: map[string]any{"globalaccount_id": "ga-1", "subaccount_id": "sa-1", "user_id": "User@Example.com"},
		},
		{
			name:        "region from the path",
			ctx:         ContextWithRegion(t.Context(), "cf-us10"),
			details:     azureDetails(),
			wantRegion:  "cf-us10",
			wantParams:  `{"name":"c1"}`,
			wantContext: map[string]any{"globalaccount_id": "ga-1", "subaccount_id": "sa-1", "user_id": "User@Example.com"},
		},
		{
			name: "credentials are kept apart from the context",
			ctx:  t.Context(),
			details: provisionDetails(catalog.AzurePlanID, `{"name":"c1"}`,
				`{"globalaccount_id":"ga-1","subaccount_id":"sa-1","user_id":"u","platform":"cf","x-extra":{"k":[1,2]},`+creds+`}`),
			wantRegion: "cf-eu10",
			wantParams: `{"name":"c1"}`,
			wantContext: map[string]any{"globalaccount_id": "ga-1", "subaccount_id": "sa-1", "user_id": "u",
				"platform": "cf", "x-extra": map[string]any{"k": []any{1.0, 2.0}}},
			wantCreds: true,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var gotInst storage.Instance
			var gotOp storage.Operation
			store := &fakeStore{createProvisioning: func(inst storage.Instance, op storage.Operation) error {
				gotInst, gotOp = inst, op
				return nil
			}}
			b, _ := newTestBroker(t, store)
			before := time.Now()
			spec, err := b.Provision(tc.ctx, "inst-1", tc.details, true)
			if err != nil {
				t.Fatalf("Provision: %v", err)
			}
			if !spec.IsAsync || spec.OperationData != gotOp.ID || gotOp.ID == "" {
				t.Errorf("spec %+v, stored operation %q", spec, gotOp.ID)
			}
			if gotOp.InstanceID != "inst-1" || gotOp.Type != storage.OperationTypeProvision || !gotOp.InProgress() || gotOp.Description == "" {
				t.Errorf("operation %+v", gotOp)
			}
			// The plan's defaults are resolved here, once, and stored with the
			// operation for provisioning to build the runtime with.
			var rec process.Record
			if err := json.Unmarshal(gotOp.Data, &rec); err != nil || rec.Provider != gotInst.Provider ||
				rec.ProviderRegion != gotInst.ProviderRegion || rec.Region != "eastus" || rec.MachineType == "" || rec.ZonesCount == 0 {
				t.Errorf("operation data %s (%v) does not hold the resolved defaults of instance in %s/%s",
					gotOp.Data, err, gotInst.Provider, gotInst.ProviderRegion)
			}
			if d := gotOp.Deadline.Sub(before); d < testTimeout || d > testTimeout+time.Minute {
				t.Errorf("deadline is %s after the request, want the operation timeout %s", d, testTimeout)
			}
			if gotInst.InstanceID != "inst-1" || gotInst.PlanID != catalog.AzurePlanID || gotInst.PlanName != catalog.AzurePlanName ||
				gotInst.ServiceID != catalog.ServiceID || gotInst.GlobalAccountID != "ga-1" || gotInst.SubAccountID != "sa-1" {
				t.Errorf("instance %+v", gotInst)
			}
			if gotInst.UserID != strings.ToLower(gotInst.UserID) {
				t.Errorf("user ID %q is not lower-cased", gotInst.UserID)
			}
			if gotInst.PlatformRegion != tc.wantRegion {
				t.Errorf("platform region %q, want %q", gotInst.PlatformRegion, tc.wantRegion)
			}
			if gotInst.Provider == "" || gotInst.ProviderRegion == "" {
				t.Errorf("provider %q / region %q not resolved", gotInst.Provider, gotInst.ProviderRegion)
			}
			if string(gotInst.Parameters) != tc.wantParams {
				t.Errorf("parameters stored as %s, want %s", gotInst.Parameters, tc.wantParams)
			}
			var storedCtx map[string]any
			if err := json.Unmarshal(gotInst.Context, &storedCtx); err != nil {
				t.Fatalf("stored context %s: %v", gotInst.Context, err)
			}
			if !reflect.DeepEqual(storedCtx, tc.wantContext) {
				t.Errorf("context stored as %v, want %v", storedCtx, tc.wantContext)
			}
			if strings.Contains(string(gotInst.Context), secret) {
				t.Errorf("stored context holds the credentials: %s", gotInst.Context)
			}
			if !tc.wantCreds {
				if gotInst.Credentials != nil {
					t.Errorf("credentials %q without any in the request", gotInst.Credentials)
				}
				return
			}
			var c map[string]any
			if err := json.Unmarshal(gotInst.Credentials, &c); err != nil || c["clientsecret"] != secret || c["clientid"] != "cid" {
				t.Errorf("credentials handed to the store: %s (%v)", gotInst.Credentials, err)
			}
		})
	}
}

func TestProvisionOfAnExistingInstance(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		details  domain.ProvisionDetails
		have     func() storage.Instance
		last     storage.Operation
		wantSpec domain.ProvisionedServiceSpec
		// wantStatus and wantDesc describe a failure instead.
		wantStatus int
		wantKey    string
		wantDesc   string
	}{
		{
			name:     "identical, provisioning in progress",
			details:  azureDetails(),
			have:     storedAzure,
			last:     opOf("op-running", storage.OperationTypeProvision, storage.OperationInProgress),
			wantSpec: domain.ProvisionedServiceSpec{IsAsync: true, OperationData: "op-running"},
		},
		{
			name:    "same parameters in another order and spacing",
			details: provisionDetails(catalog.AzurePlanID, "{\n  \"region\": \"westeurope\",\n  \"name\": \"c1\"\n}", testContext),
			have: func() storage.Instance {
				i := storedAzure()
				i.Parameters = json.RawMessage(`{"name":"c1","region":"westeurope"}`)
				return i
			},
			last:     opOf("op-running", storage.OperationTypeProvision, storage.OperationInProgress),
			wantSpec: domain.ProvisionedServiceSpec{IsAsync: true, OperationData: "op-running"},
		},
		{
			name:    "identical, provisioned",
			details: azureDetails(),
			have:    func() storage.Instance { i := storedAzure(); i.DashboardURL = "https://dash"; return i },
			last:    opOf("op-done", storage.OperationTypeProvision, storage.OperationSucceeded),
			wantSpec: domain.ProvisionedServiceSpec{AlreadyExists: true, DashboardURL: "https://dash",
				Metadata: domain.InstanceMetadata{Labels: map[string]string{"Name": "c1"}}},
		},
		{
			name:       "different parameters",
			details:    provisionDetails(catalog.AzurePlanID, `{"name":"c2"}`, testContext),
			have:       storedAzure,
			last:       opOf("op-running", storage.OperationTypeProvision, storage.OperationInProgress),
			wantStatus: http.StatusConflict, wantKey: "Conflict", wantDesc: "parameters",
		},
		{
			name:       "different subaccount",
			details:    provisionDetails(catalog.AzurePlanID, `{"name":"c1"}`, `{"globalaccount_id":"ga-1","subaccount_id":"sa-2","user_id":"u"}`),
			have:       storedAzure,
			last:       opOf("op-running", storage.OperationTypeProvision, storage.OperationInProgress),
			wantStatus: http.StatusConflict, wantKey: "Conflict", wantDesc: "context.subaccount_id",
		},
		{
			// OSB: an existing ID with different attributes is a 409
			// whatever the body holds, decided before validation.
			name:       "another plan, with parameters invalid for it",
			details:    provisionDetails(catalog.GCPPlanID, `{"name":"c1","region":"westeurope","machineType":"no-such-machine"}`, testContext),
			have:       storedAzure,
			last:       opOf("op-running", storage.OperationTypeProvision, storage.OperationInProgress),
			wantStatus: http.StatusConflict, wantKey: "Conflict", wantDesc: "plan_id",
		},
		{
			name:       "a context without the accounts",
			details:    provisionDetails(catalog.AzurePlanID, `{"name":"c1"}`, `{"user_id":"u"}`),
			have:       storedAzure,
			last:       opOf("op-running", storage.OperationTypeProvision, storage.OperationInProgress),
			wantStatus: http.StatusConflict, wantKey: "Conflict", wantDesc: "context.globalaccount_id",
		},
		{
			// Accepted before plans.yaml tightened the schema: the re-sent
			// request is the same request, and gets the same answer.
			name:    "identical to what was accepted, though invalid today",
			details: provisionDetails(catalog.AzurePlanID, `{"name":"c1","machineType":"no-such-machine"}`, testContext),
			have: func() storage.Instance {
				i := storedAzure()
				i.Parameters = json.RawMessage(`{"name":"c1","machineType":"no-such-machine"}`)
				return i
			},
			last:     opOf("op-running", storage.OperationTypeProvision, storage.OperationInProgress),
			wantSpec: domain.ProvisionedServiceSpec{IsAsync: true, OperationData: "op-running"},
		},
		{
			name:       "provisioning failed",
			details:    azureDetails(),
			have:       storedAzure,
			last:       opOf("op-failed", storage.OperationTypeProvision, storage.OperationFailed),
			wantStatus: http.StatusConflict, wantKey: "Conflict", wantDesc: "failed",
		},
		{
			name:       "update in progress",
			details:    azureDetails(),
			have:       storedAzure,
			last:       opOf("op-update", storage.OperationTypeUpdate, storage.OperationInProgress),
			wantStatus: http.StatusUnprocessableEntity, wantKey: "ConcurrencyError",
		},
		{
			name:       "deprovisioning in progress",
			details:    azureDetails(),
			have:       storedAzure,
			last:       opOf("op-deprov", storage.OperationTypeDeprovision, storage.OperationInProgress),
			wantStatus: http.StatusUnprocessableEntity, wantKey: "ConcurrencyError",
		},
		{
			name:       "deprovisioning finished",
			details:    azureDetails(),
			have:       storedAzure,
			last:       opOf("op-deprov", storage.OperationTypeDeprovision, storage.OperationSucceeded),
			wantStatus: http.StatusConflict, wantKey: "Conflict", wantDesc: "deprovisioned",
		},
		{
			name:    "suspended instance exists: 200",
			details: azureDetails(),
			have:    func() storage.Instance { i := storedAzure(); i.State = storage.RuntimeSuspended; return i },
			last: func() storage.Operation {
				o := opOf("op-suspend", storage.OperationTypeDeprovision, storage.OperationSucceeded)
				o.Temporary = true
				return o
			}(),
			wantSpec: domain.ProvisionedServiceSpec{AlreadyExists: true, Metadata: domain.InstanceMetadata{Labels: map[string]string{"Name": "c1"}}},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			store := &fakeStore{
				createProvisioning: func(storage.Instance, storage.Operation) error {
					return fmt.Errorf("inserting instance: %w", storage.ErrAlreadyExists)
				},
				instance:      func(string) (storage.Instance, error) { return tc.have(), nil },
				lastOperation: func(string) (storage.Operation, error) { return tc.last, nil },
			}
			b, _ := newTestBroker(t, store)
			spec, err := b.Provision(t.Context(), "inst-1", tc.details, true)
			if tc.wantStatus == 0 {
				if err != nil {
					t.Fatalf("Provision: %v", err)
				}
				if !reflect.DeepEqual(spec, tc.wantSpec) {
					t.Errorf("spec %+v, want %+v", spec, tc.wantSpec)
				}
				return
			}
			f := asFailure(t, err)
			if f.status != tc.wantStatus || f.key != tc.wantKey || !strings.Contains(f.description, tc.wantDesc) {
				t.Errorf("got %d %s %q, want %d %s mentioning %q", f.status, f.key, f.description, tc.wantStatus, tc.wantKey, tc.wantDesc)
			}
		})
	}
}

// An invalid body for a free instance ID is a 400; for the ID of a
// deprovisioned instance it is the 409 any PUT of that ID gets.
func TestProvisionInvalidBodyOfFreeOrArchivedID(t *testing.T) {
	t.Parallel()
	invalid := provisionDetails(catalog.GCPPlanID, `{"name":"c1","region":"westeurope"}`, testContext)
	for _, tc := range []struct {
		name       string
		archived   func(string) (storage.ArchivedInstance, error)
		wantStatus int
		wantKey    string
	}{
		{name: "free", wantStatus: http.StatusBadRequest, wantKey: "BadRequest"},
		{name: "deprovisioned", archived: func(id string) (storage.ArchivedInstance, error) {
			return storage.ArchivedInstance{InstanceID: id}, nil
		}, wantStatus: http.StatusConflict, wantKey: "Conflict"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			store := &fakeStore{
				instance: func(string) (storage.Instance, error) { return storage.Instance{}, storage.ErrNotFound },
				archived: tc.archived,
			}
			b, _ := newTestBroker(t, store)
			_, err := b.Provision(t.Context(), "inst-1", invalid, true)
			if f := asFailure(t, err); f.status != tc.wantStatus || f.key != tc.wantKey {
				t.Errorf("got %d %s %q, want %d %s", f.status, f.key, f.description, tc.wantStatus, tc.wantKey)
			}
			if calls := store.called(); !slices.Equal(calls, []string{"Instance", "Archived"}) {
				t.Errorf("store calls %v, want the lookups of a refused body only", calls)
			}
		})
	}
}

func TestProvisionTrialExists(t *testing.T) {
	t.Parallel()
	store := &fakeStore{createProvisioning: func(storage.Instance, storage.Operation) error {
		return fmt.Errorf("inserting instance: %w", storage.ErrOnePerGlobalAccount)
	}}
	b, _ := newTestBroker(t, store)
	_, err := b.Provision(t.Context(), "inst-1", provisionDetails(catalog.TrialPlanID, `{"name":"t"}`, testContext), true)
	f := asFailure(t, err)
	if f.status != http.StatusBadRequest || f.key != "TrialExists" {
		t.Errorf("got %d %s, want 400 TrialExists", f.status, f.key)
	}
	if calls := store.called(); !slices.Equal(calls, []string{"CreateProvisioning"}) {
		t.Errorf("store calls %v", calls)
	}
}

func TestDeprovision(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		result   func(op storage.Operation) (storage.Operation, bool, error)
		wantOpID string // "new" for the operation the broker made
		// wantStatus and wantKey describe a failure instead.
		wantStatus int
		wantKey    string
		wantEmpty  bool
	}{
		{
			name:     "accepted",
			result:   func(op storage.Operation) (storage.Operation, bool, error) { return op, true, nil },
			wantOpID: "new",
		},
		{
			name: "already running",
			result: func(storage.Operation) (storage.Operation, bool, error) {
				return opOf("op-first", storage.OperationTypeDeprovision, storage.OperationInProgress), false, nil
			},
			wantOpID: "op-first",
		},
		{
			name: "unknown or deleted instance",
			result: func(storage.Operation) (storage.Operation, bool, error) {
				return storage.Operation{}, false, storage.ErrNotFound
			},
			wantStatus: http.StatusGone, wantEmpty: true,
		},
		{
			name: "update in progress",
			result: func(storage.Operation) (storage.Operation, bool, error) {
				return storage.Operation{}, false, fmt.Errorf("x: %w", storage.ErrOperationInProgress)
			},
			wantStatus: http.StatusUnprocessableEntity, wantKey: "ConcurrencyError",
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var asked storage.Operation
			store := &fakeStore{createDeprovisioning: func(op storage.Operation) (storage.Operation, bool, error) {
				asked = op
				return tc.result(op)
			}, instance: func(string) (storage.Instance, error) {
				return storage.Instance{InstanceID: "inst-1", ServiceID: "svc", PlanID: "plan"}, nil
			}}
			b, _ := newTestBroker(t, store)
			before := time.Now()
			spec, err := b.Deprovision(t.Context(), "inst-1", domain.DeprovisionDetails{ServiceID: "svc", PlanID: "plan"}, true)
			if asked.InstanceID != "inst-1" || asked.Type != storage.OperationTypeDeprovision || !asked.InProgress() || asked.ID == "" {
				t.Errorf("broker asked for %+v", asked)
			}
			if d := asked.Deadline.Sub(before); d < testTimeout || d > testTimeout+time.Minute {
				t.Errorf("deadline is %s after the request, want %s", d, testTimeout)
			}
			if tc.wantStatus != 0 {
				f := asFailure(t, err)
				if f.status != tc.wantStatus || f.key != tc.wantKey || f.empty != tc.wantEmpty {
					t.Errorf("got %+v, want %d %q (empty body %v)", f, tc.wantStatus, tc.wantKey, tc.wantEmpty)
				}
				return
			}
			if err != nil {
				t.Fatalf("Deprovision: %v", err)
			}
			want := tc.wantOpID
			if want == "new" {
				want = asked.ID
			}
			if !spec.IsAsync || spec.OperationData != want {
				t.Errorf("spec %+v, want async with operation %s", spec, want)
			}
		})
	}
}

func TestLastOperationRetryAfterHint(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name        string
		inst        storage.Instance
		op          storage.Operation
		poll        domain.PollDetails
		wantState   domain.LastOperationState
		wantHint    time.Duration
		wantFailure int
	}{
		{
			name:      "provisioning in progress",
			inst:      storedAzure(),
			op:        opOf("op-1", storage.OperationTypeProvision, storage.OperationInProgress),
			poll:      domain.PollDetails{OperationData: "op-1"},
			wantState: domain.InProgress, wantHint: testRetryAfter,
		},
		{
			name:      "newest operation in progress",
			inst:      storedAzure(),
			op:        opOf("op-1", storage.OperationTypeDeprovision, storage.OperationInProgress),
			wantState: domain.InProgress, wantHint: testRetryAfter,
		},
		{
			name:      "provisioning succeeded",
			inst:      storedAzure(),
			op:        opOf("op-1", storage.OperationTypeProvision, storage.OperationSucceeded),
			poll:      domain.PollDetails{OperationData: "op-1"},
			wantState: domain.Succeeded,
		},
		{
			name:      "provisioning failed",
			inst:      storedAzure(),
			op:        opOf("op-1", storage.OperationTypeProvision, storage.OperationFailed),
			wantState: domain.Failed,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			store := &fakeStore{
				instance:      func(string) (storage.Instance, error) { return tc.inst, nil },
				lastOperation: func(string) (storage.Operation, error) { return tc.op, nil },
				operation: func(_, id string) (storage.Operation, error) {
					if id != tc.op.ID {
						return storage.Operation{}, storage.ErrNotFound
					}
					return tc.op, nil
				},
			}
			b, _ := newTestBroker(t, store)
			ctx, hints := ContextWithHints(t.Context())
			got, err := b.LastOperation(ctx, "inst-1", tc.poll)
			if hints.RetryAfter != tc.wantHint {
				t.Errorf("Retry-After hint %s, want %s", hints.RetryAfter, tc.wantHint)
			}
			if tc.wantFailure != 0 {
				if f := asFailure(t, err); f.status != tc.wantFailure {
					t.Errorf("status %d, want %d", f.status, tc.wantFailure)
				}
				return
			}
			if err != nil {
				t.Fatalf("LastOperation: %v", err)
			}
			if got.State != tc.wantState || got.Description != tc.op.Description {
				t.Errorf("got %+v, want state %q with the operation's description", got, tc.wantState)
			}
			// Without a hints carrier in the context the broker must not fail.
			if _, err := b.LastOperation(t.Context(), "inst-1", tc.poll); err != nil {
				t.Errorf("LastOperation without hints: %v", err)
			}
		})
	}
}

func TestLastOperationNotFound(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		store   *fakeStore
		poll    domain.PollDetails
		wantKey string
	}{
		{
			name:  "unknown instance",
			store: &fakeStore{instance: func(string) (storage.Instance, error) { return storage.Instance{}, storage.ErrNotFound }},
			poll:  domain.PollDetails{OperationData: "op-1"}, wantKey: "NotFound",
		},
		{
			name: "unknown operation",
			store: &fakeStore{
				instance:  func(string) (storage.Instance, error) { return storedAzure(), nil },
				operation: func(string, string) (storage.Operation, error) { return storage.Operation{}, storage.ErrNotFound },
			},
			poll: domain.PollDetails{OperationData: "op-other"}, wantKey: "NotFound",
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			b, _ := newTestBroker(t, tc.store)
			ctx, hints := ContextWithHints(t.Context())
			_, err := b.LastOperation(ctx, "inst-1", tc.poll)
			if f := asFailure(t, err); f.status != http.StatusNotFound || f.key != tc.wantKey {
				t.Errorf("got %+v, want 404 %s", f, tc.wantKey)
			}
			if hints.RetryAfter != 0 {
				t.Errorf("Retry-After hint %s on a 404", hints.RetryAfter)
			}
		})
	}
}

func TestGetInstance(t *testing.T) {
	t.Parallel()
	with := func(state storage.RuntimeState, resolved string) storage.Instance {
		i := storedAzure()
		i.State, i.DashboardURL = state, "https://console.c-1234567.kyma.example.com"
		if resolved != "" {
			i.ResolvedParameters = json.RawMessage(resolved)
		}
		return i
	}
	const resolved = `{"name":"c1","region":"westeurope","machineType":"Standard_D4s_v5","autoScalerMin":3,"zones":["1"],"targetSecret":"az-1"}`
	tests := []struct {
		name          string
		inst          storage.Instance
		instErr       error
		last          storage.Operation
		wantStatus    int
		wantKey       string
		wantDashboard bool
		wantParams    string
	}{
		{name: "unknown", instErr: storage.ErrNotFound, wantStatus: http.StatusNotFound, wantKey: "NotFound"},
		{name: "being provisioned", inst: with(storage.RuntimeProvisioning, ""), last: opOf("op", storage.OperationTypeProvision, storage.OperationInProgress), wantStatus: http.StatusNotFound, wantKey: "NotFound"},
		{name: "provisioning failed", inst: with(storage.RuntimeFailed, ""), last: opOf("op", storage.OperationTypeProvision, storage.OperationFailed), wantStatus: http.StatusNotFound, wantKey: "NotFound"},
		{name: "being updated", inst: with(storage.RuntimeSucceeded, resolved), last: opOf("op", storage.OperationTypeUpdate, storage.OperationInProgress), wantStatus: http.StatusUnprocessableEntity, wantKey: "ConcurrencyError"},
		{name: "provisioned: resolved parameters and dashboard", inst: with(storage.RuntimeSucceeded, resolved),
			last: opOf("op", storage.OperationTypeProvision, storage.OperationSucceeded), wantDashboard: true,
			wantParams: "map[autoScalerMin:3 machineType:Standard_D4s_v5 name:c1 region:westeurope targetSecret:az-1 zones:[1]]"},
		{name: "provisioned before resolved parameters were kept: the request's", inst: with(storage.RuntimeSucceeded, ""),
			last: opOf("op", storage.OperationTypeProvision, storage.OperationSucceeded), wantDashboard: true, wantParams: "map[name:c1]"},
		{name: "suspended: parameters, no dashboard", inst: with(storage.RuntimeSuspended, resolved),
			last:       opOf("op", storage.OperationTypeDeprovision, storage.OperationSucceeded),
			wantParams: "map[autoScalerMin:3 machineType:Standard_D4s_v5 name:c1 region:westeurope targetSecret:az-1 zones:[1]]"},
		{name: "resuming: known instance, not a 404", inst: with(storage.RuntimeProvisioning, resolved),
			last: opOf("op", storage.OperationTypeProvision, storage.OperationInProgress), wantDashboard: true,
			wantParams: "map[autoScalerMin:3 machineType:Standard_D4s_v5 name:c1 region:westeurope targetSecret:az-1 zones:[1]]"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			b, _ := newTestBroker(t, &fakeStore{
				instance:      func(string) (storage.Instance, error) { return tc.inst, tc.instErr },
				lastOperation: func(string) (storage.Operation, error) { return tc.last, nil },
			})
			spec, err := b.GetInstance(t.Context(), "inst-1", domain.FetchInstanceDetails{})
			if tc.wantStatus != 0 {
				if f := asFailure(t, err); f.status != tc.wantStatus || f.key != tc.wantKey {
					t.Errorf("got %+v, want %d %s", f, tc.wantStatus, tc.wantKey)
				}
				return
			}
			if err != nil {
				t.Fatalf("GetInstance: %v", err)
			}
			if spec.ServiceID != catalog.ServiceID || spec.PlanID != catalog.AzurePlanID || fmt.Sprint(spec.Parameters) != tc.wantParams {
				t.Errorf("spec %+v, want parameters %s", spec, tc.wantParams)
			}
			if got := spec.DashboardURL != ""; got != tc.wantDashboard {
				t.Errorf("dashboard URL %q, want shown: %v", spec.DashboardURL, tc.wantDashboard)
			}
		})
	}
}

// TestGetInstanceShowsKymaHealth: what Lifecycle Manager reports on the
// runtime's Kyma CR is in the instance's metadata, the BtpOperator CR's
// state (the btp-operator module's) on its own; nothing without a Kyma CR.
func TestGetInstanceShowsKymaHealth(t *testing.T) {
	t.Parallel()
	const resolved = `{"name":"c1"}`
	state := "Error"
	inst := storedAzure()
	inst.State, inst.ResolvedParameters = storage.RuntimeSucceeded, json.RawMessage(resolved)
	inst.KymaState = &state
	inst.KymaModules = json.RawMessage(`[{"name":"btp-operator","state":"Warning"},{"name":"istio","state":"Ready"},` +
		`{"name":"foo","state":"Error","message":"module template for module \"foo\" not found"}]`)
	bare := storedAzure()
	bare.State, bare.ResolvedParameters = storage.RuntimeSucceeded, json.RawMessage(resolved)
	for _, tc := range []struct {
		name string
		inst storage.Instance
		want map[string]string
	}{
		{name: "a Kyma CR in Error", inst: inst, want: map[string]string{"kymaState": "Error", "btpOperatorState": "Warning",
			"kymaModules": "btp-operator: Warning\nistio: Ready\nfoo: Error: module template for module \"foo\" not found"}},
		{name: "no Kyma CR", inst: bare},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			b, _ := newTestBroker(t, &fakeStore{
				instance: func(string) (storage.Instance, error) { return tc.inst, nil },
				lastOperation: func(string) (storage.Operation, error) {
					return opOf("op", storage.OperationTypeProvision, storage.OperationSucceeded), nil
				},
			})
			spec, err := b.GetInstance(t.Context(), "inst-1", domain.FetchInstanceDetails{})
			if err != nil {
				t.Fatal(err)
			}
			if !maps.Equal(spec.Metadata.Attributes, tc.want) {
				t.Errorf("attributes %q, want %q", spec.Metadata.Attributes, tc.want)
			}
		})
	}
}

func TestStoreSentinelsAreNotMistakenForInternalErrors(t *testing.T) {
	t.Parallel()
	// Wrapped sentinels keep their meaning; anything else is internal.
	if !errors.Is(fmt.Errorf("a: %w", fmt.Errorf("b: %w", storage.ErrNotFound)), storage.ErrNotFound) {
		t.Fatal("test premise broken")
	}
	b, _ := newTestBroker(t, &fakeStore{instance: func(string) (storage.Instance, error) {
		return storage.Instance{}, fmt.Errorf("reading: %w", fmt.Errorf("query: %w", storage.ErrNotFound))
	}})
	_, err := b.GetInstance(t.Context(), "inst-1", domain.FetchInstanceDetails{})
	if f := asFailure(t, err); f.status != http.StatusNotFound {
		t.Errorf("doubly wrapped ErrNotFound answered %d, want 404", f.status)
	}
}

// An accepted provisioning is logged once: on its request's access line when
// the HTTP layer writes one, on a line of its own otherwise.
func TestProvisionAcceptIsLoggedOnce(t *testing.T) {
	t.Parallel()
	written := func(storage.Instance, storage.Operation) error { return nil }
	t.Run("on the access line", func(t *testing.T) {
		t.Parallel()
		b, hook := newTestBroker(t, &fakeStore{createProvisioning: written})
		ctx := logging.WithAccessFields(t.Context())
		spec, err := b.Provision(ctx, "inst-1", azureDetails(), true)
		if err != nil {
			t.Fatalf("Provision: %v", err)
		}
		if n := len(hook.AllEntries()); n != 0 {
			t.Errorf("Provision logged %d line(s) of its own, want none: %v", n, hook.AllEntries())
		}
		fields := logging.AccessFieldsOf(ctx).Fields()
		if fields["accepted"] != "provisioning" || fields["operation_id"] != spec.OperationData || fields["instance_id"] != "inst-1" {
			t.Errorf("access line fields %v, want the accepted provisioning %s of inst-1", fields, spec.OperationData)
		}
	})
	t.Run("without one", func(t *testing.T) {
		t.Parallel()
		b, hook := newTestBroker(t, &fakeStore{createProvisioning: written})
		spec, err := b.Provision(t.Context(), "inst-1", azureDetails(), true)
		if err != nil {
			t.Fatalf("Provision: %v", err)
		}
		e := hook.LastEntry()
		if e == nil || e.Message != "provisioning accepted" || e.Data["operation_id"] != spec.OperationData {
			t.Errorf("logged %v, want a line of its own naming operation %s", e, spec.OperationData)
		}
	})
}
