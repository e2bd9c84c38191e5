package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"slices"
	"text/tabwriter"

	"github.com/kyma-keb/keb/internal/app"
	"github.com/kyma-keb/keb/internal/btpmanager"
	"github.com/kyma-keb/keb/internal/btpsecrets"
	"github.com/kyma-keb/keb/internal/controlplane"
	"github.com/kyma-keb/keb/internal/runtimeclient"
)

func reconcileCommand(fs *flag.FlagSet) func(ctx context.Context, args []string) error {
	return bindReconcile(fs, os.Stdout)
}

// bindReconcile registers the flags of `keb reconcile btp-secrets`.
func bindReconcile(fs *flag.FlagSet, out io.Writer) func(ctx context.Context, args []string) error {
	e := bindOperator(fs)
	var dryRun, all bool
	e.b.Bool(&dryRun, "dry-run", "KEB_RECONCILE_DRY_RUN", false, "print what the pass would do and change nothing")
	e.b.Bool(&all, "all", "KEB_RECONCILE_ALL", false, "list every runtime, also those whose Secret is unchanged")
	return func(ctx context.Context, args []string) error {
		if len(args) != 1 || args[0] != "btp-secrets" {
			return errors.New("usage: keb reconcile btp-secrets [--dry-run] [--all]")
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
		tw := tabwriter.NewWriter(out, 0, 4, 3, ' ', 0)
		fmt.Fprintln(tw, "INSTANCE\tRUNTIME\tACTION\tERROR")
		_, _, err = r.Pass(ctx, "", dryRun, nil, func(res btpsecrets.Result) {
			counts[res.Action]++
			if all || res.Action != btpmanager.ActionUnchanged {
				action := string(res.Action)
				if dryRun && (res.Action == btpmanager.ActionRecreated || res.Action == btpmanager.ActionRewritten) {
					action = "would be " + action
				}
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", res.InstanceID, res.RuntimeID, action, res.Error)
			}
		})
		_ = tw.Flush()
		printReconcileCounts(out, counts, dryRun)
		return err
	}
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
