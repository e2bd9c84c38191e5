package console

import (
	"net/url"
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"
)

// FuzzParseLoginForm: the console's login form. An accepted form is
// urlencoded, every pair of it well-formed (Go's parser would drop a
// malformed one), holding the token once, non-empty and bounded; next is a
// path under /console that no browser reads as another host.
func FuzzParseLoginForm(f *testing.F) {
	f.Add("application/x-www-form-urlencoded", []byte("token=eyJhbGciOiJFUzI1NiJ9.e30.sig&next=%2Fconsole%3Fplan%3Dazure"))
	f.Fuzz(func(t *testing.T, contentType string, body []byte) {
		form, err := ParseLoginForm(contentType, body)
		if err != nil {
			if err.Error() == "" {
				t.Fatal("a refusal that says nothing")
			}
			return
		}
		values, perr := url.ParseQuery(string(body))
		if perr != nil || len(values["token"]) != 1 || len(values["next"]) > 1 {
			t.Fatalf("accepted %q (%v, %v)", body, values, perr)
		}
		if form.Token == "" || len(form.Token) > maxTokenLength || form.Token != strings.TrimSpace(form.Token) {
			t.Fatalf("accepted token %q", form.Token)
		}
		n := form.Next
		if n != "/console" && !strings.HasPrefix(n, "/console/") && !strings.HasPrefix(n, "/console?") || !utf8.ValidString(n) ||
			strings.ContainsRune(n, '\\') || strings.IndexFunc(n, unicode.IsControl) >= 0 {
			t.Fatalf("accepted next %q", n)
		}
	})
}

// FuzzOverviewQuery: the overview takes one parameter, window, once, day or
// week; anything else is refused with a message, never half-read.
func FuzzOverviewQuery(f *testing.F) {
	f.Add("window=week")
	f.Add("window=day&window=week")
	f.Add("plan=azure")
	f.Fuzz(func(t *testing.T, raw string) {
		q, err := url.ParseQuery(raw)
		if err != nil {
			return // the router refuses a query it cannot read whole
		}
		w, err := parseOverviewQuery(q)
		if err != nil {
			if err.Error() == "" {
				t.Fatal("a refusal that says nothing")
			}
			return
		}
		if len(q) > 1 || len(q) == 1 && (len(q["window"]) != 1 || q.Get("window") != w.Name) || len(q) == 0 && w.Name != "day" {
			t.Fatalf("accepted %q as %+v", raw, w)
		}
	})
}

// FuzzPaging: page links stay on the page's path, number pages from 1 to
// the last, and never carry a cursor.
func FuzzPaging(f *testing.F) {
	f.Add("page=2&page_size=10&plan=azure", 95)
	f.Fuzz(func(t *testing.T, raw string, total int) {
		q, err := url.ParseQuery(raw)
		if err != nil || total < 0 {
			return
		}
		p := pagingOf(q, "/console/runtimes", total, 100)
		if p.Pages < 1 || p.Page < 1 {
			t.Fatalf("paging %+v", p)
		}
		for _, l := range []string{p.Prev, p.Next} {
			if l == "" {
				continue
			}
			u, err := url.Parse(l)
			if err != nil || u.Path != "/console/runtimes" || u.Host != "" || u.Query().Has("next") {
				t.Fatalf("link %q", l)
			}
		}
	})
}
