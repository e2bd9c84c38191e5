package cis

import (
	"encoding/json"
	"fmt"
	"strconv"
	"time"
)

// WirePage is a page of the events API as it travels, in both versions; E is
// WireEventV1 or WireEventV2. The CIS stand-in (internal/devstack/cisstub) answers with
// the same types, so the client and the stand-in agree by construction.
type WirePage[E any] struct {
	Total      int `json:"total"`
	TotalPages int `json:"totalPages"`
	PageNum    int `json:"pageNum"`
	// MorePages is v2.0's; v1.0 leaves it out.
	MorePages *bool `json:"morePages,omitempty"`
	Events    []E   `json:"events"`
}

// WireEventV1 is an event of API v1.0: a numeric ID, the action time in
// epoch milliseconds, the subaccount as subaccountGuid.
type WireEventV1 struct {
	ID             int64  `json:"id"`
	ActionTime     int64  `json:"actionTime"`
	Type           string `json:"type"`
	SubaccountGUID string `json:"subaccountGuid"`
}

// WireEventV2 is an event of API v2.0: the subaccount is the event's
// entity, and the ID may be any string.
type WireEventV2 struct {
	ID           string `json:"id"`
	ActionTime   int64  `json:"actionTime"`
	CreationTime int64  `json:"creationTime"`
	EventType    string `json:"eventType"`
	EntityType   string `json:"entityType"`
	EntityID     string `json:"entityId"`
}

// FromV1 and FromV2 turn wire events into Events.
func FromV1(e WireEventV1) Event {
	return Event{ID: strconv.FormatInt(e.ID, 10), SubaccountID: e.SubaccountGUID, ActionTime: time.UnixMilli(e.ActionTime).UTC()}
}

// FromV2 turns a v2.0 wire event into an Event.
func FromV2(e WireEventV2) Event {
	return Event{ID: e.ID, SubaccountID: e.EntityID, ActionTime: time.UnixMilli(e.ActionTime).UTC()}
}

func decodeEvent(v Version, raw json.RawMessage) (Event, error) {
	var ev Event
	switch v {
	case V1:
		var e WireEventV1
		if err := json.Unmarshal(raw, &e); err != nil {
			return Event{}, fmt.Errorf("decoding CIS v1.0 event: %w", err)
		}
		ev = FromV1(e)
	default:
		var e WireEventV2
		if err := json.Unmarshal(raw, &e); err != nil {
			return Event{}, fmt.Errorf("decoding CIS v2.0 event: %w", err)
		}
		ev = FromV2(e)
	}
	if ev.ID == "" || ev.SubaccountID == "" {
		return Event{}, fmt.Errorf("CIS event without ID or subaccount: %s", raw)
	}
	return ev, nil
}
