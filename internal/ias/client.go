package ias

import (
	"context"
	"crypto/tls"
	"errors"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/kyma-keb/keb/internal/integration"
)

// Client calls IAS's service provider API with HTTP Basic credentials.
type Client struct {
	cfg    Config
	caller integration.Caller
}

// NewClient returns a client of cfg's tenant; base carries the requests
// (nil: a client with cfg's TLS choices), calls may be nil.
func NewClient(cfg Config, base *http.Client, calls integration.Calls) *Client {
	hc := base
	if hc == nil {
		tr := http.DefaultTransport.(*http.Transport).Clone()
		tr.TLSClientConfig = &tls.Config{MinVersion: tls.VersionTLS12, InsecureSkipVerify: cfg.SkipCertVerification} //nolint:gosec // the operator's choice for a test tenant
		timeout := 60 * time.Second
		if cfg.TLSRenegotiation {
			tr.TLSClientConfig.Renegotiation = tls.RenegotiateOnceAsClient
			timeout = 30 * time.Second
		}
		hc = &http.Client{Transport: tr, Timeout: timeout}
	}
	return &Client{cfg: cfg, caller: integration.Caller{Service: "IAS", HTTP: hc, Calls: calls, Limit: 1 << 22,
		Prepare: func(_ context.Context, req *http.Request) error {
			req.SetBasicAuth(cfg.UserID, cfg.UserSecret)
			// Upstream's: some tenants' front ends mishandle reused connections.
			req.Close = true
			return nil
		}, IgnoreReadErrors: true}}
}

// ErrNoIdentityProvider is the configured identity provider missing from
// the company: a setting to fix, not a failure to retry.
var ErrNoIdentityProvider = errors.New("IAS: no identity provider of that name (APP_IAS_IDENTITY_PROVIDER)")

// Temporary reports whether err may heal by retrying: no answer, 408, or
// ≥ 500.
func Temporary(err error) bool {
	if status, answered := integration.Status(err); answered {
		return status == http.StatusRequestTimeout || status >= 500
	}
	return err != nil && !errors.Is(err, ErrNoIdentityProvider)
}

// Company reads the company's service and identity providers.
func (c *Client) Company(ctx context.Context) (Company, error) {
	var out Company
	err := c.do(ctx, "get_company", http.MethodGet, "/service/company/"+CompanyID, nil, &out, false)
	return out, err
}

// CreateServiceProvider creates a service provider named displayName; IAS
// answers no ID: Company finds it.
func (c *Client) CreateServiceProvider(ctx context.Context, displayName string) error {
	form := url.Values{"sp_name": {displayName}, "company_id": {CompanyID}}
	return c.do(ctx, "create_service_provider", http.MethodPost, "/service/sps", form, nil, false)
}

// SetOIDC makes spID an OpenID Connect provider of grafanaHost.
func (c *Client) SetOIDC(ctx context.Context, spID, grafanaHost string) error {
	type oidc struct {
		RedirectURIs []string `json:"redirect_uris"`
	}
	return c.putJSON(ctx, "set_oidc_type", "/service/sps/"+url.PathEscape(spID), struct {
		SSOType string `json:"ssoType"`
		SPName  string `json:"sp_name"`
		OIDC    oidc   `json:"openId_connect_configuration"`
	}{SSOType, grafanaHost, oidc{[]string{"https://" + grafanaHost + RedirectPath}}}, nil)
}

// SetAssertionAttributes sets sp's four assertion attributes
// (ServiceProvider.Attributes).
func (c *Client) SetAssertionAttributes(ctx context.Context, sp ServiceProvider) error {
	return c.putJSON(ctx, "set_assertion_attributes", "/service/sps/"+url.PathEscape(sp.ID), struct {
		Attributes []AssertionAttribute `json:"assertion_attributes"`
	}{sp.Attributes()}, nil)
}

// SetNameID makes the subject's name ID its mail.
func (c *Client) SetNameID(ctx context.Context, spID string) error {
	return c.putJSON(ctx, "set_name_id", "/service/sps/"+url.PathEscape(spID), struct {
		NameID string `json:"name_id_attribute"`
	}{NameIDAttribute}, nil)
}

// SetDefaultIdP makes idpID spID's default authenticating identity
// provider.
func (c *Client) SetDefaultIdP(ctx context.Context, spID, idpID string) error {
	return c.putJSON(ctx, "set_default_idp", "/service/sps", struct {
		Organization string `json:"organization"`
		ID           string `json:"id"`
		IdP          string `json:"default_auth_idp"`
	}{CompanyID, spID, strings.TrimSuffix(c.cfg.URL, "/") + "/service/idp/" + idpID}, nil)
}

// SetAccessRules lets in GroupAdmin and GroupViewer, and nobody else.
func (c *Client) SetAccessRules(ctx context.Context, spID string) error {
	type rule struct {
		Action    string `json:"action"`
		Group     string `json:"group"`
		GroupType string `json:"group_type"`
	}
	type rba struct {
		Rules         []rule `json:"rba_rules"`
		DefaultAction string `json:"default_action"`
	}
	type sp struct {
		RBA rba `json:"rba_config"`
	}
	return c.putJSON(ctx, "set_access_rules", "/service/sps/"+url.PathEscape(spID)+"/rba", struct {
		SP sp `json:"service_provider"`
	}{sp{rba{Rules: []rule{{"Allow", GroupAdmin, GroupType}, {"Allow", GroupViewer, GroupType}}, DefaultAction: "Deny"}}}, nil)
}

// DeleteSecrets removes sp's client secrets; none is no call.
func (c *Client) DeleteSecrets(ctx context.Context, sp ServiceProvider) error {
	if len(sp.ClientSecrets) == 0 {
		return nil
	}
	return c.do(ctx, "delete_client_secrets", http.MethodDelete, "/service/sps/clientSecret", struct {
		ClientID string   `json:"clientId"`
		IDs      []string `json:"clientSecretsIds"`
	}{sp.UserForRest, sp.SecretIDs()}, nil, true)
}

// GenerateSecret gives spID a new client secret.
func (c *Client) GenerateSecret(ctx context.Context, spID string) (Credentials, error) {
	type secret struct {
		Description string   `json:"description"`
		Scopes      []string `json:"scopes"`
	}
	var out Credentials
	err := c.putJSON(ctx, "generate_client_secret", "/service/sps", struct {
		Organization string `json:"organization"`
		ID           string `json:"id"`
		Secret       secret `json:"rest_api_client_secret"`
	}{CompanyID, spID, secret{SecretDescription, SecretScopes}}, &out)
	if err == nil && (out.ClientID == "" || out.ClientSecret == "") {
		err = &integration.HTTPError{Service: "IAS", Call: "generate_client_secret", Status: http.StatusOK, Body: "no clientId or clientSecret in the answer"}
	}
	return out, err
}

// DeleteServiceProvider removes spID; a missing one is no error.
func (c *Client) DeleteServiceProvider(ctx context.Context, spID string) error {
	return c.do(ctx, "delete_service_provider", http.MethodPut, "/service/sps/delete?sp_id="+url.QueryEscape(spID), nil, nil, true)
}

func (c *Client) putJSON(ctx context.Context, call, path string, in, out any) error {
	return c.do(ctx, call, http.MethodPut, path, in, out, false)
}

// do makes one call: 200, 201 and 204 are success, and on a deletion 404.
// in is sent as in integration.Call.
func (c *Client) do(ctx context.Context, call, method, path string, in, out any, deleting bool) error {
	ok := integration.Statuses(http.StatusOK, http.StatusCreated, http.StatusNoContent)
	if deleting {
		ok = integration.Statuses(http.StatusOK, http.StatusCreated, http.StatusNoContent, http.StatusNotFound)
	}
	return c.caller.Do(ctx, integration.Call{Name: call, Method: method, URL: strings.TrimSuffix(c.cfg.URL, "/") + path,
		In: in, Out: out, Success: ok})
}
