package provisioning

import (
	"context"
	"fmt"
	"net/http"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kyma-keb/keb/internal/integration"
	"github.com/kyma-keb/keb/internal/lms"
	"github.com/kyma-keb/keb/internal/overrides"
	"github.com/kyma-keb/keb/internal/process"
)

// lmsCertifier gets a tenant's certificates (*lms.Client is one).
type lmsCertifier interface {
	TenantStatus(ctx context.Context, id string) (lms.Status, error)
	TenantInfo(ctx context.Context, id string) (lms.Info, error)
	RequestCertificate(ctx context.Context, id string, csrPEM []byte) (string, error)
	SignedCertificate(ctx context.Context, callbackURL string) (string, bool, error)
	CACertificate(ctx context.Context, id string) (string, bool, error)
}

// lmsTenantReady bounds the wait for a new tenant's DNS names, from its
// request on, upstream's 30 minutes; lmsReadyPoll is how often it looks.
const (
	lmsTenantReady = 30 * time.Minute
	lmsReadyPoll   = 30 * time.Second
)

// LMSCertificates gets the runtime a client certificate of its LMS tenant
// and writes it, with the tenant's CA and the certificate's key, into the
// runtime's overrides Secret (component logging), where Fluent Bit's
// configuration takes it: forward output to forward.<dns>:8443 over TLS,
// each log marked with the subaccount. As upstream's
// Request_LMS_Certificates, it waits (30 minutes from the tenant's request)
// for the tenant's DNS names, then sends a new CSR and polls the callback
// URL for the signed certificate and then the CA, every PollInterval, for
// at most 30 minutes inside the step: the key exists only in memory until
// it is in the overrides Secret, never in keb's database. A re-run (a crash)
// requests another certificate, as upstream's did. It does nothing when the
// tenant step did nothing or was skipped.
type LMSCertificates struct {
	LMS lmsCertifier
	// Tenant creates the tenant again when LMS no longer knows it.
	Tenant    *LMSTenant
	KCP       client.Client
	Namespace string
	// PollInterval is how often the callback URL is read (upstream's 15 s).
	PollInterval time.Duration
}

// Name implements process.Step.
func (s *LMSCertificates) Name() string { return "lms_certificates" }

// Timeout implements process.TimedStep.
func (s *LMSCertificates) Timeout() time.Duration { return lmsRetries }

// Remote implements process.RemoteStep.
func (s *LMSCertificates) Remote() string { return "LMS" }

// Run implements process.Step.
func (s *LMSCertificates) Run(ctx context.Context, op *process.Operation) (process.StepResult, error) {
	rec := op.Record.LMS
	if rec == nil || rec.Failed || rec.KibanaURL != "" {
		return process.Done()
	}
	if rec.TenantID == "" {
		return process.Fail("no LMS tenant recorded for the certificates")
	}
	status, err := s.LMS.TenantStatus(ctx, rec.TenantID)
	if code, _ := integration.Status(err); code == http.StatusNotFound && s.Tenant != nil {
		return s.recreate(ctx, op)
	}
	if err != nil {
		return lmsFailure(op, "reading the LMS tenant's status", err)
	}
	if !status.Ready() {
		if rec.RequestedAt != nil && op.Now().Sub(*rec.RequestedAt) > lmsTenantReady {
			return lmsFailed(op, "LMS Tenant provisioning timeout")
		}
		op.Describe("Waiting for the LMS tenant %s to be ready (Kibana %q)", rec.TenantID, status.KibanaState)
		return process.RetryAfter(lmsReadyPoll)
	}
	info, err := s.LMS.TenantInfo(ctx, rec.TenantID)
	if err != nil {
		return lmsFailure(op, "reading the LMS tenant", err)
	}
	csr, err := lms.NewCSR(op.Instance.GlobalAccountID)
	if err != nil {
		return process.StepResult{}, err
	}
	op.Describe("Requesting the LMS certificates of tenant %s", rec.TenantID)
	callback, err := s.LMS.RequestCertificate(ctx, rec.TenantID, csr.Request)
	if err != nil {
		return lmsFailure(op, "requesting the LMS certificate", err)
	}
	cert, err := s.await(ctx, func(ctx context.Context) (string, bool, error) { return s.LMS.SignedCertificate(ctx, callback) })
	if err != nil {
		return s.awaitFailure(op, "the signed LMS certificate", err)
	}
	ca, err := s.await(ctx, func(ctx context.Context) (string, bool, error) { return s.LMS.CACertificate(ctx, rec.TenantID) })
	if err != nil {
		return s.awaitFailure(op, "the LMS CA certificate", err)
	}
	if op.Record.OverridesSecret == "" {
		return process.StepResult{}, fmt.Errorf("no overrides Secret recorded for the LMS certificates")
	}
	if err := overrides.SetComponent(ctx, s.KCP, s.Namespace, op.Record.OverridesSecret, lms.OverridesComponent,
		lms.Overrides(info.DNS, op.Instance.SubAccountID, []byte(ca), []byte(cert), csr.Key)); err != nil {
		return process.StepResult{}, err
	}
	rec.KibanaURL, rec.RefusedSince = "https://kibana."+info.DNS, nil
	return process.Done()
}

// recreate forgets the recorded tenant, which LMS no longer knows (the
// contract is silent on tenants LMS deletes; keb dev's stand-in forgets
// its tenants when it stops, while keb's database keeps their record), and
// gets the global account a new one, whose readiness is then awaited.
func (s *LMSCertificates) recreate(ctx context.Context, op *process.Operation) (process.StepResult, error) {
	rec := op.Record.LMS
	if err := s.Tenant.Tenants.ForgetLMSTenant(ctx, rec.Name, rec.Region, rec.TenantID); err != nil {
		return process.StepResult{}, err
	}
	now := op.Now()
	rec.TenantID, rec.RequestedAt = "", &now
	res, err := s.Tenant.Run(ctx, op)
	if err != nil || res.Failure != nil || res.RetryAfter > 0 {
		return res, err
	}
	op.Describe("Waiting for the new LMS tenant %s: LMS no longer knew the recorded one", rec.TenantID)
	return process.RetryAfter(lmsReadyPoll)
}

// errNotSigned is a certificate LMS did not sign within lmsTenantReady.
var errNotSigned = fmt.Errorf("not signed within %s", lmsTenantReady)

// await polls get until it has the certificate, for at most lmsTenantReady.
func (s *LMSCertificates) await(ctx context.Context, get func(ctx context.Context) (string, bool, error)) (string, error) {
	poll := s.PollInterval
	if poll <= 0 {
		poll = 15 * time.Second
	}
	deadline := time.Now().Add(lmsTenantReady)
	for {
		pem, ready, err := get(ctx)
		if err != nil || ready {
			return pem, err
		}
		if time.Now().After(deadline) {
			return "", errNotSigned
		}
		select {
		case <-ctx.Done():
			return "", ctx.Err()
		case <-time.After(poll):
		}
	}
}

func (s *LMSCertificates) awaitFailure(op *process.Operation, what string, err error) (process.StepResult, error) {
	if err == errNotSigned {
		return lmsFailed(op, "LMS did not sign "+what+" in time")
	}
	return lmsFailure(op, "reading "+what, err)
}

// OptionalLMSCertificates is LMSCertificates without APP_LMS_MANDATORY:
// LMS refusing, or a tenant or certificate not ready in time, skips the
// step with a recorded warning (the seed's "does not fail the
// provisioning"); LMS not answering for 30 minutes still fails it, as
// upstream's did.
type OptionalLMSCertificates struct{ LMSCertificates }

// SkipAfter implements process.SkippableStep (see OptionalLMSTenant).
func (s *OptionalLMSCertificates) SkipAfter() time.Duration { return lmsRetries + time.Minute }

// Leftover implements process.SkippableStep.
func (s *OptionalLMSCertificates) Leftover(op *process.Operation) string {
	return "no LMS certificates in the runtime's Fluent Bit (logs not forwarded)"
}
