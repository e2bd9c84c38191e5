package btpmanager

import (
	"bytes"
	"context"
	"fmt"
	"maps"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Action is what the reconciler did (or, in a dry run, would do) to a
// runtime's Secret. The values are metric label values.
type Action string

// Actions.
const (
	ActionUnchanged Action = "unchanged" // the Secret is as keb stored it
	ActionRecreated Action = "recreated" // it was missing
	ActionRewritten Action = "rewritten" // its data or keb's labels differed
	// ActionSkipped: labelled kyma-project.io/skip-reconciliation: "true".
	ActionSkipped Action = "skipped"
	// ActionNoCredentials: keb stores no (complete) credentials or no
	// cluster ID for the runtime: nothing to compare with.
	ActionNoCredentials Action = "no_credentials"
	// ActionFailed: the runtime or its Secret could not be read or written.
	ActionFailed Action = "failed"
)

// Actions are every Action, for metrics.
var Actions = []Action{ActionUnchanged, ActionRecreated, ActionRewritten, ActionSkipped, ActionNoCredentials, ActionFailed}

// Repair compares the runtime's sap-btp-manager Secret with keb's stored
// credentials and cluster ID and brings it back: it recreates a missing one
// (and its namespace), rewrites one whose data or keb labels differ, and
// leaves one labelled skip-reconciliation alone. With dryRun it only says
// what it would do. Incomplete input gives ErrIncompleteCredentials before
// anything is read.
func Repair(ctx context.Context, c client.Client, creds Credentials, clusterID string, dryRun bool) (Action, error) {
	data, err := secretData(creds, clusterID)
	if err != nil {
		return ActionNoCredentials, err
	}
	var action Action
	// A concurrent writer makes the update a Conflict: read again.
	err = retry.RetryOnConflict(retry.DefaultRetry, func() error {
		var s corev1.Secret
		err := c.Get(ctx, client.ObjectKey{Namespace: Namespace, Name: SecretName}, &s)
		switch {
		case apierrors.IsNotFound(err):
			action = ActionRecreated
			if dryRun {
				return nil
			}
			if err := ensureNamespace(ctx, c); err != nil {
				return err
			}
			return applySecret(ctx, c, data)
		case err != nil:
			return fmt.Errorf("reading Secret %s/%s: %w", Namespace, SecretName, err)
		case s.Labels[LabelSkipReconciliation] == "true":
			action = ActionSkipped
			return nil
		case s.Labels[LabelManagedBy] == ManagedByKEB && s.Labels[LabelWatchedBy] == ManagedByKEB &&
			maps.EqualFunc(s.Data, data, bytes.Equal):
			action = ActionUnchanged
			return nil
		}
		action = ActionRewritten
		if dryRun {
			return nil
		}
		return updateSecret(ctx, c, &s, data)
	})
	if err != nil {
		return ActionFailed, err
	}
	return action, nil
}
