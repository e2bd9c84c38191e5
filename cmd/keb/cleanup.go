package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/sirupsen/logrus"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kyma-keb/keb/internal/app"
	"github.com/kyma-keb/keb/internal/cleanup"
	"github.com/kyma-keb/keb/internal/config"
	"github.com/kyma-keb/keb/internal/devstack"
	"github.com/kyma-keb/keb/internal/process"
	"github.com/kyma-keb/keb/internal/storage"
)

// operatorEnv is what the operator commands (`keb cleanup`, `keb pool`)
// share: keb serve's settings, or the running keb dev's when no database
// is set.
type operatorEnv struct {
	cfg     config.Config
	dir     string
	verbose bool
	b       *config.Binder
}

// bindOperator binds keb serve's settings and --dir.
func bindOperator(fs *flag.FlagSet) *operatorEnv {
	e := &operatorEnv{b: config.NewBinder(fs)}
	e.cfg.BindServe(e.b)
	e.b.String(&e.dir, "dir", "APP_DEV_DIR", ".keb", "dev state directory of the running keb dev, used when no database is set")
	e.b.Bool(&e.verbose, "v", "KEB_VERBOSE", false, "log what the command does to stderr (--log-level, --log-format); without it only the result and errors are printed")
	return e
}

// open completes the settings from the dev stack when no database is set,
// and opens the database (no migrations: that is keb serve's or keb
// migrate's job) with an insert-only queue, so that deprovisionings started
// here are driven by the running replicas. close releases the database.
func (e *operatorEnv) open(ctx context.Context) (log logrus.FieldLogger, store *storage.Store, close func(), err error) {
	if err := e.b.Err(); err != nil {
		return nil, nil, nil, err
	}
	if e.cfg.DatabaseURL == "" {
		if err := devstack.FillConfig(&e.cfg, e.dir); err != nil {
			return nil, nil, nil, err
		}
	}
	l, err := newLogger(e.cfg.LogFormat, e.cfg.LogLevel)
	if err != nil {
		return nil, nil, nil, err
	}
	if !e.verbose {
		// A command's result is its table and summary; the log lines
		// beside them on a terminal only repeat them.
		l.SetOutput(io.Discard)
	}
	log = l
	cipher, err := storage.NewCipher(e.cfg.DatabaseSecretKey, e.cfg.DatabaseSecretKeysPrior...)
	if err != nil {
		return nil, nil, nil, err
	}
	pool, err := storage.Open(ctx, e.cfg.DatabaseURL, 4)
	if err != nil {
		return nil, nil, nil, err
	}
	st, err := storage.Migrations(ctx, pool)
	if err == nil && !st.AtHead() {
		err = fmt.Errorf("database schema at version %d, this keb needs %d: run `keb migrate up`", st.Current, st.Head)
	}
	var queue *process.Queue
	if err == nil {
		queue, err = process.NewQueue(pool, process.QueueConfig{}, log)
	}
	if err != nil {
		pool.Close()
		return nil, nil, nil, err
	}
	return log, storage.NewStore(pool, cipher, queue), pool.Close, nil
}

// controlPlane connects to the control plane (APP_KCP_KUBECONFIG).
func (e *operatorEnv) controlPlane(kubeconfig string) (client.Client, error) {
	if kubeconfig == "" {
		return nil, errors.New("no control plane: set APP_KCP_KUBECONFIG (or KUBECONFIG)")
	}
	scheme, err := app.Scheme()
	if err != nil {
		return nil, err
	}
	rc, err := app.LoadKubeconfig(kubeconfig)
	if err != nil {
		return nil, err
	}
	return client.New(rc, client.Options{Scheme: scheme})
}

func cleanupCommand(fs *flag.FlagSet) func(ctx context.Context, args []string) error {
	return bindCleanup(fs, os.Stdout, os.Stderr)
}

// bindCleanup registers the flags of `keb cleanup subaccounts|environments`.
// With -o json or yaml the pass's items print as a page and its summary
// goes to errOut; tables print both to out.
func bindCleanup(fs *flag.FlagSet, out, errOut io.Writer) func(ctx context.Context, args []string) error {
	e := bindOperator(fs)
	var dryRun bool
	var o listOutput
	e.b.Bool(&dryRun, "dry-run", "KEB_CLEANUP_DRY_RUN", false, "print what the pass would do and change nothing")
	bindListOutput(e.b, fs, &o)
	return func(ctx context.Context, args []string) error {
		if len(args) != 1 || (args[0] != "subaccounts" && args[0] != "environments") {
			return errors.New("usage: keb cleanup subaccounts|environments [--dry-run] (environments also --max-age, --label-selector)")
		}
		if err := o.check(); err != nil {
			return err
		}
		summary := out
		if o.structured() {
			summary = errOut
		}
		log, store, closeStore, err := e.open(ctx)
		if err != nil {
			return err
		}
		defer closeStore()
		if args[0] == "subaccounts" {
			return cleanSubaccounts(ctx, e, store, dryRun, log, printer{out, summary, o})
		}
		return cleanEnvironments(ctx, e, store, dryRun, log, printer{out, summary, o})
	}
}

// printer is where a pass's report goes: its items to out in the chosen
// format, its summary lines to summary.
type printer struct {
	out, summary io.Writer
	o            listOutput
}

func cleanSubaccounts(ctx context.Context, e *operatorEnv, store *storage.Store, dryRun bool, log logrus.FieldLogger, p printer) error {
	if !e.cfg.Cleanup.SubaccountCleanupOn() {
		return errors.New("no CIS: set APP_CIS_EVENT_SERVICE_URL, APP_CIS_AUTH_URL and the client credentials")
	}
	if err := e.cfg.Cleanup.Validate(); err != nil {
		return err
	}
	sc, err := app.SubaccountCleaner(e.cfg, store, log.WithField("component", cleanup.SubaccountJob))
	if err != nil {
		return err
	}
	rep, err := sc.Run(ctx, dryRun)
	if perr := printSubaccountReport(p, rep); err == nil {
		err = perr
	}
	return err
}

// subaccountAction is one row of `keb cleanup subaccounts`.
type subaccountAction struct {
	InstanceID   string `json:"instanceID"`
	SubaccountID string `json:"subaccountID"`
	Outcome      string `json:"outcome"`
	OperationID  string `json:"operationID,omitempty"`
}

func printSubaccountReport(p printer, rep cleanup.SubaccountReport) error {
	verb := "triggered"
	if rep.DryRun {
		verb = "would trigger"
	}
	rows := make([]subaccountAction, 0, len(rep.Actions))
	for _, a := range rep.Actions {
		outcome := string(a.Outcome)
		if rep.DryRun && a.Outcome == cleanup.OutcomeTriggered {
			outcome = verb
		}
		rows = append(rows, subaccountAction{a.InstanceID, a.SubaccountID, outcome, a.OperationID})
	}
	if len(rows) > 0 || p.o.structured() {
		type a = subaccountAction
		cols := []col[a]{
			{"INSTANCE", func(a a) string { return a.InstanceID }},
			{"SUBACCOUNT", func(a a) string { return a.SubaccountID }},
			{"OUTCOME", func(a a) string { return a.Outcome }},
			{"OPERATION", func(a a) string { return a.OperationID }},
		}
		if err := printItems(p.out, p.o, pageOf(rows), cols, nil); err != nil {
			return err
		}
	}
	fmt.Fprintf(p.summary, "%d events fetched, %d subaccounts, %d instances found, %d %s, %d already going, %d busy\n",
		rep.Events, rep.Subaccounts, rep.Instances, rep.Triggered, verb, rep.AlreadyGoing, rep.Busy)
	if rep.Stopped != "" {
		fmt.Fprintf(p.summary, "stopped early: %s\n", rep.Stopped)
	}
	if rep.DryRun {
		fmt.Fprintln(p.summary, "dry run: nothing changed, the watermark stays")
	}
	return nil
}

func cleanEnvironments(ctx context.Context, e *operatorEnv, store *storage.Store, dryRun bool, log logrus.FieldLogger, p printer) error {
	kcp, err := e.controlPlane(e.cfg.Engine.KCPKubeconfig)
	if err != nil {
		return err
	}
	ec, err := app.EnvironmentsCleaner(e.cfg, store, kcp, log.WithField("component", cleanup.EnvironmentsJob))
	if err != nil {
		return err
	}
	rep, err := ec.Run(ctx, dryRun)
	if perr := printEnvironmentsReport(p, rep, time.Now()); err == nil {
		err = perr
	}
	if err == nil && rep.Refused != "" {
		err = errors.New("refused: " + rep.Refused)
	}
	return err
}

// environmentDecision is one row of `keb cleanup environments`.
type environmentDecision struct {
	RuntimeID   string    `json:"runtimeID"`
	InstanceID  string    `json:"instanceID,omitempty"`
	CreatedAt   time.Time `json:"createdAt"`
	Action      string    `json:"action"`
	Reason      string    `json:"reason"`
	OperationID string    `json:"operationID,omitempty"`
}

func printEnvironmentsReport(p printer, rep cleanup.EnvironmentsReport, now time.Time) error {
	rows := make([]environmentDecision, 0, len(rep.Decisions))
	for _, d := range rep.Decisions {
		rows = append(rows, environmentDecision{d.RuntimeID, d.InstanceID, now.Add(-d.Age).UTC().Truncate(time.Second),
			string(d.Action), d.Reason, d.OperationID})
	}
	type d = environmentDecision
	cols := []col[d]{
		{"RUNTIME", func(d d) string { return d.RuntimeID }},
		{"INSTANCE", func(d d) string { return d.InstanceID }},
		{"AGE", func(d d) string { return age(now, d.CreatedAt) }},
		{"ACTION", func(d d) string { return d.Action }},
		{"REASON", func(d d) string { return d.Reason }},
	}
	if err := printItems(p.out, p.o, pageOf(rows), cols, nil); err != nil {
		return err
	}
	n := len(rep.ToAct())
	switch {
	case rep.Refused != "":
		fmt.Fprintf(p.summary, "acted on none: %s\n", rep.Refused)
	case rep.DryRun:
		fmt.Fprintf(p.summary, "dry run: %d runtimes would be cleaned up; nothing changed\n", n)
	default:
		fmt.Fprintf(p.summary, "%d of %d runtimes cleaned up\n", rep.Acted, n)
	}
	return nil
}
