package btpmanager

import (
	"context"
	"errors"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// CRName is the name of the BtpOperator CR keb creates in Namespace.
const CRName = "btpoperator"

// ErrBtpOperatorNotServed (wrapped) means the runtime's API server does not serve the BtpOperator
// kind yet: Lifecycle Manager has not installed the btp-operator module's CRD. Retry until the
// deadline, then fail naming the CRD.
var ErrBtpOperatorNotServed = errors.New("the runtime does not serve btpoperators.operator.kyma-project.io/v1alpha1 (CRD not installed yet)")

// Inject makes the runtime ready for BTP Manager: the namespace kyma-system (created if missing)
// and the Secret sap-btp-manager (Opaque, both KEB labels, exactly the data keys clientid,
// clientsecret, sm_url, tokenurl and cluster_id, all non-empty; created, or updated if it
// differs). A Secret labelled skip-reconciliation: "true" is left untouched. Idempotent: a
// second call writes nothing. The BtpOperator CR is CreateBtpOperator's: Lifecycle Manager
// creates it as the btp-operator module's default CR, and a runtime without that module has
// no BtpOperator kind to create it with.
//
// clusterID is generated once per instance and persisted by the caller: it must be the same on
// every call. Empty input gives ErrIncompleteCredentials before any write.
func Inject(ctx context.Context, c client.Client, creds Credentials, clusterID string) error {
	data, err := secretData(creds, clusterID)
	if err != nil {
		return err
	}
	if err := ensureNamespace(ctx, c); err != nil {
		return err
	}
	// A concurrent writer (BTP Manager, an operator, another keb worker)
	// makes the update a Conflict: read again and re-apply, at once.
	return retry.RetryOnConflict(retry.DefaultRetry, func() error { return applySecret(ctx, c, data) })
}

// CreateBtpOperator creates the BtpOperator CR kyma-system/btpoperator unless it exists (Lifecycle
// Manager may have created it first, as the module's default CR; with the module's
// customResourcePolicy Ignore it does not). A runtime that does not serve the kind yet (the
// btp-operator module is not installed yet) gives ErrBtpOperatorNotServed: call it only for a
// runtime whose modules include btp-operator, which brings the kind, and after Inject, which
// creates the namespace.
func CreateBtpOperator(ctx context.Context, c client.Client) error { return ensureBtpOperator(ctx, c) }

func ensureNamespace(ctx context.Context, c client.Client) error {
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: Namespace}}
	if err := c.Create(ctx, ns); client.IgnoreAlreadyExists(err) != nil {
		return fmt.Errorf("creating namespace %s: %w", Namespace, err)
	}
	return nil
}

// ensureBtpOperator creates the CR unless it exists. It goes through unstructured so that any
// client works, whatever its scheme: the runtime clients are built elsewhere.
func ensureBtpOperator(ctx context.Context, c client.Client) error {
	cr := &unstructured.Unstructured{}
	cr.SetGroupVersionKind(GroupVersion.WithKind(Kind))
	cr.SetNamespace(Namespace)
	cr.SetName(CRName)
	err := c.Create(ctx, cr)
	switch {
	case err == nil, apierrors.IsAlreadyExists(err):
		return nil
	case notServed(err):
		return fmt.Errorf("creating BtpOperator %s/%s: %w: %w", Namespace, CRName, ErrBtpOperatorNotServed, err)
	default:
		return fmt.Errorf("creating BtpOperator %s/%s: %w", Namespace, CRName, err)
	}
}

// notServed recognises a kind the API server does not serve: the client's discovery finds no
// match, or (with a stale mapping, after the CRD was deleted) the server answers 404 for the
// resource itself rather than for the namespace.
func notServed(err error) bool {
	if meta.IsNoMatchError(err) {
		return true
	}
	var status apierrors.APIStatus
	if !apierrors.IsNotFound(err) || !errors.As(err, &status) {
		return false
	}
	details := status.Status().Details
	return details == nil || details.Kind != "namespaces"
}
