package cis

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net/url"
	"strconv"
	"time"

	"github.com/cenkalti/backoff/v4"
)

// Central is CIS's central events API v2 (GET <cis>/events/v2/events/central),
// which replaced the page-number APIs v1.0 and v2.0: the first request names
// the filter, every later one only the cursor the previous page returned.
const Central Version = "central-v2"

// Central events API values.
const (
	CentralSubaccountDeletion = "Subaccount_Deletion"
	CentralSubaccountCreation = "Subaccount_Creation"
	CentralSubaccountUpdate   = "Subaccount_Update"
	CentralEntitySubaccount   = "Subaccount"
	// CentralMaxSinceDays is the longest window the API's since= takes.
	CentralMaxSinceDays = 30
)

// WireCentralPage is a page of the central events API as it travels; an
// empty NextCursor marks the last page. The stand-in answers with the same
// types.
type WireCentralPage struct {
	Events     []WireCentralEvent `json:"events"`
	NextCursor string             `json:"nextCursor"`
}

// WireCentralEvent is one event of the central API: times in epoch
// milliseconds, the subaccount as the entity, details by event type.
type WireCentralEvent struct {
	CreationTime int64           `json:"creationTime"`
	ActionTime   int64           `json:"actionTime"`
	EntityID     string          `json:"entityId"`
	EventType    string          `json:"eventType"`
	Details      json.RawMessage `json:"details"`
}

// FromCentral turns a central event into an Event. The feed is ordered by
// creationTime, so that is the time keb's watermark follows; the event has
// no ID of its own, so its entity and time make one.
func FromCentral(e WireCentralEvent) Event {
	return Event{ID: e.EntityID + "@" + strconv.FormatInt(e.CreationTime, 10), SubaccountID: e.EntityID,
		ActionTime: time.UnixMilli(e.CreationTime).UTC()}
}

// SinceDays is the central API's since= window (whole days, at most
// CentralMaxSinceDays) that covers everything from from on; the zero time
// asks for the longest.
func SinceDays(from, now time.Time) int {
	if from.IsZero() {
		return CentralMaxSinceDays
	}
	days := int(math.Ceil(now.Sub(from).Hours() / 24))
	return max(1, min(days, CentralMaxSinceDays))
}

// centralDeletes walks the central API's cursor pages of
// Subaccount_Deletion events created at or after from.
func (c *Client) centralDeletes(ctx context.Context, from time.Time, fn func(Page) error) error {
	return c.centralWalk(ctx, CentralSubaccountDeletion, from, func(n int, events []WireCentralEvent) error {
		page := Page{Number: n}
		for _, e := range events {
			page.Events = append(page.Events, FromCentral(e))
		}
		if len(page.Events) == 0 {
			return nil
		}
		return fn(page)
	})
}

// SubaccountChange is a subaccount's attributes as a Subaccount_Creation or
// Subaccount_Update event gives them.
type SubaccountChange struct {
	SubaccountID      string
	BetaEnabled       bool
	UsedForProduction string
	// ActionTime is when the change was made: the newest wins.
	ActionTime time.Time
}

// WireSubaccountDetails are the details of a Subaccount_Creation or
// Subaccount_Update event keb reads.
type WireSubaccountDetails struct {
	BetaEnabled       bool   `json:"betaEnabled"`
	UsedForProduction string `json:"usedForProduction"`
}

// SubaccountChanges calls fn with every page of Subaccount_Creation, then of
// Subaccount_Update events created at or after from (central API only).
func (c *Client) SubaccountChanges(ctx context.Context, from time.Time, fn func([]SubaccountChange) error) error {
	if c.cfg.Version != Central {
		return fmt.Errorf("subaccount changes need the central events API (APP_CLIENT_VERSION=%s)", Central)
	}
	for _, typ := range []string{CentralSubaccountCreation, CentralSubaccountUpdate} {
		err := c.centralWalk(ctx, typ, from, func(_ int, events []WireCentralEvent) error {
			var changes []SubaccountChange
			for _, e := range events {
				var d WireSubaccountDetails
				if len(e.Details) > 0 {
					if err := json.Unmarshal(e.Details, &d); err != nil {
						return fmt.Errorf("decoding the details of a %s event of subaccount %s: %w", typ, e.EntityID, err)
					}
				}
				changes = append(changes, SubaccountChange{SubaccountID: e.EntityID, BetaEnabled: d.BetaEnabled,
					UsedForProduction: d.UsedForProduction, ActionTime: time.UnixMilli(e.ActionTime).UTC()})
			}
			if len(changes) == 0 {
				return nil
			}
			return fn(changes)
		})
		if err != nil {
			return err
		}
	}
	return nil
}

// centralWalk walks the central API's cursor pages of eventType events
// created at or after from, handing fn each page's events (numbered from 1).
func (c *Client) centralWalk(ctx context.Context, eventType string, from time.Time, fn func(int, []WireCentralEvent) error) error {
	base, err := url.Parse(c.cfg.EventsURL)
	if err != nil {
		return fmt.Errorf("parsing CIS events URL: %w", err)
	}
	first := *base
	q := first.Query()
	q.Set("eventType", eventType)
	q.Set("entityType", CentralEntitySubaccount)
	q.Set("since", strconv.Itoa(SinceDays(from, time.Now()))+"D")
	q.Set("pageSize", strconv.Itoa(c.cfg.PageSize))
	q.Set("sortField", "creationTime")
	q.Set("sortOrder", "ASC")
	first.RawQuery = q.Encode()
	next := first.String()
	seen := map[string]bool{}
	for n := 1; ; n++ {
		var wire WireCentralPage
		if err := c.retrying(ctx, fmt.Sprintf("page %d", n), next, func(body []byte) error {
			return json.Unmarshal(body, &wire)
		}); err != nil {
			return err
		}
		for _, e := range wire.Events {
			if e.EntityID == "" || e.EventType != eventType {
				return fmt.Errorf("CIS central event without subaccount or of type %q (asked for %s)", e.EventType, eventType)
			}
		}
		if err := fn(n, wire.Events); err != nil {
			return err
		}
		if wire.NextCursor == "" {
			return nil
		}
		if seen[wire.NextCursor] {
			return fmt.Errorf("CIS central events: cursor %q came back; stopping", wire.NextCursor)
		}
		seen[wire.NextCursor] = true
		u := *base
		u.RawQuery = url.Values{"cursor": {wire.NextCursor}}.Encode()
		next = u.String()
	}
}

// retrying GETs u and hands the body to decode, retrying timeouts, 5xx and
// 429; a body decode refuses is not retried.
func (c *Client) retrying(ctx context.Context, what, u string, decode func([]byte) error) error {
	b := backoff.NewExponentialBackOff()
	b.InitialInterval, b.MaxElapsedTime = c.cfg.RetryInitial, c.cfg.RetryFor
	op := func() error {
		body, err := c.get(ctx, u)
		var ra *retryAfter
		if errors.As(err, &ra) {
			t := time.NewTimer(min(ra.after, c.cfg.RetryFor))
			defer t.Stop()
			select {
			case <-ctx.Done():
				return backoff.Permanent(ctx.Err())
			case <-t.C:
			}
		}
		if err != nil {
			return err
		}
		if err := decode(body); err != nil {
			return backoff.Permanent(fmt.Errorf("decoding CIS answer: %w", err))
		}
		return nil
	}
	if err := backoff.Retry(op, backoff.WithContext(b, ctx)); err != nil {
		return fmt.Errorf("fetching CIS events %s: %w", what, err)
	}
	return nil
}
