package orchestration

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/gorilla/mux"
	"github.com/sirupsen/logrus"

	"github.com/kyma-keb/keb/internal/logging"
	"github.com/kyma-keb/keb/internal/maintenance"
	"github.com/kyma-keb/keb/internal/process"
	"github.com/kyma-keb/keb/internal/storage"
)

// api is the part of storage.Orchestrations the handlers use.
type api interface {
	Create(ctx context.Context, o storage.Orchestration) error
	Get(ctx context.Context, id string) (storage.Orchestration, error)
	List(ctx context.Context, states []storage.OrchestrationState, page, pageSize int) ([]storage.Orchestration, int, error)
	Targets(ctx context.Context, id string, states []storage.TargetState, page, pageSize int) ([]storage.Target, int, error)
	Target(ctx context.Context, orchestrationID, operationID string) (storage.Target, *storage.Operation, error)
	Cancel(ctx context.Context, id string) (storage.Orchestration, error)
	Retry(ctx context.Context, id string) (retried, old []string, err error)
}

// Route templates the handler answers; the router registers them with
// their scopes.
const (
	RouteUpgradeKyma    = "/upgrade/kyma"
	RouteUpgradeCluster = "/upgrade/cluster"
	RouteList           = "/orchestrations"
	RouteOne            = "/orchestrations/{orchestration_id}"
	RouteOperations     = "/orchestrations/{orchestration_id}/operations"
	RouteOperation      = "/orchestrations/{orchestration_id}/operations/{operation_id}"
	RouteCancel         = "/orchestrations/{orchestration_id}/cancel"
	RouteRetry          = "/orchestrations/{orchestration_id}/retry"
)

// MaxPageSize bounds a page of orchestrations or operations.
const MaxPageSize = 1000

// Handler serves the orchestration API.
type Handler struct {
	store    api
	defaults Defaults
	log      logrus.FieldLogger
}

// NewHandler returns the API over store; defaults fill what requests leave out.
func NewHandler(store api, defaults Defaults, log logrus.FieldLogger) *Handler {
	return &Handler{store: store, defaults: defaults, log: log}
}

// Upgrade serves POST /upgrade/kyma and /upgrade/cluster: opType is
// upgrade_kyma or upgrade_cluster.
func (h *Handler) Upgrade(kind string) http.Handler {
	opType := storage.OperationType(kind)
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		// The router read the body within its limits (64 KiB).
		body, err := io.ReadAll(req.Body)
		if err != nil {
			writeError(w, http.StatusBadRequest, "BadRequest", "reading the body: "+err.Error())
			return
		}
		p, err := ParseRequest(body, opType, h.defaults)
		if err != nil {
			writeError(w, http.StatusBadRequest, "BadRequest", err.Error())
			return
		}
		raw, err := json.Marshal(p)
		if err != nil {
			h.internal(w, req, "encoding parameters", err)
			return
		}
		o := storage.Orchestration{ID: uuid.NewString(), Type: opType, Parameters: raw,
			Description: "Orchestration accepted: waiting to start"}
		if err := h.store.Create(req.Context(), o); err != nil {
			h.failed(w, req, "creating orchestration", err)
			return
		}
		h.logger(req).WithFields(logrus.Fields{"orchestration_id": o.ID, "type": opType, "dry_run": p.DryRun,
			"workers": p.Strategy.Parallel.Workers, "schedule": p.Strategy.Schedule}).Info("orchestration accepted")
		writeJSON(w, http.StatusAccepted, map[string]string{"orchestrationID": o.ID})
	})
}

// Response is an orchestration as GET /orchestrations/{id} shows it.
type Response struct {
	OrchestrationID string                     `json:"orchestrationID"`
	Type            storage.OperationType      `json:"type"`
	State           storage.OrchestrationState `json:"state"`
	Description     string                     `json:"description"`
	CreatedAt       time.Time                  `json:"createdAt"`
	UpdatedAt       time.Time                  `json:"updatedAt"`
	Parameters      json.RawMessage            `json:"parameters"`
}

// OperationResponse is one runtime's upgrade as the operations list shows it.
type OperationResponse struct {
	OperationID            string              `json:"operationID"`
	RuntimeID              string              `json:"runtimeID"`
	InstanceID             string              `json:"instanceID"`
	GlobalAccountID        string              `json:"globalAccountID"`
	SubAccountID           string              `json:"subAccountID"`
	OrchestrationID        string              `json:"orchestrationID"`
	ServicePlanID          string              `json:"servicePlanID"`
	ServicePlanName        string              `json:"servicePlanName"`
	Region                 string              `json:"region"`
	DryRun                 bool                `json:"dryRun"`
	ShootName              string              `json:"shootName"`
	MaintenanceWindowBegin string              `json:"maintenanceWindowBegin"`
	MaintenanceWindowEnd   string              `json:"maintenanceWindowEnd"`
	State                  storage.TargetState `json:"state"`
	Description            string              `json:"description"`
	// Attempt counts retries: 1 for the first run.
	Attempt              int      `json:"attempt"`
	PreviousOperationIDs []string `json:"previousOperationIDs,omitempty"`
}

// OperationDetail adds what the upgrade applied.
type OperationDetail struct {
	OperationResponse
	KymaConfig    *KymaConfig    `json:"kymaConfig,omitempty"`
	ClusterConfig *ClusterConfig `json:"clusterConfig,omitempty"`
	// Stage and FinishedStages are the upgrade operation's progress.
	Stage          string     `json:"stage,omitempty"`
	FinishedStages []string   `json:"finishedStages"`
	CreatedAt      *time.Time `json:"createdAt,omitempty"`
	UpdatedAt      *time.Time `json:"updatedAt,omitempty"`
}

// KymaConfig is the Kyma a Kyma upgrade applies, in upstream's shape: the
// version and components it recorded for the runtime (keb's records, from
// the operation), and the control-plane Secret it wrote the overrides and
// them into. Configuration stays empty: override values may be secret.
type KymaConfig struct {
	Version         string   `json:"version"`
	Channel         string   `json:"channel,omitempty"`
	PreviousVersion string   `json:"previousVersion,omitempty"`
	PreviousChannel string   `json:"previousChannel,omitempty"`
	Components      []string `json:"components"`
	Configuration   []string `json:"configuration"`
	OverridesSecret string   `json:"overridesSecret,omitempty"`
}

// ClusterConfig is what a cluster upgrade applies.
type ClusterConfig struct {
	KubernetesVersion         string `json:"kubernetesVersion,omitempty"`
	MachineImage              string `json:"machineImage,omitempty"`
	MachineImageVersion       string `json:"machineImageVersion,omitempty"`
	PreviousKubernetesVersion string `json:"previousKubernetesVersion,omitempty"`
	PreviousMachineImage      string `json:"previousMachineImage,omitempty"`
}

// PageResponse is a page of an orchestration's operations.
type PageResponse struct {
	Data       []OperationResponse `json:"data"`
	Count      int                 `json:"count"`
	TotalCount int                 `json:"totalCount"`
}

// List serves GET /orchestrations: the seed's plain list, newest first,
// paged with page and page_size; X-Total-Count carries the total.
func (h *Handler) List() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		states, page, size, err := pageQuery(req, storage.OrchestrationStates)
		if err != nil {
			writeError(w, http.StatusBadRequest, "BadRequest", err.Error())
			return
		}
		list, total, err := h.store.List(req.Context(), states, page, size)
		if err != nil {
			h.failed(w, req, "listing orchestrations", err)
			return
		}
		out := make([]Response, 0, len(list))
		for _, o := range list {
			out = append(out, response(o))
		}
		w.Header().Set("X-Total-Count", strconv.Itoa(total))
		writeJSON(w, http.StatusOK, out)
	})
}

// One serves GET /orchestrations/{id}.
func (h *Handler) One() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		o, err := h.store.Get(req.Context(), mux.Vars(req)["orchestration_id"])
		if err != nil {
			h.failed(w, req, "reading orchestration", err)
			return
		}
		writeJSON(w, http.StatusOK, response(o))
	})
}

// Operations serves GET /orchestrations/{id}/operations.
func (h *Handler) Operations() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		states, page, size, err := pageQuery(req, storage.TargetStates)
		if err != nil {
			writeError(w, http.StatusBadRequest, "BadRequest", err.Error())
			return
		}
		id := mux.Vars(req)["orchestration_id"]
		o, err := h.store.Get(req.Context(), id)
		if err != nil {
			h.failed(w, req, "reading orchestration", err)
			return
		}
		targets, total, err := h.store.Targets(req.Context(), id, states, page, size)
		if err != nil {
			h.failed(w, req, "listing operations", err)
			return
		}
		dry := dryRun(o)
		resp := PageResponse{Data: make([]OperationResponse, 0, len(targets)), Count: len(targets), TotalCount: total}
		for _, t := range targets {
			resp.Data = append(resp.Data, operationResponse(t, dry))
		}
		writeJSON(w, http.StatusOK, resp)
	})
}

// Operation serves GET /orchestrations/{id}/operations/{operation_id}.
func (h *Handler) Operation() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		vars := mux.Vars(req)
		o, err := h.store.Get(req.Context(), vars["orchestration_id"])
		if err != nil {
			h.failed(w, req, "reading orchestration", err)
			return
		}
		t, op, err := h.store.Target(req.Context(), o.ID, vars["operation_id"])
		if err != nil {
			h.failed(w, req, "reading operation", err)
			return
		}
		var p Parameters
		_ = json.Unmarshal(o.Parameters, &p)
		d := OperationDetail{OperationResponse: operationResponse(t, p.DryRun), FinishedStages: []string{}}
		var u process.Upgrade
		var data process.Record
		if op != nil {
			d.Stage, d.FinishedStages = op.Stage, op.FinishedStages
			d.CreatedAt, d.UpdatedAt = &op.CreatedAt, &op.UpdatedAt
			d.State, d.Description = storage.TargetState(op.State), op.Description
			if op.ID != t.OperationID { // an earlier attempt
				d.OperationID = op.ID
			}
			if json.Unmarshal(op.Data, &data) == nil && data.Upgrade != nil {
				u = *data.Upgrade
			}
		}
		switch {
		case p.Kyma != nil:
			version := p.Kyma.Version
			if data.KymaVersion != "" { // what the upgrade resolved ("" asks for the current version)
				version = data.KymaVersion
			}
			d.KymaConfig = &KymaConfig{Version: version, Channel: p.Kyma.Channel, Components: append([]string{}, data.Components...),
				Configuration: []string{}, OverridesSecret: data.OverridesSecret,
				PreviousVersion: u.PreviousKymaVersion, PreviousChannel: u.PreviousKymaChannel}
		case p.Kubernetes != nil:
			d.ClusterConfig = &ClusterConfig{KubernetesVersion: p.Kubernetes.Version, MachineImage: p.Kubernetes.MachineImage,
				MachineImageVersion: p.Kubernetes.MachineImageVersion, PreviousKubernetesVersion: u.PreviousKubernetesVersion,
				PreviousMachineImage: u.PreviousMachineImage}
		}
		writeJSON(w, http.StatusOK, d)
	})
}

// Cancel serves PUT /orchestrations/{id}/cancel.
func (h *Handler) Cancel() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		o, err := h.store.Cancel(req.Context(), mux.Vars(req)["orchestration_id"])
		if errors.Is(err, storage.ErrOrchestrationFinished) {
			writeError(w, http.StatusConflict, "Conflict", "the orchestration has already finished; nothing to cancel")
			return
		}
		if err != nil {
			h.failed(w, req, "canceling orchestration", err)
			return
		}
		h.logger(req).WithFields(logrus.Fields{"orchestration_id": o.ID, "state": o.State}).Info("orchestration cancel requested")
		writeJSON(w, http.StatusOK, map[string]string{"orchestrationID": o.ID, "state": string(o.State)})
	})
}

// RetryResponse answers PUT /orchestrations/{id}/retry.
type RetryResponse struct {
	OrchestrationID string   `json:"orchestrationID"`
	RetryOperations []string `json:"retryOperations"`
	OldOperations   []string `json:"oldOperations"`
	Msg             string   `json:"msg"`
}

// Retry serves PUT /orchestrations/{id}/retry.
func (h *Handler) Retry() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		id := mux.Vars(req)["orchestration_id"]
		retried, old, err := h.store.Retry(req.Context(), id)
		if errors.Is(err, storage.ErrNothingToRetry) {
			writeError(w, http.StatusConflict, "Conflict", "only a failed orchestration can be retried, and it re-runs its failed operations")
			return
		}
		if err != nil {
			h.failed(w, req, "retrying orchestration", err)
			return
		}
		h.logger(req).WithFields(logrus.Fields{"orchestration_id": id, "operations": len(retried)}).Info("orchestration retry accepted")
		writeJSON(w, http.StatusAccepted, RetryResponse{OrchestrationID: id, RetryOperations: retried, OldOperations: old,
			Msg: fmt.Sprintf("retrying %d failed operations", len(retried))})
	})
}

func response(o storage.Orchestration) Response {
	return Response{OrchestrationID: o.ID, Type: o.Type, State: o.State, Description: o.Description,
		CreatedAt: o.CreatedAt.UTC(), UpdatedAt: o.UpdatedAt.UTC(), Parameters: o.Parameters}
}

func dryRun(o storage.Orchestration) bool {
	var p Parameters
	_ = json.Unmarshal(o.Parameters, &p)
	return p.DryRun
}

func operationResponse(t storage.Target, dry bool) OperationResponse {
	return OperationResponse{OperationID: t.OperationID, RuntimeID: t.RuntimeID, InstanceID: t.InstanceID,
		GlobalAccountID: t.GlobalAccountID, SubAccountID: t.SubAccountID, OrchestrationID: t.OrchestrationID,
		ServicePlanID: t.PlanID, ServicePlanName: t.PlanName, Region: t.Region, DryRun: dry, ShootName: t.ShootName,
		MaintenanceWindowBegin: maintenance.Timestamp(t.MaintenanceWindowBegin),
		MaintenanceWindowEnd:   maintenance.Timestamp(t.MaintenanceWindowEnd),
		State:                  t.State, Description: t.Description, Attempt: t.Attempt, PreviousOperationIDs: t.PreviousOperationIDs}
}

// pageQuery reads state (repeated or comma-separated), page and page_size.
func pageQuery[S ~string](req *http.Request, known []S) (states []S, page, size int, err error) {
	q := req.URL.Query()
	for name := range q {
		switch name {
		case "state", "page", "page_size":
		default:
			return nil, 0, 0, fmt.Errorf("unknown query parameter %.64q (known: state, page, page_size)", name)
		}
	}
	for _, v := range q["state"] {
		for s := range strings.SplitSeq(v, ",") {
			if !slices.Contains(known, S(s)) {
				names := make([]string, len(known))
				for i, k := range known {
					names[i] = string(k)
				}
				return nil, 0, 0, fmt.Errorf("unknown state %.64q (want one of %s)", s, strings.Join(names, ", "))
			}
			states = append(states, S(s))
		}
	}
	page, size = 1, 100
	if s := q.Get("page"); s != "" {
		if page, err = strconv.Atoi(s); err != nil || page < 1 || page > 1_000_000 {
			return nil, 0, 0, fmt.Errorf("bad page %.32q (want a number from 1)", s)
		}
	}
	if s := q.Get("page_size"); s != "" {
		if size, err = strconv.Atoi(s); err != nil || size < 1 || size > MaxPageSize {
			return nil, 0, 0, fmt.Errorf("bad page_size %.32q (want 1 to %d)", s, MaxPageSize)
		}
	}
	return states, page, size, nil
}

// failed answers a store error: 404 for an unknown ID, 503 when the
// database is unavailable, else 500.
func (h *Handler) failed(w http.ResponseWriter, req *http.Request, what string, err error) {
	switch {
	case errors.Is(err, storage.ErrNotFound):
		writeError(w, http.StatusNotFound, "NotFound", "no such orchestration or operation")
	case storage.Unavailable(err):
		h.logger(req).WithError(err).Warn(what + ": database unavailable")
		writeError(w, http.StatusServiceUnavailable, "ServiceUnavailable", "the broker's database is unavailable; retry later")
	default:
		h.internal(w, req, what, err)
	}
}

func (h *Handler) internal(w http.ResponseWriter, req *http.Request, what string, err error) {
	h.logger(req).WithError(err).Error(what)
	writeError(w, http.StatusInternalServerError, "InternalServerError", what+" failed")
}

func (h *Handler) logger(req *http.Request) logrus.FieldLogger {
	return logging.FromContext(req.Context(), h.log)
}

func writeError(w http.ResponseWriter, status int, key, description string) {
	writeJSON(w, status, map[string]string{"error": key, "description": description})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}
