package userkubeconfig

import (
	"context"
	"errors"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	im "github.com/kyma-keb/keb/internal/infrastructuremanager"
	"github.com/kyma-keb/keb/internal/runtimeclient"
	"github.com/kyma-keb/keb/internal/storage"
)

// Instances reads an instance's record (*storage.Store).
type Instances interface {
	Instance(ctx context.Context, instanceID string) (storage.Instance, error)
}

// Endpoints reads where a runtime's API server is from its kubeconfig Secret
// (*runtimeclient.Cache).
type Endpoints interface {
	Endpoint(ctx context.Context, runtimeID string) (runtimeclient.Endpoint, error)
}

// NotServedError says why an instance has no kubeconfig to hand out now
// (404): unknown, its runtime being built or removed, failed, suspended.
type NotServedError struct{ Reason string }

func (e *NotServedError) Error() string { return e.Reason }

// Service builds people's kubeconfigs from the control plane.
type Service struct {
	instances Instances
	kcp       client.Reader
	endpoints Endpoints
	namespace string
}

// New returns a Service reading Runtime CRs in namespace through kcp; with
// a nil kcp (keb without a control plane) it serves no kubeconfig.
func New(instances Instances, kcp client.Reader, endpoints Endpoints, namespace string) *Service {
	return &Service{instances: instances, kcp: kcp, endpoints: endpoints, namespace: namespace}
}

// Kubeconfig returns the kubeconfig of the instance's runtime; a
// *NotServedError while the instance has no running runtime.
func (s *Service) Kubeconfig(ctx context.Context, instanceID string) ([]byte, error) {
	inst, err := s.instances.Instance(ctx, instanceID)
	if errors.Is(err, storage.ErrNotFound) {
		return nil, &NotServedError{Reason: "instance " + instanceID + " does not exist"}
	}
	if err != nil {
		return nil, err
	}
	if reason := notServed(inst); reason != "" {
		return nil, &NotServedError{Reason: reason}
	}
	if s.kcp == nil {
		return nil, &NotServedError{Reason: "keb runs without a control plane: no runtime of it can be reached"}
	}
	rt := &im.Runtime{}
	if err := s.kcp.Get(ctx, client.ObjectKey{Namespace: s.namespace, Name: inst.RuntimeID}, rt); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, &NotServedError{Reason: "the runtime of instance " + instanceID + " is gone from the control plane"}
		}
		return nil, fmt.Errorf("reading the Runtime CR %s: %w", inst.RuntimeID, err)
	}
	ep, err := s.endpoints.Endpoint(ctx, inst.RuntimeID)
	if errors.Is(err, runtimeclient.ErrKubeconfigNotFound) {
		return nil, &NotServedError{Reason: "the runtime of instance " + instanceID + " has no kubeconfig yet"}
	}
	if err != nil {
		return nil, err
	}
	return Build(inst.DisplayName(), ep, Providers(rt))
}

// ServerURL is the runtime's API server address, from its kubeconfig Secret.
func (s *Service) ServerURL(ctx context.Context, runtimeID string) (string, error) {
	ep, err := s.endpoints.Endpoint(ctx, runtimeID)
	if err != nil {
		return "", err
	}
	return ep.Server, nil
}

// notServed is why an instance in its state has no kubeconfig; empty when
// its runtime runs.
func notServed(inst storage.Instance) string {
	id := inst.InstanceID
	switch {
	case inst.State == storage.RuntimeSucceeded && inst.RuntimeID != "":
		return ""
	case inst.State == storage.RuntimeProvisioning:
		return "instance " + id + " is being provisioned: its runtime is not ready yet"
	case inst.State == storage.RuntimeFailed:
		return "instance " + id + " failed: it has no runtime to connect to"
	case inst.State == storage.RuntimeSuspended:
		return "instance " + id + " is suspended: its runtime was removed"
	case inst.State == storage.RuntimeDeprovisioning, inst.State == storage.RuntimeDeprovisioned:
		return "instance " + id + " is being deprovisioned"
	default:
		return "instance " + id + " has no runtime"
	}
}
