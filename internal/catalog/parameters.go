package catalog

import "encoding/json"

// ProvisioningParameters are the validated parameters of a provision request, with plan defaults
// NOT applied: nil means "the user did not say", which Resolve (or the caller) fills from the plan.
type ProvisioningParameters struct {
	Name           string   `json:"name"`
	Region         *string  `json:"region,omitempty"`
	MachineType    *string  `json:"machineType,omitempty"`
	AutoScalerMin  *int     `json:"autoScalerMin,omitempty"`
	AutoScalerMax  *int     `json:"autoScalerMax,omitempty"`
	NodeCount      *int     `json:"nodeCount,omitempty"`
	ZonesCount     *int     `json:"zonesCount,omitempty"`
	Components     []string `json:"components,omitempty"`
	KymaVersion    string   `json:"kymaVersion,omitempty"`
	Modules        *Modules `json:"modules,omitempty"`
	Administrators []string `json:"administrators,omitempty"`
	OIDC           *OIDC    `json:"oidc,omitempty"`
	// Networking is fixed at creation; nil means the default CIDRs.
	Networking *Networking `json:"networking,omitempty"`

	// AdditionalWorkerNodePools are worker pools beside the Kyma one. nil means none (or, in a
	// PATCH, keep the stored ones); an empty list means none (a PATCH removes them all).
	AdditionalWorkerNodePools *[]WorkerPool `json:"additionalWorkerNodePools,omitempty"`
	// IngressFiltering switches the runtime's ingress filter on (plans with ingressFiltering).
	IngressFiltering *bool `json:"ingressFiltering,omitempty"`
	// ColocateControlPlane places the control plane in the runtime's region (create only).
	ColocateControlPlane *bool `json:"colocateControlPlane,omitempty"`
	// AccessControlList limits who reaches the API server (plans with accessControlList).
	AccessControlList *AccessControlList `json:"accessControlList,omitempty"`
	// AdditionalVolumeSizeGi is added to each Kyma worker node's disk.
	AdditionalVolumeSizeGi *int `json:"additionalVolumeSizeGi,omitempty"`
	// GVisor runs the Kyma worker pool's containers in gVisor (allowed global accounts only).
	GVisor *GVisor `json:"gvisor,omitempty"`

	// Provider chooses a trial's hyperscaler (Azure, AWS, GCP; plans with trialProviders).
	Provider *string `json:"provider,omitempty"`

	// The seed's provider parameters for the Kyma worker pool (create only): the zones by name,
	// the roll-out and the disk size.
	Zones          []string `json:"zones,omitempty"`
	MaxSurge       *int     `json:"maxSurge,omitempty"`
	MaxUnavailable *int     `json:"maxUnavailable,omitempty"`
	VolumeSizeGb   *int     `json:"volumeSizeGb,omitempty"`
}

// WorkerPool is one entry of additionalWorkerNodePools.
type WorkerPool struct {
	Name        string `json:"name"`
	MachineType string `json:"machineType"`
	// HAZones spreads the pool over three zones (default true); it cannot change later.
	HAZones                *bool             `json:"haZones,omitempty"`
	AutoScalerMin          *int              `json:"autoScalerMin,omitempty"`
	AutoScalerMax          *int              `json:"autoScalerMax,omitempty"`
	Labels                 map[string]string `json:"labels,omitempty"`
	Annotations            map[string]string `json:"annotations,omitempty"`
	Taints                 []Taint           `json:"taints,omitempty"`
	AdditionalVolumeSizeGi *int              `json:"additionalVolumeSizeGi,omitempty"`
	GVisor                 *GVisor           `json:"gvisor,omitempty"`
}

// GVisor is the gvisor parameter, of the runtime or of one pool.
type GVisor struct {
	Enabled bool `json:"enabled"`
}

// On reports whether g asks for gVisor.
func (g *GVisor) On() bool { return g != nil && g.Enabled }

// HA reports whether the pool spreads over several zones (haZones, default true).
func (p WorkerPool) HA() bool { return p.HAZones == nil || *p.HAZones }

// Taint is a Kubernetes node taint of an additional worker pool.
type Taint struct {
	Key    string `json:"key"`
	Value  string `json:"value,omitempty"`
	Effect string `json:"effect"`
}

// AccessControlList is the accessControlList parameter: the CIDRs allowed to reach the runtime's
// API server. An empty list removes the restriction.
type AccessControlList struct {
	AllowedCIDRs []string `json:"allowedCIDRs"`
}

// Modules selects the Kyma modules of a runtime. Absent (nil) or {default: true} installs the
// default modules, {default: false} installs none, {list: [...]} installs exactly those (an empty
// list: none). Channel, when set, is the Kyma CR's spec.channel.
type Modules struct {
	Default *bool    `json:"default,omitempty"`
	Channel string   `json:"channel,omitempty"`
	List    []Module `json:"list,omitempty"`
}

// Module is one entry of a custom module list, as the Kyma CR's spec.modules takes it.
type Module struct {
	Name                 string `json:"name"`
	Channel              string `json:"channel,omitempty"`
	CustomResourcePolicy string `json:"customResourcePolicy,omitempty"`
	Managed              *bool  `json:"managed,omitempty"`
}

// OIDC configures the runtime API server's OpenID Connect authenticators, in one of two forms:
// the legacy single provider (the fields of OIDCProvider at the top) or a list of providers
// (List; an empty list means no OIDC at all). Validation refuses both at once.
type OIDC struct {
	OIDCProvider
	List *[]OIDCProvider `json:"list,omitempty"`
}

// OIDCProvider is one OpenID Connect provider the API server trusts.
type OIDCProvider struct {
	ClientID       string   `json:"clientID,omitempty"`
	IssuerURL      string   `json:"issuerURL,omitempty"`
	GroupsClaim    string   `json:"groupsClaim,omitempty"`
	GroupsPrefix   string   `json:"groupsPrefix,omitempty"`
	SigningAlgs    []string `json:"signingAlgs,omitempty"`
	UsernameClaim  string   `json:"usernameClaim,omitempty"`
	UsernamePrefix string   `json:"usernamePrefix,omitempty"`
	// RequiredClaims are "key=value" pairs every token must carry.
	RequiredClaims []string `json:"requiredClaims,omitempty"`
	// EncodedJwksArray is the provider's JWKS, base64-encoded, for issuers the API server cannot
	// reach.
	EncodedJwksArray string `json:"encodedJwksArray,omitempty"`
}

// Providers returns the OIDC providers the runtime trusts and whether the parameter uses the
// list form. A nil OIDC, and {} (no field at all), name none: as upstream, the default provider
// on create, and on update the configuration stays as it is.
func (o *OIDC) Providers() (legacy *OIDCProvider, list []OIDCProvider, listForm bool) {
	if o == nil {
		return nil, nil, false
	}
	if o.List != nil {
		return nil, *o.List, true
	}
	if o.OIDCProvider.empty() {
		return nil, nil, false
	}
	p := o.OIDCProvider
	return &p, nil, false
}

// UsesDefaultModules reports whether the runtime gets the default module list (modules absent,
// {}, or {default: true}).
func (m *Modules) UsesDefaultModules() bool {
	if m == nil {
		return true
	}
	return m.List == nil && (m.Default == nil || *m.Default)
}

// CustomList returns the modules to install when the user listed them, and whether they did.
// An empty, non-nil result means "no modules".
func (m *Modules) CustomList() ([]Module, bool) {
	if m == nil || m.List == nil {
		return nil, false
	}
	return m.List, true
}

// MarshalJSON keeps an empty custom list as "list": [] — omitting it would turn "no modules"
// into "default modules" when the stored parameters are read back.
func (m Modules) MarshalJSON() ([]byte, error) {
	out := map[string]any{}
	if m.Default != nil {
		out["default"] = *m.Default
	}
	if m.Channel != "" {
		out["channel"] = m.Channel
	}
	if m.List != nil {
		out["list"] = m.List
	}
	return json.Marshal(out)
}
