// Package apitest checks keb's HTTP answers against docs/openapi.yaml, so
// that the document stays true to what the tests see keb answer.
package apitest

import (
	"bytes"
	"compress/gzip"
	"fmt"
	"io"
	"maps"
	"net/http"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"sigs.k8s.io/yaml"

	"github.com/kyma-keb/keb/docs"
)

// Document is the parsed OpenAPI document.
type Document struct {
	raw      map[string]any
	paths    []docPath
	compiler *jsonschema.Compiler
	mu       sync.Mutex
	schemas  map[string]*jsonschema.Schema
}

type docPath struct {
	template string
	segments []string
	methods  map[string]map[string]any // method -> operation
}

const docURL = "https://keb.local/openapi.json"

// Load parses docs/openapi.yaml.
func Load() (*Document, error) {
	js, err := yaml.YAMLToJSON(docs.OpenAPI)
	if err != nil {
		return nil, fmt.Errorf("reading docs/openapi.yaml: %w", err)
	}
	raw, err := jsonschema.UnmarshalJSON(bytes.NewReader(js))
	if err != nil {
		return nil, fmt.Errorf("decoding docs/openapi.yaml: %w", err)
	}
	doc := &Document{raw: raw.(map[string]any), schemas: map[string]*jsonschema.Schema{}}
	doc.compiler = jsonschema.NewCompiler()
	// OpenAPI 3.1's schema dialect is JSON Schema 2020-12.
	doc.compiler.DefaultDraft(jsonschema.Draft2020)
	if err := doc.compiler.AddResource(docURL, raw); err != nil {
		return nil, fmt.Errorf("loading docs/openapi.yaml as a schema resource: %w", err)
	}
	paths, _ := doc.raw["paths"].(map[string]any)
	for tmpl, item := range paths {
		p := docPath{template: tmpl, segments: strings.Split(tmpl, "/"), methods: map[string]map[string]any{}}
		for k, v := range item.(map[string]any) {
			if op, ok := v.(map[string]any); ok && k != "parameters" {
				p.methods[strings.ToUpper(k)] = op
			}
		}
		doc.paths = append(doc.paths, p)
	}
	// Literal segments beat parameters: /oauth/v2/... before /oauth/{region}/...
	sort.Slice(doc.paths, func(i, j int) bool {
		return strings.Count(doc.paths[i].template, "{") < strings.Count(doc.paths[j].template, "{")
	})
	return doc, nil
}

// Operations lists every documented "METHOD /template".
func (d *Document) Operations() []string {
	var out []string
	for _, p := range d.paths {
		for m := range p.methods {
			out = append(out, m+" "+p.template)
		}
	}
	sort.Strings(out)
	return out
}

// match finds the documented path a request path falls under.
func (d *Document) match(path string) (docPath, bool) {
	segs := strings.Split(path, "/")
	for _, p := range d.paths {
		if len(p.segments) != len(segs) {
			continue
		}
		ok := true
		for i, s := range p.segments {
			if !strings.HasPrefix(s, "{") && s != segs[i] {
				ok = false
				break
			}
		}
		if ok {
			return p, true
		}
	}
	return docPath{}, false
}

// Check validates one answer: the path and method are documented, the
// status is (or a default response exists), and a JSON body matches the
// response's schema.
func (d *Document) Check(method, path string, status int, contentType string, body []byte) error {
	p, ok := d.match(path)
	if !ok {
		return fmt.Errorf("%s %s: path not in docs/openapi.yaml", method, path)
	}
	op, ok := p.methods[method]
	if !ok {
		return fmt.Errorf("%s %s: method not documented for %s", method, path, p.template)
	}
	responses, _ := op["responses"].(map[string]any)
	code := strconv.Itoa(status)
	resp, ok := responses[code]
	if !ok {
		if resp, ok = responses["default"]; !ok {
			return fmt.Errorf("%s %s: status %d not documented for %s", method, path, status, p.template)
		}
		code = "default"
	}
	resp = d.deref(resp)
	media, _, _ := strings.Cut(contentType, ";")
	content, _ := resp.(map[string]any)["content"].(map[string]any)
	if len(body) == 0 || content == nil {
		return nil
	}
	if _, ok := content[media]; !ok {
		return fmt.Errorf("%s %s: %d answered %s, documented %v", method, path, status, media, keys(content))
	}
	if media != "application/json" {
		return nil
	}
	ptr := "#/paths/" + escape(p.template) + "/" + strings.ToLower(method) + "/responses/" + code
	if ref, ok := responses[code].(map[string]any)["$ref"].(string); ok {
		ptr = ref
	}
	sch, err := d.schema(ptr + "/content/application~1json/schema")
	if err != nil {
		return err
	}
	inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(body))
	if err != nil {
		return fmt.Errorf("%s %s: %d body is not JSON: %w", method, path, status, err)
	}
	if err := sch.Validate(inst); err != nil {
		return fmt.Errorf("%s %s: %d body %s does not match %s: %w", method, path, status, body, p.template, err)
	}
	return nil
}

// CheckAllow validates a 405's Allow header against the document: it must
// list exactly the methods documented for the path, with HEAD wherever GET
// is (RFC 9110: HEAD is served where GET is; the document says so once
// instead of a head operation on every path).
func (d *Document) CheckAllow(method, path, allow string) error {
	if allow == "" {
		return fmt.Errorf("%s %s: 405 without an Allow header (RFC 9110)", method, path)
	}
	p, ok := d.match(path)
	if !ok {
		return nil // an undocumented path: its 404 or 405 is the router's own
	}
	want := map[string]bool{}
	for m := range p.methods {
		want[m] = true
		if m == http.MethodGet {
			want[http.MethodHead] = true
		}
	}
	got := map[string]bool{}
	for _, m := range strings.Split(allow, ",") {
		got[strings.TrimSpace(m)] = true
	}
	if !maps.Equal(got, want) {
		return fmt.Errorf("%s %s: 405 with Allow %q; docs/openapi.yaml documents %v for %s (HEAD with GET)",
			method, path, allow, keys(toAny(want)), p.template)
	}
	return nil
}

// toAny widens a set for keys.
func toAny(set map[string]bool) map[string]any {
	out := make(map[string]any, len(set))
	for k := range set {
		out[k] = true
	}
	return out
}

func (d *Document) deref(v any) any {
	m, ok := v.(map[string]any)
	if !ok {
		return v
	}
	ref, ok := m["$ref"].(string)
	if !ok {
		return v
	}
	var cur any = d.raw
	for _, part := range strings.Split(strings.TrimPrefix(ref, "#/"), "/") {
		cur = cur.(map[string]any)[strings.ReplaceAll(strings.ReplaceAll(part, "~1", "/"), "~0", "~")]
	}
	return cur
}

func (d *Document) schema(ptr string) (*jsonschema.Schema, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if s, ok := d.schemas[ptr]; ok {
		return s, nil
	}
	s, err := d.compiler.Compile(docURL + ptr)
	if err != nil {
		return nil, fmt.Errorf("compiling %s: %w", ptr, err)
	}
	d.schemas[ptr] = s
	return s, nil
}

func escape(tmpl string) string {
	return strings.ReplaceAll(strings.ReplaceAll(tmpl, "~", "~0"), "/", "~1")
}

func keys(m map[string]any) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// Recorder wraps a handler and checks every answer it gives against the
// document; the test fails at cleanup naming each mismatch.
func Recorder(t testing.TB, doc *Document, next http.Handler) http.Handler {
	var mu sync.Mutex
	var errs []string
	t.Cleanup(func() {
		mu.Lock()
		defer mu.Unlock()
		for _, e := range errs {
			t.Errorf("docs/openapi.yaml: %s", e)
		}
	})
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		rec := &capture{ResponseWriter: w, status: http.StatusOK}
		next.ServeHTTP(rec, req)
		if rec.status == http.StatusMethodNotAllowed {
			if err := doc.CheckAllow(req.Method, req.URL.Path, rec.Header().Get("Allow")); err != nil {
				mu.Lock()
				errs = append(errs, err.Error())
				mu.Unlock()
			}
		}
		method := req.Method
		if method == http.MethodHead {
			// Answered as the GET, whose body net/http leaves out.
			method = http.MethodGet
		}
		// The router's own answers to undocumented methods and paths (a
		// path with dot segments is refused with 400 before routing).
		if _, ok := doc.match(req.URL.Path); rec.status == http.StatusMethodNotAllowed ||
			(!ok && (rec.status == http.StatusNotFound || rec.status == http.StatusBadRequest)) {
			return
		}
		body := rec.body.Bytes()
		if rec.Header().Get("Content-Encoding") == "gzip" {
			zr, err := gzip.NewReader(bytes.NewReader(body))
			if err == nil {
				body, err = io.ReadAll(zr)
			}
			if err != nil {
				mu.Lock()
				errs = append(errs, fmt.Sprintf("%s %s: gzipped body: %v", req.Method, req.URL.Path, err))
				mu.Unlock()
				return
			}
		}
		if err := doc.Check(method, req.URL.Path, rec.status, rec.Header().Get("Content-Type"), body); err != nil {
			mu.Lock()
			errs = append(errs, err.Error())
			mu.Unlock()
		}
	})
}

type capture struct {
	http.ResponseWriter
	status int
	body   bytes.Buffer
}

func (c *capture) WriteHeader(code int) {
	c.status = code
	c.ResponseWriter.WriteHeader(code)
}

func (c *capture) Write(b []byte) (int, error) {
	c.body.Write(b)
	return c.ResponseWriter.Write(b)
}

// Unwrap lets http.ResponseController reach the connection (read
// deadlines), as it does in keb without the recorder.
func (c *capture) Unwrap() http.ResponseWriter { return c.ResponseWriter }
