package cis

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"

	"golang.org/x/oauth2"
	"golang.org/x/oauth2/clientcredentials"
)

// ErrSubaccountUnknown is CIS's 404 for a subaccount it does not know.
var ErrSubaccountUnknown = errors.New("subaccount unknown to CIS")

// EntitlementsPath is where CIS answers a subaccount's entitlement of a
// Kyma plan, relative to its base URL.
func EntitlementsPath(plan, subaccountID string) string {
	return "/entitlements/v1/services/kymaruntime/plans/" + url.PathEscape(plan) + "/subaccounts/" +
		url.PathEscape(subaccountID) + "/entitlements"
}

// WireEntitlement is CIS's answer: how many instances of the plan the
// subaccount is entitled to.
type WireEntitlement struct {
	Amount int `json:"amount"`
}

// Entitlements asks CIS for subaccounts' quotas.
type Entitlements struct {
	base   string
	http   *http.Client
	client *Client // for its retries
}

// EntitlementsConfig is how to reach CIS's entitlements API.
type EntitlementsConfig struct {
	// BaseURL is CIS's URL; EntitlementsPath is appended.
	BaseURL                         string
	AuthURL, ClientID, ClientSecret string
	Timeout                         time.Duration
	RetryFor, RetryInitial          time.Duration
}

// NewEntitlements returns a client of CIS's entitlements API.
func NewEntitlements(cfg EntitlementsConfig) (*Entitlements, error) {
	if cfg.BaseURL == "" || cfg.AuthURL == "" {
		return nil, errors.New("the entitlements client needs CIS's URL and the token URL")
	}
	c := &Client{cfg: Config{Timeout: cfg.Timeout, RetryFor: cfg.RetryFor, RetryInitial: cfg.RetryInitial}}
	if c.cfg.Timeout <= 0 {
		c.cfg.Timeout = DefaultTimeout
	}
	if c.cfg.RetryFor <= 0 {
		c.cfg.RetryFor = 5 * time.Second // a provisioning request waits for it
	}
	if c.cfg.RetryInitial <= 0 {
		c.cfg.RetryInitial = DefaultRetryInitial
	}
	cc := clientcredentials.Config{ClientID: cfg.ClientID, ClientSecret: cfg.ClientSecret, TokenURL: cfg.AuthURL}
	base := &http.Client{Timeout: c.cfg.Timeout}
	c.http = cc.Client(context.WithValue(context.Background(), oauth2.HTTPClient, base))
	c.http.Timeout = c.cfg.Timeout
	return &Entitlements{base: strings.TrimRight(cfg.BaseURL, "/"), http: c.http, client: c}, nil
}

// Amount is the subaccount's entitlement of the plan (its name):
// ErrSubaccountUnknown for a subaccount CIS does not know; timeouts, 5xx
// and 429 are retried for a few seconds.
func (e *Entitlements) Amount(ctx context.Context, plan, subaccountID string) (int, error) {
	var w WireEntitlement
	err := e.client.retrying(ctx, "entitlement", e.base+EntitlementsPath(plan, subaccountID), func(b []byte) error {
		return json.Unmarshal(b, &w)
	})
	if isStatus(err, http.StatusNotFound) {
		return 0, fmt.Errorf("%w: %s", ErrSubaccountUnknown, subaccountID)
	}
	if err != nil {
		return 0, err
	}
	return w.Amount, nil
}

// isStatus reports whether err is CIS's answer with that status.
func isStatus(err error, status int) bool {
	var se *StatusError
	return errors.As(err, &se) && se.Status == status
}
