package provisioning

import (
	"context"
	"errors"
	"fmt"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kyma-keb/keb/internal/btpmanager"
	"github.com/kyma-keb/keb/internal/process"
	"github.com/kyma-keb/keb/internal/runtimeclient"
)

// runtimeClients gives a client for a provisioned runtime.
type runtimeClients interface {
	Client(ctx context.Context, runtimeID string) (client.Client, error)
}

// InjectBTPManager is the final step: it puts the sap-btp-manager Secret and
// the BtpOperator CR into the new runtime, so that BTP Manager installs the
// SAP BTP service operator with the platform's Service Manager credentials.
type InjectBTPManager struct {
	Runtimes runtimeClients
	Config   Config
}

// Name implements process.Step.
func (s *InjectBTPManager) Name() string { return "inject_btp_manager" }

// SharesCheckpoint implements process.SharedCheckpoint: a re-run writes the
// same Secret and CR into the runtime.
func (s *InjectBTPManager) SharesCheckpoint(*process.Operation) bool { return true }

// Remote implements process.RemoteStep: the step talks to the runtime.
func (s *InjectBTPManager) Remote() string { return "the runtime's API server" }

// Timeout implements process.TimedStep: how long the runtime may take to
// serve the BtpOperator kind.
func (s *InjectBTPManager) Timeout() time.Duration { return s.Config.BTPManagerTimeout }

// Run implements process.Step.
func (s *InjectBTPManager) Run(ctx context.Context, op *process.Operation) (process.StepResult, error) {
	if op.Instance.Credentials == nil {
		op.Describe("Skipped the SAP BTP service operator set-up: the request carried no sm_operator_credentials")
		return process.Done()
	}
	creds, err := btpmanager.StoredCredentials(op.Instance.Credentials)
	if err != nil {
		return process.Fail("%v", err)
	}
	op.Describe("Setting up the SAP BTP service operator in the runtime")
	c, err := s.Runtimes.Client(ctx, op.Instance.RuntimeID)
	if errors.Is(err, runtimeclient.ErrKubeconfigNotFound) {
		op.Describe("Waiting for the kubeconfig of cluster %s", op.Instance.ShootName)
		return process.RetryAfter(s.Config.BTPManagerPoll)
	}
	if err != nil {
		return process.StepResult{}, fmt.Errorf("connecting to the runtime: %w", err)
	}
	err = btpmanager.Inject(ctx, c, creds, op.Instance.ClusterID)
	if errors.Is(err, btpmanager.ErrBtpOperatorNotServed) {
		op.Describe("Waiting for the runtime to serve the BtpOperator kind (CRD btpoperators.operator.kyma-project.io)")
		return process.RetryAfter(s.Config.BTPManagerPoll)
	}
	if err != nil {
		return process.StepResult{}, fmt.Errorf("injecting the sap-btp-manager Secret: %w", err)
	}
	return process.Done()
}
