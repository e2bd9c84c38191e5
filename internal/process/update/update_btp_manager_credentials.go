package update

import (
	"context"
	"errors"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kyma-keb/keb/internal/btpmanager"
	"github.com/kyma-keb/keb/internal/kyma"
	"github.com/kyma-keb/keb/internal/process"
	"github.com/kyma-keb/keb/internal/process/provisioning"
	"github.com/kyma-keb/keb/internal/runtimeclient"
)

// UpdateBTPManagerCredentials pushes the instance's (new) Service Manager
// credentials into the runtime's sap-btp-manager Secret at once, keeping the
// Secret's cluster_id, so that BTP Manager reconfigures the SAP BTP service
// operator without waiting for anything else. A runtime that never got the
// Secret (provisioned without credentials) gets it injected, with the
// BtpOperator CR when its modules include btp-operator, as provisioning
// would have done.
type UpdateBTPManagerCredentials struct {
	Runtimes runtimeClients
	Config   Config
}

// Name implements process.Step.
func (s *UpdateBTPManagerCredentials) Name() string { return "update_btp_manager_credentials" }

// Remote implements process.RemoteStep: the step talks to the runtime.
func (s *UpdateBTPManagerCredentials) Remote() string { return "the runtime's API server" }

// Timeout implements process.TimedStep: how long the step waits for the
// runtime's kubeconfig, or for the runtime to serve the BtpOperator kind
// after injecting a missing Secret.
func (s *UpdateBTPManagerCredentials) Timeout() time.Duration { return s.Config.BTPManagerTimeout }

// Run implements process.Step.
func (s *UpdateBTPManagerCredentials) Run(ctx context.Context, op *process.Operation) (process.StepResult, error) {
	if (op.Request.ChangesRuntime() || (op.Request != nil && op.Request.GlobalAccountMoved)) && !op.Request.Credentials {
		return process.Done() // a change of parameters, plan or global account only
	}
	if op.Instance.Credentials == nil {
		op.Describe("Nothing to push into the runtime: the instance has no sm_operator_credentials")
		op.Conclude("Operation succeeded: nothing to push, the instance has no sm_operator_credentials")
		return process.Done()
	}
	creds, err := btpmanager.StoredCredentials(op.Instance.Credentials)
	if err != nil {
		return process.Fail("%v", err)
	}
	if op.Instance.RuntimeID == "" {
		// Updates are only queued for a running runtime; without a runtime ID
		// the kubeconfig lookup below would wait for a Secret that never comes.
		return process.Fail("the instance has no runtime to push the Service Manager credentials into")
	}

	op.Describe("Updating the Service Manager credentials in the runtime")
	c, err := s.Runtimes.Client(ctx, op.Instance.RuntimeID)
	if errors.Is(err, runtimeclient.ErrKubeconfigNotFound) {
		op.Describe("Waiting for the kubeconfig of cluster %s", op.Instance.ShootName)
		return process.RetryAfter(s.Config.BTPManagerPoll)
	}
	if err != nil {
		return process.StepResult{}, fmt.Errorf("connecting to runtime %s: %w", op.Instance.RuntimeID, err)
	}

	// op.Record.ClusterID is set once this operation found the Secret missing
	// and injected it: a re-run (waiting for the BtpOperator kind, or after a
	// crash) goes on injecting with the same cluster ID instead of rotating,
	// so that the BtpOperator CR gets created too.
	if op.Record.ClusterID == "" {
		err = btpmanager.UpdateCredentials(ctx, c, creds)
		switch {
		case err == nil:
			return s.describeDone(ctx, c, op, "The Service Manager credentials are updated in the runtime")
		case errors.Is(err, btpmanager.ErrIncompleteCredentials):
			return process.Fail("the stored Service Manager credentials are incomplete: %v", err)
		case !secretMissing(err):
			return process.StepResult{}, fmt.Errorf("updating the Service Manager credentials in runtime %s: %w", op.Instance.RuntimeID, err)
		}
		// Never injected (the instance was provisioned without credentials,
		// or someone deleted the Secret): set BTP Manager up from scratch with
		// the instance's cluster ID, which outlives runtimes.
		if op.Instance.ClusterID == "" {
			return process.Fail("the runtime has no %s/%s Secret and the instance has no cluster ID to create it with",
				btpmanager.Namespace, btpmanager.SecretName)
		}
		op.Record.ClusterID = op.Instance.ClusterID
	}
	op.Describe("Setting up the SAP BTP service operator in the runtime: it had no %s Secret", btpmanager.SecretName)
	err = btpmanager.Inject(ctx, c, creds, op.Record.ClusterID)
	switch {
	case errors.Is(err, btpmanager.ErrIncompleteCredentials):
		return process.Fail("the stored Service Manager credentials are incomplete: %v", err)
	case err != nil:
		return process.StepResult{}, fmt.Errorf("injecting the %s Secret into runtime %s: %w", btpmanager.SecretName, op.Instance.RuntimeID, err)
	}
	params, err := provisioning.Parameters(op)
	if err != nil {
		return process.Fail("%v", err)
	}
	if kyma.HasModule(provisioning.RuntimeModules(params), kyma.ModuleBTPOperator) {
		err = btpmanager.CreateBtpOperator(ctx, c)
		switch {
		case errors.Is(err, btpmanager.ErrBtpOperatorNotServed):
			op.Describe("Waiting for Lifecycle Manager to install the btp-operator module (the runtime does not serve btpoperators.operator.kyma-project.io yet)")
			return process.RetryAfter(s.Config.BTPManagerPoll)
		case err != nil:
			return process.StepResult{}, fmt.Errorf("creating the BtpOperator CR in runtime %s: %w", op.Instance.RuntimeID, err)
		}
	}
	return s.describeDone(ctx, c, op, "The "+btpmanager.SecretName+" Secret was missing in the runtime: it is created with the Service Manager credentials")
}

// describeDone finishes the step with what, or says that the Secret was left
// alone: btpmanager does not touch a Secret someone took over
// (skip-reconciliation) and reports no error for it, so it is read back here.
func (s *UpdateBTPManagerCredentials) describeDone(ctx context.Context, c client.Client, op *process.Operation, what string) (process.StepResult, error) {
	var sec corev1.Secret
	key := client.ObjectKey{Namespace: btpmanager.Namespace, Name: btpmanager.SecretName}
	if err := c.Get(ctx, key, &sec); err != nil {
		return process.StepResult{}, fmt.Errorf("reading Secret %s back from runtime %s: %w", key, op.Instance.RuntimeID, err)
	}
	if sec.Labels[btpmanager.LabelSkipReconciliation] == "true" {
		op.Describe("Left the runtime's %s Secret as it is: it is labelled %s: \"true\", so it is managed outside keb and keeps its credentials",
			btpmanager.SecretName, btpmanager.LabelSkipReconciliation)
		op.Conclude("Operation succeeded: the credentials are stored; the runtime's %s Secret is labelled %s: \"true\" and was left as it is",
			btpmanager.SecretName, btpmanager.LabelSkipReconciliation)
		return process.Done()
	}
	op.Describe("%s", what)
	return process.Done()
}

// secretMissing recognises UpdateCredentials' report that the runtime has no
// sap-btp-manager Secret: its read of the Secret answered NotFound naming
// that very Secret. Any other NotFound (a proxy's bare 404, another object)
// is not a reason to inject and stays an error.
func secretMissing(err error) bool {
	var status apierrors.APIStatus
	if !apierrors.IsNotFound(err) || !errors.As(err, &status) {
		return false
	}
	d := status.Status().Details
	return d != nil && d.Kind == "secrets" && d.Name == btpmanager.SecretName
}
