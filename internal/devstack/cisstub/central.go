package cisstub

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"regexp"
	"slices"
	"strconv"
	"time"

	"github.com/kyma-keb/keb/internal/cis"
)

// MaxCentralPageSize is the largest pageSize the central API takes.
const MaxCentralPageSize = 150

// centralCursor is what the stand-in's nextCursor carries (opaque to
// clients): the first request's filter and where the next page starts, so
// that a cursor alone names its page.
type centralCursor struct {
	EventType string `json:"t"`
	Since     int64  `json:"s"` // epoch ms
	PageSize  int    `json:"n"`
	Offset    int    `json:"o"`
}

var sinceRE = regexp.MustCompile(`^([1-9][0-9]?)D$`)

// centralFilters are the parameters a first request may carry.
var centralFilters = []string{"eventType", "entityType", "since", "pageSize", "sortField", "sortOrder"}

func (s *Server) central(w http.ResponseWriter, r *http.Request) {
	if !s.admit(w, r) {
		return
	}
	q := r.URL.Query()
	var c centralCursor
	if raw := q.Get("cursor"); raw != "" || q.Has("cursor") {
		if len(q) != 1 || len(q["cursor"]) != 1 {
			writeError(w, http.StatusBadRequest, "BadRequest", "a request with cursor carries nothing else")
			return
		}
		b, err := base64.RawURLEncoding.DecodeString(raw)
		if err != nil || json.Unmarshal(b, &c) != nil || c.PageSize <= 0 || c.Offset < 0 {
			writeError(w, http.StatusBadRequest, "BadRequest", "cursor is not one this API handed out")
			return
		}
	} else {
		var problem string
		c, problem = s.centralFirst(q)
		if problem != "" {
			writeError(w, http.StatusBadRequest, "BadRequest", problem)
			return
		}
	}
	s.mu.Lock()
	var match []cis.WireCentralEvent
	if c.EventType == cis.CentralSubaccountDeletion {
		for _, e := range s.events {
			if ms := e.ActionTime.UnixMilli(); ms >= c.Since {
				match = append(match, cis.WireCentralEvent{CreationTime: ms, ActionTime: ms, EntityID: e.SubaccountID,
					EventType: cis.CentralSubaccountDeletion, Details: json.RawMessage(`{}`)})
			}
		}
	}
	for _, e := range s.changes {
		if e.EventType == c.EventType && e.CreationTime >= c.Since {
			match = append(match, e)
		}
	}
	s.mu.Unlock()
	lo := min(c.Offset, len(match))
	hi := min(lo+c.PageSize, len(match))
	out := cis.WireCentralPage{Events: append([]cis.WireCentralEvent{}, match[lo:hi]...)}
	if hi < len(match) {
		next := c
		next.Offset = hi
		b, _ := json.Marshal(next)
		out.NextCursor = base64.RawURLEncoding.EncodeToString(b)
	}
	writeJSON(w, http.StatusOK, out)
}

// centralFirst checks a first request's filter as the central API does and
// returns the cursor of its first page, or the problem.
func (s *Server) centralFirst(q map[string][]string) (centralCursor, string) {
	for k, v := range q {
		if !slices.Contains(centralFilters, k) {
			return centralCursor{}, fmt.Sprintf("unknown parameter %q", k)
		}
		if len(v) != 1 {
			return centralCursor{}, fmt.Sprintf("parameter %q given %d times", k, len(v))
		}
	}
	get := func(k string) string {
		if v := q[k]; len(v) == 1 {
			return v[0]
		}
		return ""
	}
	c := centralCursor{EventType: get("eventType")}
	switch c.EventType {
	case cis.CentralSubaccountDeletion, cis.CentralSubaccountCreation, cis.CentralSubaccountUpdate:
	default:
		return c, "eventType must be Subaccount_Deletion, Subaccount_Creation or Subaccount_Update"
	}
	if get("entityType") != cis.CentralEntitySubaccount {
		return c, "entityType must be Subaccount"
	}
	m := sinceRE.FindStringSubmatch(get("since"))
	days, _ := strconv.Atoi(safeIndex(m, 1))
	if m == nil || days > cis.CentralMaxSinceDays {
		return c, fmt.Sprintf("since must be 1D to %dD", cis.CentralMaxSinceDays)
	}
	size, err := strconv.Atoi(get("pageSize"))
	if err != nil || size <= 0 || size > MaxCentralPageSize {
		return c, fmt.Sprintf("pageSize must be 1 to %d", MaxCentralPageSize)
	}
	if get("sortField") != "creationTime" || get("sortOrder") != "ASC" {
		return c, "sortField must be creationTime and sortOrder ASC"
	}
	c.PageSize = size
	c.Since = s.now().Add(-time.Duration(days) * 24 * time.Hour).UnixMilli()
	return c, ""
}

func safeIndex(m []string, i int) string {
	if i < len(m) {
		return m[i]
	}
	return ""
}

// AddSubaccountChange appends a Subaccount_Creation or Subaccount_Update
// event (eventType) of the subaccount with its attributes, created now and
// made at actionTime (which may be older than earlier events': CIS delivers
// in creation order).
func (s *Server) AddSubaccountChange(subaccountID, eventType string, betaEnabled bool, usedForProduction string, actionTime time.Time) {
	details, _ := json.Marshal(cis.WireSubaccountDetails{BetaEnabled: betaEnabled, UsedForProduction: usedForProduction})
	s.mu.Lock()
	defer s.mu.Unlock()
	created := s.now().UnixMilli()
	if n := len(s.changes); n > 0 && created < s.changes[n-1].CreationTime {
		created = s.changes[n-1].CreationTime
	}
	if len(s.changes) >= MaxEvents {
		s.changes = append(make([]cis.WireCentralEvent, 0, MaxEvents), s.changes[len(s.changes)-MaxEvents+1:]...)
	}
	s.changes = append(s.changes, cis.WireCentralEvent{CreationTime: created, ActionTime: actionTime.UnixMilli(),
		EntityID: subaccountID, EventType: eventType, Details: details})
}
