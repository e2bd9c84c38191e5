package lms

import (
	"context"
	"net/http"
	"net/url"
	"strings"

	"github.com/kyma-keb/keb/internal/integration"
)

// TokenHeader carries APP_LMS_TOKEN on every request.
const TokenHeader = "X-LMS-Token"

// Client calls LMS's tenant API.
type Client struct {
	cfg    Config
	caller integration.Caller
}

// NewClient returns a client of cfg's LMS; httpClient carries the requests
// (nil: one with integration.Timeout), calls may be nil.
func NewClient(cfg Config, httpClient *http.Client, calls integration.Calls) *Client {
	if httpClient == nil {
		// Upstream used Go's default client, which never times out; a
		// bound keeps a hung LMS from holding a worker.
		httpClient = &http.Client{Timeout: integration.Timeout}
	}
	return &Client{cfg: cfg, caller: integration.Caller{Service: "LMS", HTTP: httpClient, Calls: calls, Limit: 1 << 20,
		Prepare: func(_ context.Context, req *http.Request) error {
			req.Header.Set(TokenHeader, cfg.Token)
			return nil
		}}}
}

// Temporary reports whether err may heal by retrying: only no answer at
// all. Every HTTP error of LMS, 5xx included, is not, as upstream had it.
func Temporary(err error) bool {
	_, answered := integration.Status(err)
	return err != nil && !answered
}

// CreateTenant creates a tenant and returns its ID.
func (c *Client) CreateTenant(ctx context.Context, t Tenant) (string, error) {
	var out struct {
		ID      string `json:"id"`
		Message string `json:"message"`
		Error   string `json:"error"`
	}
	err := c.do(ctx, "create_tenant", http.MethodPost, c.url("/tenants"), t, &out, true)
	if err == nil && out.ID == "" {
		err = &integration.HTTPError{Service: "LMS", Call: "create_tenant", Status: http.StatusOK, Body: "no id in the answer"}
	}
	return out.ID, err
}

// TenantStatus reads whether a tenant's DNS names resolve yet.
func (c *Client) TenantStatus(ctx context.Context, id string) (Status, error) {
	var out Status
	err := c.do(ctx, "get_tenant_status", http.MethodGet, c.url("/tenants/"+url.PathEscape(id)+"/status"), nil, &out, false)
	return out, err
}

// TenantInfo reads a tenant's DNS domain.
func (c *Client) TenantInfo(ctx context.Context, id string) (Info, error) {
	var out Info
	err := c.do(ctx, "get_tenant", http.MethodGet, c.url("/tenants/"+url.PathEscape(id)), nil, &out, false)
	if err == nil && out.DNS == "" {
		err = &integration.HTTPError{Service: "LMS", Call: "get_tenant", Status: http.StatusOK, Body: "no dns in the answer"}
	}
	return out, err
}

// RequestCertificate asks LMS to sign csrPEM for tenant id; the answer is
// the URL where the signed certificate will be.
func (c *Client) RequestCertificate(ctx context.Context, id string, csrPEM []byte) (string, error) {
	var out struct {
		CallbackURL string `json:"callbackUrl"`
	}
	err := c.do(ctx, "request_certificate", http.MethodPost, c.url("/tenants/"+url.PathEscape(id)+"/certs"),
		struct {
			CertID int    `json:"certId"`
			CSR    string `json:"csr"`
		}{0, string(csrPEM)}, &out, false)
	if err != nil {
		return "", err
	}
	if u, perr := url.Parse(out.CallbackURL); perr != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
		return "", &integration.HTTPError{Service: "LMS", Call: "request_certificate", Status: http.StatusOK,
			Body: "callbackUrl is no absolute http(s) URL: " + out.CallbackURL}
	}
	return out.CallbackURL, nil
}

// SignedCertificate reads the certificate at a callback URL; ready is false
// while LMS has not signed it (404).
func (c *Client) SignedCertificate(ctx context.Context, callbackURL string) (pem string, ready bool, err error) {
	return c.certificate(ctx, "get_certificate", callbackURL)
}

// CACertificate reads tenant id's CA certificate; ready as in
// SignedCertificate.
func (c *Client) CACertificate(ctx context.Context, id string) (pem string, ready bool, err error) {
	return c.certificate(ctx, "get_ca_certificate", c.url("/tenants/"+url.PathEscape(id)+"/certs/ca"))
}

func (c *Client) certificate(ctx context.Context, call, target string) (string, bool, error) {
	var out struct {
		Cert string `json:"cert"`
	}
	err := c.do(ctx, call, http.MethodGet, target, nil, &out, false)
	if status, _ := integration.Status(err); status == http.StatusNotFound {
		return "", false, nil
	}
	if err == nil && out.Cert == "" {
		err = &integration.HTTPError{Service: "LMS", Call: call, Status: http.StatusOK, Body: "no cert in the answer"}
	}
	return out.Cert, err == nil, err
}

func (c *Client) url(path string) string { return strings.TrimSuffix(c.cfg.URL, "/") + path }

// do makes one call: a status below 400 is success. decodeFirst decodes
// the answer before its status is looked at, as upstream's tenant creation
// did: an answer that is no JSON is a (permanent) error whatever its status.
func (c *Client) do(ctx context.Context, call, method, target string, in, out any, decodeFirst bool) error {
	return c.caller.Do(ctx, integration.Call{Name: call, Method: method, URL: target, In: in, Out: out,
		Success: func(status int) bool { return status < 400 }, DecodeFirst: decodeFirst})
}
