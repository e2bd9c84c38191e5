package edp

import (
	"context"
	"net/http"
	"net/url"
	"strings"

	"golang.org/x/oauth2/clientcredentials"

	"github.com/kyma-keb/keb/internal/integration"
)

// Client calls EDP's admin API with client-credentials tokens, cached until
// they expire.
type Client struct {
	cfg    Config
	caller integration.Caller
}

// NewClient returns a client of cfg's EDP; base carries the requests
// (nil: http.DefaultTransport), calls may be nil.
func NewClient(cfg Config, base *http.Client, calls integration.Calls) *Client {
	cc := clientcredentials.Config{ClientID: "edp-namespace;" + cfg.Namespace, ClientSecret: cfg.Secret,
		TokenURL: strings.TrimSuffix(cfg.AuthURL, "/") + "/oauth2/token",
		Scopes:   []string{"edp-namespace.read", "edp-namespace.update"}}
	return &Client{cfg: cfg, caller: integration.Caller{Service: "EDP", HTTP: integration.ClientCredentials(cc, base),
		Calls: calls, Limit: 1 << 16, IgnoreReadErrors: true}}
}

// Temporary reports whether err may heal by retrying: no answer (or no
// token), 408, or ≥ 500.
func Temporary(err error) bool {
	if status, answered := integration.Status(err); answered {
		return status == http.StatusRequestTimeout || status >= 500
	}
	return err != nil
}

// Conflict reports whether EDP answered 409: what is being created exists.
func Conflict(err error) bool {
	status, answered := integration.Status(err)
	return answered && status == http.StatusConflict
}

// CreateDataTenant creates name's data tenant in the configured environment.
func (c *Client) CreateDataTenant(ctx context.Context, name string) error {
	return c.do(ctx, "create_data_tenant", http.MethodPost, c.base()+"/dataTenants",
		NewDataTenant(name, c.cfg.Environment), false)
}

// CreateMetadata adds a metadata entry to name's tenant.
func (c *Client) CreateMetadata(ctx context.Context, name string, item MetadataItem) error {
	return c.do(ctx, "create_metadata", http.MethodPost, c.tenant(name)+"/metadata", item, false)
}

// UpdateMetadata changes a metadata entry's value.
func (c *Client) UpdateMetadata(ctx context.Context, name string, item MetadataItem) error {
	return c.do(ctx, "update_metadata", http.MethodPut, c.tenant(name)+"/metadata/"+url.PathEscape(item.Key),
		struct {
			Value string `json:"value"`
		}{item.Value}, false)
}

// DeleteMetadata removes a metadata entry; a missing one is no error.
func (c *Client) DeleteMetadata(ctx context.Context, name, key string) error {
	return c.do(ctx, "delete_metadata", http.MethodDelete, c.tenant(name)+"/metadata/"+url.PathEscape(key), nil, true)
}

// DeleteDataTenant removes name's tenant; a missing one is no error.
func (c *Client) DeleteDataTenant(ctx context.Context, name string) error {
	return c.do(ctx, "delete_data_tenant", http.MethodDelete, c.tenant(name), nil, true)
}

func (c *Client) base() string {
	return strings.TrimSuffix(c.cfg.AdminURL, "/") + "/namespaces/" + url.PathEscape(c.cfg.Namespace)
}

func (c *Client) tenant(name string) string {
	return c.base() + "/dataTenants/" + url.PathEscape(name) + "/" + url.PathEscape(c.cfg.Environment)
}

// do makes one call: 201 and 204 are success (200 is not), and on a
// DELETE, 404.
func (c *Client) do(ctx context.Context, call, method, target string, in any, deleting bool) error {
	ok := integration.Statuses(http.StatusCreated, http.StatusNoContent)
	if deleting {
		ok = integration.Statuses(http.StatusCreated, http.StatusNoContent, http.StatusNotFound)
	}
	return c.caller.Do(ctx, integration.Call{Name: call, Method: method, URL: target, In: in, Success: ok})
}
