package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/kyma-keb/keb/internal/auth"
	"github.com/kyma-keb/keb/internal/config"
	"github.com/kyma-keb/keb/internal/events"
)

func eventsCommand(fs *flag.FlagSet) func(ctx context.Context, args []string) error {
	return bindEvents(fs, os.Stdout, os.Stderr)
}

// eventRow is one line of `keb events`: an event of GET /events and, for the
// end of a step or an operation, how long it took.
type eventRow struct {
	events.Event
	// Took is from the step's start to its step_done, or from the
	// acceptance to the operation's end; absent for other events.
	Took string `json:"took,omitempty"`
}

// bindEvents registers the flags of `keb events -i INSTANCE [-r RUNTIME] [--operation OP]`.
func bindEvents(fs *flag.FlagSet, stdout, stderr io.Writer) func(ctx context.Context, args []string) error {
	c := &operatorClient{stdout: stdout, stderr: stderr, scopes: []string{auth.ScopeCLDRead}}
	b := config.NewBinder(fs)
	c.bind(b, fs)
	query := url.Values{}
	for _, f := range []struct{ param, name, short, env, help string }{
		{"instance_ids", "instance-id", "i", "KEB_EVENTS_INSTANCE_ID", "events of this instance"},
		{"runtime_ids", "runtime-id", "r", "KEB_EVENTS_RUNTIME_ID", "events of this runtime"},
		{"operation_ids", "operation", "", "KEB_EVENTS_OPERATION", "events of this operation"},
	} {
		bindRepeatable(fs, query, f.param, f.name, f.short, f.env, f.help)
	}
	return func(ctx context.Context, args []string) error {
		if err := b.Err(); err != nil {
			return err
		}
		if err := c.output.check(); err != nil {
			return err
		}
		if len(args) > 0 {
			return fmt.Errorf("unexpected arguments %q (name the instance with -i, the runtime with -r or the operation with --operation)", args)
		}
		if len(query) == 0 {
			return errors.New("name the instance with -i, the runtime with -r or the operation with --operation")
		}
		query.Set("page_size", fmt.Sprint(events.MaxPageSize))
		var list []events.Event
		if err := c.do(ctx, "GET", "/events?"+query.Encode(), nil, &list); err != nil {
			return err
		}
		return printEvents(c.stdout, c.output, withDurations(list))
	}
}

// withDurations adds to each step_done the time since its step started, and
// to an operation's end the time since it was accepted.
func withDurations(list []events.Event) []eventRow {
	started := map[string]time.Time{}
	rows := make([]eventRow, 0, len(list))
	for _, e := range list {
		r := eventRow{Event: e}
		switch e.Kind {
		case events.OperationAccepted:
			started[e.OperationID] = e.CreatedAt
		case events.StepStarted:
			started[e.OperationID+"/"+e.Step] = e.CreatedAt
		case events.StepDone:
			if t, ok := started[e.OperationID+"/"+e.Step]; ok {
				r.Took = took(e.CreatedAt.Sub(t))
			}
		case events.OperationSucceeded, events.OperationFailed:
			if t, ok := started[e.OperationID]; ok {
				r.Took = took(e.CreatedAt.Sub(t))
			}
		}
		rows = append(rows, r)
	}
	return rows
}

// took is a duration as people read it: 850ms, 12.3s, 4m05s, 1h02m.
func took(d time.Duration) string {
	switch {
	case d < time.Second:
		return d.Round(time.Millisecond).String()
	case d < time.Minute:
		return d.Round(100 * time.Millisecond).String()
	case d < time.Hour:
		return fmt.Sprintf("%dm%02ds", int(d.Minutes()), int(d.Seconds())%60)
	}
	return fmt.Sprintf("%dh%02dm", int(d.Hours()), int(d.Minutes())%60)
}

func printEvents(w io.Writer, o listOutput, rows []eventRow) error {
	type r = eventRow
	short := func(id string) string {
		if len(id) > 8 {
			return id[:8]
		}
		return id
	}
	table := []col[r]{
		{"TIME", func(e r) string { return e.CreatedAt.UTC().Format("2006-01-02 15:04:05") }},
		{"OPERATION", func(e r) string { return short(e.OperationID) }},
		{"TYPE", func(e r) string { return e.OperationType }},
		{"EVENT", func(e r) string { return string(e.Kind) }},
		{"STEP", func(e r) string { return orDash(e.Step) }},
		{"TOOK", func(e r) string { return orDash(e.Took) }},
		{"MESSAGE", func(e r) string { return strings.ReplaceAll(e.Message, "\n", " ") }},
	}
	wide := append([]col[r]{{"INSTANCE", func(e r) string { return e.InstanceID }}}, table...)
	wide[2] = col[r]{"OPERATION", func(e r) string { return e.OperationID }}
	return printItems(w, o, pageOf(rows), table, wide)
}
