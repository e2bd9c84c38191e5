package main

import (
	"bytes"
	"testing"

	"github.com/kyma-keb/keb/internal/btpmanager"
)

// `keb reconcile btp-secrets` prints in the listing commands' conventions (golden files under
// testdata): a table and its summary, or with -o json a page and the summary apart (stderr).
func TestReconcileOutputs(t *testing.T) {
	t.Parallel()
	rows := []reconciledRuntime{
		{InstanceID: "inst-1", RuntimeID: "rt-1", Action: "would be recreated"},
		{InstanceID: "inst-2", RuntimeID: "rt-2", Action: "failed", Error: "runtime unreachable"},
	}
	counts := map[btpmanager.Action]int{btpmanager.ActionRecreated: 1, btpmanager.ActionUnchanged: 3}
	for name, o := range map[string]listOutput{"reconcile.txt": {format: "table"}, "reconcile-no-headers.txt": {format: "table", noHeaders: true},
		"reconcile.json": {format: "json"}} {
		var out, summary bytes.Buffer
		if err := printReconciled(&out, o, rows); err != nil {
			t.Fatal(err)
		}
		printReconcileCounts(&summary, counts, true)
		golden(t, name, out.String())
		golden(t, "reconcile-summary.txt", summary.String())
	}
}
