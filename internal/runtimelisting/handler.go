// Package runtimelisting serves GET /info/runtimes (also at /runtimes): the
// operators' listing of every runtime, live and archived, in KEB's JSON shape.
package runtimelisting

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"net/url"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/sirupsen/logrus"

	"github.com/kyma-keb/keb/internal/catalog"
	"github.com/kyma-keb/keb/internal/kyma"
	"github.com/kyma-keb/keb/internal/logging"
	"github.com/kyma-keb/keb/internal/maintenance"
	"github.com/kyma-keb/keb/internal/storage"
)

// Store is what the handler reads runtimes from; *storage.Store satisfies it.
type Store interface {
	Runtimes(ctx context.Context, q storage.RuntimeQuery) (storage.RuntimePage, error)
	Actions(ctx context.Context, instanceIDs ...string) (map[string][]storage.Action, error)
}

const (
	// MaxPageSize bounds a page so that one request's cost is bounded too.
	MaxPageSize     = 100
	defaultPageSize = 100
	// serviceClassName is the only service keb offers.
	serviceClassName = "kymaruntime"

	opDetailLast = "last"
	opDetailAll  = "all"
	stateAll     = "all"
)

// RuntimeCRs reads the page's Runtime CRs for runtime_config=true: the
// control plane's objects as they are, keyed by runtime ID (a runtime without
// one is missing from the map). One call per page.
type RuntimeCRs interface {
	RuntimeConfigs(ctx context.Context, runtimeIDs []string) (map[string]json.RawMessage, error)
}

// Handler answers the runtime listing.
type Handler struct {
	store Store
	// serviceID is shown for archived runtimes, whose archive entry does not
	// keep it (keb offers a single service).
	serviceID string
	// crs is nil without a control plane: runtime_config=true is then
	// refused rather than answered without the field.
	crs RuntimeCRs
}

// NewHandler returns the listing handler over store. serviceID is the
// catalog's service ID; crs (nil without a control plane) serves
// runtime_config=true.
func NewHandler(store Store, serviceID string, crs RuntimeCRs) *Handler {
	return &Handler{store: store, serviceID: serviceID, crs: crs}
}

// Response is the body of a listing.
type Response struct {
	Data       []RuntimeDTO `json:"data"`
	Count      int          `json:"count"`
	TotalCount int          `json:"totalCount"`
	// Next is an opaque cursor: pass it back as ?next= for the following
	// page. Omitted on the last page.
	Next string `json:"next,omitempty"`
}

// RuntimeDTO is one runtime, with KEB's field names.
type RuntimeDTO struct {
	InstanceID      string `json:"instanceID"`
	RuntimeID       string `json:"runtimeID"`
	GlobalAccountID string `json:"globalAccountID"`
	// SubscriptionGlobalAccountID is the global account the instance was
	// created in (its hyperscaler account's tenant): the global account,
	// unless the subaccount has moved since.
	SubscriptionGlobalAccountID string `json:"subscriptionGlobalAccountID"`
	SubAccountID                string `json:"subAccountID"`
	ProviderRegion              string `json:"region"`
	SubAccountRegion            string `json:"subAccountRegion"`
	ShootName                   string `json:"shootName"`
	ServiceClassID              string `json:"serviceClassID"`
	ServiceClassName            string `json:"serviceClassName"`
	ServicePlanID               string `json:"servicePlanID"`
	ServicePlanName             string `json:"servicePlanName"`
	// Provider is the hyperscaler by upstream's name (AWS, Azure, GCP, SapConvergedCloud,
	// Alicloud, GDCH), as upstream's listing and the Runtime CR's kyma-project.io/provider
	// label give it; keb stores the provider type (aws, azure, ...).
	Provider   string          `json:"provider"`
	Parameters json.RawMessage `json:"parameters"`
	UserID     string          `json:"userID"`
	// KymaState is the state Lifecycle Manager reports for the runtime's
	// Kyma CR (Ready, Processing, Warning, Error, Deleting), as keb's
	// control-plane watch last saw it; omitted without one (archived
	// runtimes, a Kyma CR not created or not reported on yet).
	KymaState string `json:"kymaState,omitempty"`
	// EUAccess is true for a runtime on an EU-access hyperscaler account (a HAP rule with the EU
	// output chose its pool); omitted otherwise.
	EUAccess bool `json:"euAccess,omitempty"`
	// MaintenanceWindowBegin and End are the runtime's daily maintenance
	// window in upstream's form ("0000-01-01T22:00:00Z"); omitted when keb
	// resolved none (archived runtimes, runtimes provisioned before).
	MaintenanceWindowBegin string        `json:"maintenanceWindowBegin,omitempty"`
	MaintenanceWindowEnd   string        `json:"maintenanceWindowEnd,omitempty"`
	Status                 RuntimeStatus `json:"status"`
	// Leftovers are what the deprovisioning of a deprovisioned runtime left
	// behind, its skipped steps ([{step, category, reason, what, cause,
	// skippedAt}]); omitted when it left nothing, and once the leader's
	// leftovers job removed them.
	Leftovers json.RawMessage `json:"leftovers,omitempty"`
	// Bindings lists the instance's service bindings (never their
	// credentials); only with bindings=true (then [] when it has none).
	Bindings *[]BindingDTO `json:"bindings,omitempty"`
	// Actions is the runtime's history of changes (plan changes), oldest
	// first; only with actions=true.
	Actions []ActionDTO `json:"actions,omitempty"`
	// RuntimeConfig is the runtime's Runtime CR as the control plane holds
	// it (without managedFields); only with runtime_config=true, and
	// omitted for a runtime that has none.
	RuntimeConfig json.RawMessage `json:"runtimeConfig,omitempty"`
	// BetaEnabled ("true" or "false") and UsedForProduction (CIS's value,
	// e.g. USED_FOR_PRODUCTION) are the subaccount's attributes as the
	// subaccount sync last saw them; omitted until it has.
	BetaEnabled       string `json:"betaEnabled,omitempty"`
	UsedForProduction string `json:"usedForProduction,omitempty"`
	// SubscriptionSecretName is the hyperscaler account (Gardener binding)
	// the runtime was created with; omitted before one was claimed.
	SubscriptionSecretName *string `json:"subscriptionSecretName,omitempty"`
	// LicenseType and CommercialModel are the OSB context's license_type
	// and commercial_model; omitted when the platform sent none.
	LicenseType     *string `json:"licenseType,omitempty"`
	CommercialModel *string `json:"commercialModel,omitempty"`
}

// BindingDTO is one service binding of a runtime.
type BindingDTO struct {
	ID        string    `json:"id"`
	State     string    `json:"state"`
	CreatedAt time.Time `json:"createdAt"`
	ExpiresAt time.Time `json:"expiresAt"`
	// ExpiresInSeconds is upstream's name for the binding's lifetime.
	ExpiresInSeconds int64 `json:"expiresInSeconds"`
}

// ActionDTO is one change in a runtime's history, in upstream KEB's shape.
type ActionDTO struct {
	Type      string    `json:"type"`
	Message   string    `json:"message"`
	OldValue  string    `json:"oldValue"`
	NewValue  string    `json:"newValue"`
	CreatedAt time.Time `json:"createdAt"`
}

// RuntimeStatus is a runtime's state and the operations that explain it.
// ExpiredAt is when a trial or free runtime expired (it is then suspended
// for good); it is omitted while the runtime has not expired.
type RuntimeStatus struct {
	CreatedAt      time.Time     `json:"createdAt"`
	ModifiedAt     time.Time     `json:"modifiedAt"`
	DeletedAt      *time.Time    `json:"deletedAt,omitempty"`
	ExpiredAt      *time.Time    `json:"expiredAt,omitempty"`
	State          string        `json:"state"`
	Provisioning   *OperationDTO `json:"provisioning,omitempty"`
	Deprovisioning *OperationDTO `json:"deprovisioning,omitempty"`
	// Suspension, Unsuspension and Update are upstream KEB's fields, in its
	// list shape: the suspending deprovisionings, resuming provisionings
	// and updates, newest first (with op_detail=last only the newest).
	Suspension   *OperationsDTO `json:"suspension,omitempty"`
	Unsuspension *OperationsDTO `json:"unsuspension,omitempty"`
	Update       *OperationsDTO `json:"update,omitempty"`
	// UpgradingKyma and UpgradingCluster are the upgrades orchestrations
	// ran on the runtime, in the same shape (upgradingCluster is
	// upstream's; upgradingKyma is keb's, upstream dropped it).
	UpgradingKyma    *OperationsDTO `json:"upgradingKyma,omitempty"`
	UpgradingCluster *OperationsDTO `json:"upgradingCluster,omitempty"`
	// Operations lists every operation, newest first; only with
	// op_detail=all.
	Operations []OperationDTO `json:"operations,omitempty"`
}

// OperationsDTO is upstream's list of one kind of operation, newest first.
type OperationsDTO struct {
	Data       []OperationDTO `json:"data"`
	Count      int            `json:"count"`
	TotalCount int            `json:"totalCount"`
}

// Newest is the newest operation of the list; nil for a nil or empty list.
func (o *OperationsDTO) Newest() *OperationDTO {
	if o == nil || len(o.Data) == 0 {
		return nil
	}
	return &o.Data[0]
}

// OperationDTO is one operation of a runtime.
type OperationDTO struct {
	OperationID    string    `json:"operationID"`
	Type           string    `json:"type"`
	State          string    `json:"state"`
	Description    string    `json:"description"`
	CreatedAt      time.Time `json:"createdAt"`
	UpdatedAt      time.Time `json:"updatedAt"`
	FinishedStages []string  `json:"finishedStages"`
	Error          string    `json:"error,omitempty"`
}

// filters maps query parameters to the query's filter slices.
var filters = map[string]func(q *storage.RuntimeQuery) *[]string{
	"account":     func(q *storage.RuntimeQuery) *[]string { return &q.GlobalAccountIDs },
	"subaccount":  func(q *storage.RuntimeQuery) *[]string { return &q.SubAccountIDs },
	"instance_id": func(q *storage.RuntimeQuery) *[]string { return &q.InstanceIDs },
	"runtime_id":  func(q *storage.RuntimeQuery) *[]string { return &q.RuntimeIDs },
	"region":      func(q *storage.RuntimeQuery) *[]string { return &q.Regions },
	"plan":        func(q *storage.RuntimeQuery) *[]string { return &q.Plans },
	"shoot":       func(q *storage.RuntimeQuery) *[]string { return &q.Shoots },
}

// MaxPage bounds page so that the rows it skips, page × page_size, stay a
// number PostgreSQL takes; a page beyond the last one is empty.
const MaxPage = 1_000_000

// maxValueLength bounds one query value: IDs and names are far shorter, and
// a cursor is under 400 characters.
const maxValueLength = 512

// otherParameters are the parameters besides the filters.
var otherParameters = []string{"state", "kyma_state", "op_detail", "bindings", "with_bindings", "actions", "expired",
	"runtime_config", "kyma_config", "cluster_config", "gardener_config", "page", "page_size", pageSizeAlias, "next"}

// pageSizeAlias is page_size as upstream's own client library (its utils/keb.py) names it when
// it pages through /runtimes; upstream ignores the name (its page size is then its default,
// 100), keb reads it as page_size rather than refusing it as unknown.
const pageSizeAlias = "pageSize"

// Options are what a listing shows besides the stored runtimes' rows.
type Options struct {
	// Actions adds each runtime's history of changes.
	Actions bool
	// RuntimeConfig adds each runtime's Runtime CR.
	RuntimeConfig bool
}

// ParseQuery turns query parameters into a storage query. Every bad value is
// reported, not just the first, so an operator fixes a request in one go.
// An unknown parameter is refused rather than ignored: a misspelt filter
// would otherwise list every runtime.
func ParseQuery(v url.Values) (storage.RuntimeQuery, error) {
	var q storage.RuntimeQuery
	var problems []string
	var unknown []string
	for name, vals := range v {
		if _, ok := filters[name]; !ok && !slices.Contains(otherParameters, name) {
			unknown = append(unknown, fmt.Sprintf("%.64q", name))
		}
		for _, val := range vals {
			if p := valueProblem(val); p != "" {
				problems = append(problems, fmt.Sprintf("%.64s %s", name, p))
			}
		}
	}
	if len(unknown) > 0 {
		sort.Strings(unknown)
		known := append(slices.Sorted(maps.Keys(filters)), otherParameters...)
		problems = append(problems, fmt.Sprintf("unknown query parameters %s (known: %s)",
			strings.Join(unknown, ", "), strings.Join(known, ", ")))
	}
	if len(problems) > 0 {
		// Values that cannot be compared with stored ones go no further.
		sort.Strings(problems)
		return storage.RuntimeQuery{}, errors.New(strings.Join(problems, "; "))
	}
	for name, field := range filters {
		for _, val := range v[name] {
			if val != "" {
				*field(&q) = append(*field(&q), val)
			}
		}
	}

	all := false
	for _, s := range v["state"] {
		switch {
		case s == stateAll:
			all = true
		case slices.Contains(storage.RuntimeStates, storage.RuntimeState(s)):
			if !slices.Contains(q.States, storage.RuntimeState(s)) {
				q.States = append(q.States, storage.RuntimeState(s))
			}
		default:
			problems = append(problems, fmt.Sprintf("unknown state %q (want one of %s, %s)", s,
				joinStates(storage.RuntimeStates), stateAll))
		}
	}
	if all {
		q.States = slices.Clone(storage.RuntimeStates)
	}
	for _, s := range v["kyma_state"] {
		// Lifecycle Manager's spelling, whatever the case asked for.
		i := slices.IndexFunc(kyma.States, func(k kyma.State) bool { return strings.EqualFold(string(k), s) })
		switch {
		case i < 0:
			problems = append(problems, fmt.Sprintf("unknown kyma_state %.64q (want one of %s)", s, joinKymaStates()))
		case !slices.Contains(q.KymaStates, string(kyma.States[i])):
			q.KymaStates = append(q.KymaStates, string(kyma.States[i]))
		}
	}

	switch d := v.Get("op_detail"); d {
	case "", opDetailLast:
	case opDetailAll:
		q.AllOperations = true
	default:
		problems = append(problems, fmt.Sprintf("unknown op_detail %q (want %s or %s)", d, opDetailLast, opDetailAll))
	}

	// with_bindings is upstream's other name for bindings; either asks.
	for _, name := range []string{"bindings", "with_bindings"} {
		b, p := boolParameter(v, name)
		q.Bindings = q.Bindings || b
		problems = append(problems, p...)
	}
	expired, p := boolParameter(v, "expired")
	q.Expired = expired
	problems = append(problems, p...)
	// Upstream's kyma_config, cluster_config and gardener_config showed
	// what its provisioner had recorded; keb has no provisioner, so they
	// add nothing, but a well-formed one is accepted as upstream's clients
	// send it.
	for _, name := range []string{"kyma_config", "cluster_config", "gardener_config"} {
		_, p := boolParameter(v, name)
		problems = append(problems, p...)
	}

	q.Page, q.PageSize = 1, defaultPageSize
	sizeName, size := "page_size", v.Get("page_size")
	if alias := v.Get(pageSizeAlias); alias != "" {
		if size != "" && size != alias {
			problems = append(problems, fmt.Sprintf("page_size %.32q and %s %.32q differ (%s is upstream's client's name of page_size)",
				size, pageSizeAlias, alias, pageSizeAlias))
		}
		sizeName, size = pageSizeAlias, alias
	}
	if size != "" {
		n, err := strconv.Atoi(size)
		if err != nil || n < 1 || n > MaxPageSize {
			problems = append(problems, fmt.Sprintf("bad %s %.32q (want 1 to %d)", sizeName, size, MaxPageSize))
		} else {
			q.PageSize = n
		}
	}
	if s := v.Get("page"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 || n > MaxPage {
			problems = append(problems, fmt.Sprintf("bad page %.32q (want a number from 1 to %d)", s, MaxPage))
		} else {
			q.Page = n
		}
	}
	if s := v.Get("next"); s != "" {
		c, err := DecodeCursor(s)
		if err != nil {
			problems = append(problems, fmt.Sprintf("malformed next %.64q", s))
		} else {
			q.After = &c
		}
	}
	if len(problems) > 0 {
		return storage.RuntimeQuery{}, errors.New(strings.Join(problems, "; "))
	}
	return q, nil
}

// boolParameter reads a true/false query parameter ("" is false); each of
// its values must be one of those.
func boolParameter(v url.Values, name string) (bool, []string) {
	on := false
	var problems []string
	for _, s := range v[name] {
		switch s {
		case "", "false":
		case "true":
			on = true
		default:
			problems = append(problems, fmt.Sprintf("bad %s %.32q (want true or false)", name, s))
		}
	}
	return on, problems
}

// ParseOptions reads the parameters that add to each runtime without
// selecting runtimes: actions and runtime_config.
func ParseOptions(v url.Values) (Options, error) {
	var o Options
	var problems []string
	var p []string
	o.Actions, p = boolParameter(v, "actions")
	problems = append(problems, p...)
	o.RuntimeConfig, p = boolParameter(v, "runtime_config")
	problems = append(problems, p...)
	if len(problems) > 0 {
		return Options{}, errors.New(strings.Join(problems, "; "))
	}
	return o, nil
}

// valueProblem says why a query value cannot be compared with stored text,
// or "" when it can: PostgreSQL refuses NUL and invalid UTF-8.
func valueProblem(s string) string {
	switch {
	case len(s) > maxValueLength:
		return fmt.Sprintf("is %d bytes long; at most %d are accepted", len(s), maxValueLength)
	case !utf8.ValidString(s):
		return "is not valid UTF-8"
	case strings.ContainsFunc(s, unicode.IsControl):
		return "holds a control character"
	}
	return ""
}

// EncodeCursor makes the opaque next token. It is not signed: it only says
// where to resume, and a forged one shows nothing the caller could not list.
func EncodeCursor(c storage.RuntimeCursor) string {
	return base64.RawURLEncoding.EncodeToString([]byte(c.CreatedAt.UTC().Format(time.RFC3339Nano) + "|" + c.InstanceID))
}

// DecodeCursor reads a token made by EncodeCursor.
func DecodeCursor(s string) (storage.RuntimeCursor, error) {
	raw, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil {
		return storage.RuntimeCursor{}, fmt.Errorf("decoding cursor: %w", err)
	}
	ts, id, ok := strings.Cut(string(raw), "|")
	if !ok || id == "" {
		return storage.RuntimeCursor{}, errors.New("cursor has no instance ID")
	}
	if p := valueProblem(id); p != "" {
		return storage.RuntimeCursor{}, fmt.Errorf("cursor instance ID %s", p)
	}
	t, err := time.Parse(time.RFC3339Nano, ts)
	if err != nil {
		return storage.RuntimeCursor{}, fmt.Errorf("cursor time: %w", err)
	}
	return storage.RuntimeCursor{CreatedAt: t, InstanceID: id}, nil
}

// ServeHTTP answers one listing request.
func (h *Handler) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	q, err := ParseQuery(req.URL.Query())
	var opts Options
	if err == nil {
		opts, err = ParseOptions(req.URL.Query())
	}
	if err == nil && opts.RuntimeConfig && h.crs == nil {
		err = errors.New("runtime_config=true shows each runtime's Runtime CR, and this broker has no control plane " +
			"to read them from (APP_KCP_KUBECONFIG is not set)")
	}
	if err != nil {
		writeJSON(w, http.StatusBadRequest, map[string]string{"error": "BadRequest", "description": err.Error()})
		return
	}
	page, err := h.store.Runtimes(req.Context(), q)
	if storage.Unavailable(err) {
		logging.FromContext(req.Context(), logrus.StandardLogger()).WithError(err).Warn("listing runtimes: database unavailable")
		writeJSON(w, http.StatusServiceUnavailable, map[string]string{"error": "ServiceUnavailable",
			"description": "the broker's database is unavailable; retry later"})
		return
	}
	if err != nil {
		logging.FromContext(req.Context(), logrus.StandardLogger()).WithError(err).Error("listing runtimes")
		writeJSON(w, http.StatusInternalServerError, map[string]string{"error": "InternalServerError",
			"description": "listing runtimes failed"})
		return
	}
	resp := Response{Data: make([]RuntimeDTO, 0, len(page.Runtimes)), Count: len(page.Runtimes), TotalCount: page.Total}
	for _, r := range page.Runtimes {
		resp.Data = append(resp.Data, h.dto(r, q))
	}
	if opts.RuntimeConfig {
		if err := h.addRuntimeConfigs(req.Context(), resp.Data); err != nil {
			logging.FromContext(req.Context(), logrus.StandardLogger()).WithError(err).Warn("listing runtimes' Runtime CRs")
			writeJSON(w, http.StatusServiceUnavailable, map[string]string{"error": "ServiceUnavailable",
				"description": "the control plane's Runtime CRs could not be read; retry later, or list without runtime_config"})
			return
		}
	}
	if opts.Actions {
		if err := h.addActions(req.Context(), resp.Data); err != nil {
			logging.FromContext(req.Context(), logrus.StandardLogger()).WithError(err).Error("listing runtimes' actions")
			writeJSON(w, http.StatusInternalServerError, map[string]string{"error": "InternalServerError",
				"description": "listing runtimes failed"})
			return
		}
	}
	if page.Next != nil {
		resp.Next = EncodeCursor(*page.Next)
	}
	writeJSON(w, http.StatusOK, resp)
}

// addRuntimeConfigs reads the page's Runtime CRs in one call.
func (h *Handler) addRuntimeConfigs(ctx context.Context, data []RuntimeDTO) error {
	var ids []string
	for _, d := range data {
		if d.RuntimeID != "" {
			ids = append(ids, d.RuntimeID)
		}
	}
	if len(ids) == 0 {
		return nil
	}
	crs, err := h.crs.RuntimeConfigs(ctx, ids)
	if err != nil {
		return err
	}
	for i := range data {
		if data[i].RuntimeID != "" {
			data[i].RuntimeConfig = crs[data[i].RuntimeID]
		}
	}
	return nil
}

// addActions reads the history of the page's runtimes in one query.
func (h *Handler) addActions(ctx context.Context, data []RuntimeDTO) error {
	ids := make([]string, len(data))
	for i, d := range data {
		ids[i] = d.InstanceID
	}
	actions, err := h.store.Actions(ctx, ids...)
	if err != nil {
		return err
	}
	for i := range data {
		for _, a := range actions[data[i].InstanceID] {
			data[i].Actions = append(data[i].Actions, ActionDTO{Type: string(a.Type), Message: a.Message,
				OldValue: a.OldValue, NewValue: a.NewValue, CreatedAt: a.CreatedAt.UTC()})
		}
	}
	return nil
}

// dto maps a stored runtime to KEB's shape. Only listed fields are copied, so
// nothing secret (credentials, context) can leak through a new column.
func (h *Handler) dto(r storage.Runtime, q storage.RuntimeQuery) RuntimeDTO {
	serviceID := r.ServiceID
	if serviceID == "" {
		serviceID = h.serviceID
	}
	params := r.Parameters
	if len(params) == 0 {
		params = json.RawMessage(`{}`)
	}
	subscriptionGA := r.SubscriptionGlobalAccountID
	if subscriptionGA == "" {
		subscriptionGA = r.GlobalAccountID // never moved
	}
	d := RuntimeDTO{
		InstanceID: r.InstanceID, RuntimeID: r.RuntimeID, GlobalAccountID: r.GlobalAccountID,
		SubscriptionGlobalAccountID: subscriptionGA, SubscriptionSecretName: r.SubscriptionSecretName,
		LicenseType: r.LicenseType, CommercialModel: r.CommercialModel,
		SubAccountID: r.SubAccountID, ProviderRegion: r.ProviderRegion, SubAccountRegion: r.PlatformRegion,
		ShootName: r.ShootName, ServiceClassID: serviceID, ServiceClassName: serviceClassName,
		ServicePlanID: r.PlanID, ServicePlanName: r.PlanName, Provider: catalog.UpstreamProviderName(r.Provider), Parameters: params,
		UserID: r.UserID, KymaState: r.KymaState, EUAccess: r.EUAccess, Leftovers: r.Leftovers,
		Status: RuntimeStatus{
			CreatedAt: r.CreatedAt, ModifiedAt: r.UpdatedAt, DeletedAt: r.DeletedAt, ExpiredAt: r.ExpiredAt,
			State: string(r.State), Provisioning: operationDTO(r.Provisioning),
			Deprovisioning: operationDTO(r.Deprovisioning),
			Suspension:     newest(r.Suspension), Unsuspension: newest(r.Unsuspension),
			Update:        newest(r.Update),
			UpgradingKyma: newest(r.UpgradingKyma), UpgradingCluster: newest(r.UpgradingCluster),
		},
		MaintenanceWindowBegin: maintenance.Timestamp(r.MaintenanceWindowBegin),
		MaintenanceWindowEnd:   maintenance.Timestamp(r.MaintenanceWindowEnd),
	}
	if r.BetaEnabled != nil {
		d.BetaEnabled = strconv.FormatBool(*r.BetaEnabled)
	}
	if r.UsedForProduction != nil {
		d.UsedForProduction = *r.UsedForProduction
	}
	if q.AllOperations {
		d.Status.Operations = make([]OperationDTO, 0, len(r.Operations))
		for i := range r.Operations {
			d.Status.Operations = append(d.Status.Operations, *operationDTO(&r.Operations[i]))
		}
		allOperations(&d.Status, r.Operations)
	}
	if q.Bindings {
		bs := make([]BindingDTO, 0, len(r.Bindings))
		for _, b := range r.Bindings {
			bs = append(bs, BindingDTO{ID: b.ID, State: string(b.State), CreatedAt: b.CreatedAt, ExpiresAt: b.ExpiresAt,
				ExpiresInSeconds: int64(b.ExpiresAt.Sub(b.CreatedAt) / time.Second)})
		}
		d.Bindings = &bs
	}
	return d
}

// newest is the list of one operation, op; nil without one. Upstream's
// op_detail=last answers with the same count and totalCount of 1.
func newest(op *storage.RuntimeOperation) *OperationsDTO {
	if op == nil {
		return nil
	}
	return &OperationsDTO{Data: []OperationDTO{*operationDTO(op)}, Count: 1, TotalCount: 1}
}

// allOperations fills the status's lists from every operation of the
// runtime (newest first), as upstream's op_detail=all does: a suspension is
// a temporary deprovisioning, an unsuspension any provisioning but the
// first. Kinds the runtime never had stay nil.
func allOperations(st *RuntimeStatus, ops []storage.RuntimeOperation) {
	lists := map[**OperationsDTO]func(i int, op storage.RuntimeOperation) bool{
		&st.Update:           func(_ int, op storage.RuntimeOperation) bool { return op.Type == storage.OperationTypeUpdate },
		&st.UpgradingKyma:    func(_ int, op storage.RuntimeOperation) bool { return op.Type == storage.OperationTypeUpgradeKyma },
		&st.UpgradingCluster: func(_ int, op storage.RuntimeOperation) bool { return op.Type == storage.OperationTypeUpgradeCluster },
		&st.Suspension: func(_ int, op storage.RuntimeOperation) bool {
			return op.Type == storage.OperationTypeDeprovision && op.Temporary
		},
		&st.Unsuspension: func(i int, op storage.RuntimeOperation) bool {
			return op.Type == storage.OperationTypeProvision && slices.ContainsFunc(ops[i+1:], func(o storage.RuntimeOperation) bool {
				return o.Type == storage.OperationTypeProvision
			})
		},
	}
	for list, match := range lists {
		var l *OperationsDTO
		for i, op := range ops {
			if match(i, op) {
				if l == nil {
					l = &OperationsDTO{Data: []OperationDTO{}}
				}
				l.Data = append(l.Data, *operationDTO(&ops[i]))
			}
		}
		if l != nil {
			l.Count, l.TotalCount = len(l.Data), len(l.Data)
		}
		*list = l
	}
}

func operationDTO(op *storage.RuntimeOperation) *OperationDTO {
	if op == nil {
		return nil
	}
	stages := op.FinishedStages
	if stages == nil {
		stages = []string{}
	}
	return &OperationDTO{
		OperationID: op.ID, Type: string(op.Type), State: string(op.State), Description: op.Description,
		CreatedAt: op.CreatedAt, UpdatedAt: op.UpdatedAt, FinishedStages: stages, Error: op.ErrorMessage,
	}
}

func joinKymaStates() string {
	names := make([]string, len(kyma.States))
	for i, s := range kyma.States {
		names[i] = string(s)
	}
	return strings.Join(names, ", ")
}

func joinStates(states []storage.RuntimeState) string {
	names := make([]string, len(states))
	for i, s := range states {
		names[i] = string(s)
	}
	return strings.Join(names, ", ")
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}
