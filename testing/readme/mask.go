package readme

import (
	"fmt"
	"regexp"
	"slices"
	"strings"
)

// masks replace what differs from run to run with a placeholder, so that an output is compared by its
// shape. Keep this list short: a command that can print something stable (a jq selection, a --sort-by, a
// loop that prints only the final state) is better than a mask.
var masks = []struct {
	re   *regexp.Regexp
	with string
}{
	// Instance, runtime, operation, orchestration and request IDs.
	{regexp.MustCompile(`[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}`), "<uuid>"},
	// Shoot names: "c-" and the runtime ID's first 7 hex digits.
	{regexp.MustCompile(`\bc-[0-9a-f]{7}\b`), "<shoot>"},
	// A binding's ServiceAccount.
	{regexp.MustCompile(`keb-binding-[0-9a-f]{16}`), "keb-binding-<hex>"},
	// JWTs (a cut one too).
	{regexp.MustCompile(`eyJ[A-Za-z0-9_.-]*`), "<jwt>"},
	// RFC 3339 times, with or without fractions and zone.
	{regexp.MustCompile(`\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?(Z|[+-]\d\d:\d\d)?`), "<time>"},
	// HTTP dates.
	{regexp.MustCompile(`[A-Z][a-z]{2}, \d\d [A-Z][a-z]{2} \d{4} \d\d:\d\d:\d\d GMT`), "<date>"},
	// Clock times (keb orchestrations show --watch).
	{regexp.MustCompile(`\b\d\d:\d\d:\d\d\b`), "<clock>"},
	// Unix times in milliseconds (the CIS stand-in's actionTime).
	{regexp.MustCompile(`\b1\d{12}\b`), "<unixms>"},
	// mktemp's directories ($KEB_TMP).
	{regexp.MustCompile(`/tmp/tmp\.[A-Za-z0-9]+`), "<tmp>"},
	// keb dev's pool accounts: which one a provisioning claims depends on what earlier chapters left dirty.
	{regexp.MustCompile(`\b(aws|azure|gcp|openstack)-dev-\d\d\b`), "$1-dev-<n>"},
	// IAS stand-in's service provider IDs (32 hex digits) and client IDs ("T" and 12 hex digits).
	{regexp.MustCompile(`\b[0-9a-f]{32}\b`), "<hex32>"},
	{regexp.MustCompile(`\bT[0-9a-f]{12}\b`), "<ias-client>"},
	// Ports of local listeners: keb dev's, the runtimes' apiservers'.
	{regexp.MustCompile(`127\.0\.0\.1:\d+`), "127.0.0.1:<port>"},
	// Ages and durations as kubectl and keb print them (5s, 2m, 1m20s, 3h, 12d; "21s ago").
	{regexp.MustCompile(`\b\d+(\.\d+)?(ms|s|m|h|d)(\d+(s|m))?\b`), "<age>"},
}

// mask applies masks to one line and folds its runs of blanks into one, since column widths follow the
// masked values.
func mask(line string) string {
	for _, m := range masks {
		line = m.re.ReplaceAllString(line, m.with)
	}
	return strings.Join(strings.Fields(line), " ")
}

// comparable is an output as compared: masked, without blank lines and without the in-progress answers of
// a polling loop (how many it prints depends on timing); sorted when its order does not matter.
func comparable(output []string, unordered bool) []string {
	var out []string
	for _, l := range output {
		if strings.Contains(l, `"state":"in progress"`) {
			continue
		}
		if l = mask(l); l != "" {
			out = append(out, l)
		}
	}
	if unordered {
		slices.Sort(out)
	}
	return out
}

// Compare returns "" when got has the shape of want, else a diff of their masked lines ("-" pasted, "+"
// got).
func Compare(want, got []string, unordered bool) string {
	w, g := comparable(want, unordered), comparable(got, unordered)
	if slices.Equal(w, g) {
		return ""
	}
	return diff(w, g)
}

// diff is a line diff of a and b (longest common subsequence), at most 80 lines of it.
func diff(a, b []string) string {
	n, m := len(a), len(b)
	lcs := make([][]int, n+1)
	for i := range lcs {
		lcs[i] = make([]int, m+1)
	}
	for i := n - 1; i >= 0; i-- {
		for j := m - 1; j >= 0; j-- {
			if a[i] == b[j] {
				lcs[i][j] = lcs[i+1][j+1] + 1
			} else {
				lcs[i][j] = max(lcs[i+1][j], lcs[i][j+1])
			}
		}
	}
	var out []string
	i, j := 0, 0
	for i < n || j < m {
		switch {
		case i < n && j < m && a[i] == b[j]:
			out = append(out, "  "+a[i])
			i, j = i+1, j+1
		case j < m && (i == n || lcs[i][j+1] >= lcs[i+1][j]):
			out = append(out, "+ "+b[j])
			j++
		default:
			out = append(out, "- "+a[i])
			i++
		}
	}
	if len(out) > 80 {
		out = append(out[:80], fmt.Sprintf("… %d more lines", len(out)-80))
	}
	return strings.Join(out, "\n")
}
