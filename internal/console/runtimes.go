package console

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/kyma-keb/keb/internal/events"
	"github.com/kyma-keb/keb/internal/runtimelisting"
)

// runtimeRow is one row of the runtimes list: what a person reads first
// (the name, the state, what runs now and for how long) before the IDs.
type runtimeRow struct {
	runtimelisting.RuntimeDTO
	// Name is the runtime's name parameter.
	Name string
	// Current is the operation running now, if any; RunningFor how long it
	// has been running, Stuck whether that is longer than StuckAfter.
	Current    *runtimelisting.OperationDTO
	RunningFor time.Duration
	Stuck      bool
	// Failure is what failed the runtime (state failed): its newest
	// failed operation.
	Failure *runtimelisting.OperationDTO
}

// runtimeName is the name parameter a runtime was provisioned with.
func runtimeName(params json.RawMessage) string {
	var p struct {
		Name string `json:"name"`
	}
	_ = json.Unmarshal(params, &p)
	return p.Name
}

// defaultStuckAfter is when a running operation is called stuck without
// Options.StuckAfter: provisionings take some 20 minutes on Gardener.
const defaultStuckAfter = time.Hour

func (c *Console) rowOf(rt runtimelisting.RuntimeDTO, now time.Time) runtimeRow {
	row := runtimeRow{RuntimeDTO: rt, Name: runtimeName(rt.Parameters)}
	stuck := c.opts.StuckAfter
	if stuck <= 0 {
		stuck = defaultStuckAfter
	}
	for _, op := range archivedOperations(rt.Status) {
		switch op.State {
		case "in progress":
			row.Current = &op
			row.RunningFor = now.Sub(op.CreatedAt)
			row.Stuck = row.RunningFor > stuck
		case "failed":
			row.Failure = &op
		}
	}
	if rt.Status.State != "failed" {
		row.Failure = nil
	}
	return row
}

func (c *Console) runtimesPage(w http.ResponseWriter, r *http.Request, token string) {
	q := r.URL.Query()
	page, status, errMsg := c.listRuntimes(r, q)
	type filter struct{ Param, Label, Value string }
	var fs []filter
	for _, f := range filters {
		fs = append(fs, filter{f.Param, f.Label, q.Get(f.Param)})
	}
	now := time.Now()
	rows := make([]runtimeRow, 0, len(page.Data))
	for _, rt := range page.Data {
		rows = append(rows, c.rowOf(rt, now))
	}
	data := map[string]any{
		"Filters": fs, "States": states, "State": q.Get("state"), "KymaStates": kymaStates, "KymaState": q.Get("kyma_state"),
		"Page": page, "Rows": rows, "Error": errMsg, "PageSize": q.Get("page_size"),
	}
	if status == http.StatusOK {
		data["Paging"] = pagingOf(q, "/console/runtimes", page.TotalCount, runtimelisting.MaxPageSize)
	}
	c.render(w, status, "runtimes.html", data)
}

// paging is a list's place among its pages, with links to the previous and
// the next one.
type paging struct {
	Page, Pages int
	Prev, Next  string
}

// pagingOf numbers the pages of a list of total items shown page_size
// (default size) at a time; q's page says which one this is (its values
// were accepted by the API before).
func pagingOf(q url.Values, path string, total, size int) paging {
	if n, err := strconv.Atoi(q.Get("page_size")); err == nil && n > 0 {
		size = n
	}
	pages := total / size
	if total%size != 0 {
		pages++
	}
	p := paging{Page: 1, Pages: max(1, pages)}
	if n, err := strconv.Atoi(q.Get("page")); err == nil && n > 0 {
		p.Page = n
	}
	link := func(n int) string {
		nq := nonEmpty(q)
		nq.Del("next")
		nq.Set("page", strconv.Itoa(n))
		return path + "?" + nq.Encode()
	}
	if p.Page > 1 {
		p.Prev = link(min(p.Page-1, p.Pages))
	}
	if p.Page < p.Pages {
		p.Next = link(p.Page + 1)
	}
	return p
}

// short is an ID's first 8 characters, as the CLI's tables show it.
func short(id string) string {
	if len(id) > 8 {
		return id[:8]
	}
	return id
}

// since renders a duration as people read it: 850ms, 12.3s (as `keb
// events`), 14 min, 3 h 05 min, 2 d 4 h.
func since(d time.Duration) string {
	switch {
	case d < time.Minute:
		return events.Took(d)
	case d < time.Hour:
		return fmt.Sprintf("%d min", int(d.Minutes()))
	case d < 48*time.Hour:
		return fmt.Sprintf("%d h %02d min", int(d.Hours()), int(d.Minutes())%60)
	}
	return fmt.Sprintf("%d d %d h", int(d.Hours())/24, int(d.Hours())%24)
}
