package console

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"time"

	"github.com/gorilla/mux"

	"github.com/kyma-keb/keb/internal/broker"
	"github.com/kyma-keb/keb/internal/events"
	"github.com/kyma-keb/keb/internal/hyperscaler"
	"github.com/kyma-keb/keb/internal/logging"
	"github.com/kyma-keb/keb/internal/orchestration"
	"github.com/kyma-keb/keb/internal/storage"
)

// OrchestrationAPI is the orchestration API's read handlers
// (orchestration.Handler): the console reads what `keb orchestrations`
// reads, through the same parsing.
type OrchestrationAPI interface {
	List() http.Handler
	One() http.Handler
	Operations() http.Handler
}

// ProgressCounter counts orchestrations' runtimes by state
// (storage.Orchestrations).
type ProgressCounter interface {
	TargetCounts(ctx context.Context, ids []string) (map[string]map[storage.TargetState]int, error)
}

// AccountUsage counts the live instances on pool accounts (storage.Store).
type AccountUsage interface {
	AccountUsage(ctx context.Context, names []string) (map[string]int, error)
}

// progress is an orchestration's runtimes by state, as a bar.
type progress struct {
	Total, Done int
	Parts       []progressPart
}

type progressPart struct {
	State   storage.TargetState
	N       int
	Percent float64
	Color   string
}

var targetColors = map[storage.TargetState]string{storage.TargetSucceeded: "#3a9d5d", storage.TargetFailed: "#c9303e",
	storage.TargetInProgress: "#e0a800", storage.TargetPending: "#c5ccd4", storage.TargetCanceled: "#6c757d", storage.TargetSkipped: "#9fb6cd"}

func progressOf(counts map[storage.TargetState]int) progress {
	var p progress
	for _, n := range counts {
		p.Total += n
	}
	for _, st := range storage.TargetStates {
		n := counts[st]
		if n == 0 {
			continue
		}
		if st != storage.TargetPending && st != storage.TargetInProgress {
			p.Done += n
		}
		p.Parts = append(p.Parts, progressPart{State: st, N: n, Percent: percent(n, p.Total), Color: targetColors[st]})
	}
	return p
}

// orchestrationRow is one orchestration with its progress.
type orchestrationRow struct {
	orchestration.Response
	Progress progress
}

func (c *Console) orchestrationsPage(w http.ResponseWriter, r *http.Request, token string) {
	q := nonEmpty(r.URL.Query())
	var list []orchestration.Response
	status, msg, header := c.ask(r, c.opts.Orchestrations.List(), orchestration.RouteList, q, nil, &list)
	data := map[string]any{"Error": msg, "State": q.Get("state"), "States": storage.OrchestrationStates}
	if status == http.StatusOK {
		ids := make([]string, 0, len(list))
		for _, o := range list {
			ids = append(ids, o.OrchestrationID)
		}
		counts, err := c.opts.Progress.TargetCounts(r.Context(), ids)
		if err != nil {
			logging.FromContext(r.Context(), c.opts.Log).WithError(err).Error("console: counting orchestration progress")
			status, data["Error"] = http.StatusInternalServerError, "the orchestrations' progress could not be read"
		}
		rows := make([]orchestrationRow, 0, len(list))
		for _, o := range list {
			rows = append(rows, orchestrationRow{Response: o, Progress: progressOf(counts[o.OrchestrationID])})
		}
		data["Rows"] = rows
		total, _ := strconv.Atoi(header.Get("X-Total-Count"))
		data["Total"] = total
		data["Paging"] = pagingOf(q, "/console/orchestrations", total, 100)
	}
	c.render(w, status, "orchestrations.html", data)
}

func (c *Console) orchestrationPage(w http.ResponseWriter, r *http.Request, token string) {
	id := mux.Vars(r)["orchestration_id"]
	vars := map[string]string{"orchestration_id": id}
	data := map[string]any{"ID": id}
	// The API's route checks its IDs before its handler (the router's
	// checkPathIDs); the console calls the handler, so it checks them here.
	if err := broker.ValidateStoredID("orchestration ID", id); err != nil {
		data["Error"] = err.Error()
		c.render(w, http.StatusBadRequest, "orchestration.html", data)
		return
	}
	var o orchestration.Response
	status, msg, _ := c.ask(r, c.opts.Orchestrations.One(), "/orchestrations/"+url.PathEscape(id), url.Values{}, vars, &o)
	q := nonEmpty(r.URL.Query())
	data["State"], data["States"] = q.Get("state"), storage.TargetStates
	if status == http.StatusOK {
		data["Orchestration"] = o
		var page orchestration.PageResponse
		status, msg, _ = c.ask(r, c.opts.Orchestrations.Operations(), "/orchestrations/"+url.PathEscape(id)+"/operations", q, vars, &page)
		data["Operations"] = page
		if status == http.StatusOK {
			data["Paging"] = pagingOf(q, "/console/orchestrations/"+url.PathEscape(id), page.TotalCount, 100)
			counts, err := c.opts.Progress.TargetCounts(r.Context(), []string{id})
			if err != nil {
				logging.FromContext(r.Context(), c.opts.Log).WithError(err).Error("console: counting orchestration progress")
				status, msg = http.StatusInternalServerError, "the orchestration's progress could not be read"
			}
			data["Progress"] = progressOf(counts[id])
		}
	}
	data["Error"] = msg
	c.render(w, status, "orchestration.html", data)
}

// poolRow is one account of the pool page.
type poolRow struct {
	hyperscaler.AccountInfo
	Instances int
}

func (c *Console) poolPage(w http.ResponseWriter, r *http.Request, token string) {
	q := r.URL.Query()
	data := map[string]any{"Type": q.Get("type"), "State": q.Get("state"),
		"States": []hyperscaler.AccountState{hyperscaler.StateFree, hyperscaler.StateClaimed, hyperscaler.StateShared, hyperscaler.StateDirty}}
	for k, v := range q {
		switch {
		case k != "type" && k != "state":
			data["Error"] = fmt.Sprintf("unknown query parameter %.64q (the pool page takes type and state)", k)
		case len(v) != 1:
			data["Error"] = fmt.Sprintf("%s is given %d times", k, len(v))
		case k == "state" && v[0] != "" && !slices.Contains(data["States"].([]hyperscaler.AccountState), hyperscaler.AccountState(v[0])):
			data["Error"] = fmt.Sprintf("unknown state %.64q (want free, claimed, shared or dirty)", v[0])
		case len(v[0]) > 64:
			data["Error"] = fmt.Sprintf("%s is longer than 64 characters", k)
		}
	}
	if data["Error"] != nil {
		c.render(w, http.StatusBadRequest, "pool.html", data)
		return
	}
	if c.opts.Pool == nil {
		data["Error"] = "this replica reads no account pool (it runs no workers, or has no control plane)"
		c.render(w, http.StatusServiceUnavailable, "pool.html", data)
		return
	}
	all, err := c.opts.Pool.Accounts(r.Context())
	if err != nil {
		logging.FromContext(r.Context(), c.opts.Log).WithError(err).Warn("console: listing the account pool")
		data["Error"] = "the account pool could not be read from the control plane"
		c.render(w, http.StatusServiceUnavailable, "pool.html", data)
		return
	}
	data["Summary"] = hyperscaler.Summarise(all)
	accounts := slices.DeleteFunc(all, func(a hyperscaler.AccountInfo) bool {
		return q.Get("type") != "" && a.Type != q.Get("type") || q.Get("state") != "" && string(a.State) != q.Get("state")
	})
	names := make([]string, 0, len(accounts))
	for _, a := range accounts {
		names = append(names, a.Name)
	}
	usage, err := c.opts.AccountUsage.AccountUsage(r.Context(), names)
	if err != nil {
		logging.FromContext(r.Context(), c.opts.Log).WithError(err).Error("console: counting the accounts' instances")
		data["Error"] = "the accounts' instances could not be counted"
		c.render(w, http.StatusInternalServerError, "pool.html", data)
		return
	}
	rows := make([]poolRow, 0, len(accounts))
	for _, a := range accounts {
		rows = append(rows, poolRow{AccountInfo: a, Instances: usage[a.Name]})
	}
	data["Accounts"] = rows
	data["Now"] = time.Now()
	c.render(w, http.StatusOK, "pool.html", data)
}

// eventsFilters are the events page's fields: GET /events' filters.
var eventsFilters = []struct{ Param, Label string }{
	{"instance_ids", "Instance"}, {"runtime_ids", "Runtime"}, {"operation_ids", "Operation"},
}

func (c *Console) eventsPage(w http.ResponseWriter, r *http.Request, token string) {
	q := nonEmpty(r.URL.Query())
	type filter struct{ Param, Label, Value string }
	var fs []filter
	for _, f := range eventsFilters {
		fs = append(fs, filter{f.Param, f.Label, r.URL.Query().Get(f.Param)})
	}
	data := map[string]any{"Filters": fs}
	if len(q) == 0 {
		c.render(w, http.StatusOK, "events.html", data)
		return
	}
	var list []events.Event
	status, msg, header := c.ask(r, c.opts.EventsAPI, "/events", q, nil, &list)
	data["Error"] = msg
	if status == http.StatusOK {
		data["Events"] = events.WithDurations(list)
		total, _ := strconv.Atoi(header.Get("X-Total-Count"))
		data["Total"] = total
		data["Paging"] = pagingOf(q, "/console/events", total, events.DefaultPageSize)
	}
	c.render(w, status, "events.html", data)
}
