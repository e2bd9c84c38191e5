package userkubeconfig

import (
	"encoding/json"
	"errors"
	"net/http"

	"github.com/gorilla/mux"
	"github.com/pivotal-cf/brokerapi/v10/domain/apiresponses"
	"github.com/sirupsen/logrus"

	"github.com/kyma-keb/keb/internal/broker"
	"github.com/kyma-keb/keb/internal/logging"
	"github.com/kyma-keb/keb/internal/storage"
)

// Handler serves GET /kubeconfig/{instance_id}: the kubeconfig as an
// application/x-yaml attachment kubeconfig.yaml; 404 with an OSB body while
// the instance has no running runtime, 400 for an ID keb never stores, 503
// while the database or the control plane does not answer. Who may call it
// is the router's decision.
func Handler(s *Service, log logrus.FieldLogger) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		id := mux.Vars(req)["instance_id"]
		if err := broker.ValidateStoredID("instance ID", id); err != nil {
			writeJSON(w, http.StatusBadRequest, apiresponses.ErrorResponse{Error: "BadRequest", Description: err.Error()})
			return
		}
		out, err := s.Kubeconfig(req.Context(), id)
		var notServed *NotServedError
		switch {
		case errors.As(err, &notServed):
			writeJSON(w, http.StatusNotFound, apiresponses.ErrorResponse{Error: "NotFound", Description: notServed.Reason})
		case err != nil:
			// The database or the control plane: nothing the caller did.
			logging.FromContext(req.Context(), log).WithError(err).WithField("instance_id", id).Warn("building a kubeconfig")
			desc := "the control plane did not answer; retry later"
			if storage.Unavailable(err) {
				desc = "the broker's database is unavailable; retry later"
			}
			writeJSON(w, http.StatusServiceUnavailable, apiresponses.ErrorResponse{Error: "ServiceUnavailable", Description: desc})
		default:
			w.Header().Set("Content-Type", "application/x-yaml")
			w.Header().Set("Content-Disposition", `attachment; filename="kubeconfig.yaml"`)
			w.Header().Set("Cache-Control", "no-store")
			_, _ = w.Write(out)
		}
	})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}
