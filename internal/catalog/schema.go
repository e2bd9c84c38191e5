package catalog

import (
	"bytes"
	"encoding/json"
	"fmt"
	"regexp"
	"slices"

	"github.com/kyma-keb/keb/internal/controlplane"
	"github.com/santhosh-tekuri/jsonschema/v6"
)

// The parameter schemas follow KEB's form conventions, read by the BTP cockpit: JSON Schema
// draft-04, "_show_form_view" to render a form, "_controlsOrder" for the order of the fields
// and "_enumDisplayName" for the label of each enum value. Validators ignore "_" keywords.

const (
	draft04 = "http://json-schema.org/draft-04/schema#"

	// namePattern is the runtime name rule; the shoot and the Kyma CR reuse the name.
	namePattern = "^[a-zA-Z0-9-]*$"
	// moduleNamePattern is a Kubernetes label value: module names select ModuleTemplates by label.
	// It matches "" so that an empty name gets only minLength's clearer "must not be empty".
	moduleNamePattern = "^([a-zA-Z0-9]([-a-zA-Z0-9_.]*[a-zA-Z0-9])?)?$"
	// httpsPattern rejects plain-HTTP OIDC issuers: the API server only trusts HTTPS issuers.
	httpsPattern = "^https://"
	// labelValuePattern is a non-empty Kubernetes label value: the global account and subaccount
	// IDs label the runtime's resources (Runtime CR, Kyma CR), whose API server refuses others.
	labelValuePattern = "^[a-zA-Z0-9]([-a-zA-Z0-9_.]*[a-zA-Z0-9])?$"
	// KymaVersionPattern is what a Kyma version may look like (provisioning's kymaVersion and an
	// orchestration's kyma.version): it names a component list file and is written into the
	// runtime's resources. Releases ("2.20.0"), pre-releases and builds ("2.20.0-rc1+b2", "PR-123")
	// fit.
	KymaVersionPattern = "^[a-zA-Z0-9]([-a-zA-Z0-9_.+]*[a-zA-Z0-9])?$"

	nameMaxLength = 64
)

// KymaVersionMaxLength bounds a Kyma version.
const KymaVersionMaxLength = nameMaxLength

var kymaVersionSyntax = regexp.MustCompile(KymaVersionPattern)

// ValidateKymaVersion refuses what cannot be a Kyma version (KymaVersionPattern, at most
// KymaVersionMaxLength characters), as provisioning's schema does.
func ValidateKymaVersion(v string) error {
	if len(v) > KymaVersionMaxLength || !kymaVersionSyntax.MatchString(v) {
		return fmt.Errorf("%.80q is not a Kyma version: %s, at most %d characters", v, patternMeanings[KymaVersionPattern], KymaVersionMaxLength)
	}
	return nil
}

// patternMeanings says in words what each pattern demands, for error messages.
var patternMeanings = map[string]string{
	namePattern:       "may contain only letters, digits and hyphens",
	moduleNamePattern: "must be a module name: letters, digits, '-', '_' and '.', starting and ending with a letter or digit",
	httpsPattern:      "must be an https:// URL",
	labelValuePattern: "must be a Kubernetes label value (it labels the runtime's resources): letters, digits, '-', '_' and '.', " +
		"starting and ending with a letter or digit",
	poolNamePattern:      "must be a DNS label: lower-case letters, digits and '-', starting and ending with a letter or digit",
	requiredClaimPattern: "must be key=value",
	KymaVersionPattern:   "must be a Kyma version: letters, digits, '-', '_', '.' and '+', starting and ending with a letter or digit",
}

// Parameter names, also the keys of ProvisioningParameters' JSON.
const (
	paramName           = "name"
	paramRegion         = "region"
	paramMachineType    = "machineType"
	paramAutoScalerMin  = "autoScalerMin"
	paramAutoScalerMax  = "autoScalerMax"
	paramNodeCount      = "nodeCount"
	paramZonesCount     = "zonesCount"
	paramComponents     = "components"
	paramKymaVersion    = "kymaVersion"
	paramModules        = "modules"
	paramAdministrators = "administrators"
	paramOIDC           = "oidc"
	paramNetworking     = "networking"

	paramProvider             = "provider"
	paramGVisor               = "gvisor"
	paramAdditionalPools      = "additionalWorkerNodePools"
	paramIngressFiltering     = "ingressFiltering"
	paramColocateControlPlane = "colocateControlPlane"
	paramAccessControlList    = "accessControlList"
	paramAdditionalVolume     = "additionalVolumeSizeGi"
	paramZones                = "zones"
	paramMaxSurge             = "maxSurge"
	paramMaxUnavailable       = "maxUnavailable"
	paramVolumeSizeGb         = "volumeSizeGb"
)

// Optional components a runtime may get on top of the default ones.
const (
	ComponentKiali   = "kiali"
	ComponentTracing = "tracing"
)

// OIDCSigningAlgs are the JWS algorithms the API server accepts for OIDC tokens.
var OIDCSigningAlgs = []string{"RS256", "RS384", "RS512", "ES256", "ES384", "ES512", "PS256", "PS384", "PS512"}

// properties accumulates a schema's properties and their display order together, so that
// _controlsOrder lists exactly the properties by construction.
type properties struct {
	order []string
	props map[string]any
}

func (p *properties) add(name string, schema map[string]any) {
	if p.props == nil {
		p.props = map[string]any{}
	}
	p.order = append(p.order, name)
	p.props[name] = schema
}

// drop removes the named properties.
func (p *properties) drop(names []string) {
	for _, n := range names {
		delete(p.props, n)
		p.order = slices.DeleteFunc(p.order, func(o string) bool { return o == n })
	}
}

// object returns an object schema over the properties; extra keys are merged in.
func (p *properties) object(extra map[string]any) map[string]any {
	s := map[string]any{
		"type":                 "object",
		"properties":           p.props,
		"_controlsOrder":       p.order,
		"additionalProperties": false,
	}
	for k, v := range extra {
		s[k] = v
	}
	return s
}

// upstreamControlsOrder is the order upstream KEB's cockpit form shows the root parameters in
// (upstream plans_schema.go's fixed list); keb's own parameters follow in keb's order.
var upstreamControlsOrder = []string{paramName, "kubeconfig", "shootName", "shootDomain", paramRegion, paramColocateControlPlane,
	paramMachineType, paramAutoScalerMin, paramAutoScalerMax, paramAdditionalVolume, paramZonesCount, paramGVisor, paramAdditionalPools,
	paramModules, paramNetworking, paramAccessControlList, paramOIDC, paramAdministrators, paramIngressFiltering, "auditLogAccess"}

// root returns a plan's root parameter schema: the properties in upstream's control order, marked
// for the cockpit to render a form (_show_form_view) and, in the update dialog, to start from the
// instance's current parameters (_load_current_config; upstream sets it on create schemas too).
func (p *properties) root(extra map[string]any) map[string]any {
	rank := func(name string) int {
		if i := slices.Index(upstreamControlsOrder, name); i >= 0 {
			return i
		}
		return len(upstreamControlsOrder)
	}
	slices.SortStableFunc(p.order, func(a, b string) int { return rank(a) - rank(b) })
	s := p.object(map[string]any{
		"$schema":              draft04,
		"_show_form_view":      true,
		"_load_current_config": true,
	})
	for k, v := range extra {
		s[k] = v
	}
	return s
}

// hiddenSchema checks the parameters a plan accepts without showing them in its form (nil: none):
// a trial's region (an area) and provider, which upstream's trial form leaves out too, and
// auditLogAccess on the plans that accept and ignore it (acceptsAuditLogAccess).
func (c *Catalog) hiddenSchema(e *planEntry) map[string]any {
	var p properties
	if e.plan.Trial {
		p.add(paramRegion, c.regionSchema(e))
		if len(e.plan.TrialProviders) > 1 {
			p.add(paramProvider, trialProviderSchema(e.plan))
		}
	}
	if acceptsAuditLogAccess(e.plan) {
		p.add(paramAuditLogAccess, auditLogAccessSchema())
	}
	if len(p.order) == 0 {
		return nil
	}
	s := p.object(map[string]any{"$schema": draft04})
	delete(s, "additionalProperties")
	return s
}

// createSchema builds the create-parameters schema of a plan.
func (c *Catalog) createSchema(e *planEntry) map[string]any {
	plan := e.plan
	var p properties
	name := nameSchema()
	// The cockpit prefills the name from the subaccount's subdomain, as for upstream.
	name["_BTPdefaultTemplate"] = map[string]any{"elements": []string{"saSubdomain"}}
	p.add(paramName, name)
	if !plan.Trial {
		// A trial's region and provider are hidden parameters (hiddenSchema), as upstream's
		// trial form shows neither.
		p.add(paramRegion, c.regionSchema(e))
	}
	if !plan.BasicForm {
		p.add(paramMachineType, withDefault(machineTypeSchema(e), plan.DefaultMachineType))
		p.add(paramAutoScalerMin, withIntDefault(autoScalerMinSchema(plan), plan.DefaultAutoScalerMin))
		p.add(paramAutoScalerMax, withIntDefault(autoScalerMaxSchema(plan), plan.DefaultAutoScalerMax))
		// A plan with a single zone (lite) has nothing to choose, so no field.
		if plan.MaxZonesCount > 1 {
			p.add(paramZonesCount, map[string]any{
				"type":        "integer",
				"title":       "Availability zones",
				"description": "Number of availability zones the worker nodes spread over.",
				"minimum":     1,
				"maximum":     plan.MaxZonesCount,
				"default":     plan.DefaultZonesCount,
			})
		}
		p.add(paramComponents, map[string]any{
			"type":        "array",
			"title":       "Optional components",
			"uniqueItems": true,
			"items": map[string]any{
				"type":             "string",
				"enum":             []string{ComponentKiali, ComponentTracing},
				"_enumDisplayName": map[string]string{ComponentKiali: "Kiali", ComponentTracing: "Tracing"},
			},
		})
		p.add(paramKymaVersion, map[string]any{
			"type":        "string",
			"title":       "Kyma version",
			"description": "Kyma version to install instead of the default one.",
			"minLength":   1,
			"maxLength":   KymaVersionMaxLength,
			"pattern":     KymaVersionPattern,
		})
		p.add(paramNetworking, networkingSchema(c.providerDefaults[plan.Provider].dualStack, c.dualStackDocsURL))
		c.addWorkerSchemas(&p, e)
	}
	addFeatureSchemas(&p, e, true)
	p.add(paramModules, modulesSchema())
	p.add(paramAdministrators, administratorsSchema())
	p.add(paramOIDC, oidcSchema(true, c.defaultOIDC))
	p.drop(plan.DisabledParameters)

	return p.root(map[string]any{"required": []string{paramName}})
}

func nameSchema() map[string]any {
	return map[string]any{
		"type":        "string",
		"title":       "Cluster Name",
		"description": "Name of the runtime: letters, digits and hyphens.",
		"minLength":   1,
		"maxLength":   nameMaxLength,
		"pattern":     namePattern,
	}
}

// regionSchema offers the plan's regions: trial regions for trial plans, the union over its
// providers for plans whose provider follows the platform region (narrowed per request by
// ValidateParameters), else its provider's regions.
func (c *Catalog) regionSchema(e *planEntry) map[string]any {
	const title, desc = "Region", "Region of the cluster."
	switch {
	case e.plan.Trial:
		return enumSchema(title, "Region of the trial cluster. Without one, the region follows the platform region.", c.trialRegions)
	case e.plan.ByPlatformRegion():
		var all []Option
		for _, prov := range e.plan.Providers {
			// A platform region's variant offers only its provider's regions.
			for _, r := range e.offers[prov].regions {
				if !hasOption(all, r.Code) {
					all = append(all, r)
				}
			}
		}
		return enumSchema(title, desc+" The regions offered depend on the platform region.", all)
	default:
		return withDefault(enumSchema(title, desc, e.offers[e.plan.Provider].regions), e.plan.DefaultRegion)
	}
}

func enumSchema(title, description string, opts []Option) map[string]any {
	names := make(map[string]string, len(opts))
	for _, o := range opts {
		names[o.Code] = o.DisplayName
	}
	return map[string]any{
		"type":             "string",
		"title":            title,
		"description":      description,
		"enum":             optionCodes(opts),
		"_enumDisplayName": names,
	}
}

func withDefault(s map[string]any, def string) map[string]any {
	if def != "" {
		s["default"] = def
	}
	return s
}

// modulesSchema accepts either {default: bool, channel?} or {list: [...], channel?}: the two
// forms are exclusive, so each branch forbids the other's keys. "list" is required in the custom
// branch so that {} and {channel} mean the default modules.
func modulesSchema() map[string]any {
	channel := func() map[string]any {
		return map[string]any{
			"type":             "string",
			"title":            "Channel",
			"description":      "Release channel of the modules.",
			"enum":             []string{controlplane.ChannelRegular, controlplane.ChannelFast},
			"_enumDisplayName": map[string]string{controlplane.ChannelRegular: "Regular - default version", controlplane.ChannelFast: "Fast - latest version"},
		}
	}

	var def properties
	def.add("default", map[string]any{
		"type":        "boolean",
		"title":       "Use default modules",
		"description": "true installs the default modules, false installs none.",
		"default":     true,
	})
	def.add("channel", channel())

	var item properties
	item.add("name", map[string]any{
		"type":        "string",
		"title":       "Name",
		"description": "Technical name of the module, for example btp-operator.",
		"minLength":   1,
		"maxLength":   63,
		"pattern":     moduleNamePattern,
	})
	// "" is accepted for channel and policy because forms send it for "not chosen".
	item.add("channel", map[string]any{
		"type":             "string",
		"title":            "Channel",
		"enum":             []string{"", controlplane.ChannelRegular, controlplane.ChannelFast},
		"_enumDisplayName": map[string]string{"": "", controlplane.ChannelRegular: "Regular - default version", controlplane.ChannelFast: "Fast - latest version"},
	})
	item.add("customResourcePolicy", map[string]any{
		"type":  "string",
		"title": "Custom resource policy",
		"enum":  []string{"", controlplane.CustomResourcePolicyCreateAndDelete, controlplane.CustomResourcePolicyIgnore},
		"_enumDisplayName": map[string]string{
			"": "",
			controlplane.CustomResourcePolicyCreateAndDelete: "CreateAndDelete - the module's default resource is created and deleted",
			controlplane.CustomResourcePolicyIgnore:          "Ignore - the module's default resource is not created",
		},
	})
	item.add("managed", map[string]any{
		"type":        "boolean",
		"title":       "Managed",
		"description": "false leaves the module's resources alone on the cluster.",
		"default":     true,
	})

	var custom properties
	custom.add("channel", channel())
	custom.add("list", map[string]any{
		"type":        "array",
		"title":       "Modules",
		"description": "Exactly the modules to install; an empty list installs none.",
		"items":       item.object(map[string]any{"required": []string{"name"}}),
	})

	return map[string]any{
		"type":           "object",
		"title":          "Modules",
		"description":    "Use the default modules, or list the modules you want.",
		"_controlsOrder": []string{"default", "channel", "list"},
		"oneOf": []any{
			def.object(map[string]any{"title": "Default"}),
			custom.object(map[string]any{"title": "Custom", "required": []string{"list"}}),
		},
	}
}

// updateSchema builds the update-parameters schema of a plan: only what can change on a running
// runtime, and no defaults, since a PATCH changes what it names and keeps everything else. The
// create-only parameters (fixedParameters) are left out on purpose; ValidateUpdate names them when
// a PATCH sends them.
func updateSchema(e *planEntry) map[string]any {
	plan := e.plan
	var p properties
	p.add(paramName, nameSchema())
	if !plan.BasicForm {
		p.add(paramMachineType, machineTypeSchema(e))
		p.add(paramAutoScalerMin, autoScalerMinSchema(plan))
		p.add(paramAutoScalerMax, autoScalerMaxSchema(plan))
		addRolloutSchemas(&p, plan)
	}
	if plan.AdditionalPools() {
		p.add(paramAdditionalPools, poolsSchema(e, false))
		p.add(paramGVisor, gvisorSchema())
	}
	addFeatureSchemas(&p, e, false)
	p.add(paramAdministrators, administratorsSchema())
	p.add(paramOIDC, oidcSchema(false, OIDCProvider{}))
	p.drop(plan.DisabledParameters)
	return p.root(nil)
}

func machineTypeSchema(e *planEntry) map[string]any {
	return enumSchema("Machine Type", "Type of the worker nodes.", e.offers[e.plan.Provider].machineTypes)
}

func autoScalerMinSchema(plan Plan) map[string]any {
	return nodesSchema(plan, "Minimum nodes", "Fewest worker nodes the autoscaler keeps.")
}

func autoScalerMaxSchema(plan Plan) map[string]any {
	return nodesSchema(plan, "Maximum nodes", "Most worker nodes the autoscaler may add.")
}

// nodesSchema is a node count within the plan's autoscaler bounds.
func nodesSchema(plan Plan, title, description string) map[string]any {
	return map[string]any{
		"type":        "integer",
		"title":       title,
		"description": description,
		"minimum":     plan.AutoScalerMin,
		"maximum":     plan.AutoScalerMax,
	}
}

func withIntDefault(s map[string]any, def int) map[string]any {
	s["default"] = def
	return s
}

func administratorsSchema() map[string]any {
	return map[string]any{
		"type":        "array",
		"title":       "Administrators",
		"description": "E-mail addresses of the users who get cluster-admin rights. Without any, the user who provisions the runtime gets them.",
		"uniqueItems": true,
		"items":       map[string]any{"type": "string", "format": "email"},
	}
}

// newSchemaCompiler returns a compiler for draft-04 schemas. Format assertions (email, uri) are
// on by default for draft-04, and unknown "_" keywords are ignored.
func newSchemaCompiler() *jsonschema.Compiler {
	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft4)
	c.AssertFormat()
	return c
}

// compile marshals the create and update schema documents and compiles those very bytes, so the
// catalog serves exactly what validation enforces.
func (e *planEntry) compile(c *jsonschema.Compiler, name string, create, update, hidden map[string]any) error {
	var err error
	if hidden != nil {
		if e.hidden, err = planSchemaOf(c, "keb:///plans/"+name+"/hidden.json", hidden); err != nil {
			return err
		}
	}
	if e.create, err = planSchemaOf(c, "keb:///plans/"+name+"/create.json", create); err != nil {
		return err
	}
	if e.update, err = planSchemaOf(c, "keb:///plans/"+name+"/update.json", update); err != nil {
		return err
	}
	return nil
}

func planSchemaOf(c *jsonschema.Compiler, url string, doc map[string]any) (planSchema, error) {
	b, err := json.Marshal(doc)
	if err != nil {
		return planSchema{}, fmt.Errorf("marshal parameter schema %s: %w", url, err)
	}
	sch, parsed, err := compileSchema(c, url, b)
	if err != nil {
		return planSchema{}, err
	}
	return planSchema{json: b, doc: parsed, compiled: sch}, nil
}

func compileSchema(c *jsonschema.Compiler, url string, b []byte) (*jsonschema.Schema, map[string]any, error) {
	parsed, err := jsonschema.UnmarshalJSON(bytes.NewReader(b))
	if err != nil {
		return nil, nil, fmt.Errorf("parse schema %s: %w", url, err)
	}
	if err := c.AddResource(url, parsed); err != nil {
		return nil, nil, fmt.Errorf("add schema %s: %w", url, err)
	}
	sch, err := c.Compile(url)
	if err != nil {
		return nil, nil, fmt.Errorf("compile schema %s: %w", url, err)
	}
	doc, _ := parsed.(map[string]any)
	return sch, doc, nil
}
