package runtimelisting

import (
	"maps"
	"net/url"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// TestDocsParameterTable keeps docs/runtimes.md's request table true to ParseQuery: it names every query
// parameter keb accepts and no other, and the text says what an unknown one gets as keb says it.
func TestDocsParameterTable(t *testing.T) {
	t.Parallel()
	raw, err := os.ReadFile("../../docs/runtimes.md")
	if err != nil {
		t.Fatal(err)
	}
	doc := string(raw)
	request, _, _ := strings.Cut(doc[strings.Index(doc, "## Request"):], "\n## Response")
	name := regexp.MustCompile("`([a-zA-Z_]+)`")
	documented := map[string]bool{}
	for _, l := range strings.Split(request, "\n") {
		cells := strings.Split(l, "|")
		if len(cells) < 3 || strings.Trim(cells[1], " -") == "" || strings.TrimSpace(cells[1]) == "parameter" {
			continue
		}
		for _, m := range name.FindAllStringSubmatch(cells[1], -1) {
			documented[m[1]] = true
		}
	}
	accepted := append(slices.Collect(maps.Keys(filters)), otherParameters...)
	for _, p := range accepted {
		if !documented[p] {
			t.Errorf("docs/runtimes.md's request table lacks %q, which keb accepts", p)
		}
		if _, err := ParseQuery(url.Values{p: {""}}); err != nil && strings.Contains(err.Error(), "unknown query parameters") {
			t.Errorf("%q: keb refuses it as unknown: %v", p, err)
		}
	}
	for p := range documented {
		if !slices.Contains(accepted, p) {
			t.Errorf("docs/runtimes.md's request table has %q, which keb does not accept", p)
		}
	}
	// What the text says of an unknown name is what keb answers.
	_, err = ParseQuery(url.Values{"acount": {"x"}})
	if err == nil {
		t.Fatal("an unknown parameter is accepted")
	}
	prefix, _, _ := strings.Cut(err.Error(), " (known:")
	if !strings.Contains(strings.Join(strings.Fields(request), " "), "`400` naming each, `"+prefix) {
		t.Errorf("docs/runtimes.md does not say what keb answers an unknown parameter (%q)", err)
	}
	if strings.Contains(request, "are ignored") {
		t.Error("docs/runtimes.md says unknown parameters are ignored; keb refuses them")
	}
}
