package lmsim

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kyma-keb/keb/internal/btpmanager"
	standin "github.com/kyma-keb/keb/internal/btpmanagersim"
	"github.com/kyma-keb/keb/internal/kyma"
	"github.com/kyma-keb/keb/resources"
)

// installBTPOperator installs the btp-operator module into a runtime as
// Lifecycle Manager does: the BtpOperator CRD, and (unless the module's
// customResourcePolicy is Ignore) its default CR kyma-system/btpoperator;
// then BTP Manager, which the module runs, judges the CRs (the BTP Manager
// stand-in's rules). The module's state is its default CR's state; with no
// CR to report on, the installed operator is Ready. What is installed
// already (the runtime remembers it) is not asked for again.
func installBTPOperator(ctx context.Context, rc *runtimeCluster, createCR bool) (kyma.State, error) {
	if !rc.crd.Load() {
		established, err := ensureCRD(ctx, rc)
		if err != nil || !established {
			return kyma.StateProcessing, err
		}
		if err := rc.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: btpmanager.Namespace}}); client.IgnoreAlreadyExists(err) != nil {
			return "", fmt.Errorf("creating namespace %s: %w", btpmanager.Namespace, err)
		}
		rc.crd.Store(true)
	}
	if createCR && !rc.cr.Load() {
		cr := &btpmanager.BtpOperator{ObjectMeta: metav1.ObjectMeta{Namespace: btpmanager.Namespace, Name: btpmanager.CRName}}
		if err := rc.Create(ctx, cr); client.IgnoreAlreadyExists(err) != nil {
			return "", fmt.Errorf("creating the default CR %s/%s: %w", btpmanager.Namespace, btpmanager.CRName, err)
		}
		rc.cr.Store(true)
	}
	if err := standin.Reconcile(ctx, rc.Client); err != nil {
		return "", fmt.Errorf("BTP Manager: %w", err)
	}
	cr := &btpmanager.BtpOperator{}
	err := rc.Get(ctx, client.ObjectKey{Namespace: btpmanager.Namespace, Name: btpmanager.CRName}, cr)
	switch {
	case apierrors.IsNotFound(err):
		return kyma.StateReady, nil
	case err != nil:
		return "", fmt.Errorf("reading %s/%s: %w", btpmanager.Namespace, btpmanager.CRName, err)
	case cr.Status.State == "":
		return kyma.StateProcessing, nil
	default:
		return kyma.State(cr.Status.State), nil
	}
}

// ensureCRD creates the BtpOperator CRD in the runtime unless it is there,
// and reports whether the API server serves it yet.
func ensureCRD(ctx context.Context, rc client.Client) (bool, error) {
	crds, err := resources.LoadCRDs(resources.BtpOperatorCRD)
	if err != nil {
		return false, err
	}
	crd := &apiextensionsv1.CustomResourceDefinition{}
	err = rc.Get(ctx, client.ObjectKey{Name: crds[0].Name}, crd)
	if apierrors.IsNotFound(err) {
		err = rc.Create(ctx, crds[0])
		if client.IgnoreAlreadyExists(err) != nil {
			return false, fmt.Errorf("installing CRD %s: %w", crds[0].Name, err)
		}
		return false, nil // the next pass finds it established
	}
	if err != nil {
		return false, fmt.Errorf("reading CRD %s: %w", crds[0].Name, err)
	}
	for _, c := range crd.Status.Conditions {
		if c.Type == apiextensionsv1.Established && c.Status == apiextensionsv1.ConditionTrue {
			return true, nil
		}
	}
	return false, nil
}

// removeBTPOperator deletes the module's default CR, as Lifecycle Manager does
// when the module (with CreateAndDelete) or the Kyma CR goes.
func removeBTPOperator(ctx context.Context, rc *runtimeCluster) error {
	rc.cr.Store(false)
	cr := &btpmanager.BtpOperator{ObjectMeta: metav1.ObjectMeta{Namespace: btpmanager.Namespace, Name: btpmanager.CRName}}
	err := rc.Delete(ctx, cr)
	if err == nil || apierrors.IsNotFound(err) || meta.IsNoMatchError(err) {
		return nil
	}
	return err
}
