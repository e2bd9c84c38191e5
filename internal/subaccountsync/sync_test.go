package subaccountsync_test

import (
	"context"
	"io"
	"net/http/httptest"
	"os"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/sirupsen/logrus"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kyma-keb/keb/internal/app"
	"github.com/kyma-keb/keb/internal/cis"
	"github.com/kyma-keb/keb/internal/controlplane"
	"github.com/kyma-keb/keb/internal/devstack/cisstub"
	"github.com/kyma-keb/keb/internal/infrastructuremanager"
	"github.com/kyma-keb/keb/internal/infrastructuremanager/runtimetest"
	"github.com/kyma-keb/keb/internal/kyma"
	"github.com/kyma-keb/keb/internal/storage"
	"github.com/kyma-keb/keb/internal/subaccountsync"
	"github.com/kyma-keb/keb/testing/k8stest"
	"github.com/kyma-keb/keb/testing/pgtest"
)

var env *k8stest.Environment

func TestMain(m *testing.M) { os.Exit(k8stest.Run(m, &env, pgtest.Run)) }

// TestSyncWritesLabelsNewestWins runs the sync on PostgreSQL, a
// kube-apiserver and the CIS stand-in over HTTP: the newest change of a
// subaccount lands on its Kyma CR (beta, used-for-production) and Runtime CR
// (used-for-production), another subaccount's CRs stay as they are, an
// older change delivered later is ignored, and a dry run writes nothing.
func TestSyncWritesLabelsNewestWins(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	scheme, err := app.Scheme()
	if err != nil {
		t.Fatal(err)
	}
	kcp, err := client.New(env.Config, client.Options{Scheme: scheme})
	if err != nil {
		t.Fatal(err)
	}
	const ns = "kcp-system"
	k8stest.EnsureNamespace(t, kcp, ns)
	crs := func(runtimeID, sub string) (*kyma.Kyma, *infrastructuremanager.Runtime) {
		rt := runtimetest.Runtime(ns, runtimeID)
		rt.Labels[controlplane.LabelSubAccountID] = sub
		k := &kyma.Kyma{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: kyma.Name(runtimeID),
			Labels: map[string]string{controlplane.LabelSubAccountID: sub, controlplane.LabelBeta: "false"}},
			Spec: kyma.KymaSpec{Channel: "regular"}}
		for _, o := range []client.Object{rt, k} {
			if err := kcp.Create(ctx, o); err != nil {
				t.Fatal(err)
			}
		}
		return k, rt
	}
	// Names of this run alone: -count reruns share the apiserver.
	run := uuid.NewString()[:8]
	sub, other := "sa-sync-"+run, "sa-other-"+run
	k1, rt1 := crs(uuid.NewString(), sub)
	k2, _ := crs(uuid.NewString(), other)

	stub := cisstub.New("sync-client", "sync-secret")
	srv := httptest.NewServer(stub.Handler(nil))
	t.Cleanup(srv.Close)
	c, err := cis.New(cis.Config{Version: cis.Central, EventsURL: srv.URL + cisstub.CentralEventsPath,
		AuthURL: srv.URL + cisstub.TokenPath, ClientID: "sync-client", ClientSecret: "sync-secret", PageSize: 2})
	if err != nil {
		t.Fatal(err)
	}
	store := storage.NewStore(pgtest.NewPool(t), nil, nil)
	log := logrus.New()
	log.SetOutput(io.Discard)
	s := &subaccountsync.Syncer{Events: c, States: store, KCP: kcp, Namespace: ns, Log: log}
	t0 := time.Now().Add(-2 * time.Hour).UTC().Truncate(time.Millisecond)
	stub.AddSubaccountChange(sub, cis.CentralSubaccountCreation, false, "NOT_USED_FOR_PRODUCTION", t0)
	stub.AddSubaccountChange(sub, cis.CentralSubaccountUpdate, true, "USED_FOR_PRODUCTION", t0.Add(time.Hour))
	stub.AddSubaccountChange(sub, cis.CentralSubaccountUpdate, false, "NOT_USED_FOR_PRODUCTION", t0.Add(10*time.Minute))

	labelsOf := func(o client.Object) map[string]string {
		t.Helper()
		if err := kcp.Get(ctx, client.ObjectKeyFromObject(o), o); err != nil {
			t.Fatal(err)
		}
		return o.GetLabels()
	}
	// A dry run says what it would do and writes nothing.
	s.DryRun = true
	rep, err := s.Run(ctx)
	if err != nil || rep.Applied != 1 || rep.CRs != 2 {
		t.Fatalf("dry run: %+v, %v; want one subaccount, two CRs", rep, err)
	}
	if l := labelsOf(k1); l[controlplane.LabelBeta] != "false" || l[subaccountsync.LabelUsedForProduction] != "" {
		t.Fatalf("a dry run labelled the Kyma CR: %v", l)
	}

	s.DryRun = false
	rep, err = s.Run(ctx)
	if err != nil || rep.Events != 3 || rep.Applied != 1 {
		t.Fatalf("pass: %+v, %v", rep, err)
	}
	if l := labelsOf(k1); l[controlplane.LabelBeta] != "true" || l[subaccountsync.LabelUsedForProduction] != "USED_FOR_PRODUCTION" {
		t.Errorf("Kyma CR labels %v: want the newest change (beta true, USED_FOR_PRODUCTION)", l)
	}
	if l := labelsOf(rt1); l[subaccountsync.LabelUsedForProduction] != "USED_FOR_PRODUCTION" || l[controlplane.LabelBeta] != "" {
		t.Errorf("Runtime CR labels %v: want used-for-production alone", l)
	}
	if l := labelsOf(k2); l[subaccountsync.LabelUsedForProduction] != "" || l[controlplane.LabelBeta] != "false" {
		t.Errorf("another subaccount's Kyma CR was labelled: %v", l)
	}

	// An older change arrives later: ignored.
	stub.AddSubaccountChange(sub, cis.CentralSubaccountUpdate, false, "NOT_USED_FOR_PRODUCTION", t0.Add(30*time.Minute))
	rep, err = s.Run(ctx)
	if err != nil || rep.Older != 1 || rep.Applied != 0 || rep.CRs != 0 {
		t.Fatalf("older change: %+v, %v; want it ignored", rep, err)
	}
	if l := labelsOf(k1); l[controlplane.LabelBeta] != "true" {
		t.Errorf("an older change overwrote the newer: %v", l)
	}
	// A newer one wins.
	stub.AddSubaccountChange(sub, cis.CentralSubaccountUpdate, false, "", time.Now())
	if rep, err = s.Run(ctx); err != nil || rep.Applied != 1 {
		t.Fatalf("newer change: %+v, %v", rep, err)
	}
	if l := labelsOf(k1); l[controlplane.LabelBeta] != "false" {
		t.Errorf("the newest change did not win: %v", l)
	}
	if _, ok := labelsOf(rt1)[subaccountsync.LabelUsedForProduction]; ok {
		t.Error("an empty used-for-production left the old label on the Runtime CR")
	}
}
