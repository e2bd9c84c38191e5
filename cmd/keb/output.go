package main

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"sigs.k8s.io/yaml"

	"github.com/kyma-keb/keb/internal/config"
)

// listOutput is how every listing command prints, in kubectl's conventions:
// -o/--output table|wide|json|yaml|custom-columns=HEADER:.field,...,
// --no-headers; tables with UPPER_SNAKE headers, columns three spaces apart
// (kubectl's padding), ages as AGE; JSON and YAML of a list are the page
// GET /runtimes answers: {data, count, totalCount[, next]}.
type listOutput struct {
	format    string
	noHeaders bool
}

const outputFormats = "table, wide, json, yaml or custom-columns=HEADER:.field,... (fields as in -o json, e.g. custom-columns=ID:.instanceID,STATE:.status.state)"

// bindListOutput registers --output, its short form -o, and --no-headers.
func bindListOutput(b *config.Binder, fs *flag.FlagSet, o *listOutput) {
	b.String(&o.format, "output", "KEB_OUTPUT", "table", "output format: "+outputFormats)
	fs.Var(stringAlias{&o.format}, "o", "short for --output (env KEB_OUTPUT)")
	b.Bool(&o.noHeaders, "no-headers", "KEB_NO_HEADERS", false, "tables without their header line")
}

// stringAlias is a second flag name for a string flag.
type stringAlias struct{ p *string }

func (a stringAlias) String() string {
	if a.p == nil {
		return ""
	}
	return *a.p
}
func (a stringAlias) Set(s string) error { *a.p = s; return nil }

// structured reports whether the format prints the items themselves.
func (o listOutput) structured() bool { return o.format == "json" || o.format == "yaml" }

// check refuses an unknown format before anything is fetched.
func (o listOutput) check() error {
	switch {
	case o.format == "table", o.format == "wide", o.structured():
		return nil
	case strings.HasPrefix(o.format, "custom-columns="):
		_, err := customColumns[any](o.format)
		return err
	}
	return fmt.Errorf("unknown output format %q (want %s)", o.format, outputFormats)
}

// page is a list as JSON and YAML print it.
type page[T any] struct {
	Data       []T    `json:"data"`
	Count      int    `json:"count"`
	TotalCount int    `json:"totalCount"`
	Next       string `json:"next,omitempty"`
}

// pageOf is the page of a whole list.
func pageOf[T any](items []T) page[T] {
	return page[T]{Data: items, Count: len(items), TotalCount: len(items)}
}

// col is one column of a table of T.
type col[T any] struct {
	header string
	value  func(T) string
}

// printItems prints a page in o's format: table and wide through their
// columns, json and yaml whole, custom-columns by JSON field paths.
func printItems[T any](w io.Writer, o listOutput, p page[T], table, wide []col[T]) error {
	if p.Data == nil {
		p.Data = []T{}
	}
	if o.structured() {
		return printObject(w, o.format, p)
	}
	cols := table
	if o.format == "wide" && wide != nil {
		cols = wide
	}
	if strings.HasPrefix(o.format, "custom-columns=") {
		var err error
		if cols, err = customColumns[T](o.format); err != nil {
			return err
		}
	}
	return printTable(w, o, p.Data, cols, nil)
}

// printTable prints items as cols; below each item, the rows sub gives
// (indented), if any. The sub-rows are aligned among themselves, not with
// the items' columns (an operation's cells are not a runtime's): each set
// is laid out by its own tabwriter and the lines interleaved.
func printTable[T any](w io.Writer, o listOutput, items []T, cols []col[T], sub func(T) []string) error {
	var main, subs bytes.Buffer
	tw := tabwriter.NewWriter(&main, 0, 0, 3, ' ', 0)
	if !o.noHeaders {
		headers := make([]string, len(cols))
		for i, c := range cols {
			headers[i] = c.header
		}
		fmt.Fprintln(tw, strings.Join(headers, "\t"))
	}
	subTW := tabwriter.NewWriter(&subs, 0, 0, 3, ' ', 0)
	subCount := make([]int, len(items))
	for n, it := range items {
		vals := make([]string, len(cols))
		for i, c := range cols {
			vals[i] = orDash(c.value(it))
		}
		fmt.Fprintln(tw, strings.Join(vals, "\t"))
		if sub != nil {
			for _, line := range sub(it) {
				fmt.Fprintln(subTW, "  "+line)
				subCount[n]++
			}
		}
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if err := subTW.Flush(); err != nil {
		return err
	}
	mainLines := strings.SplitAfter(main.String(), "\n")
	subLines := strings.SplitAfter(subs.String(), "\n")
	var out strings.Builder
	if !o.noHeaders {
		out.WriteString(mainLines[0])
		mainLines = mainLines[1:]
	}
	for n := range items {
		out.WriteString(mainLines[n])
		for range subCount[n] {
			out.WriteString(subLines[0])
			subLines = subLines[1:]
		}
	}
	_, err := io.WriteString(w, out.String())
	return err
}

// printYAML prints v as YAML, by way of its JSON (so the field names are
// the API's).
func printYAML(w io.Writer, v any) error {
	raw, err := json.Marshal(v)
	if err != nil {
		return err
	}
	out, err := yaml.JSONToYAML(raw)
	if err != nil {
		return err
	}
	_, err = w.Write(out)
	return err
}

// printObject prints one object as JSON or YAML.
func printObject(w io.Writer, format string, v any) error {
	if format == "yaml" {
		return printYAML(w, v)
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false) // a terminal shows "->", not "\u003e"
	return enc.Encode(v)
}

// customColumns parses custom-columns=HEADER:.field,...
func customColumns[T any](format string) ([]col[T], error) {
	var cols []col[T]
	for _, spec := range strings.Split(strings.TrimPrefix(format, "custom-columns="), ",") {
		header, field, ok := strings.Cut(spec, ":")
		if !ok || header == "" || strings.Trim(field, ".") == "" {
			return nil, fmt.Errorf("bad custom column %q: want HEADER:.field, e.g. STATE:.status.state", spec)
		}
		path := strings.Split(strings.TrimPrefix(field, "."), ".")
		cols = append(cols, col[T]{strings.ToUpper(header), func(it T) string { return fieldOf(it, path) }})
	}
	return cols, nil
}

// fieldOf reads a dotted JSON path (as in -o json) of v.
func fieldOf(v any, path []string) string {
	raw, err := json.Marshal(v)
	if err != nil {
		return ""
	}
	var x any
	if err := json.Unmarshal(raw, &x); err != nil {
		return ""
	}
	for _, p := range path {
		m, ok := x.(map[string]any)
		if !ok {
			return ""
		}
		x = m[p]
	}
	switch y := x.(type) {
	case nil:
		return ""
	case string:
		return y
	default:
		b, _ := json.Marshal(y)
		return string(b)
	}
}
