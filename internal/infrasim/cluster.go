package infrasim

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sirupsen/logrus"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
)

// errClosed is returned by a pool whose Simulator is shutting down: a cluster
// started now would outlive the process's cleanup.
var errClosed = errors.New("simulator is shutting down")

// adminUser is the identity written into runtime kubeconfigs: keb administers
// its runtimes, as it does with the real infrastructure manager's kubeconfigs.
var adminUser = envtest.User{Name: "keb", Groups: []string{"system:masters"}}

// cluster is one running kube-apiserver+etcd standing in for a runtime's shoot.
type cluster struct {
	env        *envtest.Environment
	kubeconfig []byte
}

func (c *cluster) stop() error { return c.env.Stop() }

// clusterPool starts and stops the clusters of one Simulator. It records which
// runtimes it gave a cluster, so a second reconcile of a runtime reuses it and
// never starts another.
type clusterPool struct {
	mode   Mode
	binDir string
	crds   []*apiextensionsv1.CustomResourceDefinition
	log    logrus.FieldLogger
	// starts bounds concurrent apiserver starts: each takes seconds of CPU and
	// ~330 MB, and the machine is shared.
	starts chan struct{}
	// started counts clusters ever started, for tests and logs.
	started atomic.Int64

	// sharedStart serialises the lazy start of the shared cluster, so runtimes
	// arriving together start it once.
	sharedStart sync.Mutex

	mu     sync.Mutex
	owned  map[string]*cluster // runtime ID → its cluster (in shared mode: the shared one)
	shared *cluster
	closed bool
}

func newClusterPool(mode Mode, binDir string, crds []*apiextensionsv1.CustomResourceDefinition, maxStarts int, log logrus.FieldLogger) *clusterPool {
	return &clusterPool{
		mode: mode, binDir: binDir, crds: crds, log: log,
		starts: make(chan struct{}, maxStarts),
		owned:  map[string]*cluster{},
	}
}

// Owns reports whether this process gave the runtime a cluster that still runs.
func (p *clusterPool) Owns(runtimeID string) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	_, ok := p.owned[runtimeID]
	return ok
}

// Ensure returns the kubeconfig of the runtime's cluster, starting the cluster
// unless the runtime has one already.
func (p *clusterPool) Ensure(ctx context.Context, runtimeID string) ([]byte, error) {
	p.mu.Lock()
	c, closed := p.owned[runtimeID], p.closed
	p.mu.Unlock()
	switch {
	case closed:
		return nil, errClosed
	case c != nil:
		return c.kubeconfig, nil
	case p.mode == ModeShared:
		return p.ensureShared(ctx, runtimeID)
	default:
		return p.ensureDedicated(ctx, runtimeID)
	}
}

func (p *clusterPool) ensureDedicated(ctx context.Context, runtimeID string) ([]byte, error) {
	c, err := p.start(ctx, p.log.WithField("runtime_id", runtimeID))
	if err != nil {
		return nil, err
	}
	p.mu.Lock()
	existing, closed := p.owned[runtimeID], p.closed
	if !closed && existing == nil {
		p.owned[runtimeID] = c
		p.mu.Unlock()
		return c.kubeconfig, nil
	}
	p.mu.Unlock()
	// Shutdown began while we started (stopAll will not see this cluster), or a
	// concurrent call won the race: either way this cluster is surplus.
	if err := c.stop(); err != nil {
		p.log.WithField("runtime_id", runtimeID).WithError(err).Warn("stopping a surplus runtime cluster")
	}
	if closed {
		return nil, errClosed
	}
	return existing.kubeconfig, nil
}

func (p *clusterPool) ensureShared(ctx context.Context, runtimeID string) ([]byte, error) {
	p.sharedStart.Lock()
	defer p.sharedStart.Unlock()
	p.mu.Lock()
	shared, closed := p.shared, p.closed
	p.mu.Unlock()
	if closed {
		return nil, errClosed
	}
	if shared == nil {
		started, err := p.start(ctx, p.log.WithField("cluster", "shared"))
		if err != nil {
			return nil, err
		}
		shared = started
	}
	p.mu.Lock()
	if p.closed {
		startedHere := p.shared != shared // stopAll stopped p.shared, not this one
		p.mu.Unlock()
		if startedHere {
			if err := shared.stop(); err != nil {
				p.log.WithError(err).Warn("stopping the shared runtime cluster")
			}
		}
		return nil, errClosed
	}
	p.shared = shared
	p.owned[runtimeID] = shared
	p.mu.Unlock()
	return shared.kubeconfig, nil
}

// Release forgets the runtime's cluster and, in dedicated mode, stops it. It is
// a no-op for a runtime without a cluster in this process.
func (p *clusterPool) Release(runtimeID string) error {
	p.mu.Lock()
	c := p.owned[runtimeID]
	delete(p.owned, runtimeID)
	p.mu.Unlock()
	if c == nil || p.mode == ModeShared {
		return nil // the shared cluster lives until the Simulator stops
	}
	if err := c.stop(); err != nil {
		return fmt.Errorf("stopping the cluster of runtime %s: %w", runtimeID, err)
	}
	p.log.WithField("runtime_id", runtimeID).Info("runtime cluster stopped")
	return nil
}

// stopAll stops every cluster and refuses new ones.
func (p *clusterPool) stopAll() error {
	p.mu.Lock()
	p.closed = true
	running := map[*cluster]struct{}{}
	for _, c := range p.owned {
		running[c] = struct{}{}
	}
	if p.shared != nil {
		running[p.shared] = struct{}{}
	}
	p.owned = map[string]*cluster{}
	p.mu.Unlock()

	var errs []error
	for c := range running {
		if err := c.stop(); err != nil {
			errs = append(errs, err)
		}
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("stopping runtime clusters: %w", err)
	}
	return nil
}

// start starts a kube-apiserver and etcd with the runtime CRDs installed and
// returns it with an admin kubeconfig that works from this machine.
func (p *clusterPool) start(ctx context.Context, log logrus.FieldLogger) (*cluster, error) {
	select {
	case p.starts <- struct{}{}:
	case <-ctx.Done():
		return nil, fmt.Errorf("waiting for a free cluster start slot: %w", ctx.Err())
	}
	defer func() { <-p.starts }()

	begin := time.Now()
	crds := make([]*apiextensionsv1.CustomResourceDefinition, len(p.crds))
	for i, crd := range p.crds {
		// envtest writes server fields (resourceVersion, uid) into the objects
		// it creates; every cluster needs pristine copies.
		crds[i] = crd.DeepCopy()
	}
	env := &envtest.Environment{
		// Explicit paths, so Options.BinDir wins over a KUBEBUILDER_ASSETS that
		// envtest would otherwise prefer.
		ControlPlane: envtest.ControlPlane{
			APIServer: &envtest.APIServer{Path: filepath.Join(p.binDir, "kube-apiserver")},
			Etcd:      &envtest.Etcd{Path: filepath.Join(p.binDir, "etcd")},
		},
		CRDs:                     crds,
		ControlPlaneStartTimeout: time.Minute,
		ControlPlaneStopTimeout:  time.Minute,
	}
	if _, err := env.Start(); err != nil {
		if stopErr := env.Stop(); stopErr != nil {
			log.WithError(stopErr).Warn("cleaning up after a failed cluster start")
		}
		return nil, fmt.Errorf("starting a runtime cluster: %w", err)
	}
	c := &cluster{env: env}
	user, err := env.AddUser(adminUser, nil)
	if err == nil {
		c.kubeconfig, err = user.KubeConfig()
	}
	if err != nil {
		if stopErr := c.stop(); stopErr != nil {
			log.WithError(stopErr).Warn("stopping a cluster without a kubeconfig")
		}
		return nil, fmt.Errorf("writing a kubeconfig for the runtime cluster: %w", err)
	}
	p.started.Add(1)
	log.WithField("took", time.Since(begin).Round(time.Millisecond).String()).Info("runtime cluster started")
	return c, nil
}
