package provisioning

import (
	"context"
	"errors"
	"fmt"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kyma-keb/keb/internal/btpmanager"
	"github.com/kyma-keb/keb/internal/kyma"
	"github.com/kyma-keb/keb/internal/process"
	"github.com/kyma-keb/keb/internal/runtimeclient"
)

// runtimeClients gives a client for a provisioned runtime.
type runtimeClients interface {
	Client(ctx context.Context, runtimeID string) (client.Client, error)
}

// InjectBTPManager puts the sap-btp-manager Secret into the new runtime, so
// that BTP Manager installs the SAP BTP service operator with the
// platform's Service Manager credentials, and, when the runtime's modules
// include btp-operator, the BtpOperator CR (unless Lifecycle Manager created
// it first, as the module's default CR). Only then does it wait for the
// runtime to serve the BtpOperator kind: no module of a runtime without
// btp-operator installs it.
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
	params, err := Parameters(op)
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
	if err := btpmanager.Inject(ctx, c, creds, op.Instance.ClusterID); err != nil {
		return process.StepResult{}, fmt.Errorf("injecting the sap-btp-manager Secret: %w", err)
	}
	if !kyma.HasModule(RuntimeModules(params), kyma.ModuleBTPOperator) {
		return process.Done()
	}
	err = btpmanager.CreateBtpOperator(ctx, c)
	if errors.Is(err, btpmanager.ErrBtpOperatorNotServed) {
		op.Describe("Waiting for Lifecycle Manager to install the btp-operator module (the runtime does not serve btpoperators.operator.kyma-project.io yet)")
		return process.RetryAfter(s.Config.BTPManagerPoll)
	}
	if err != nil {
		return process.StepResult{}, fmt.Errorf("creating the BtpOperator CR: %w", err)
	}
	return process.Done()
}
