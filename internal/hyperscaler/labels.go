package hyperscaler

import "k8s.io/apimachinery/pkg/runtime/schema"

// Label keys current upstream pools use for the same facts as LabelHyperscalerType and
// LabelTenantName, plus the EU-access marker. A pool may mix both spellings: keb reads either and
// writes a claim in the spelling of the Secret's type label.
const (
	LabelHyperscalerTypeUpstream = "hyperscalerType"
	LabelTenantNameUpstream      = "tenantName"
	// LabelEUAccess set to "true" reserves the Secret for runtimes of EU-access platform regions.
	LabelEUAccess = "euAccess"
)

var secretListGVK = schema.GroupVersionKind{Version: "v1", Kind: "SecretList"}

// accountLabels is what a pool Secret's labels say, whichever spelling they use.
type accountLabels struct {
	hyperscalerType string
	tenant          string
	// tenantKey is the key a claim writes: the spelling of the type label.
	tenantKey string
	shared    bool
	dirty     bool
	euAccess  bool
}

func poolLabels(m map[string]string) accountLabels {
	l := accountLabels{
		hyperscalerType: m[LabelHyperscalerType],
		tenant:          m[LabelTenantName],
		tenantKey:       LabelTenantName,
		shared:          m[LabelShared] == labelTrue,
		dirty:           m[LabelDirty] == labelTrue,
		euAccess:        m[LabelEUAccess] == labelTrue,
	}
	if l.hyperscalerType == "" && m[LabelHyperscalerTypeUpstream] != "" {
		l.hyperscalerType = m[LabelHyperscalerTypeUpstream]
		l.tenantKey = LabelTenantNameUpstream
	}
	if l.tenant == "" {
		l.tenant = m[LabelTenantNameUpstream]
	}
	return l
}
