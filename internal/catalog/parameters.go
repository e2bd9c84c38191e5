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

// OIDC configures the runtime API server's OpenID Connect authenticator.
type OIDC struct {
	ClientID       string   `json:"clientID"`
	IssuerURL      string   `json:"issuerURL"`
	GroupsClaim    string   `json:"groupsClaim,omitempty"`
	SigningAlgs    []string `json:"signingAlgs,omitempty"`
	UsernameClaim  string   `json:"usernameClaim,omitempty"`
	UsernamePrefix string   `json:"usernamePrefix,omitempty"`
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
