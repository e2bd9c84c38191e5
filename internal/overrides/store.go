package overrides

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kyma-keb/keb/internal/controlplane"
	"github.com/kyma-keb/keb/internal/kube"
)

// globalPrefix prefixes the keys of global overrides in the stored Secret.
const globalPrefix = "global"

// The stored Secret's keys of the runtime's Kyma version and its component
// list (comma-separated, in installation order). Their prefix starts with
// "_", which no component's label value can (label values begin with a
// letter or digit), so they never meet an override's key.
const (
	KeyKymaVersion    = kymaPrefix + ".version"
	KeyKymaComponents = kymaPrefix + ".components"
	kymaPrefix        = "_kyma"
)

// checkComponent rejects component names the stored Secret's "<component>.<key>" keys could not
// tell apart from global overrides or from another component.
func checkComponent(component string) error {
	if component == "" || component == globalPrefix || strings.Contains(component, ".") {
		return fmt.Errorf("component name %q is not allowed: it is empty, %q or contains a dot", component, globalPrefix)
	}
	return nil
}

// SecretName is the control-plane Secret holding a runtime's resolved
// overrides. It is derived from the runtime ID alone, so a deprovisioning
// finds it even when a halted provisioning never recorded it.
func SecretName(runtimeID string) string { return "overrides-" + runtimeID }

// Store writes o into the Secret name in namespace, with the given labels added to any it has,
// so that secret-sourced values never land in plain text in the database. Keys are
// "global.<key>" for global overrides and "<component>.<key>" for a component's; the Secret's data
// is replaced as a whole, dropping overrides resolved earlier but gone now. It creates or updates
// the Secret and writes nothing when it already holds exactly this, so running a step twice
// is harmless.
func Store(ctx context.Context, c client.Client, namespace, name string, labels map[string]string, o Overrides) error {
	data, err := encode(o)
	if err != nil {
		return fmt.Errorf("storing overrides in secret %s/%s: %w", namespace, name, err)
	}
	// Conflict: a concurrent writer updated it; AlreadyExists: one created it after our read.
	// Either way, read again and re-apply.
	retriable := func(err error) bool { return apierrors.IsConflict(err) || apierrors.IsAlreadyExists(err) }
	err = retry.OnError(retry.DefaultRetry, retriable, func() error {
		s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name}}
		_, err := kube.CreateOrUpdate(ctx, c, s, func() error {
			if s.ResourceVersion == "" {
				// A Secret's type is immutable: set it only on create.
				s.Type = corev1.SecretTypeOpaque
			}
			if len(labels) > 0 && s.Labels == nil {
				s.Labels = map[string]string{}
			}
			maps.Copy(s.Labels, labels)
			// A copy: decoding the server's answer into s may write into this map.
			fresh := maps.Clone(data)
			keepIntegrations(s, fresh)
			s.Data = fresh
			return nil
		})
		return err
	})
	if err != nil {
		return fmt.Errorf("storing overrides in secret %s/%s: %w", namespace, name, err)
	}
	return nil
}

// Load reads back overrides written by Store. A missing Secret is an error for which
// apierrors.IsNotFound holds.
func Load(ctx context.Context, r client.Reader, namespace, name string) (Overrides, error) {
	s := &corev1.Secret{}
	if err := r.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, s); err != nil {
		return Overrides{}, fmt.Errorf("loading overrides from secret %s/%s: %w", namespace, name, err)
	}
	o := Overrides{Global: map[string]string{}, Components: map[string]map[string]string{}}
	for k, v := range s.Data {
		prefix, key, ok := strings.Cut(k, ".")
		if !ok {
			return Overrides{}, fmt.Errorf("loading overrides from secret %s/%s: key %q has no <component>. or global. prefix", namespace, name, k)
		}
		switch prefix {
		case globalPrefix:
			o.Global[key] = string(v)
			continue
		case kymaPrefix:
			switch k {
			case KeyKymaVersion:
				o.Kyma.Version = string(v)
			case KeyKymaComponents:
				o.Kyma.Components = strings.Split(string(v), ",")
			}
			continue
		}
		if o.Components[prefix] == nil {
			o.Components[prefix] = map[string]string{}
		}
		o.Components[prefix][key] = string(v)
	}
	return o, nil
}

// encode flattens o into the stored Secret's data.
func encode(o Overrides) (map[string][]byte, error) {
	data := make(map[string][]byte, len(o.Global)+2)
	if o.Kyma.Version != "" {
		data[KeyKymaVersion] = []byte(o.Kyma.Version)
		data[KeyKymaComponents] = []byte(strings.Join(o.Kyma.Components, ","))
	}
	for k, v := range o.Global {
		data[globalPrefix+"."+k] = []byte(v)
	}
	for component, values := range o.Components {
		if err := checkComponent(component); err != nil {
			return nil, err
		}
		for k, v := range values {
			data[component+"."+k] = []byte(v)
		}
	}
	return data, nil
}

// ForRuntime resolves the overrides for a runtime (lite: of a lite plan),
// reading them from sources (c itself, or the watch NewSources returns), and,
// when write is set, stores them with the runtime's Kyma version and
// components in the runtime's overrides Secret, labelled with its runtime and
// instance. It returns the Secret's name. A provisioning writes it; an update
// that changes the component list and an upgrade refresh it, and an upgrade's
// dry run only resolves, so that a broken override still shows.
func ForRuntime(ctx context.Context, c client.Client, sources client.Reader, namespace string, lite bool, runtimeID, instanceID string, kyma Kyma, write bool) (string, error) {
	ov, err := Resolve(ctx, sources, namespace, lite)
	if err != nil {
		return "", fmt.Errorf("resolving overrides: %w", err)
	}
	ov.Kyma = kyma
	name := SecretName(runtimeID)
	if !write {
		return name, nil
	}
	labels := map[string]string{controlplane.LabelRuntimeID: runtimeID, controlplane.LabelInstanceID: instanceID}
	if err := Store(ctx, c, namespace, name, labels, ov); err != nil {
		return "", fmt.Errorf("storing overrides: %w", err)
	}
	return name, nil
}

// keepIntegrations carries into fresh the keys of the stored Secret s that
// SetComponent wrote (its annotations list them) and fresh lacks.
func keepIntegrations(s *corev1.Secret, fresh map[string][]byte) {
	for a, list := range s.Annotations {
		component, ok := strings.CutPrefix(a, integrationAnnotation)
		if !ok {
			continue
		}
		for _, k := range strings.Split(list, ",") {
			key := component + "." + k
			if v, stored := s.Data[key]; stored {
				if _, set := fresh[key]; !set {
					fresh[key] = v
				}
			}
		}
	}
}

// SetKyma writes a runtime's Kyma version and components into its stored
// overrides Secret, leaving the overrides as they are (a merge patch of
// those two keys). A missing Secret is left missing: a runtime provisioned
// before the Secret carried them gets them at its next upgrade.
func SetKyma(ctx context.Context, c client.Client, namespace, name string, kyma Kyma) error {
	s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name}}
	patch, err := json.Marshal(map[string]any{"data": map[string][]byte{
		KeyKymaVersion: []byte(kyma.Version), KeyKymaComponents: []byte(strings.Join(kyma.Components, ","))}})
	if err != nil {
		return fmt.Errorf("encoding the Kyma keys of secret %s/%s: %w", namespace, name, err)
	}
	if err := client.IgnoreNotFound(c.Patch(ctx, s, client.RawPatch(types.MergePatchType, patch))); err != nil {
		return fmt.Errorf("writing the Kyma keys of secret %s/%s: %w", namespace, name, err)
	}
	return nil
}

// integrationAnnotation prefixes the annotation, one per component, that
// lists (comma-separated) the component's keys an integration wrote with
// SetComponent.
const integrationAnnotation = "keb.kyma-project.io/integration-overrides."

// SetComponent writes values into component's overrides in the stored
// Secret name, leaving the rest as it is (a merge patch of those keys):
// overrides an integration makes (IAS's Grafana client, LMS's Fluent Bit
// certificate) rather than the labelled sources. Their keys are listed in
// an annotation of the Secret, so that Store, which an upgrade or an
// update uses to rewrite the Secret from the sources, keeps them: the
// integration's step does not run again there. The Secret must exist.
func SetComponent(ctx context.Context, c client.Client, namespace, name, component string, values map[string]string) error {
	if err := checkComponent(component); err != nil {
		return err
	}
	data := make(map[string][]byte, len(values))
	keys := make([]string, 0, len(values))
	for k, v := range values {
		data[component+"."+k] = []byte(v)
		keys = append(keys, k)
	}
	slices.Sort(keys)
	patch, err := json.Marshal(map[string]any{"data": data,
		"metadata": map[string]any{"annotations": map[string]string{integrationAnnotation + component: strings.Join(keys, ",")}}})
	if err != nil {
		return fmt.Errorf("encoding %s overrides of secret %s/%s: %w", component, namespace, name, err)
	}
	s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name}}
	if err := c.Patch(ctx, s, client.RawPatch(types.MergePatchType, patch)); err != nil {
		return fmt.Errorf("writing %s overrides into secret %s/%s: %w", component, namespace, name, err)
	}
	return nil
}
