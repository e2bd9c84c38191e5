package devstack

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/kyma-keb/keb/internal/hyperscaler"
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

// seed creates what a fresh control plane needs to provision: its
// namespaces, a dev account pool with dedicated accounts per hyperscaler and
// a shared one each, and sample overrides. Existing objects are left alone.
func seed(ctx context.Context, c client.Client, namespace, poolNamespace string) error {
	objs := []client.Object{
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: namespace}},
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: poolNamespace}},
		&corev1.ConfigMap{
			ObjectMeta: metav1.ObjectMeta{Name: "global-overrides", Namespace: namespace,
				Labels: map[string]string{"provisioning-runtime-override": "true"}},
			Data: map[string]string{"global.disableLegacyConnectivity": "true"},
		},
		&corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Name: "core-overrides", Namespace: namespace,
				Labels: map[string]string{"provisioning-runtime-override": "true", "component": "core"}},
			StringData: map[string]string{"database.password": "dev-only-password"},
		},
	}
	for _, hs := range []string{"azure", "aws", "gcp", "openstack"} {
		for i := 1; i <= 5; i++ {
			objs = append(objs, poolSecret(poolNamespace, fmt.Sprintf("%s-dev-%02d", hs, i), hs, false))
		}
		objs = append(objs, poolSecret(poolNamespace, hs+"-shared-01", hs, true))
	}
	for _, o := range objs {
		if err := c.Create(ctx, o); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("seeding %s %s: %w", o.GetObjectKind().GroupVersionKind().Kind, o.GetName(), err)
		}
	}
	return nil
}

func poolSecret(namespace, name, hsType string, shared bool) *corev1.Secret {
	labels := map[string]string{hyperscaler.LabelHyperscalerType: hsType}
	if shared {
		labels[hyperscaler.LabelShared] = "true"
	}
	return &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace, Labels: labels},
		StringData: map[string]string{"credentials": "dev-only: not a real " + hsType + " account"},
	}
}
