package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"slices"

	"github.com/kyma-keb/keb/internal/app"
	"github.com/kyma-keb/keb/internal/btpmanager"
	"github.com/kyma-keb/keb/internal/btpsecrets"
	"github.com/kyma-keb/keb/internal/controlplane"
	"github.com/kyma-keb/keb/internal/runtimeclient"
)

func reconcileCommand(fs *flag.FlagSet) func(ctx context.Context, args []string) error {
	return bindReconcile(fs, os.Stdout, os.Stderr)
}

// bindReconcile registers the flags of `keb reconcile btp-secrets`. With -o
// json or yaml the runtimes print as a page and the summary goes to errOut,
// as for `keb cleanup`; tables print both to out.
func bindReconcile(fs *flag.FlagSet, out, errOut io.Writer) func(ctx context.Context, args []string) error {
	e := bindOperator(fs)
	var dryRun, all bool
	var o listOutput
	bindListOutput(e.b, fs, &o)
	e.b.Bool(&dryRun, "dry-run", "KEB_RECONCILE_DRY_RUN", false, "print what the pass would do and change nothing")
	e.b.Bool(&all, "all", "KEB_RECONCILE_ALL", false, "list every runtime, also those whose Secret is unchanged")
	return func(ctx context.Context, args []string) error {
		if len(args) != 1 || args[0] != "btp-secrets" {
			return errors.New("usage: keb reconcile btp-secrets [--dry-run] [--all]")
		}
		if err := o.check(); err != nil {
			return err
		}
		log, store, closeStore, err := e.open(ctx)
		if err != nil {
			return err
		}
		defer closeStore()
		kcp, err := e.controlPlane(e.cfg.Engine.KCPKubeconfig)
		if err != nil {
			return err
		}
		scheme, err := app.Scheme()
		if err != nil {
			return err
		}
		// A bounded cache, as keb serve's: the pass holds at most its
		// bound of runtime clients however many runtimes it walks.
		runtimes := runtimeclient.NewCache(kcp, controlplane.Namespace, scheme, runtimeclient.Bounds{})
		r := app.BTPSecretsReconciler(e.cfg, store, runtimes, nil, log)
		counts := map[btpmanager.Action]int{}
		var rows []reconciledRuntime
		_, _, err = r.Pass(ctx, "", dryRun, nil, func(res btpsecrets.Result) {
			counts[res.Action]++
			if all || res.Action != btpmanager.ActionUnchanged {
				action := string(res.Action)
				if dryRun && (res.Action == btpmanager.ActionRecreated || res.Action == btpmanager.ActionRewritten) {
					action = "would be " + action
				}
				rows = append(rows, reconciledRuntime{res.InstanceID, res.RuntimeID, action, res.Error})
			}
		})
		summary := out
		if o.structured() {
			summary = errOut
		}
		if perr := printReconciled(out, o, rows); err == nil {
			err = perr
		}
		printReconcileCounts(summary, counts, dryRun)
		return err
	}
}

// reconciledRuntime is one row of `keb reconcile btp-secrets`.
type reconciledRuntime struct {
	InstanceID string `json:"instanceID"`
	RuntimeID  string `json:"runtimeID"`
	Action     string `json:"action"`
	Error      string `json:"error,omitempty"`
}

func printReconciled(out io.Writer, o listOutput, rows []reconciledRuntime) error {
	type r = reconciledRuntime
	return printItems(out, o, pageOf(rows), []col[r]{
		{"INSTANCE", func(r r) string { return r.InstanceID }},
		{"RUNTIME", func(r r) string { return r.RuntimeID }},
		{"ACTION", func(r r) string { return r.Action }},
		{"ERROR", func(r r) string { return r.Error }},
	}, nil)
}

func printReconcileCounts(out io.Writer, counts map[btpmanager.Action]int, dryRun bool) {
	total := 0
	for _, n := range counts {
		total += n
	}
	fmt.Fprintf(out, "%d runtimes:", total)
	for _, a := range btpmanager.Actions {
		if n := counts[a]; n > 0 || slices.Contains([]btpmanager.Action{btpmanager.ActionRecreated, btpmanager.ActionRewritten}, a) {
			fmt.Fprintf(out, " %d %s", n, a)
		}
	}
	fmt.Fprintln(out)
	if dryRun {
		fmt.Fprintln(out, "dry run: nothing changed")
	}
}
