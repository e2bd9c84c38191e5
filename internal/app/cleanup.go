package app

import (
	"context"
	"fmt"
	"time"

	"github.com/sirupsen/logrus"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kyma-keb/keb/internal/catalog"
	"github.com/kyma-keb/keb/internal/cis"
	"github.com/kyma-keb/keb/internal/cleanup"
	"github.com/kyma-keb/keb/internal/config"
	"github.com/kyma-keb/keb/internal/controlplane"
	"github.com/kyma-keb/keb/internal/process"
	"github.com/kyma-keb/keb/internal/storage"
	"github.com/kyma-keb/keb/internal/subaccountsync"
)

// cisTimeout bounds one request to CIS.
const cisTimeout = 30 * time.Second

// SubaccountCleaner builds the subaccount cleanup from the APP_CIS_*
// settings; `keb serve`, `keb dev` and `keb cleanup subaccounts` share it.
func SubaccountCleaner(cfg config.Config, store *storage.Store, log logrus.FieldLogger) (*cleanup.SubaccountCleaner, error) {
	k := cfg.Cleanup
	id, secret, err := k.Credentials()
	if err != nil {
		return nil, err
	}
	c, err := cis.New(cis.Config{Version: cis.Version(k.CISVersion), EventsURL: k.CISEventsURL, AuthURL: k.CISAuthURL,
		ClientID: id, ClientSecret: secret, PageSize: k.CISPageSize, Timeout: cisTimeout})
	if err != nil {
		return nil, fmt.Errorf("CIS client: %w", err)
	}
	return cleanup.NewSubaccountCleaner(c, store, cfg.OperationTimeout, log), nil
}

// EnvironmentsCleaner builds the environments cleanup over the control plane
// kcp from the APP_MAX_AGE_HOURS, APP_LABEL_SELECTOR and
// APP_ENVIRONMENTS_CLEANUP_MAX_PER_RUN settings.
func EnvironmentsCleaner(cfg config.Config, store *storage.Store, kcp client.Client, log logrus.FieldLogger) (*cleanup.EnvironmentsCleaner, error) {
	k := cfg.Cleanup
	if err := k.ValidateEnvironmentsRules(); err != nil {
		return nil, err
	}
	sel, err := k.Selector()
	if err != nil {
		return nil, err
	}
	return cleanup.NewEnvironmentsCleaner(kcp, store, cleanup.EnvironmentsConfig{
		Namespace: controlplane.Namespace, MaxAge: k.MaxAge, Selector: sel, MaxPerRun: k.MaxPerRun,
	}, cfg.OperationTimeout, log), nil
}

// cleanupJobs are the periodic cleanup jobs cfg switches on: the subaccount
// cleanup when a CIS events URL is set, the environments cleanup when its
// interval is.
func cleanupJobs(cfg config.Config, store *storage.Store, kcp client.Client, counter subaccountsync.Counter, log logrus.FieldLogger) ([]process.Periodic, error) {
	var jobs []process.Periodic
	if cfg.Cleanup.SubaccountCleanupOn() {
		sc, err := SubaccountCleaner(cfg, store, log.WithField("component", cleanup.SubaccountJob))
		if err != nil {
			return nil, err
		}
		jobs = append(jobs, process.Periodic{Name: cleanup.SubaccountJob, Interval: cfg.Cleanup.SubaccountInterval,
			Run: func(ctx context.Context) error {
				_, err := sc.Run(ctx, false)
				return err
			}})
	}
	if cfg.Cleanup.SyncInterval > 0 {
		s, err := subaccountSyncer(cfg, store, kcp, counter, log.WithField("component", subaccountsync.Job))
		if err != nil {
			return nil, err
		}
		jobs = append(jobs, process.Periodic{Name: subaccountsync.Job, Interval: cfg.Cleanup.SyncInterval,
			Run: func(ctx context.Context) error {
				_, err := s.Run(ctx)
				return err
			}})
	}
	if cfg.Cleanup.EnvironmentsInterval > 0 {
		ec, err := EnvironmentsCleaner(cfg, store, kcp, log.WithField("component", cleanup.EnvironmentsJob))
		if err != nil {
			return nil, err
		}
		jobs = append(jobs, process.Periodic{Name: cleanup.EnvironmentsJob, Interval: cfg.Cleanup.EnvironmentsInterval,
			Run: func(ctx context.Context) error {
				_, err := ec.Run(ctx, false)
				return err
			}})
	}
	return jobs, nil
}

// subaccountSyncer builds the subaccount sync from the APP_CIS_* settings
// (the central events API).
func subaccountSyncer(cfg config.Config, store *storage.Store, kcp client.Client, counter subaccountsync.Counter,
	log logrus.FieldLogger) (*subaccountsync.Syncer, error) {
	k := cfg.Cleanup
	if !k.SubaccountCleanupOn() || k.CISVersion != string(cis.Central) {
		return nil, fmt.Errorf("APP_SUBACCOUNT_SYNC_INTERVAL needs the CIS central events API: APP_CIS_EVENT_SERVICE_URL and APP_CLIENT_VERSION=%s", cis.Central)
	}
	id, secret, err := k.Credentials()
	if err != nil {
		return nil, err
	}
	c, err := cis.New(cis.Config{Version: cis.Central, EventsURL: k.CISEventsURL, AuthURL: k.CISAuthURL,
		ClientID: id, ClientSecret: secret, PageSize: k.CISPageSize, Timeout: cisTimeout})
	if err != nil {
		return nil, fmt.Errorf("CIS client: %w", err)
	}
	return &subaccountsync.Syncer{Events: c, States: store, KCP: kcp, Namespace: controlplane.Namespace,
		DryRun: k.SyncDryRun, Counter: counter, Log: log}, nil
}

// onePerGlobalAccountPlans names the plans a global account has one of
// (trial, free): the entitlement quota does not apply to them.
func onePerGlobalAccountPlans(cat *catalog.Catalog) []string {
	var names []string
	for _, p := range cat.Plans() {
		if p.OnePerGlobalAccount {
			names = append(names, p.Name)
		}
	}
	return names
}
