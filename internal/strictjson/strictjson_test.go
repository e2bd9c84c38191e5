package strictjson

import (
	"encoding/json"
	"reflect"
	"testing"
)

type inner struct {
	Name string `json:"name"`
}

type list []inner

type doc struct {
	inner
	DryRun  *bool           `json:"dryRun"`
	Items   list            `json:"items"`
	Labels  map[string]any  `json:"labels"`
	Raw     json.RawMessage `json:"raw"`
	Skipped string          `json:"-"`
	Plain   int
}

func TestCheck(t *testing.T) {
	rules := Rules{Type: reflect.TypeFor[doc](), NoNulls: true}
	for _, tc := range []struct {
		body, path string // path "" means accepted
	}{
		{`{"name":"a","dryRun":true,"items":[{"name":"b"}],"labels":{"Name":1},"raw":{"NAME":1},"Plain":1}`, ""},
		{`{"items":{"name":"one"}}`, ""},           // a single object read as a list of one
		{`{"unknown":1,"Unknown":2}`, ""},          // unknown keys are the decoder's business
		{`{"Skipped":"x"}`, ""},                    // json:"-" names no field
		{`{"Name":"a"}`, "Name"},                   // an embedded struct's field, promoted
		{`{"DRYRUN":true}`, "DRYRUN"},              // encoding/json would read it as dryRun
		{`{"plain":1}`, "plain"},                   // a field without a tag is named by its Go name
		{`{"items":[{"NAME":"b"}]}`, "items.NAME"}, // list elements
		{`{"items":{"Name":"b"}}`, "items.Name"},
		{`{"dryRun":true,"dryRun":false}`, "dryRun"},
		{`{"labels":{"a":1,"a":2}}`, "labels.a"},
		{`{"raw":{"x":1,"x":2}}`, "raw.x"}, // duplicates anywhere
		{`{"dryRun":null}`, "dryRun"},
		{`{"labels":{"a":[1,null]}}`, "labels.a"},
		{`{"dry\u0052un":true,"dryRun":false}`, "dryRun"}, // escapes resolved as encoding/json does
	} {
		p := Check([]byte(tc.body), rules)
		switch {
		case tc.path == "" && p != nil:
			t.Errorf("%s: refused: %v", tc.body, p)
		case tc.path != "" && (p == nil || p.Path != tc.path || p.Msg == ""):
			t.Errorf("%s: %v; want a problem at %s", tc.body, p, tc.path)
		}
	}
	if p := Check([]byte(`{"a":null}`), Rules{}); p != nil {
		t.Errorf("nulls allowed by default: %v", p)
	}
}
