package events

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/pivotal-cf/brokerapi/v10/domain/apiresponses"
	"github.com/sirupsen/logrus"

	"github.com/kyma-keb/keb/internal/broker"
	"github.com/kyma-keb/keb/internal/logging"
	"github.com/kyma-keb/keb/internal/storage"
)

// Limits of one request.
const (
	// MaxIDs bounds each ID list.
	MaxIDs = 100
	// MaxPageSize bounds a page; DefaultPageSize is a page without
	// page_size.
	MaxPageSize, DefaultPageSize = 1000, 100
	// maxOperations bounds the operations one request reads.
	maxOperations = 1000
)

// Reader reads the operations events are made of (*storage.Store).
type Reader interface {
	EventOperations(ctx context.Context, f storage.EventFilter) ([]storage.EventOperation, error)
}

// Service lists events within the retention.
type Service struct {
	store     Reader
	retention time.Duration
	now       func() time.Time
}

// New returns a Service listing the events of the last retention.
func New(store Reader, retention time.Duration) *Service {
	return &Service{store: store, retention: retention, now: time.Now}
}

// Filter selects events: each non-empty list must match.
type Filter struct {
	InstanceIDs, RuntimeIDs, OperationIDs []string
}

// List returns the events the filter selects, ordered by time.
func (s *Service) List(ctx context.Context, f Filter) ([]Event, error) {
	since := s.now().Add(-s.retention)
	ops, err := s.store.EventOperations(ctx, storage.EventFilter{InstanceIDs: f.InstanceIDs, RuntimeIDs: f.RuntimeIDs,
		OperationIDs: f.OperationIDs, Since: since, Limit: maxOperations})
	if err != nil {
		return nil, err
	}
	return FromOperations(ops, since), nil
}

// Handler serves GET /events?instance_ids=a,b&runtime_ids=…&operation_ids=…
// &page=&page_size=: a JSON array of events ordered by time, the number of
// all matching in X-Total-Count. At least one filter is required; an ID that
// matches nothing selects nothing.
func Handler(s *Service, log logrus.FieldLogger) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		f, page, size, err := parseQuery(req.URL.Query())
		if err != nil {
			writeJSON(w, http.StatusBadRequest, apiresponses.ErrorResponse{Error: "BadRequest", Description: err.Error()})
			return
		}
		list, err := s.List(req.Context(), f)
		switch {
		case storage.Unavailable(err):
			logging.FromContext(req.Context(), log).WithError(err).Warn("listing events: database unavailable")
			writeJSON(w, http.StatusServiceUnavailable, apiresponses.ErrorResponse{Error: "ServiceUnavailable",
				Description: "the broker's database is unavailable; retry later"})
			return
		case err != nil:
			logging.FromContext(req.Context(), log).WithError(err).Error("listing events")
			writeJSON(w, http.StatusInternalServerError, apiresponses.ErrorResponse{Error: "InternalError",
				Description: "internal error: the broker could not complete the request; retry later"})
			return
		}
		w.Header().Set("X-Total-Count", strconv.Itoa(len(list)))
		from := min((page-1)*size, len(list))
		out := list[from:min(from+size, len(list))]
		if out == nil {
			out = []Event{}
		}
		writeJSON(w, http.StatusOK, out)
	})
}

// parseQuery reads the filters (comma lists, the parameter repeatable) and
// the page.
func parseQuery(q url.Values) (Filter, int, int, error) {
	var f Filter
	page, size := 1, DefaultPageSize
	for name, values := range q {
		switch name {
		case "instance_ids", "runtime_ids", "operation_ids":
			var ids []string
			for _, v := range values {
				for id := range strings.SplitSeq(v, ",") {
					if err := broker.ValidateStoredID(strings.TrimSuffix(name, "s"), id); err != nil {
						return f, 0, 0, fmt.Errorf("%s: %w", name, err)
					}
					ids = append(ids, id)
				}
			}
			if len(ids) > MaxIDs {
				return f, 0, 0, fmt.Errorf("%s: at most %d IDs", name, MaxIDs)
			}
			switch name {
			case "instance_ids":
				f.InstanceIDs = ids
			case "runtime_ids":
				f.RuntimeIDs = ids
			default:
				f.OperationIDs = ids
			}
		case "page", "page_size":
			n, err := strconv.Atoi(values[len(values)-1])
			limit := map[string]int{"page": 1 << 20, "page_size": MaxPageSize}[name]
			if err != nil || len(values) > 1 || n < 1 || n > limit {
				return f, 0, 0, fmt.Errorf("%s: a number from 1 to %d, once", name, limit)
			}
			if name == "page" {
				page = n
			} else {
				size = n
			}
		default:
			return f, 0, 0, fmt.Errorf("unknown query parameter %q (filters: instance_ids, runtime_ids, operation_ids; page, page_size)", name)
		}
	}
	if f.InstanceIDs == nil && f.RuntimeIDs == nil && f.OperationIDs == nil {
		return f, 0, 0, fmt.Errorf("name at least one of instance_ids, runtime_ids, operation_ids")
	}
	return f, page, size, nil
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}
