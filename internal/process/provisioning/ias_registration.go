package provisioning

import (
	"context"
	"fmt"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kyma-keb/keb/internal/ias"
	"github.com/kyma-keb/keb/internal/overrides"
	"github.com/kyma-keb/keb/internal/process"
)

// iasRegistrar registers service providers in IAS (*ias.Client is one).
type iasRegistrar interface {
	Company(ctx context.Context) (ias.Company, error)
	CreateServiceProvider(ctx context.Context, displayName string) error
	SetAssertionAttributes(ctx context.Context, sp ias.ServiceProvider) error
	SetNameID(ctx context.Context, spID string) error
	SetDefaultIdP(ctx context.Context, spID, idpID string) error
	SetAccessRules(ctx context.Context, spID string) error
	DeleteSecrets(ctx context.Context, sp ias.ServiceProvider) error
	GenerateSecret(ctx context.Context, spID string) (ias.Credentials, error)
}

// iasRetries is how long IAS not answering is retried by the
// registration: upstream's 30 minutes.
const iasRetries = 30 * time.Minute

// IASRegistration registers the runtime's Grafana as a service provider in
// IAS, before the cluster is requested, as upstream's IAS_Registration: it
// finds the service provider by its display name (SKR Grafana (instanceID:
// <id>)) or creates it, sets its assertion attributes, name ID, default
// identity provider (APP_IAS_IDENTITY_PROVIDER) and access rules (the two
// monitoring groups), deletes its client secrets and generates a new one,
// whose client ID and secret it writes into the runtime's overrides Secret
// (component monitoring), never into the database. It is in the pipeline
// only when APP_IAS_URL is set (and APP_IAS_DISABLED is not), for every
// plan.
//
// A re-run (a crash before its checkpoint) finds the service provider and
// rotates its secret, as upstream's did: the overrides Secret always holds
// the one valid secret. IAS not answering is retried for 30 minutes and
// then fails the provisioning; a refusal fails it at once.
type IASRegistration struct {
	IAS              iasRegistrar
	KCP              client.Client
	Namespace        string
	IdentityProvider string
}

// Name implements process.Step.
func (s *IASRegistration) Name() string { return "ias_registration" }

// Timeout implements process.TimedStep.
func (s *IASRegistration) Timeout() time.Duration { return iasRetries }

// Remote implements process.RemoteStep.
func (s *IASRegistration) Remote() string { return "IAS" }

// Run implements process.Step.
func (s *IASRegistration) Run(ctx context.Context, op *process.Operation) (process.StepResult, error) {
	name := ias.DisplayName(op.InstanceID)
	op.Describe("Registering the runtime's Grafana in IAS")
	sp, idp, err := s.serviceProvider(ctx, name)
	if err != nil {
		return iasFailure("registering the service provider in IAS", err)
	}
	for _, set := range []func() error{
		func() error { return s.IAS.SetAssertionAttributes(ctx, sp) },
		func() error { return s.IAS.SetNameID(ctx, sp.ID) },
		func() error { return s.IAS.SetDefaultIdP(ctx, sp.ID, idp.ID) },
		func() error { return s.IAS.SetAccessRules(ctx, sp.ID) },
		func() error { return s.IAS.DeleteSecrets(ctx, sp) },
	} {
		if err := set(); err != nil {
			return iasFailure("configuring the IAS service provider", err)
		}
	}
	creds, err := s.IAS.GenerateSecret(ctx, sp.ID)
	if err != nil {
		return iasFailure("generating the IAS client secret", err)
	}
	if op.Record.OverridesSecret == "" {
		return process.StepResult{}, fmt.Errorf("no overrides Secret recorded for the IAS client")
	}
	if err := overrides.SetComponent(ctx, s.KCP, s.Namespace, op.Record.OverridesSecret, ias.OverridesComponent,
		map[string]string{ias.OverrideClientID: creds.ClientID, ias.OverrideClientSecret: creds.ClientSecret}); err != nil {
		return process.StepResult{}, err
	}
	op.Record.IAS = &ias.Record{ServiceProviderID: sp.ID, ClientID: creds.ClientID}
	return process.Done()
}

// serviceProvider finds the runtime's service provider, creating it when
// missing, and the configured identity provider.
func (s *IASRegistration) serviceProvider(ctx context.Context, name string) (ias.ServiceProvider, ias.IdentityProvider, error) {
	co, err := s.IAS.Company(ctx)
	if err != nil {
		return ias.ServiceProvider{}, ias.IdentityProvider{}, err
	}
	sp, ok := co.ServiceProvider(name)
	if !ok {
		if err := s.IAS.CreateServiceProvider(ctx, name); err != nil {
			return sp, ias.IdentityProvider{}, err
		}
		// IAS answers no ID: the company lists it.
		if co, err = s.IAS.Company(ctx); err != nil {
			return sp, ias.IdentityProvider{}, err
		}
		if sp, ok = co.ServiceProvider(name); !ok {
			return sp, ias.IdentityProvider{}, fmt.Errorf("IAS does not list the service provider %q it created", name)
		}
	}
	idp, ok := co.IdentityProvider(s.IdentityProvider)
	if !ok {
		return sp, idp, fmt.Errorf("%w: %q", ias.ErrNoIdentityProvider, s.IdentityProvider)
	}
	return sp, idp, nil
}

// iasFailure retries what may heal and fails the step otherwise.
func iasFailure(doing string, err error) (process.StepResult, error) {
	if ias.Temporary(err) {
		return process.StepResult{}, fmt.Errorf("%s: %w", doing, err)
	}
	return process.Fail("IAS refused %s: %v", doing, err)
}
