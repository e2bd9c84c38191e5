package readme

import (
	"flag"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"
)

// TestDocsLinkGlossary: README.md and every guide chapter link each glossary term on its first use, to the term's
// entry, and every entry they link exists.
func TestDocsLinkGlossary(t *testing.T) {
	t.Parallel()
	glossary, err := os.ReadFile(filepath.Join(repoRoot, "docs", "glossary.md"))
	if err != nil {
		t.Fatal(err)
	}
	anchors := map[string]bool{}
	for _, l := range strings.Split(string(glossary), "\n") {
		if h, ok := strings.CutPrefix(l, "## "); ok {
			anchors[githubAnchor(h)] = true
		}
	}
	for _, term := range GlossaryTerms {
		if !anchors[term.Anchor] {
			t.Errorf("docs/glossary.md has no entry #%s", term.Anchor)
		}
	}
	for _, p := range documents(t) {
		raw, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		for _, u := range GlossaryUses(string(raw)) {
			if !u.Linked {
				t.Errorf("%s:%s is the term's first use and does not link docs/glossary.md#%s", docName(p), u, u.Anchor)
			}
		}
	}
}

// TestGlossaryUses: code, headings and other links' texts are no uses; a use linked to another entry is not linked.
func TestGlossaryUses(t *testing.T) {
	t.Parallel()
	doc := "# The control plane\n\n```sh\necho control plane\n```\n" +
		"See [the control plane doc](x.md) and `control plane`.\n" +
		"The [control plane](../glossary.md#kcp) holds the [Kyma runtime](../glossary.md#kcp) of a subaccount.\n"
	got := map[string]FirstUse{}
	for _, u := range GlossaryUses(doc) {
		got[u.Anchor] = u
	}
	if u := got["kcp"]; u.Line != 7 || !u.Linked {
		t.Errorf("kcp: %+v, want line 7, linked", u)
	}
	if u := got["skr"]; u.Line != 7 || u.Linked {
		t.Errorf("skr: %+v, want line 7, linked to the wrong entry", u)
	}
	if u := got["subaccount"]; u.Line != 7 || u.Linked {
		t.Errorf("subaccount: %+v, want line 7, not linked", u)
	}
}

var anchorDrop = regexp.MustCompile(`[^a-z0-9 _-]`)

// githubAnchor is the anchor GitHub gives a heading.
func githubAnchor(h string) string {
	return strings.ReplaceAll(anchorDrop.ReplaceAllString(strings.ToLower(strings.TrimSpace(h)), ""), " ", "-")
}

// linkGlossary makes TestLinkGlossary link each unlinked first use (`go test -run TestLinkGlossary -link-glossary`).
var linkGlossary = flag.Bool("link-glossary", false, "link each glossary term's first use in README.md and docs/guide")

// TestLinkGlossary links, with -link-glossary, the first use of each glossary term in README.md and every guide
// chapter that TestDocsLinkGlossary finds unlinked.
func TestLinkGlossary(t *testing.T) {
	if !*linkGlossary {
		t.Skip("links only with -link-glossary")
	}
	for _, p := range documents(t) {
		rel := "../glossary.md"
		if filepath.Base(p) == "README.md" {
			rel = "docs/glossary.md"
		}
		for pass := 0; pass < 5; pass++ {
			raw, err := os.ReadFile(p)
			if err != nil {
				t.Fatal(err)
			}
			lines := strings.Split(string(raw), "\n")
			uses := GlossaryUses(string(raw))
			sort.Slice(uses, func(i, j int) bool {
				if uses[i].Line != uses[j].Line {
					return uses[i].Line < uses[j].Line
				}
				return uses[i].Col > uses[j].Col
			})
			changed, lastLine, lastCol := false, 0, 0
			for _, u := range uses {
				if u.Linked {
					continue
				}
				if u.Line == lastLine && u.Col+len(u.Word) > lastCol {
					continue // overlaps the one linked just now: the next pass
				}
				l := lines[u.Line-1]
				if strings.HasPrefix(l[u.Col+len(u.Word):], "](") || (u.Col > 0 && l[u.Col-1] == '[') {
					continue // inside a glossary link to another entry: left to the writer
				}
				lines[u.Line-1] = l[:u.Col] + "[" + u.Word + "](" + rel + "#" + u.Anchor + ")" + l[u.Col+len(u.Word):]
				changed, lastLine, lastCol = true, u.Line, u.Col
			}
			if !changed {
				break
			}
			if err := os.WriteFile(p, []byte(strings.Join(lines, "\n")), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
}
