package runtimelisting_test

import (
	"net/url"
	"slices"
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"

	"github.com/kyma-keb/keb/internal/runtimelisting"
	"github.com/kyma-keb/keb/internal/storage"
)

// storable is what PostgreSQL can compare with stored text.
func storable(s string) bool {
	return utf8.ValidString(s) && !strings.ContainsFunc(s, unicode.IsControl)
}

// FuzzParseQuery: whatever the query string, an accepted one only carries
// values PostgreSQL can take and a page whose offset fits.
func FuzzParseQuery(f *testing.F) {
	f.Add("account=ga&state=all&page=2&page_size=10")
	f.Add("kyma_state=Error&kyma_state=warning&plan=azure")
	f.Add("expired=true&with_bindings=true&runtime_config=true&kyma_config=false&gardener_config=true")
	f.Fuzz(func(t *testing.T, raw string) {
		v, err := url.ParseQuery(raw)
		if err != nil {
			return
		}
		if _, err := runtimelisting.ParseOptions(v); err == nil {
			// Accepted options are booleans, as upstream's clients send them.
			for _, name := range []string{"actions", "runtime_config"} {
				for _, val := range v[name] {
					if val != "" && val != "true" && val != "false" {
						t.Fatalf("accepted %s=%q", name, val)
					}
				}
			}
		}
		q, err := runtimelisting.ParseQuery(v)
		if err != nil {
			return
		}
		if q.Expired && !slices.Contains(v["expired"], "true") {
			t.Fatalf("expired filter without expired=true: %v", v)
		}
		for _, list := range [][]string{q.GlobalAccountIDs, q.SubAccountIDs, q.InstanceIDs, q.RuntimeIDs, q.Regions, q.Plans, q.Shoots, statesOf(q.States)} {
			for _, s := range list {
				if !storable(s) {
					t.Fatalf("accepted value %q", s)
				}
			}
		}
		if q.Page < 1 || q.Page > runtimelisting.MaxPage || q.PageSize < 1 || q.PageSize > runtimelisting.MaxPageSize {
			t.Fatalf("accepted page %d, page_size %d", q.Page, q.PageSize)
		}
		if q.After != nil && !storable(q.After.InstanceID) {
			t.Fatalf("accepted cursor instance %q", q.After.InstanceID)
		}
	})
}

// FuzzDecodeCursor: a decoded cursor is storable and survives a round trip.
func FuzzDecodeCursor(f *testing.F) {
	f.Add(runtimelisting.EncodeCursor(storage.RuntimeCursor{InstanceID: "inst-1"}))
	f.Fuzz(func(t *testing.T, s string) {
		c, err := runtimelisting.DecodeCursor(s)
		if err != nil {
			return
		}
		if !storable(c.InstanceID) || c.InstanceID == "" {
			t.Fatalf("accepted cursor instance %q", c.InstanceID)
		}
		again, err := runtimelisting.DecodeCursor(runtimelisting.EncodeCursor(c))
		if err != nil || !again.CreatedAt.Equal(c.CreatedAt) || again.InstanceID != c.InstanceID {
			t.Fatalf("round trip of %+v: %+v, %v", c, again, err)
		}
	})
}

func statesOf(states []storage.RuntimeState) []string {
	out := make([]string, len(states))
	for i, s := range states {
		out[i] = string(s)
	}
	return out
}
