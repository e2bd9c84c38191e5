package config

import (
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/labels"
)

// Cleanup configures the subaccount cleanup (CIS events) and the
// environments cleanup (old runtimes).
type Cleanup struct {
	// CISEventsURL is the CIS events endpoint; empty switches the
	// subaccount cleanup off.
	CISEventsURL        string
	CISAuthURL          string
	CISClientID         string
	CISClientIDFile     string
	CISClientSecret     string
	CISClientSecretFile string
	CISVersion          string
	CISPageSize         int
	SubaccountInterval  time.Duration
	// SyncInterval is how often the subaccount sync carries CIS attributes
	// to the CRs (0: off); SyncDryRun only reports.
	SyncInterval time.Duration
	SyncDryRun   bool

	// EnvironmentsInterval is how often the environments cleanup runs; 0
	// (the default) switches it off: it deletes runtimes.
	EnvironmentsInterval time.Duration
	MaxAge               time.Duration
	LabelSelector        string
	MaxPerRun            int
}

// DefaultCleanup are the cleanup's defaults.
var DefaultCleanup = Cleanup{
	CISVersion:         "central-v2",
	CISPageSize:        100,
	SubaccountInterval: time.Hour,
	MaxAge:             24 * time.Hour,
	LabelSelector:      "owner.do-not-delete!=true",
	MaxPerRun:          20,
}

// BindCleanup binds the settings of both cleanup jobs.
func (c *Config) BindCleanup(b *Binder) {
	d := DefaultCleanup
	k := &c.Cleanup
	b.String(&k.CISEventsURL, "cis-event-service-url", "APP_CIS_EVENT_SERVICE_URL", "",
		"CIS events endpoint; empty switches the subaccount cleanup off")
	b.String(&k.CISAuthURL, "cis-auth-url", "APP_CIS_AUTH_URL", "", "CIS OAuth2 token endpoint (client credentials)")
	b.String(&k.CISClientID, "cis-client-id", "APP_CIS_CLIENT_ID", "", "CIS OAuth2 client ID")
	b.String(&k.CISClientIDFile, "cis-client-id-file", "APP_CIS_CLIENT_ID_FILE", "", "file holding the CIS client ID (instead of APP_CIS_CLIENT_ID)")
	b.String(&k.CISClientSecret, "cis-client-secret", "APP_CIS_CLIENT_SECRET", "", "CIS OAuth2 client secret")
	b.String(&k.CISClientSecretFile, "cis-client-secret-file", "APP_CIS_CLIENT_SECRET_FILE", "",
		"file holding the CIS client secret (instead of APP_CIS_CLIENT_SECRET)")
	b.String(&k.CISVersion, "cis-client-version", "APP_CLIENT_VERSION", d.CISVersion, "CIS events API: central-v2 (the central events API v2, cursor paging; APP_CIS_EVENT_SERVICE_URL is <cis>/events/v2/events/central), or the retired v1.0 or v2.0")
	b.Int(&k.CISPageSize, "cis-page-size", "APP_CIS_PAGE_SIZE", d.CISPageSize, "events per CIS page")
	b.Duration(&k.SyncInterval, "subaccount-sync-interval", "APP_SUBACCOUNT_SYNC_INTERVAL", 0,
		"how often the leader carries CIS subaccount attributes (beta, used for production) to the Kyma and Runtime CRs; 0: off (needs APP_CLIENT_VERSION=central-v2)")
	b.Bool(&k.SyncDryRun, "subaccount-sync-dry-run", "APP_SUBACCOUNT_SYNC_DRY_RUN", false,
		"the subaccount sync only logs and counts the labels it would write")
	b.Duration(&k.SubaccountInterval, "subaccount-cleanup-interval", "APP_SUBACCOUNT_CLEANUP_INTERVAL", d.SubaccountInterval,
		"how often one replica deprovisions the instances of subaccounts deleted in CIS")
	b.Duration(&k.EnvironmentsInterval, "environments-cleanup-interval", "APP_ENVIRONMENTS_CLEANUP_INTERVAL", 0,
		"how often one replica deprovisions runtimes older than APP_MAX_AGE_HOURS (0: never; it deletes runtimes)")
	c.BindEnvironmentsRules(b)
}

// BindEnvironmentsRules binds the rules deciding which runtimes the
// environments cleanup removes.
func (c *Config) BindEnvironmentsRules(b *Binder) {
	d := DefaultCleanup
	k := &c.Cleanup
	b.Duration(&k.MaxAge, "max-age", "APP_MAX_AGE_HOURS", d.MaxAge, "runtimes younger than this stay (Go duration, e.g. 24h)")
	b.String(&k.LabelSelector, "label-selector", "APP_LABEL_SELECTOR", d.LabelSelector,
		"only runtimes whose labels match this selector may be cleaned up")
	b.Int(&k.MaxPerRun, "max-per-run", "APP_ENVIRONMENTS_CLEANUP_MAX_PER_RUN", d.MaxPerRun,
		"a pass that would clean up more runtimes cleans up none")
}

// SubaccountCleanupOn reports whether a CIS events endpoint is configured.
func (k Cleanup) SubaccountCleanupOn() bool { return k.CISEventsURL != "" }

// Credentials returns the CIS client ID and secret, from the files when set.
func (k Cleanup) Credentials() (id, secret string, err error) {
	id, secret = k.CISClientID, k.CISClientSecret
	if k.CISClientIDFile != "" {
		b, err := os.ReadFile(k.CISClientIDFile)
		if err != nil {
			return "", "", fmt.Errorf("reading APP_CIS_CLIENT_ID_FILE: %w", err)
		}
		id = strings.TrimSpace(string(b))
	}
	if k.CISClientSecretFile != "" {
		b, err := os.ReadFile(k.CISClientSecretFile)
		if err != nil {
			return "", "", fmt.Errorf("reading APP_CIS_CLIENT_SECRET_FILE: %w", err)
		}
		secret = strings.TrimSpace(string(b))
	}
	return id, secret, nil
}

// Selector parses the label selector.
func (k Cleanup) Selector() (labels.Selector, error) {
	sel, err := labels.Parse(k.LabelSelector)
	if err != nil {
		return nil, fmt.Errorf("APP_LABEL_SELECTOR=%q: %w", k.LabelSelector, err)
	}
	return sel, nil
}

// Validate checks the cleanup settings that are in use.
func (k Cleanup) Validate() error {
	var errs []error
	if k.SubaccountCleanupOn() {
		if k.CISAuthURL == "" {
			errs = append(errs, errors.New("APP_CIS_EVENT_SERVICE_URL is set but APP_CIS_AUTH_URL is not"))
		}
		if k.CISVersion != "central-v2" && k.CISVersion != "v1.0" && k.CISVersion != "v2.0" {
			errs = append(errs, fmt.Errorf("APP_CLIENT_VERSION=%q: use central-v2, v1.0 or v2.0", k.CISVersion))
		}
		if k.SubaccountInterval <= 0 {
			errs = append(errs, errors.New("APP_SUBACCOUNT_CLEANUP_INTERVAL must be positive"))
		}
	}
	if k.EnvironmentsInterval < 0 {
		errs = append(errs, errors.New("APP_ENVIRONMENTS_CLEANUP_INTERVAL must not be negative"))
	}
	if k.EnvironmentsInterval > 0 {
		errs = append(errs, k.ValidateEnvironmentsRules())
	}
	return errors.Join(errs...)
}

// ValidateEnvironmentsRules checks the rules of the environments cleanup.
func (k Cleanup) ValidateEnvironmentsRules() error {
	var errs []error
	if k.MaxAge <= 0 {
		errs = append(errs, errors.New("APP_MAX_AGE_HOURS must be positive"))
	}
	if k.MaxPerRun < 0 {
		errs = append(errs, errors.New("APP_ENVIRONMENTS_CLEANUP_MAX_PER_RUN must not be negative"))
	}
	if _, err := k.Selector(); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}
