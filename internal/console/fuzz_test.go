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
