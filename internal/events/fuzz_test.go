package events

import (
	"net/url"
	"strings"
	"testing"
)

// FuzzParseQuery: any query either is refused with a reason or selects by
// at least one list of at most MaxIDs IDs, none empty, on a page in bounds.
func FuzzParseQuery(f *testing.F) {
	for _, seed := range []string{"instance_ids=a,b", "runtime_ids=r&page=2&page_size=10", "", "page=0", "instance_ids=a,,b",
		"operation_ids=%00", "instance_ids=a&instance_ids=b", "bogus=1"} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		q, err := url.ParseQuery(raw)
		if err != nil {
			return // the router refuses it before
		}
		filter, page, size, err := parseQuery(q)
		if err != nil {
			if err.Error() == "" {
				t.Fatal("a refusal without a reason")
			}
			return
		}
		lists := [][]string{filter.InstanceIDs, filter.RuntimeIDs, filter.OperationIDs}
		if lists[0] == nil && lists[1] == nil && lists[2] == nil {
			t.Fatalf("%q accepted without a filter", raw)
		}
		for _, l := range lists {
			if len(l) > MaxIDs {
				t.Fatalf("%q: %d IDs", raw, len(l))
			}
			for _, id := range l {
				if id == "" || strings.ContainsAny(id, ",\x00") {
					t.Fatalf("%q: ID %q", raw, id)
				}
			}
		}
		if page < 1 || size < 1 || size > MaxPageSize {
			t.Fatalf("%q: page %d size %d", raw, page, size)
		}
	})
}
