package hyperscaler

// Label keys current upstream pools use for the same facts as LabelHyperscalerType and
// LabelTenantName, plus the EU-access and internal markers. A pool may mix both spellings: keb
// reads either and writes a claim in the spelling of the object's type label.
const (
	LabelHyperscalerTypeUpstream = "hyperscalerType"
	LabelTenantNameUpstream      = "tenantName"
	// LabelEUAccess set to "true" reserves the account for runtimes of EU-access platform regions
	// (drawn by HAP rules with the EU output, and only by them).
	LabelEUAccess = "euAccess"
	// LabelInternal set to "true" marks an account keb never releases: it is never marked dirty.
	LabelInternal = "internal"
)

// accountLabels is what a pool object's labels say, whichever spelling they use.
type accountLabels struct {
	hyperscalerType string
	tenant          string
	// tenantKey is the key a claim writes: the spelling of the type label.
	tenantKey string
	shared    bool
	dirty     bool
	euAccess  bool
	internal  bool
}

func poolLabels(m map[string]string) accountLabels {
	l := accountLabels{
		hyperscalerType: m[LabelHyperscalerType],
		tenant:          m[LabelTenantName],
		tenantKey:       LabelTenantName,
		shared:          m[LabelShared] == labelTrue,
		dirty:           m[LabelDirty] == labelTrue,
		euAccess:        m[LabelEUAccess] == labelTrue,
		internal:        m[LabelInternal] == labelTrue,
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
