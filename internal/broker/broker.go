// Package broker implements brokerapi's ServiceBroker for the kymaruntime
// service: it validates OSB requests, records accepted operations through the
// storage package and answers in the OSB spec's terms. It holds no SQL and
// makes no Kubernetes calls.
package broker

import (
	"context"
	"slices"
	"time"

	"github.com/google/uuid"
	"github.com/pivotal-cf/brokerapi/v10/domain"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/sirupsen/logrus"

	"github.com/kyma-keb/keb/internal/catalog"
	"github.com/kyma-keb/keb/internal/guardrails"
	"github.com/kyma-keb/keb/internal/storage"
)

// instanceStore is the part of storage.Store the broker uses.
type instanceStore interface {
	CreateProvisioning(ctx context.Context, inst storage.Instance, op storage.Operation) error
	CreateDeprovisioning(ctx context.Context, op storage.Operation) (storage.Operation, bool, error)
	Instance(ctx context.Context, instanceID string) (storage.Instance, error)
	LastOperation(ctx context.Context, instanceID string) (storage.Operation, error)
	Operation(ctx context.Context, instanceID, operationID string) (storage.Operation, error)
	PollOperation(ctx context.Context, instanceID, operationID string) (storage.OperationPoll, error)
	Archived(ctx context.Context, instanceID string) (storage.ArchivedInstance, error)
	ChangeInstance(ctx context.Context, instanceID string, decide func(storage.Instance, *storage.Operation) (storage.InstanceChange, error)) error
	Actions(ctx context.Context, instanceIDs ...string) (map[string][]storage.Action, error)
}

// Options tune the broker's OSB behaviour.
type Options struct {
	DefaultRequestRegion string
	EnabledPlans         []string
	OperationTimeout     time.Duration
	RetryAfter           time.Duration
	// Bindings serves service bindings; nil (no control plane) refuses them
	// and the catalog offers none.
	Bindings binder
	// BindablePlans are the plans (by name) the catalog marks bindable.
	BindablePlans []string
	// UnsupportedParameters counts parameters a catalog built with
	// IgnoreUnsupportedParameters let through, by plan and parameter; nil
	// counts nothing.
	UnsupportedParameters *prometheus.CounterVec
	// GVisorGlobalAccounts may use the gvisor parameter ("*": all).
	GVisorGlobalAccounts []string
	// Labels say what the instance labels link to.
	Labels LabelOptions
	// Blocklist blocks operations by plan and global account; nil blocks
	// none.
	Blocklist blocklist
	// AllowedGlobalAccounts restricts provisioning to some global accounts.
	AllowedGlobalAccounts guardrails.AllowedGlobalAccounts
	// Quota checks the subaccount's entitlement (CIS); nil checks none.
	Quota quota
	// Seeds lists the regions with a Gardener seed per provider (seeds.Cache), for
	// colocateControlPlane; nil (no control plane) cannot check it and refuses it with a 503.
	Seeds seedRegions
	// SubaccountMovement lets a PATCH move the instance's subaccount to
	// another global account (a new globalaccount_id); false refuses it.
	SubaccountMovement bool
}

// quota refuses a provisioning beyond the subaccount's entitlement
// (guardrails.Quota).
type quota interface {
	Refusal(ctx context.Context, planID, planName, subaccountID, instanceID string) (string, error)
}

// seedRegions lists the regions with a Gardener seed of a provider (seeds.Cache).
type seedRegions interface {
	Regions(ctx context.Context, provider string) ([]string, error)
}

// blocklist says whether an operation is blocked (guardrails.FileBlocklist).
type blocklist interface {
	Blocked(op guardrails.Operation, plan, globalAccount string) (string, bool)
}

// blocked returns the refusal of op by the blocklist, or nil.
func (b *Broker) blocked(op guardrails.Operation, plan, globalAccount string) error {
	if b.opts.Blocklist == nil {
		return nil
	}
	if msg, ok := b.opts.Blocklist.Blocked(op, plan, globalAccount); ok {
		return errBlocked(msg)
	}
	return nil
}

// Broker is keb's domain.ServiceBroker.
type Broker struct {
	catalog  *catalog.Catalog
	services []domain.Service
	// regional and otherRegions are the catalogs per platform region.
	regional map[string][]domain.Service
	// otherRegions is keyed by catalog.OtherRegionClass.
	otherRegions map[string][]domain.Service
	store        instanceStore
	opts         Options
	log          logrus.FieldLogger
	now          func() time.Time
	unsupported  unsupportedLabels
}

var _ domain.ServiceBroker = (*Broker)(nil)

// New returns a Broker offering opts.EnabledPlans of cat.
func New(cat *catalog.Catalog, store instanceStore, opts Options, log logrus.FieldLogger) (*Broker, error) {
	services, err := cat.Services(opts.EnabledPlans)
	if err != nil {
		return nil, err
	}
	b := &Broker{catalog: cat, services: services, store: store, opts: opts, log: log, now: time.Now,
		regional: map[string][]domain.Service{}, otherRegions: map[string][]domain.Service{}}
	for _, pr := range cat.CatalogRegions() {
		if b.regional[pr], err = cat.ServicesFor(pr, opts.EnabledPlans); err != nil {
			return nil, err
		}
	}
	for _, class := range catalog.OtherRegionClasses() {
		if b.otherRegions[class], err = cat.ServicesForOtherRegions(class, opts.EnabledPlans); err != nil {
			return nil, err
		}
	}
	if opts.Bindings != nil {
		markBindable(services, opts.BindablePlans)
		for _, s := range b.regional {
			markBindable(s, opts.BindablePlans)
		}
		for _, s := range b.otherRegions {
			markBindable(s, opts.BindablePlans)
		}
	}
	return b, nil
}

// Catalogs are the catalogs GET /v2/catalog serves, prepared once: per
// platform region the plans file names, for every other platform region by
// its class (catalog.OtherRegionClass), and the platform region of requests
// without one.
func (b *Broker) Catalogs() (byRegion, others map[string][]domain.Service, defaultRegion string) {
	return b.regional, b.otherRegions, b.opts.DefaultRequestRegion
}

// markBindable says in the catalog which plans can be bound (OSB: a plan's
// bindable overrides the service's, which stays false) and that bindings
// can be fetched (GET binding).
func markBindable(services []domain.Service, plans []string) {
	for i := range services {
		for j, p := range services[i].Plans {
			if slices.Contains(plans, p.Name) {
				services[i].Plans[j].Bindable = domain.BindableValue(true)
				services[i].BindingsRetrievable = true
			}
		}
	}
}

// Services is every enabled plan, whatever the platform region: what
// requests may name (a plan not offered in a request's platform region is
// refused when its parameters are validated). GET /v2/catalog serves
// Catalogs.
func (b *Broker) Services(context.Context) ([]domain.Service, error) {
	return b.services, nil
}

func (b *Broker) platformRegion(ctx context.Context) string {
	if r := regionFrom(ctx); r != "" {
		return r
	}
	return b.opts.DefaultRequestRegion
}

// internal logs an unexpected error with its cause and returns the generic
// 500, so that no SQL or driver text reaches a response body; an unreachable
// or unresponsive database is a 503 instead.
func (b *Broker) internal(log logrus.FieldLogger, action string, err error) error {
	if storage.Unavailable(err) {
		log.WithError(err).Warn(action + ": database unavailable")
		return errUnavailable
	}
	log.WithError(err).Error(action)
	return errInternal
}

func newOperationID() string { return uuid.NewString() }

// newOperation is an accepted operation of an instance, in progress with the
// broker's operation deadline, waiting for a worker.
func (b *Broker) newOperation(instanceID string, opType storage.OperationType, description string) *storage.Operation {
	op := operationUntil(instanceID, opType, description, b.now().Add(b.opts.OperationTimeout))
	return &op
}

// operationUntil is an accepted operation of an instance, in progress until
// deadline, waiting for a worker.
func operationUntil(instanceID string, opType storage.OperationType, description string, deadline time.Time) storage.Operation {
	return storage.Operation{
		ID:          newOperationID(),
		InstanceID:  instanceID,
		Type:        opType,
		State:       storage.OperationInProgress,
		Description: description,
		Deadline:    deadline,
	}
}
