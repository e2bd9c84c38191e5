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

// LMS's waits, upstream's: a new tenant's DNS names are awaited (every
// 30 s) for 30 minutes from the tenant's request, a certificate's signing
// (every PollInterval) for 30 minutes from its request.
const (
	lmsTenantReady = 30 * time.Minute
	lmsReadyPoll   = 30 * time.Second
	lmsSigning     = 30 * time.Minute
)

// LMSCertificates gets the runtime a client certificate of its LMS tenant
// and writes it, with the tenant's CA and the certificate's key, into the
// runtime's overrides Secret (component logging), where Fluent Bit's
// configuration takes it: forward output to forward.<dns>:8443 over TLS,
// each log marked with the subaccount. As upstream's
// Request_LMS_Certificates, it waits for the tenant's DNS names, sends a
// new CSR, and polls the callback URL for the signed certificate and then
// the tenant's CA. Upstream polled inside the step, keeping the key in
// memory; keb's step waits between runs (a job holds its worker for a
// minute at most), so the key goes into the overrides Secret before the
// CSR is sent and is read back from there, never into keb's database. A
// re-run after a crash before the callback URL was saved sends another
// CSR, as upstream's did. It does nothing when the tenant step did nothing
// or was skipped.
type LMSCertificates struct {
	LMS lmsCertifier
	// Tenant creates the tenant again when LMS no longer knows it.
	Tenant    *LMSTenant
	KCP       client.Client
	Namespace string
	// PollInterval is how often the callback URL is read (0: upstream's
	// 15 s).
	PollInterval time.Duration
}

// Name implements process.Step.
func (s *LMSCertificates) Name() string { return "lms_certificates" }

// Timeout implements process.TimedStep: a tenant's readiness and then a
// certificate's signing are each awaited for 30 minutes.
func (s *LMSCertificates) Timeout() time.Duration { return lmsTenantReady + lmsSigning }

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
	if op.Record.OverridesSecret == "" {
		return process.StepResult{}, fmt.Errorf("no overrides Secret recorded for the LMS certificates")
	}
	if rec.CallbackURL == "" {
		return s.request(ctx, op)
	}
	cert, ready, err := s.LMS.SignedCertificate(ctx, rec.CallbackURL)
	if err != nil {
		return lmsFailure(op, "reading the signed LMS certificate", err)
	}
	var ca string
	if ready {
		if ca, ready, err = s.LMS.CACertificate(ctx, rec.TenantID); err != nil {
			return lmsFailure(op, "reading the LMS CA certificate", err)
		}
	}
	if !ready {
		if rec.CertRequestedAt != nil && op.Now().Sub(*rec.CertRequestedAt) > lmsSigning {
			return lmsFailed(op, "LMS did not sign the certificate in time")
		}
		op.Describe("Waiting for LMS to sign the certificate of tenant %s", rec.TenantID)
		return process.RetryAfter(s.poll())
	}
	stored, err := overrides.Load(ctx, s.KCP, s.Namespace, op.Record.OverridesSecret)
	if err != nil {
		return process.StepResult{}, err
	}
	key, ok := lms.StoredKey(stored.Components[lms.OverridesComponent])
	if !ok {
		// The Secret was rewritten without it: ask for another.
		rec.CallbackURL = ""
		return process.RetryAfter(time.Second)
	}
	if err := overrides.SetComponent(ctx, s.KCP, s.Namespace, op.Record.OverridesSecret, lms.OverridesComponent,
		lms.Overrides(rec.DNS, op.Instance.SubAccountID, []byte(ca), []byte(cert), key)); err != nil {
		return process.StepResult{}, err
	}
	rec.KibanaURL, rec.RefusedSince = "https://kibana."+rec.DNS, nil
	return process.Done()
}

// request waits for the tenant's DNS names, then stores a new key in the
// overrides Secret and sends its CSR.
func (s *LMSCertificates) request(ctx context.Context, op *process.Operation) (process.StepResult, error) {
	rec := op.Record.LMS
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
	if err := overrides.SetComponent(ctx, s.KCP, s.Namespace, op.Record.OverridesSecret, lms.OverridesComponent,
		lms.KeyOverrides(csr.Key)); err != nil {
		return process.StepResult{}, err
	}
	op.Describe("Requesting the LMS certificates of tenant %s", rec.TenantID)
	callback, err := s.LMS.RequestCertificate(ctx, rec.TenantID, csr.Request)
	if err != nil {
		return lmsFailure(op, "requesting the LMS certificate", err)
	}
	now := op.Now()
	rec.DNS, rec.CallbackURL, rec.CertRequestedAt, rec.RefusedSince = info.DNS, callback, &now, nil
	// Look at once: an LMS that signs at once needs no wait.
	return s.Run(ctx, op)
}

func (s *LMSCertificates) poll() time.Duration {
	if s.PollInterval <= 0 {
		return 15 * time.Second
	}
	return s.PollInterval
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

// OptionalLMSCertificates is LMSCertificates without APP_LMS_MANDATORY:
// LMS refusing, or a tenant or certificate not ready in time, skips the
// step with a recorded warning (the seed's "does not fail the
// provisioning"); LMS not answering for 30 minutes still fails it, as
// upstream's did.
type OptionalLMSCertificates struct{ LMSCertificates }

// SkipAfter implements process.SkippableStep (see OptionalLMSTenant).
func (s *OptionalLMSCertificates) SkipAfter() time.Duration { return s.Timeout() + time.Minute }

// Leftover implements process.SkippableStep.
func (s *OptionalLMSCertificates) Leftover(op *process.Operation) string {
	return "no LMS certificates in the runtime's Fluent Bit (logs not forwarded)"
}
