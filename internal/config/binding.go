package config

import (
	"errors"
	"fmt"
	"time"
)

// Binding configures OSB service bindings: kubeconfigs for a runtime, backed
// by a ServiceAccount and a short-lived token in it.
type Binding struct {
	// BindablePlans are the plans whose catalog entry says bindable: true.
	BindablePlans []string
	// MaxPerInstance caps the live bindings of one instance.
	MaxPerInstance int
	// DefaultExpiration is a binding's lifetime when the PUT names none;
	// MinExpiration and MaxExpiration bound expiration_seconds.
	DefaultExpiration time.Duration
	MinExpiration     time.Duration
	MaxExpiration     time.Duration
	// Role is the ClusterRole a binding's ServiceAccount is bound to.
	Role string
	// Timeout bounds a synchronous bind's work in the runtime; an
	// asynchronous one (accepts_incomplete) gets AsyncTimeout.
	Timeout      time.Duration
	AsyncTimeout time.Duration
	// PruneInterval is how often the leader removes expired bindings.
	PruneInterval time.Duration
}

// DefaultBinding are the binding settings' defaults: every paid plan is
// bindable.
var DefaultBinding = Binding{
	BindablePlans: []string{"aws", "azure", "azure_lite", "gcp", "preview", "sap-converged-cloud",
		"build-runtime-aws", "build-runtime-gcp", "build-runtime-azure"},
	MaxPerInstance:    10,
	DefaultExpiration: 600 * time.Second,
	MinExpiration:     600 * time.Second,
	MaxExpiration:     7200 * time.Second,
	Role:              "cluster-admin",
	Timeout:           15 * time.Second,
	AsyncTimeout:      5 * time.Minute,
	PruneInterval:     time.Minute,
}

// BindBinding binds the service binding settings.
func (c *Config) BindBinding(b *Binder) {
	d := DefaultBinding
	k := &c.Binding
	b.List(&k.BindablePlans, "binding-bindable-plans", "APP_BROKER_BINDING_BINDABLE_PLANS", d.BindablePlans,
		"plans whose instances can be bound (a kubeconfig for the runtime)")
	b.Int(&k.MaxPerInstance, "binding-max-per-instance", "APP_BROKER_BINDING_MAX_PER_INSTANCE", d.MaxPerInstance,
		"most live (unexpired) bindings of one instance")
	b.Duration(&k.DefaultExpiration, "binding-expiration", "APP_BROKER_BINDING_EXPIRATION", d.DefaultExpiration,
		"a binding's lifetime when the request names no expiration_seconds")
	b.Duration(&k.MinExpiration, "binding-min-expiration", "APP_BROKER_BINDING_MIN_EXPIRATION", d.MinExpiration,
		"shortest expiration_seconds accepted")
	b.Duration(&k.MaxExpiration, "binding-max-expiration", "APP_BROKER_BINDING_MAX_EXPIRATION", d.MaxExpiration,
		"longest expiration_seconds accepted")
	b.String(&k.Role, "binding-cluster-role", "APP_BROKER_BINDING_CLUSTER_ROLE", d.Role,
		"ClusterRole a binding's ServiceAccount gets in the runtime")
	b.Duration(&k.Timeout, "binding-timeout", "APP_BROKER_BINDING_TIMEOUT", d.Timeout,
		"bound on a synchronous bind's work in the runtime (keep it below APP_REQUEST_TIMEOUT)")
	b.Duration(&k.AsyncTimeout, "binding-async-timeout", "APP_BROKER_BINDING_ASYNC_TIMEOUT", d.AsyncTimeout,
		"bound on an asynchronous bind (accepts_incomplete=true) before it fails")
	b.Duration(&k.PruneInterval, "binding-prune-interval", "APP_BROKER_BINDING_PRUNE_INTERVAL", d.PruneInterval,
		"how often one replica removes expired bindings from their runtimes")
}

// Validate checks the binding settings against each other.
func (k Binding) Validate() error {
	var errs []error
	if k.MaxPerInstance < 1 {
		errs = append(errs, fmt.Errorf("APP_BROKER_BINDING_MAX_PER_INSTANCE=%d: must be at least 1", k.MaxPerInstance))
	}
	if k.MinExpiration < time.Second || k.MinExpiration > k.MaxExpiration {
		errs = append(errs, fmt.Errorf("binding expirations: minimum %s must be at least 1s and at most the maximum %s",
			k.MinExpiration, k.MaxExpiration))
	}
	if k.DefaultExpiration < k.MinExpiration || k.DefaultExpiration > k.MaxExpiration {
		errs = append(errs, fmt.Errorf("APP_BROKER_BINDING_EXPIRATION=%s: must lie between %s and %s",
			k.DefaultExpiration, k.MinExpiration, k.MaxExpiration))
	}
	if k.Role == "" {
		errs = append(errs, errors.New("APP_BROKER_BINDING_CLUSTER_ROLE is empty"))
	}
	if k.Timeout <= 0 || k.AsyncTimeout <= 0 || k.PruneInterval <= 0 {
		errs = append(errs, errors.New("APP_BROKER_BINDING_TIMEOUT, _ASYNC_TIMEOUT and _PRUNE_INTERVAL must be positive"))
	}
	return errors.Join(errs...)
}
