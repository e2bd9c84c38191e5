package httpapi

import (
	"bytes"
	"encoding/json"
	"net/http"
	"testing"

	"github.com/pivotal-cf/brokerapi/v10/domain"

	"github.com/kyma-keb/keb/internal/strictjson"
)

// duplicateKeyByTokens is the reference duplicateKey is held to: the same
// search with encoding/json's tokenizer, which reads keys exactly as
// brokerapi's decoder does.
func duplicateKeyByTokens(doc []byte) (string, bool) {
	dec := json.NewDecoder(bytes.NewReader(doc))
	var walk func(path string) (string, bool)
	walk = func(path string) (string, bool) {
		tok, err := dec.Token()
		if err != nil {
			return "", false
		}
		switch tok {
		case json.Delim('{'):
			seen := map[string]bool{}
			for dec.More() {
				kt, err := dec.Token()
				if err != nil {
					return "", false
				}
				k, _ := kt.(string)
				if seen[k] {
					return path + k, true
				}
				seen[k] = true
				if p, dup := walk(path + k + "."); dup {
					return p, true
				}
			}
			_, _ = dec.Token()
		case json.Delim('['):
			for dec.More() {
				if p, dup := walk(path); dup {
					return p, true
				}
			}
			_, _ = dec.Token()
		}
		return "", false
	}
	return walk("")
}

var duplicateKeyCorpus = []string{
	`{}`,
	`{"a":1,"b":2}`,
	`{"a":1,"a":2}`,
	`{"a":{"b":1,"b":2}}`,
	`{"a":[{"x":1},{"y":1,"y":2}]}`,
	`{"a":[{"x":1},{"x":2}]}`,
	`{"a":{"b":1},"c":{"b":1}}`,
	`{"a\u0062":1,"ab":2}`,
	`{"\ud800":1,"\udc00":2}`,
	"{\"\xff\":1,\"\xfe\":2}",
	"{\"\xff\xfe\":1,\"\xff\":2}",
	`{"a":{"b":{"c":[[{"d":1,"d":2}]]}}}`,
	`{"service_id":"s","parameters":{"name":"x","region":"y","name":"z"}}`,
	`{"a":"{\"b\":1,\"b\":2}"}`,
	`[{"a":1},{"a":1,"a":2}]`,
	`"just a string"`,
}

func TestDuplicateKeyAgreesWithTokenizer(t *testing.T) {
	for _, doc := range duplicateKeyCorpus {
		gotPath, gotDup := strictjson.DuplicateKey([]byte(doc))
		wantPath, wantDup := duplicateKeyByTokens([]byte(doc))
		if gotPath != wantPath || gotDup != wantDup {
			t.Errorf("duplicateKey(%q) = %q, %v; the tokenizer finds %q, %v", doc, gotPath, gotDup, wantPath, wantDup)
		}
	}
}

func FuzzDuplicateKey(f *testing.F) {
	for _, doc := range duplicateKeyCorpus {
		f.Add([]byte(doc))
	}
	f.Fuzz(func(t *testing.T, doc []byte) {
		if !json.Valid(doc) {
			return // the guard only asks about documents encoding/json decoded
		}
		gotPath, gotDup := strictjson.DuplicateKey(doc)
		wantPath, wantDup := duplicateKeyByTokens(doc)
		if gotPath != wantPath || gotDup != wantDup {
			t.Fatalf("duplicateKey(%q) = %q, %v; the tokenizer finds %q, %v", doc, gotPath, gotDup, wantPath, wantDup)
		}
	})
}

// benchBody is what `make bench` PUTs.
const benchBody = `{"service_id":"47c9dcbf-ff30-448e-ab36-d3bad66ba281","plan_id":"4deee563-e5ec-4731-b9b1-53b42d855f0c",` +
	`"context":{"globalaccount_id":"bench-ga-1","subaccount_id":"bench-sa","user_id":"bench@example.com"},"parameters":{"name":"bench"}}`

func BenchmarkDuplicateKey(b *testing.B) {
	b.Run("gjson", func(b *testing.B) {
		for b.Loop() {
			strictjson.DuplicateKey([]byte(benchBody))
		}
	})
	b.Run("tokenizer", func(b *testing.B) {
		for b.Loop() {
			duplicateKeyByTokens([]byte(benchBody))
		}
	})
}

func BenchmarkCheckInstanceBody(b *testing.B) {
	o := offering{services: []domain.Service{{ID: "47c9dcbf-ff30-448e-ab36-d3bad66ba281",
		Plans: []domain.ServicePlan{{ID: "4deee563-e5ec-4731-b9b1-53b42d855f0c", Name: "azure"}}}}}
	b.ReportAllocs()
	for b.Loop() {
		if _, rerr := o.checkInstanceBody(http.MethodPut, []byte(benchBody)); rerr != nil {
			b.Fatal(rerr)
		}
	}
}
