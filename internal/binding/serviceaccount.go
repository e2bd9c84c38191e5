package binding

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kyma-keb/keb/internal/btpmanager"
	"github.com/kyma-keb/keb/internal/controlplane"
	"github.com/kyma-keb/keb/internal/runtimeclient"
	"github.com/kyma-keb/keb/internal/storage"
)

// Namespace holds bindings' ServiceAccounts in the runtime; keb creates it
// when missing (the final provisioning step does too).
const Namespace = "kyma-system"

// LabelBindingID carries the binding ID on a binding's ServiceAccount and
// ClusterRoleBinding (next to keb's managed-by label and the instance ID),
// so operators can tell them apart in the runtime.
const LabelBindingID = "kyma-project.io/binding-id"

// minTokenLifetime is the shortest token the TokenRequest API issues. A
// binding may be configured to live shorter (tests): removing its
// ServiceAccount then ends the token early.
const minTokenLifetime = 10 * time.Minute

// serviceAccountName names a bind's ServiceAccount and ClusterRoleBinding:
// one per bind attempt (binding and operation ID), so a PUT replacing an
// expired binding never meets the old one's objects, and a DNS label
// whatever characters the binding ID holds.
func serviceAccountName(bindingID, operationID string) string {
	sum := sha256.Sum256([]byte(bindingID + "/" + operationID))
	return "keb-binding-" + hex.EncodeToString(sum[:8])
}

// create makes the binding's ServiceAccount, its ClusterRoleBinding and a
// token in the runtime and renders the kubeconfig. Each write tolerates
// that it happened before (a retried bind).
func (s *Service) create(ctx context.Context, b storage.Binding, exp time.Duration) (Credentials, error) {
	cl, err := s.runtimes.Client(ctx, b.RuntimeID)
	if err != nil {
		return Credentials{}, err
	}
	ep, err := s.runtimes.Endpoint(ctx, b.RuntimeID)
	if err != nil {
		return Credentials{}, err
	}
	labels := map[string]string{btpmanager.LabelManagedBy: btpmanager.ManagedByKEB, LabelBindingID: b.BindingID,
		controlplane.LabelInstanceID: b.InstanceID}
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: Namespace}}
	if err := cl.Create(ctx, ns); err != nil && !apierrors.IsAlreadyExists(err) {
		return Credentials{}, fmt.Errorf("creating namespace %s: %w", Namespace, err)
	}
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: b.ServiceAccount, Namespace: Namespace, Labels: labels}}
	if err := cl.Create(ctx, sa); err != nil && !apierrors.IsAlreadyExists(err) {
		return Credentials{}, fmt.Errorf("creating service account %s/%s: %w", Namespace, b.ServiceAccount, err)
	}
	crb := &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: b.ServiceAccount, Labels: labels},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: s.cfg.Role},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: b.ServiceAccount, Namespace: Namespace}},
	}
	if err := cl.Create(ctx, crb); err != nil && !apierrors.IsAlreadyExists(err) {
		return Credentials{}, fmt.Errorf("creating cluster role binding %s: %w", b.ServiceAccount, err)
	}
	seconds := int64(max(exp, minTokenLifetime) / time.Second)
	tr := &authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: &seconds}}
	if err := cl.SubResource("token").Create(ctx, sa, tr); err != nil {
		return Credentials{}, fmt.Errorf("requesting a token for service account %s/%s: %w", Namespace, b.ServiceAccount, err)
	}
	if tr.Status.Token == "" {
		return Credentials{}, errors.New("the TokenRequest answer holds no token")
	}
	expiresAt := s.Now().Add(exp)
	if t := tr.Status.ExpirationTimestamp.Time; !t.IsZero() && t.Before(expiresAt) {
		// The API server may cap token lifetimes below what was asked.
		expiresAt = t
	}
	kubeconfig, err := renderKubeconfig(ep, b, tr.Status.Token)
	if err != nil {
		return Credentials{}, err
	}
	return Credentials{Kubeconfig: string(kubeconfig), ExpiresAt: expiresAt.UTC().Truncate(time.Second)}, nil
}

// renderKubeconfig is a kubeconfig for the runtime's API server (server and
// CA from the runtime's own kubeconfig) with the ServiceAccount's token.
func renderKubeconfig(ep runtimeclient.Endpoint, b storage.Binding, token string) ([]byte, error) {
	cluster := "runtime-" + b.RuntimeID
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters[cluster] = &clientcmdapi.Cluster{Server: ep.Server, CertificateAuthorityData: ep.CAData, TLSServerName: ep.TLSServerName}
	cfg.AuthInfos[b.ServiceAccount] = &clientcmdapi.AuthInfo{Token: token}
	cfg.Contexts[cluster] = &clientcmdapi.Context{Cluster: cluster, AuthInfo: b.ServiceAccount}
	cfg.CurrentContext = cluster
	out, err := clientcmd.Write(*cfg)
	if err != nil {
		return nil, fmt.Errorf("rendering the kubeconfig: %w", err)
	}
	return out, nil
}

// removeFromRuntime deletes a binding's ClusterRoleBinding and
// ServiceAccount; with the ServiceAccount its tokens stop working. A runtime
// without a kubeconfig (gone, or never ready) has nothing to remove.
func (s *Service) removeFromRuntime(ctx context.Context, b storage.Binding) error {
	if b.RuntimeID == "" {
		return nil
	}
	cl, err := s.runtimes.Client(ctx, b.RuntimeID)
	if errors.Is(err, runtimeclient.ErrKubeconfigNotFound) {
		return nil
	}
	if err != nil {
		return err
	}
	crb := &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: b.ServiceAccount}}
	if err := cl.Delete(ctx, crb); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("deleting cluster role binding %s: %w", b.ServiceAccount, err)
	}
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: b.ServiceAccount, Namespace: Namespace}}
	if err := cl.Delete(ctx, sa, client.PropagationPolicy(metav1.DeletePropagationBackground)); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("deleting service account %s/%s: %w", Namespace, b.ServiceAccount, err)
	}
	return nil
}
