package expiry

import (
	"encoding/json"
	"errors"
	"net/http"
	"time"

	"github.com/gorilla/mux"
	"github.com/pivotal-cf/brokerapi/v10/domain/apiresponses"
	"github.com/sirupsen/logrus"

	"github.com/kyma-keb/keb/internal/broker"
	"github.com/kyma-keb/keb/internal/logging"
	"github.com/kyma-keb/keb/internal/storage"
)

// Response is the body of a successful PUT /expire/service_instance/{id}.
type Response struct {
	// Operation is the suspension started; absent when the instance was
	// already suspended.
	Operation string    `json:"operation,omitempty"`
	ExpiredAt time.Time `json:"expiredAt"`
}

// Handler serves PUT /expire/service_instance/{instance_id}: 202 with the
// suspension's operation ID, 200 when the instance was already suspended,
// 400 for a plan that does not expire, 404 for an unknown instance and 409
// while another operation runs. Error bodies are OSB's.
func Handler(e *Expirer, log logrus.FieldLogger) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		id := mux.Vars(req)["instance_id"]
		if err := broker.ValidateStoredID("instance ID", id); err != nil {
			writeJSON(w, http.StatusBadRequest, apiresponses.ErrorResponse{Error: "BadRequest", Description: err.Error()})
			return
		}
		res, err := e.Expire(req.Context(), id)
		switch {
		case errors.Is(err, storage.ErrNotFound):
			writeJSON(w, http.StatusNotFound, apiresponses.ErrorResponse{Error: "NotFound", Description: "instance does not exist"})
		case errors.Is(err, ErrNotExpirable):
			writeJSON(w, http.StatusBadRequest, apiresponses.ErrorResponse{Error: "BadRequest", Description: err.Error()})
		case errors.Is(err, ErrBusy):
			writeJSON(w, http.StatusConflict, apiresponses.ErrorResponse{Error: "ConcurrencyError", Description: err.Error()})
		case storage.Unavailable(err):
			logging.FromContext(req.Context(), log).WithError(err).WithField("instance_id", id).Warn("expiring instance: database unavailable")
			writeJSON(w, http.StatusServiceUnavailable, apiresponses.ErrorResponse{Error: "ServiceUnavailable",
				Description: "the broker's database is unavailable; nothing was changed, retry later"})
		case err != nil:
			logging.FromContext(req.Context(), log).WithError(err).WithField("instance_id", id).Error("expiring instance")
			writeJSON(w, http.StatusInternalServerError, apiresponses.ErrorResponse{Error: "InternalError",
				Description: "internal error: the broker could not complete the request; retry later"})
		case res.OperationID == "":
			writeJSON(w, http.StatusOK, Response{ExpiredAt: res.ExpiredAt})
		default:
			writeJSON(w, http.StatusAccepted, Response{Operation: res.OperationID, ExpiredAt: res.ExpiredAt})
		}
	})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}
