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

	"github.com/kyma-keb/keb/internal/auth"
	"github.com/kyma-keb/keb/internal/config"
	"github.com/kyma-keb/keb/internal/events"
)

func eventsCommand(fs *flag.FlagSet) func(ctx context.Context, args []string) error {
	return bindEvents(fs, os.Stdout, os.Stderr)
}

// eventRow is one line of `keb events`: an event with how long its step
// or operation took (events.WithDurations).
type eventRow = events.Row

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
		return printEvents(c.stdout, c.output, events.WithDurations(list))
	}
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
