// Package overrides resolves the runtime overrides operators keep as labelled ConfigMaps and
// Secrets in the control plane, and stores a runtime's resolved overrides in a Secret.
package overrides

import (
	"cmp"
	"context"
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Label keys on override ConfigMaps and Secrets, set by operators: never rename them.
const (
	// LabelOverride set to "true" makes a ConfigMap or Secret a source of overrides.
	LabelOverride = "provisioning-runtime-override"
	// LabelComponent names the component the overrides are for; without it they are global.
	LabelComponent = "component"
	// LabelDefaultForLite set to "true" keeps the overrides away from lite plans.
	LabelDefaultForLite = "default-for-lite"
)

// labelTrue is the value that switches LabelOverride and LabelDefaultForLite on.
const labelTrue = "true"

// Overrides are a runtime's resolved overrides, all values as strings.
type Overrides struct {
	// Global applies to every component.
	Global map[string]string
	// Components holds each component's own overrides, by component name.
	Components map[string]map[string]string
	// Kyma is what the overrides are installed with: set by ForRuntime, not
	// resolved from the sources.
	Kyma Kyma
}

// Kyma is a runtime's Kyma version and component list (installation order),
// which the stored Secret carries under KeyKymaVersion and KeyKymaComponents
// for installers to read.
type Kyma struct {
	Version    string
	Components []string
}

// source is one labelled ConfigMap or Secret, reduced to what the merge needs.
type source struct {
	kind, name, component string
	data                  map[string]string
}

// Resolve reads the override ConfigMaps and Secrets in namespace (those labelled
// provisioning-runtime-override: "true") and merges them. For lite plans it skips those labelled
// default-for-lite: "true". Sources are merged in name order (a ConfigMap before a Secret of the
// same name), a later source winning on a key it repeats, so the result does not depend on the
// API server's listing order. Secret values come decoded. r should be an uncached reader unless
// the caller's cache watches ConfigMaps and Secrets in namespace.
func Resolve(ctx context.Context, r client.Reader, namespace string, lite bool) (Overrides, error) {
	selector := client.MatchingLabels{LabelOverride: labelTrue}
	configMaps := &corev1.ConfigMapList{}
	if err := r.List(ctx, configMaps, client.InNamespace(namespace), selector); err != nil {
		return Overrides{}, fmt.Errorf("listing override config maps in %s: %w", namespace, err)
	}
	secrets := &corev1.SecretList{}
	if err := r.List(ctx, secrets, client.InNamespace(namespace), selector); err != nil {
		return Overrides{}, fmt.Errorf("listing override secrets in %s: %w", namespace, err)
	}

	var sources []source
	for _, cm := range configMaps.Items {
		if lite && cm.Labels[LabelDefaultForLite] == labelTrue {
			continue
		}
		data := make(map[string]string, len(cm.Data)+len(cm.BinaryData))
		for k, v := range cm.BinaryData {
			data[k] = string(v)
		}
		for k, v := range cm.Data {
			data[k] = v
		}
		sources = append(sources, source{kind: "ConfigMap", name: cm.Name, component: cm.Labels[LabelComponent], data: data})
	}
	for _, s := range secrets.Items {
		if lite && s.Labels[LabelDefaultForLite] == labelTrue {
			continue
		}
		data := make(map[string]string, len(s.Data))
		for k, v := range s.Data {
			data[k] = string(v)
		}
		sources = append(sources, source{kind: "Secret", name: s.Name, component: s.Labels[LabelComponent], data: data})
	}
	// "ConfigMap" < "Secret": on a shared name the Secret is merged last and wins.
	slices.SortFunc(sources, func(a, b source) int { return cmp.Or(cmp.Compare(a.name, b.name), cmp.Compare(a.kind, b.kind)) })

	o := Overrides{Global: map[string]string{}, Components: map[string]map[string]string{}}
	for _, src := range sources {
		target := o.Global
		if src.component != "" {
			if err := checkComponent(src.component); err != nil {
				return Overrides{}, fmt.Errorf("override %s %s/%s: %w", src.kind, namespace, src.name, err)
			}
			if o.Components[src.component] == nil {
				o.Components[src.component] = map[string]string{}
			}
			target = o.Components[src.component]
		}
		for k, v := range src.data {
			target[k] = v
		}
	}
	return o, nil
}
