package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"text/tabwriter"

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
	return bindCleanup(fs, os.Stdout)
}

// bindCleanup registers the flags of `keb cleanup subaccounts|environments`.
func bindCleanup(fs *flag.FlagSet, out io.Writer) func(ctx context.Context, args []string) error {
	e := bindOperator(fs)
	var dryRun bool
	e.b.Bool(&dryRun, "dry-run", "KEB_CLEANUP_DRY_RUN", false, "print what the pass would do and change nothing")
	return func(ctx context.Context, args []string) error {
		if len(args) != 1 || (args[0] != "subaccounts" && args[0] != "environments") {
			return errors.New("usage: keb cleanup subaccounts|environments [--dry-run] (environments also --max-age, --label-selector)")
		}
		log, store, closeStore, err := e.open(ctx)
		if err != nil {
			return err
		}
		defer closeStore()
		if args[0] == "subaccounts" {
			return cleanSubaccounts(ctx, e, store, dryRun, log, out)
		}
		return cleanEnvironments(ctx, e, store, dryRun, log, out)
	}
}

func cleanSubaccounts(ctx context.Context, e *operatorEnv, store *storage.Store, dryRun bool, log logrus.FieldLogger, out io.Writer) error {
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
	printSubaccountReport(out, rep)
	return err
}

func printSubaccountReport(out io.Writer, rep cleanup.SubaccountReport) {
	verb := "triggered"
	if rep.DryRun {
		verb = "would trigger"
	}
	if len(rep.Actions) > 0 {
		tw := tabwriter.NewWriter(out, 0, 4, 3, ' ', 0)
		fmt.Fprintln(tw, "INSTANCE\tSUBACCOUNT\tOUTCOME\tOPERATION")
		for _, a := range rep.Actions {
			outcome := string(a.Outcome)
			if rep.DryRun && a.Outcome == cleanup.OutcomeTriggered {
				outcome = verb
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", a.InstanceID, a.SubaccountID, outcome, a.OperationID)
		}
		_ = tw.Flush()
	}
	fmt.Fprintf(out, "%d events fetched, %d subaccounts, %d instances found, %d %s, %d already going, %d busy\n",
		rep.Events, rep.Subaccounts, rep.Instances, rep.Triggered, verb, rep.AlreadyGoing, rep.Busy)
	if rep.Stopped != "" {
		fmt.Fprintf(out, "stopped early: %s\n", rep.Stopped)
	}
	if rep.DryRun {
		fmt.Fprintln(out, "dry run: nothing changed, the watermark stays")
	}
}

func cleanEnvironments(ctx context.Context, e *operatorEnv, store *storage.Store, dryRun bool, log logrus.FieldLogger, out io.Writer) error {
	kcp, err := e.controlPlane(e.cfg.Engine.KCPKubeconfig)
	if err != nil {
		return err
	}
	ec, err := app.EnvironmentsCleaner(e.cfg, store, kcp, log.WithField("component", cleanup.EnvironmentsJob))
	if err != nil {
		return err
	}
	rep, err := ec.Run(ctx, dryRun)
	printEnvironmentsReport(out, rep)
	if err == nil && rep.Refused != "" {
		err = errors.New("refused: " + rep.Refused)
	}
	return err
}

func printEnvironmentsReport(out io.Writer, rep cleanup.EnvironmentsReport) {
	tw := tabwriter.NewWriter(out, 0, 4, 3, ' ', 0)
	fmt.Fprintln(tw, "RUNTIME\tINSTANCE\tAGE\tACTION\tREASON")
	for _, d := range rep.Decisions {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", d.RuntimeID, d.InstanceID, d.Age, d.Action, d.Reason)
	}
	_ = tw.Flush()
	n := len(rep.ToAct())
	switch {
	case rep.Refused != "":
		fmt.Fprintf(out, "acted on none: %s\n", rep.Refused)
	case rep.DryRun:
		fmt.Fprintf(out, "dry run: %d runtimes would be cleaned up; nothing changed\n", n)
	default:
		fmt.Fprintf(out, "%d of %d runtimes cleaned up\n", rep.Acted, n)
	}
}
