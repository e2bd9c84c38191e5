package btpmanager

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"maps"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Namespace is where BTP Manager looks for its Secret and where keb creates the BtpOperator CR.
const Namespace = "kyma-system"

// SecretName is the Secret BTP Manager reads the Service Manager credentials from.
const SecretName = "sap-btp-manager"

// Data keys of the Secret. BTP Manager requires all five, non-empty (else InvalidSecret).
const (
	KeyClientID     = "clientid"
	KeyClientSecret = "clientsecret"
	KeySMURL        = "sm_url"
	KeyTokenURL     = "tokenurl"
	KeyClusterID    = "cluster_id"
)

// Labels of the Secret. BTP Manager only sees a Secret managed by KEB; a Secret labelled
// LabelSkipReconciliation: "true" belongs to someone who took it over, and keb leaves it alone.
const (
	LabelManagedBy          = "app.kubernetes.io/managed-by"
	LabelWatchedBy          = "app.kubernetes.io/watched-by"
	ManagedByKEB            = "kcp-kyma-environment-broker"
	LabelSkipReconciliation = "kyma-project.io/skip-reconciliation"
)

// ErrIncompleteCredentials (wrapped) means a credential or the cluster ID is empty: BTP Manager
// would reject the Secret, so nothing is written. Retrying with the same input cannot help.
var ErrIncompleteCredentials = errors.New("incomplete BTP Manager credentials")

// Credentials are the Service Manager credentials of the instance's context
// (sm_operator_credentials). TokenURL is the credentials' `url`.
type Credentials struct {
	ClientID, ClientSecret, SMURL, TokenURL string
}

// String hides the secret so that logging Credentials by accident leaks nothing.
func (c Credentials) String() string {
	return fmt.Sprintf("{ClientID:%s ClientSecret:<redacted> SMURL:%s TokenURL:%s}", c.ClientID, c.SMURL, c.TokenURL)
}

// GoString hides the secret from %#v too.
func (c Credentials) GoString() string { return "btpmanager.Credentials" + c.String() }

// secretData returns the Secret's data, exactly the five keys, or ErrIncompleteCredentials naming
// the empty ones.
func secretData(creds Credentials, clusterID string) (map[string][]byte, error) {
	data := credentialData(creds)
	data[KeyClusterID] = []byte(clusterID)
	if err := checkComplete(data); err != nil {
		return nil, err
	}
	return data, nil
}

// credentialData is the Secret's data without cluster_id.
func credentialData(creds Credentials) map[string][]byte {
	return map[string][]byte{
		KeyClientID:     []byte(creds.ClientID),
		KeyClientSecret: []byte(creds.ClientSecret),
		KeySMURL:        []byte(creds.SMURL),
		KeyTokenURL:     []byte(creds.TokenURL),
	}
}

// checkComplete returns ErrIncompleteCredentials naming the empty keys, in the Secret's key order.
func checkComplete(data map[string][]byte) error {
	var empty []string
	for _, k := range []string{KeyClientID, KeyClientSecret, KeySMURL, KeyTokenURL, KeyClusterID} {
		if v, ok := data[k]; ok && len(v) == 0 {
			empty = append(empty, k)
		}
	}
	if len(empty) > 0 {
		return fmt.Errorf("%w: empty %s", ErrIncompleteCredentials, strings.Join(empty, ", "))
	}
	return nil
}

// applySecret creates the Secret, or brings an existing one to data and the labels.
func applySecret(ctx context.Context, c client.Client, data map[string][]byte) error {
	key := client.ObjectKey{Namespace: Namespace, Name: SecretName}
	// Two rounds: if someone creates the Secret between our Get and Create, update theirs.
	for range 2 {
		var s corev1.Secret
		err := c.Get(ctx, key, &s)
		switch {
		case apierrors.IsNotFound(err):
			err = c.Create(ctx, newSecret(data))
			if apierrors.IsAlreadyExists(err) {
				continue
			}
			if err != nil {
				return fmt.Errorf("creating Secret %s: %w", key, err)
			}
			return nil
		case err != nil:
			return fmt.Errorf("reading Secret %s: %w", key, err)
		}
		return updateSecret(ctx, c, &s, data)
	}
	return fmt.Errorf("creating Secret %s: %w", key, apierrors.NewConflict(corev1.Resource("secrets"), SecretName, errors.New("created and deleted concurrently")))
}

func newSecret(data map[string][]byte) *corev1.Secret {
	return &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{
			Namespace: Namespace,
			Name:      SecretName,
			Labels:    map[string]string{LabelManagedBy: ManagedByKEB, LabelWatchedBy: ManagedByKEB},
		},
		Type: corev1.SecretTypeOpaque,
		Data: data,
	}
}

// updateSecret writes data and the labels into s unless s is taken over (skip-reconciliation) or
// already right: an unchanged Secret is not written, so BTP Manager sees no spurious change.
// The type is left as it is, since the API server refuses to change it; a Secret keb created is Opaque.
func updateSecret(ctx context.Context, c client.Client, s *corev1.Secret, data map[string][]byte) error {
	if s.Labels[LabelSkipReconciliation] == "true" {
		return nil
	}
	if s.Labels[LabelManagedBy] == ManagedByKEB && s.Labels[LabelWatchedBy] == ManagedByKEB &&
		maps.EqualFunc(s.Data, data, bytes.Equal) {
		return nil
	}
	if s.Labels == nil {
		s.Labels = map[string]string{}
	}
	s.Labels[LabelManagedBy] = ManagedByKEB
	s.Labels[LabelWatchedBy] = ManagedByKEB
	s.Data = data
	s.StringData = nil
	// Update carries the resourceVersion we read: a concurrent change gives a Conflict (temporary)
	// instead of being overwritten blindly.
	if err := c.Update(ctx, s); err != nil {
		return fmt.Errorf("updating Secret %s/%s: %w", s.Namespace, s.Name, err)
	}
	return nil
}

// UpdateCredentials rewrites the Secret's credential keys, keeping its cluster_id (credential
// rotation). The Secret must exist with a cluster_id, as Inject leaves it; a Secret labelled
// skip-reconciliation is left untouched. Writing equal credentials changes nothing.
func UpdateCredentials(ctx context.Context, c client.Client, creds Credentials) error {
	// Checked before reading so that bad input fails the same way whatever the cluster holds;
	// cluster_id is left out here, it comes from the Secret.
	if err := checkComplete(credentialData(creds)); err != nil {
		return err
	}
	key := client.ObjectKey{Namespace: Namespace, Name: SecretName}
	var s corev1.Secret
	if err := c.Get(ctx, key, &s); err != nil {
		return fmt.Errorf("reading Secret %s to rotate credentials: %w", key, err)
	}
	if s.Labels[LabelSkipReconciliation] == "true" {
		return nil
	}
	clusterID := string(s.Data[KeyClusterID])
	if clusterID == "" {
		return fmt.Errorf("rotating credentials in Secret %s: it has no %s to keep (inject first)", key, KeyClusterID)
	}
	data, err := secretData(creds, clusterID)
	if err != nil {
		return err
	}
	return updateSecret(ctx, c, &s, data)
}
