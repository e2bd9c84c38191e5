package runtimelisting

import (
	"context"
	"encoding/json"
	"fmt"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/selection"
	"k8s.io/apimachinery/pkg/util/validation"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kyma-keb/keb/internal/controlplane"
	"github.com/kyma-keb/keb/internal/infrastructuremanager"
)

// ControlPlaneCRs reads Runtime CRs from the control plane for
// runtime_config=true: one LIST per page, selecting the page's runtimes by
// their runtime-ID label, never a GET per runtime.
type ControlPlaneCRs struct {
	KCP       client.Reader
	Namespace string
}

// RuntimeConfigs returns the Runtime CRs of runtimeIDs as the control plane
// serves them, unstructured (so that fields keb's types do not know are
// shown too), without metadata.managedFields, which only say which client
// wrote which field.
func (c ControlPlaneCRs) RuntimeConfigs(ctx context.Context, runtimeIDs []string) (map[string]json.RawMessage, error) {
	var ids []string
	for _, id := range runtimeIDs {
		// An ID that is no label value can be on no CR's label.
		if len(validation.IsValidLabelValue(id)) == 0 && id != "" {
			ids = append(ids, id)
		}
	}
	out := make(map[string]json.RawMessage, len(ids))
	if len(ids) == 0 {
		return out, nil
	}
	req, err := labels.NewRequirement(controlplane.LabelRuntimeID, selection.In, ids)
	if err != nil {
		return nil, fmt.Errorf("selecting %d Runtime CRs: %w", len(ids), err)
	}
	list := &unstructured.UnstructuredList{}
	list.SetGroupVersionKind(infrastructuremanager.GroupVersion.WithKind("RuntimeList"))
	if err := c.KCP.List(ctx, list, client.InNamespace(c.Namespace),
		client.MatchingLabelsSelector{Selector: labels.NewSelector().Add(*req)}); err != nil {
		return nil, fmt.Errorf("listing the Runtime CRs of %d runtimes: %w", len(ids), err)
	}
	for i := range list.Items {
		cr := &list.Items[i]
		cr.SetManagedFields(nil)
		raw, err := json.Marshal(cr.Object)
		if err != nil {
			return nil, fmt.Errorf("encoding Runtime CR %s: %w", cr.GetName(), err)
		}
		out[cr.GetLabels()[controlplane.LabelRuntimeID]] = raw
	}
	return out, nil
}
