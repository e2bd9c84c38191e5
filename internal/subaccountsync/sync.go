// Package subaccountsync carries CIS subaccount attributes to the runtimes'
// CRs: the leader's job reads Subaccount_Creation and Subaccount_Update
// events (CIS central events API v2) and writes
// operator.kyma-project.io/beta and operator.kyma-project.io/used-for-production
// on the Kyma CRs of the subaccount's runtimes (the latter also on their
// Runtime CRs), which Lifecycle Manager reads. The newest change of a
// subaccount wins: an older one, delivered later, is ignored.
package subaccountsync

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"time"

	"github.com/sirupsen/logrus"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kyma-keb/keb/internal/cis"
	"github.com/kyma-keb/keb/internal/controlplane"
	"github.com/kyma-keb/keb/internal/infrastructuremanager"
	"github.com/kyma-keb/keb/internal/kyma"
	"github.com/kyma-keb/keb/internal/storage"
)

// Job is the periodic job's name and its watermark's: never rename it.
const Job = "subaccount_sync"

// LabelUsedForProduction is the CIS attribute's label on Kyma and Runtime CRs.
const LabelUsedForProduction = "operator.kyma-project.io/used-for-production"

// events reads CIS's subaccount changes (cis.Client).
type events interface {
	SubaccountChanges(ctx context.Context, from time.Time, fn func([]cis.SubaccountChange) error) error
}

// states keeps what was applied and where the last pass began
// (storage.Store).
type states interface {
	SubaccountStateOf(ctx context.Context, subaccountID string) (storage.SubaccountState, error)
	SaveSubaccountState(ctx context.Context, st storage.SubaccountState) (bool, error)
	Watermark(ctx context.Context, name string) (storage.Watermark, error)
	SaveWatermark(ctx context.Context, name string, w storage.Watermark) error
}

// Counter is told what a pass did (metrics).
type Counter interface {
	SubaccountSync(events, changedCRs int, dryRun bool)
}

// Syncer is the subaccount sync.
type Syncer struct {
	Events    events
	States    states
	KCP       client.Client
	Namespace string
	DryRun    bool
	Counter   Counter
	Log       logrus.FieldLogger
	Now       func() time.Time
}

// Report is what a pass did.
type Report struct {
	Events      int
	Subaccounts int
	// Applied changes were newer than the stored ones; Older were not.
	Applied, Older int
	// CRs is how many Kyma and Runtime CRs got new labels (or would have).
	CRs    int
	DryRun bool
}

// Run makes one pass over the changes since the last pass began.
func (s *Syncer) Run(ctx context.Context) (Report, error) {
	rep := Report{DryRun: s.DryRun}
	now := time.Now
	if s.Now != nil {
		now = s.Now
	}
	began := now()
	wm, err := s.States.Watermark(ctx, Job)
	if err != nil {
		return rep, err
	}
	newest := map[string]cis.SubaccountChange{}
	err = s.Events.SubaccountChanges(ctx, wm.ActionTime, func(changes []cis.SubaccountChange) error {
		for _, c := range changes {
			rep.Events++
			if have, ok := newest[c.SubaccountID]; !ok || c.ActionTime.After(have.ActionTime) {
				newest[c.SubaccountID] = c
			}
		}
		return nil
	})
	if err != nil {
		return rep, err
	}
	subs := make([]string, 0, len(newest))
	for sub := range newest {
		subs = append(subs, sub)
	}
	slices.Sort(subs)
	rep.Subaccounts = len(subs)
	var errs []error
	for _, sub := range subs {
		if err := s.apply(ctx, newest[sub], &rep); err != nil {
			errs = append(errs, err)
		}
	}
	if err := errors.Join(errs...); err != nil {
		return rep, err
	}
	if !s.DryRun {
		if err := s.States.SaveWatermark(ctx, Job, storage.Watermark{ActionTime: began}); err != nil {
			return rep, err
		}
	}
	if s.Counter != nil {
		s.Counter.SubaccountSync(rep.Events, rep.CRs, s.DryRun)
	}
	s.log().WithFields(logrus.Fields{"events": rep.Events, "subaccounts": rep.Subaccounts, "applied": rep.Applied,
		"older": rep.Older, "crs": rep.CRs, "dry_run": s.DryRun}).Info("subaccount sync")
	return rep, nil
}

// apply labels the subaccount's CRs with c unless a change at least as new
// was applied before; the state is stored after the labels, so a failed
// write is tried again by the next pass.
func (s *Syncer) apply(ctx context.Context, c cis.SubaccountChange, rep *Report) error {
	st, err := s.States.SubaccountStateOf(ctx, c.SubaccountID)
	switch {
	case err == nil && !st.ChangedAt.Before(c.ActionTime):
		rep.Older++
		return nil
	case err != nil && !errors.Is(err, storage.ErrNotFound):
		return err
	}
	rep.Applied++
	kymaLabels := map[string]any{controlplane.LabelBeta: strconv.FormatBool(c.BetaEnabled), LabelUsedForProduction: nullIfEmpty(c.UsedForProduction)}
	runtimeLabels := map[string]any{LabelUsedForProduction: nullIfEmpty(c.UsedForProduction)}
	for _, target := range []struct {
		list   client.ObjectList
		labels map[string]any
	}{{&kyma.KymaList{}, kymaLabels}, {&infrastructuremanager.RuntimeList{}, runtimeLabels}} {
		n, err := s.label(ctx, c.SubaccountID, target.list, target.labels)
		rep.CRs += n
		if err != nil {
			return err
		}
	}
	if s.DryRun {
		return nil
	}
	_, err = s.States.SaveSubaccountState(ctx, storage.SubaccountState{SubaccountID: c.SubaccountID,
		BetaEnabled: c.BetaEnabled, UsedForProduction: c.UsedForProduction, ChangedAt: c.ActionTime})
	return err
}

// label merge-patches labels onto the CRs of list's kind labelled with the
// subaccount whose labels differ; it returns how many (would) change.
func (s *Syncer) label(ctx context.Context, subaccountID string, list client.ObjectList, labels map[string]any) (int, error) {
	if err := s.KCP.List(ctx, list, client.InNamespace(s.Namespace),
		client.MatchingLabels{controlplane.LabelSubAccountID: subaccountID}); err != nil {
		return 0, fmt.Errorf("listing CRs of subaccount %s: %w", subaccountID, err)
	}
	patch, err := json.Marshal(map[string]any{"metadata": map[string]any{"labels": labels}})
	if err != nil {
		return 0, err
	}
	items, err := itemsOf(list)
	if err != nil {
		return 0, err
	}
	n := 0
	for _, obj := range items {
		if !differs(obj.GetLabels(), labels) {
			continue
		}
		n++
		if s.DryRun {
			continue
		}
		if err := s.KCP.Patch(ctx, obj, client.RawPatch(types.MergePatchType, patch)); client.IgnoreNotFound(err) != nil {
			return n, fmt.Errorf("labelling %s %s: %w", obj.GetObjectKind().GroupVersionKind().Kind, obj.GetName(), err)
		}
	}
	return n, nil
}

func differs(have map[string]string, want map[string]any) bool {
	for k, v := range want {
		cur, ok := have[k]
		if v == nil {
			if ok {
				return true
			}
			continue
		}
		if !ok || cur != v.(string) {
			return true
		}
	}
	return false
}

func nullIfEmpty(v string) any {
	if v == "" {
		return nil
	}
	return v
}

func itemsOf(list client.ObjectList) ([]client.Object, error) {
	switch l := list.(type) {
	case *kyma.KymaList:
		out := make([]client.Object, len(l.Items))
		for i := range l.Items {
			out[i] = &l.Items[i]
		}
		return out, nil
	case *infrastructuremanager.RuntimeList:
		out := make([]client.Object, len(l.Items))
		for i := range l.Items {
			out[i] = &l.Items[i]
		}
		return out, nil
	}
	return nil, fmt.Errorf("unexpected list %T", list)
}

func (s *Syncer) log() logrus.FieldLogger {
	if s.Log == nil {
		return logrus.StandardLogger()
	}
	return s.Log
}
