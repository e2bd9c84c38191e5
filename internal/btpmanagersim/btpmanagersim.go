// Package btpmanagersim is a BTP Manager stand-in, for `keb dev`'s simulated Lifecycle Manager (internal/lmsim)
// and for tests: it applies BTP Manager's rules for the sap-btp-manager Secret and the BtpOperator CRs (as BTP
// Manager documents them) to a runtime cluster and reports them in the CRs' status, without installing anything.
// Tests use it to see what BTP Manager would make of what keb injected. It lives outside testing/ because keb dev
// runs it: the keb binary links no test package.
package btpmanagersim

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kyma-keb/keb/internal/btpmanager"
)

// requiredKeys are the Secret keys BTP Manager refuses to work without (or with empty values).
var requiredKeys = []string{
	btpmanager.KeyClientID, btpmanager.KeyClientSecret, btpmanager.KeySMURL, btpmanager.KeyTokenURL, btpmanager.KeyClusterID,
}

// Reconcile makes one pass over all BtpOperator CRs of the cluster, as BTP Manager would: the
// oldest CR reports the Secret's verdict (Ready/ReconcileSucceeded, Warning/MissingSecret or
// Error/InvalidSecret naming the keys), every newer one Error/OlderCRExists naming the oldest.
// Statuses are written through the status subresource, and only when they change. The client
// may use any scheme: CRs are read as unstructured.
func Reconcile(ctx context.Context, c client.Client) error {
	list := &unstructured.UnstructuredList{}
	list.SetGroupVersionKind(btpmanager.GroupVersion.WithKind(btpmanager.Kind + "List"))
	if err := c.List(ctx, list); err != nil {
		return fmt.Errorf("listing BtpOperator CRs: %w", err)
	}
	if len(list.Items) == 0 {
		return nil
	}
	oldest := oldestIndex(list.Items)
	verdict, err := secretVerdict(ctx, c)
	if err != nil {
		return err
	}
	var errs []error
	for i := range list.Items {
		want := verdict
		if i != oldest {
			o := list.Items[oldest]
			want = status(btpmanager.StateError, btpmanager.ReasonOlderCRExists,
				fmt.Sprintf("'%s/%s' is the oldest BtpOperator CR and represents the module state", o.GetNamespace(), o.GetName()))
		}
		if err := writeStatus(ctx, c, &list.Items[i], want); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// Run reconciles every interval until ctx is done. Errors are dropped: like BTP Manager, the
// stand-in just tries again on the next pass.
func Run(ctx context.Context, c client.Client, every time.Duration) {
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		_ = Reconcile(ctx, c)
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// oldestIndex picks the CR BTP Manager reconciles. Creation timestamps have one-second
// resolution, so ties go to namespace/name order, the order the API server lists them in.
func oldestIndex(items []unstructured.Unstructured) int {
	oldest := 0
	for i := 1; i < len(items); i++ {
		a, b := items[i], items[oldest]
		at, bt := a.GetCreationTimestamp(), b.GetCreationTimestamp()
		if at.Before(&bt) || (at.Equal(&bt) && a.GetNamespace()+"/"+a.GetName() < b.GetNamespace()+"/"+b.GetName()) {
			oldest = i
		}
	}
	return oldest
}

// secretVerdict judges kyma-system/sap-btp-manager. BTP Manager selects it by the KEB managed-by
// label, so a Secret without that label counts as missing.
func secretVerdict(ctx context.Context, c client.Client) (btpmanager.BtpOperatorStatus, error) {
	var s corev1.Secret
	err := c.Get(ctx, client.ObjectKey{Namespace: btpmanager.Namespace, Name: btpmanager.SecretName}, &s)
	if err != nil && !apierrors.IsNotFound(err) {
		return btpmanager.BtpOperatorStatus{}, fmt.Errorf("reading Secret %s/%s: %w", btpmanager.Namespace, btpmanager.SecretName, err)
	}
	if apierrors.IsNotFound(err) || s.Labels[btpmanager.LabelManagedBy] != btpmanager.ManagedByKEB {
		return status(btpmanager.StateWarning, btpmanager.ReasonMissingSecret,
			"sap-btp-manager secret was not found - create proper secret"), nil
	}
	var bad []string
	for _, k := range requiredKeys {
		if len(s.Data[k]) == 0 {
			bad = append(bad, k)
		}
	}
	if len(bad) > 0 {
		return status(btpmanager.StateError, btpmanager.ReasonInvalidSecret,
			"sap-btp-manager secret does not contain required data - create proper secret: missing or empty keys: "+strings.Join(bad, ", ")), nil
	}
	return status(btpmanager.StateReady, btpmanager.ReasonReconcileSucceeded, "Reconciled successfully"), nil
}

func status(state, reason, message string) btpmanager.BtpOperatorStatus {
	cond := metav1.ConditionFalse
	if state == btpmanager.StateReady {
		cond = metav1.ConditionTrue
	}
	return btpmanager.BtpOperatorStatus{
		State:      state,
		Conditions: []metav1.Condition{{Type: btpmanager.ConditionReady, Status: cond, Reason: reason, Message: message}},
	}
}

// writeStatus updates cr's status to want unless it already is; other conditions are kept.
func writeStatus(ctx context.Context, c client.Client, cr *unstructured.Unstructured, want btpmanager.BtpOperatorStatus) error {
	var typed btpmanager.BtpOperator
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(cr.Object, &typed); err != nil {
		return fmt.Errorf("decoding BtpOperator %s/%s: %w", cr.GetNamespace(), cr.GetName(), err)
	}
	var next btpmanager.BtpOperatorStatus
	typed.Status.DeepCopyInto(&next)
	next.State = want.State
	// Replace the Ready condition in place (its transition time moves only
	// when its status does), so that an unchanged status compares equal.
	meta.SetStatusCondition(&next.Conditions, want.Conditions[0])
	if reflect.DeepEqual(next, typed.Status) {
		return nil
	}
	st, err := runtime.DefaultUnstructuredConverter.ToUnstructured(&next)
	if err != nil {
		return fmt.Errorf("encoding status of BtpOperator %s/%s: %w", cr.GetNamespace(), cr.GetName(), err)
	}
	cr.Object["status"] = st
	if err := c.Status().Update(ctx, cr); err != nil {
		return fmt.Errorf("writing status of BtpOperator %s/%s: %w", cr.GetNamespace(), cr.GetName(), err)
	}
	return nil
}
