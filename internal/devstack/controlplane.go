package devstack

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"golang.org/x/sync/errgroup"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/kyma-keb/keb/internal/hyperscaler"
	"github.com/kyma-keb/keb/internal/seeds"
	"github.com/kyma-keb/keb/resources"
)

// controlPlane is the local stand-in for the Kyma control plane (KCP): a real
// kube-apiserver with keb's CRDs, whose etcd keeps its data under the dev
// directory so that runtimes outlive a restart of `keb dev`.
type controlPlane struct {
	env        *envtest.Environment
	config     *rest.Config
	kubeconfig string
}

// startControlPlane starts the apiserver from the binaries in binDir and
// writes its kubeconfig to <dir>/kcp.kubeconfig.
func startControlPlane(ctx context.Context, dir, binDir string) (*controlPlane, error) {
	for _, bin := range []string{"kube-apiserver", "etcd"} {
		if _, err := os.Stat(filepath.Join(binDir, bin)); err != nil {
			return nil, fmt.Errorf("%s not found in %s: build it with `make k8s-bins` (`make run` does; the first build takes minutes)", bin, binDir)
		}
	}
	crds, err := resources.LoadCRDs()
	if err != nil {
		return nil, err
	}
	etcdDir, err := filepath.Abs(filepath.Join(dir, "kcp-etcd"))
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(etcdDir, 0o700); err != nil {
		return nil, fmt.Errorf("creating control-plane data directory: %w", err)
	}
	env := &envtest.Environment{
		BinaryAssetsDirectory:    binDir,
		CRDs:                     crds,
		ControlPlaneStartTimeout: 2 * time.Minute,
		ControlPlaneStopTimeout:  time.Minute,
	}
	env.ControlPlane.Etcd = &envtest.Etcd{DataDir: etcdDir}
	// envtest's Start takes no context and waits up to its timeout: a
	// SIGTERM must not wait for it. Given up on, the half-started
	// processes are stopped once it returns (or by procguard, with us).
	started := make(chan error, 1)
	go func() {
		_, err := env.Start()
		started <- err
	}()
	select {
	case err := <-started:
		if err != nil {
			return nil, fmt.Errorf("starting the control plane (etcd data in %s): %w", etcdDir, err)
		}
	case <-ctx.Done():
		go func() {
			if <-started == nil {
				_ = env.Stop()
			}
		}()
		return nil, fmt.Errorf("starting the control plane: %w", ctx.Err())
	}
	user, err := env.AddUser(envtest.User{Name: "keb-dev", Groups: []string{"system:masters"}}, nil)
	if err == nil {
		var kc []byte
		if kc, err = user.KubeConfig(); err == nil {
			path := filepath.Join(dir, "kcp.kubeconfig")
			if err = os.WriteFile(path, kc, 0o600); err == nil {
				abs, _ := filepath.Abs(path)
				return &controlPlane{env: env, config: user.Config(), kubeconfig: abs}, nil
			}
		}
	}
	_ = env.Stop()
	return nil, fmt.Errorf("writing the control-plane kubeconfig: %w", err)
}

func (c *controlPlane) stop() error { return c.env.Stop() }

// controlPlaneStart is a control plane starting in the background.
type controlPlaneStart struct {
	cancel context.CancelFunc
	done   chan struct{}
	cp     *controlPlane
	err    error
}

// startControlPlaneInBackground starts startControlPlane in a goroutine, so that keb dev starts PostgreSQL
// meanwhile.
func startControlPlaneInBackground(ctx context.Context, dir, binDir string) *controlPlaneStart {
	ctx, cancel := context.WithCancel(ctx)
	s := &controlPlaneStart{cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(s.done)
		s.cp, s.err = startControlPlane(ctx, dir, binDir)
	}()
	return s
}

// wait returns the started control plane, or why it did not start.
func (s *controlPlaneStart) wait() (*controlPlane, error) {
	<-s.done
	return s.cp, s.err
}

// stop stops the control plane; one still starting is given up on (startControlPlane then stops what it
// started once envtest returns).
func (s *controlPlaneStart) stop() error {
	s.cancel()
	<-s.done
	if s.cp == nil {
		return nil
	}
	return s.cp.stop()
}

// The dev pool's size: every README walkthrough section run in order against
// one `make run` claims at most about a dozen dedicated accounts of one
// hyperscaler (one per global account), and the simulated account cleaner
// returns released ones after --account-cleanup-delay (5 min); the rest is headroom
// for one's own tries, so a provisioning does not wait for an account.
const (
	devAccountsPerHyperscaler   = 20
	devEUAccountsPerHyperscaler = 5
)

// seed creates what a fresh control plane needs to provision: its namespaces, a dev account pool
// of kind (CredentialsBindings with a Secret behind each, unless configured otherwise) with
// dedicated accounts per hyperscaler and a shared one each, EU-access accounts for the EU
// platform regions and the KSA pool (gcp_cf-sa30) that keb's default HAP rules draw from, and
// sample overrides, and upstream's sample of the seed regions. Existing objects are left alone.
func seed(ctx context.Context, c client.Client, kind hyperscaler.Kind, namespace, poolNamespace string) error {
	objs := []client.Object{
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: namespace}},
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: poolNamespace}},
		&corev1.ConfigMap{
			ObjectMeta: metav1.ObjectMeta{Name: "global-overrides", Namespace: namespace,
				Labels: map[string]string{"provisioning-runtime-override": "true"}},
			Data: map[string]string{"global.disableLegacyConnectivity": "true"},
		},
		// Where Gardener has seeds (colocateControlPlane): upstream KEB's sample for local
		// installs (resources/installation/templates/gardener-seeds-cache.yaml); a landscape's
		// own is maintained outside the broker.
		&corev1.ConfigMap{
			ObjectMeta: metav1.ObjectMeta{Name: seeds.DefaultConfigMap, Namespace: namespace},
			Data: map[string]string{
				"aws":       "seedRegions:\n- eu-west-1\n- eu-central-1\n- us-east-1\n",
				"azure":     "seedRegions:\n- westeurope\n- northeurope\n- westus2\n- eastus\n- eastus2\n",
				"gcp":       "seedRegions:\n- europe-west1\n- us-central1\n",
				"openstack": "seedRegions:\n- eu-de-1\n",
				"alicloud":  "seedRegions:\n- eu-central-1\n",
				"gdch":      "seedRegions:\n- us-west16\n",
			},
		},
		&corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Name: "core-overrides", Namespace: namespace,
				Labels: map[string]string{"provisioning-runtime-override": "true", "component": "core"}},
			StringData: map[string]string{"database.password": "dev-only-password"},
		},
	}
	account := func(name, hsType string, kv ...string) {
		labels := map[string]string{hyperscaler.LabelHyperscalerTypeUpstream: hsType}
		for i := 0; i+1 < len(kv); i += 2 {
			labels[kv[i]] = kv[i+1]
		}
		objs = append(objs, hyperscaler.AccountObjects(kind, poolNamespace, name, hyperscaler.ProviderOf(hsType), labels,
			map[string]string{"credentials": "dev-only: not a real " + hsType + " account"})...)
	}
	for _, hs := range []string{"azure", "aws", "gcp", "openstack"} {
		for i := 1; i <= devAccountsPerHyperscaler; i++ {
			account(fmt.Sprintf("%s-dev-%02d", hs, i), hs)
		}
		account(hs+"-shared-01", hs, hyperscaler.LabelShared, "true")
	}
	// The alicloud, build-runtime-alicloud and gdch plans (not enabled out of the box) draw
	// from dedicated accounts only.
	for _, hs := range []string{"alicloud", "gdch"} {
		for i := 1; i <= devAccountsPerHyperscaler; i++ {
			account(fmt.Sprintf("%s-dev-%02d", hs, i), hs)
		}
	}
	for _, hs := range []string{"aws", "azure", "openstack"} {
		for i := 1; i <= devEUAccountsPerHyperscaler; i++ {
			account(fmt.Sprintf("%s-eu-%02d", hs, i), hs, hyperscaler.LabelEUAccess, "true")
		}
	}
	for _, hs := range []string{"aws", "azure", "openstack"} {
		account(hs+"-eu-shared-01", hs, hyperscaler.LabelEUAccess, "true", hyperscaler.LabelShared, "true")
	}
	for i := 1; i <= 2; i++ {
		account(fmt.Sprintf("gcp-sa30-%02d", i), "gcp_cf-sa30")
	}
	create := func(o client.Object) error {
		if err := c.Create(ctx, o); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("seeding %T %s: %w", o, o.GetName(), err)
		}
		return nil
	}
	// The namespaces first, then the rest (about 300 objects) several at a time: one after another they took
	// seconds of keb dev's start, waiting on the apiserver's answers.
	const namespaces = 2
	for _, o := range objs[:namespaces] {
		if err := create(o); err != nil {
			return err
		}
	}
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(8)
	for _, o := range objs[namespaces:] {
		g.Go(func() error {
			if gctx.Err() != nil {
				return gctx.Err()
			}
			return create(o)
		})
	}
	return g.Wait()
}
