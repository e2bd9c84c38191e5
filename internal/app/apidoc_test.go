package app_test

import (
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/gorilla/mux"
)

// TestAPIDocRouteList keeps docs/api.md's route list true to the router of a `keb dev` server, both ways: every
// route (method and path template) is listed, and every listed one is served. Prefix routes (a path ending in
// "/") are listed as the prefix.
func TestAPIDocRouteList(t *testing.T) {
	t.Parallel()
	_, router := devApp(t)
	var served []string
	err := router.Walk(func(route *mux.Route, _ *mux.Router, _ []*mux.Route) error {
		tmpl, err := route.GetPathTemplate()
		if err != nil {
			return nil
		}
		methods, _ := route.GetMethods()
		if len(methods) == 0 {
			methods = []string{"*"}
		}
		for _, m := range methods {
			if r := m + " " + tmpl; !slices.Contains(served, r) {
				served = append(served, r)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	listed := apiDocRoutes(t)
	for _, r := range served {
		if !slices.Contains(listed, r) {
			t.Errorf("docs/api.md's route list lacks %s, which keb serves", r)
		}
	}
	for _, r := range listed {
		if !slices.Contains(served, r) {
			t.Errorf("docs/api.md's route list has %s, which keb does not serve", r)
		}
	}
	if t.Failed() {
		slices.Sort(served)
		t.Logf("keb serves:\n%s", strings.Join(served, "\n"))
	}
}

// apiDocRoutes reads the "## Routes" table of docs/api.md: its first column holds "`METHOD /path`" cells, several
// methods of one path as "`GET, PUT /path`".
func apiDocRoutes(t *testing.T) []string {
	t.Helper()
	raw, err := os.ReadFile("../../docs/api.md")
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut(string(raw), "\n## Routes\n")
	if !ok {
		t.Fatal(`docs/api.md has no "## Routes" section`)
	}
	section, _, _ = strings.Cut(section, "\n## ")
	cell := regexp.MustCompile("^`([A-Z*]+(?:, [A-Z]+)*) (/[^`]*)`$")
	var routes []string
	for _, l := range strings.Split(section, "\n") {
		cells := strings.Split(l, "|")
		if len(cells) < 3 {
			continue
		}
		m := cell.FindStringSubmatch(strings.TrimSpace(cells[1]))
		if m == nil {
			continue
		}
		for _, method := range strings.Split(m[1], ", ") {
			routes = append(routes, method+" "+m[2])
		}
	}
	if len(routes) == 0 {
		t.Fatal("docs/api.md's route list is empty")
	}
	// Every route is built: none answers 501 (the orchestration endpoints once did).
	if strings.Contains(string(raw), "501") {
		t.Error("docs/api.md says a route answers 501; every route keb serves is built")
	}
	return routes
}
