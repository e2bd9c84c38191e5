package readme

import (
	"fmt"
	"regexp"
	"strings"
)

// GlossaryTerms are the terms of docs/glossary.md that the README and each guide chapter link on their first use:
// the heading's anchor and the words that count as a use (aliases the docs use for the same thing included).
var GlossaryTerms = []struct {
	Anchor string
	Use    *regexp.Regexp
}{
	{"btp", regexp.MustCompile(`\bBTP\b`)},
	{"cis", regexp.MustCompile(`\bCIS\b`)},
	{"service-manager", regexp.MustCompile(`\bService Manager\b`)},
	{"osb", regexp.MustCompile(`\bOSB\b`)},
	{"kcp", regexp.MustCompile(`\bKCP\b|\bcontrol plane\b`)},
	{"skr", regexp.MustCompile(`\bSKR\b|\bKyma runtimes?\b`)},
	{"kim", regexp.MustCompile(`\bKIM\b|\binfrastructure manager\b`)},
	{"lifecycle-manager", regexp.MustCompile(`\bLifecycle Manager\b`)},
	{"gardener", regexp.MustCompile(`\bGardener\b`)},
	{"shoot", regexp.MustCompile(`\bshoots?\b`)},
	{"hyperscaler", regexp.MustCompile(`\bhyperscalers?\b`)},
	{"account-pool", regexp.MustCompile(`\baccount pool\b`)},
	{"hap", regexp.MustCompile(`\bHAP\b`)},
	{"river", regexp.MustCompile(`\bRiver\b`)},
	{"platform-region", regexp.MustCompile(`\bplatform regions?\b`)},
	{"provider-region", regexp.MustCompile(`\bprovider regions?\b`)},
	{"global-account", regexp.MustCompile(`\bglobal accounts?\b`)},
	{"subaccount", regexp.MustCompile(`\bsubaccounts?\b`)},
	{"plan", regexp.MustCompile(`\bplans?\b`)},
	{"instance", regexp.MustCompile(`\binstances?\b`)},
	{"operation", regexp.MustCompile(`\boperations?\b`)},
	{"binding", regexp.MustCompile(`\bbindings?\b`)},
	{"orchestration", regexp.MustCompile(`\borchestrations?\b`)},
	{"runtime-cr", regexp.MustCompile(`\bRuntime CRs?\b`)},
	{"kyma-cr", regexp.MustCompile(`\bKyma CRs?\b`)},
}

var (
	inlineCode = regexp.MustCompile("`[^`]*`")
	mdLink     = regexp.MustCompile(`(!?)\[([^\]]*)\]\(([^)\s]*)\)`)
)

// FirstUse is where a document first uses a glossary term in its prose (not in code, a heading, a comment or the
// text of a link elsewhere), and whether that use links to the term's glossary entry.
type FirstUse struct {
	Anchor string
	Line   int    // 1-based
	Col    int    // 0-based byte offset in the line
	Word   string // as written
	Linked bool
}

// GlossaryUses returns the first use of each glossary term in doc that it uses at all.
func GlossaryUses(doc string) []FirstUse {
	lines := strings.Split(doc, "\n")
	found := map[string]bool{}
	var uses []FirstUse
	fence := false
	for i, l := range lines {
		switch {
		case !fence && strings.HasPrefix(l, "```"):
			fence = true
			continue
		case fence && l == "```":
			fence = false
			continue
		}
		if fence || strings.HasPrefix(l, "#") || strings.HasPrefix(strings.TrimSpace(l), "<!--") {
			continue
		}
		masked := []byte(inlineCode.ReplaceAllStringFunc(l, func(s string) string { return strings.Repeat(" ", len(s)) }))
		type span struct {
			from, to int
			glossary string // the anchor when the link goes to the glossary
		}
		var links []span
		for _, m := range mdLink.FindAllSubmatchIndex(masked, -1) {
			target := string(masked[m[6]:m[7]])
			s := span{from: m[4], to: m[5]}
			if m[3] == m[2] { // not an image
				if p, anchor, ok := strings.Cut(target, "#"); ok && strings.HasSuffix(p, "glossary.md") {
					s.glossary = anchor
				}
			}
			links = append(links, s)
			for j := m[5]; j < m[1]; j++ { // the target is no prose
				masked[j] = ' '
			}
		}
		for _, term := range GlossaryTerms {
			if found[term.Anchor] {
				continue
			}
			for _, m := range term.Use.FindAllIndex(masked, -1) {
				var in *span
				for k := range links {
					if m[0] >= links[k].from && m[1] <= links[k].to {
						in = &links[k]
					}
				}
				if in != nil && in.glossary == "" {
					continue // the text of another link: not a use of its own
				}
				found[term.Anchor] = true
				uses = append(uses, FirstUse{Anchor: term.Anchor, Line: i + 1, Col: m[0], Word: string(masked[m[0]:m[1]]),
					Linked: in != nil && in.glossary == term.Anchor})
				break
			}
		}
	}
	return uses
}

// String says where the use is, for failures.
func (u FirstUse) String() string {
	return fmt.Sprintf("%d: %q (glossary #%s)", u.Line, u.Word, u.Anchor)
}
