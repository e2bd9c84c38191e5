package main

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/kyma-keb/keb/internal/devstack"
	"github.com/kyma-keb/keb/internal/runtimelisting"
)

// column is one column of `keb runtimes`' table.
type column struct {
	header string
	value  func(r runtimelisting.RuntimeDTO, now time.Time) string
}

var (
	colInstance   = column{"INSTANCE", func(r runtimelisting.RuntimeDTO, _ time.Time) string { return r.InstanceID }}
	colRuntime    = column{"RUNTIME", func(r runtimelisting.RuntimeDTO, _ time.Time) string { return r.RuntimeID }}
	colAccount    = column{"ACCOUNT", func(r runtimelisting.RuntimeDTO, _ time.Time) string { return r.GlobalAccountID }}
	colSubaccount = column{"SUBACCOUNT", func(r runtimelisting.RuntimeDTO, _ time.Time) string { return r.SubAccountID }}
	colShoot      = column{"SHOOT", func(r runtimelisting.RuntimeDTO, _ time.Time) string { return r.ShootName }}
	colPlan       = column{"PLAN", func(r runtimelisting.RuntimeDTO, _ time.Time) string { return r.ServicePlanName }}
	colRegion     = column{"REGION", func(r runtimelisting.RuntimeDTO, _ time.Time) string { return r.ProviderRegion }}
	colState      = column{"STATE", func(r runtimelisting.RuntimeDTO, _ time.Time) string { return r.Status.State }}
	colKyma       = column{"KYMA", func(r runtimelisting.RuntimeDTO, _ time.Time) string { return r.KymaState }}
	colAge        = column{"AGE", func(r runtimelisting.RuntimeDTO, now time.Time) string { return age(now, r.Status.CreatedAt) }}
)

// outputColumns parses -o: nil columns mean JSON.
func outputColumns(output string) ([]column, error) {
	switch {
	case output == "json":
		return nil, nil
	case output == "table":
		return []column{colInstance, colRuntime, colAccount, colPlan, colRegion, colState, colAge}, nil
	case output == "wide":
		return []column{colInstance, colRuntime, colAccount, colSubaccount, colShoot, colPlan, colRegion, colState, colKyma, colAge}, nil
	case strings.HasPrefix(output, "custom="):
		var cols []column
		for _, spec := range strings.Split(strings.TrimPrefix(output, "custom="), ",") {
			header, field, ok := strings.Cut(spec, ":")
			if !ok || header == "" || field == "" {
				return nil, fmt.Errorf("bad custom column %q: want HEADER:field, e.g. STATE:status.state", spec)
			}
			path := strings.Split(strings.TrimPrefix(field, "."), ".")
			cols = append(cols, column{strings.ToUpper(header), func(r runtimelisting.RuntimeDTO, _ time.Time) string {
				return fieldOf(r, path)
			}})
		}
		return cols, nil
	default:
		return nil, fmt.Errorf("unknown output format %q (want table, wide, json or custom=HEADER:field,...)", output)
	}
}

// fieldOf reads a dotted JSON path (as in -o json) of a runtime.
func fieldOf(r runtimelisting.RuntimeDTO, path []string) string {
	raw, err := json.Marshal(r)
	if err != nil {
		return ""
	}
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		return ""
	}
	for _, p := range path {
		m, ok := v.(map[string]any)
		if !ok {
			return ""
		}
		v = m[p]
	}
	switch x := v.(type) {
	case nil:
		return ""
	case string:
		return x
	default:
		b, _ := json.Marshal(x)
		return string(b)
	}
}

// printTable prints the runtimes as cols, with their operations below each
// when ops.
func printTable(w io.Writer, data []runtimelisting.RuntimeDTO, cols []column, now time.Time, ops bool) error {
	tw := tabwriter.NewWriter(w, 0, 0, 3, ' ', 0)
	headers := make([]string, len(cols))
	for i, c := range cols {
		headers[i] = c.header
	}
	fmt.Fprintln(tw, strings.Join(headers, "\t"))
	for _, r := range data {
		vals := make([]string, len(cols))
		for i, c := range cols {
			vals[i] = orDash(c.value(r, now))
		}
		fmt.Fprintln(tw, strings.Join(vals, "\t"))
		if ops {
			for _, op := range r.Status.Operations {
				fmt.Fprintf(tw, "  %s %s\t%s\t%s\t%s\n", op.Type, op.OperationID, op.State, age(now, op.CreatedAt), op.Description)
			}
		}
	}
	return tw.Flush()
}

// devURL is the running keb dev's URL, from its endpoints file in the dev
// directory, or keb dev's default.
func devURL(dir string) string {
	if e, err := devstack.LoadEndpoints(dir); err == nil && e.BrokerURL != "" {
		return e.BrokerURL
	}
	return "http://127.0.0.1:8080"
}
