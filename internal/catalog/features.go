package catalog

import (
	"fmt"
	"net/netip"
	"slices"
	"strings"
)

// planFeatureParameters are parameters some plans offer and others do not: a plan without one
// refuses it with "is not available on plan X" rather than "not a supported parameter".
var planFeatureParameters = []string{paramProvider, paramGVisor, paramAdditionalPools, paramIngressFiltering, paramColocateControlPlane,
	paramAccessControlList, paramAdditionalVolume, paramZones, paramMaxSurge, paramMaxUnavailable, paramVolumeSizeGb, paramAuditLogAccess}

// trialProviderLabels are the provider parameter's values, upstream's names, by provider.
var trialProviderLabels = map[string]string{ProviderAzure: upstreamProviderNames[ProviderAzure],
	ProviderAWS: upstreamProviderNames[ProviderAWS], ProviderGCP: upstreamProviderNames[ProviderGCP]}

// trialProviderSchema offers the trial's providers, the default first.
func trialProviderSchema(plan Plan) map[string]any {
	values := make([]string, len(plan.TrialProviders))
	names := map[string]string{}
	for i, p := range plan.TrialProviders {
		values[i] = trialProviderLabels[p]
		names[values[i]] = providerLabel(p)
	}
	return map[string]any{
		"type": "string", "title": "Provider", "enum": values, "_enumDisplayName": names, "default": values[0],
		"description": "Hyperscaler the trial runs on.",
	}
}

// TrialProvider is the provider a trial's provider parameter names ("" for none or unknown).
func TrialProvider(param *string) string {
	if param == nil {
		return ""
	}
	for p, label := range trialProviderLabels {
		if label == *param {
			return p
		}
	}
	return ""
}

// retiredParameters are parameters of older brokers keb refuses, with what to use instead.
var retiredParameters = map[string]string{
	paramNodeCount: "is not supported: a runtime starts with autoScalerMin nodes and the autoscaler adds up to autoScalerMax; " +
		"set autoScalerMin and autoScalerMax instead",
}

// addFeatureSchemas adds the per-plan optional features; create adds the create-only ones.
func addFeatureSchemas(p *properties, e *planEntry, create bool) {
	plan := e.plan
	if plan.IngressFiltering {
		p.add(paramIngressFiltering, map[string]any{
			"type": "boolean", "title": "Ingress filtering",
			"description": "Filter the traffic reaching the runtime by the platform's ingress rules.",
		})
	}
	if create && !plan.BasicForm && !plan.Trial {
		p.add(paramColocateControlPlane, map[string]any{
			"type": "boolean", "title": "Colocate control plane",
			"description": "Run the cluster's control plane in the runtime's region (only regions with a seed). Cannot change later.",
		})
	}
	if plan.AccessControlList {
		var acl properties
		acl.add("allowedCIDRs", map[string]any{
			"type": "array", "title": "Allowed CIDRs", "uniqueItems": true,
			"description": "Networks allowed to reach the API server; an empty list lifts the restriction.",
			"items":       map[string]any{"type": "string", "minLength": 1},
		})
		p.add(paramAccessControlList, acl.object(map[string]any{
			"title": "API server access control", "required": []string{"allowedCIDRs"},
		}))
	}
	if plan.MaxAdditionalVolumeSizeGi > 0 {
		p.add(paramAdditionalVolume, additionalVolumeSchema(plan))
	}
}

func additionalVolumeSchema(plan Plan) map[string]any {
	return map[string]any{
		"type": "integer", "title": "Additional volume size (GiB)", "minimum": 0, "maximum": plan.MaxAdditionalVolumeSizeGi,
		"description": fmt.Sprintf("Disk added to each node's %d GiB.", plan.VolumeSizeGb),
	}
}

// unavailableProblems names the parameters of doc that the plan's schema leaves out although keb
// knows them, and the retired ones, each with a reason.
func unavailableProblems(plan Plan, doc any, schemaDoc map[string]any) []FieldProblem {
	obj, ok := doc.(map[string]any)
	if !ok {
		return nil
	}
	props, _ := schemaDoc["properties"].(map[string]any)
	problems := oidcFormProblems(obj)
	for k := range obj {
		if _, offered := props[k]; offered {
			continue
		}
		if why, retired := retiredParameters[k]; retired {
			problems = append(problems, FieldProblem{Field: k, Message: why})
		} else if slices.Contains(planFeatureParameters, k) {
			problems = append(problems, FieldProblem{Field: k, Message: "is not available on plan " + plan.Name})
		}
	}
	return problems
}

// featureProblems checks the features' values against the runtime's region.
func featureProblems(o offer, provider, region string, p ProvisioningParameters) []FieldProblem {
	var problems []FieldProblem
	if acl := p.AccessControlList; acl != nil {
		for i, c := range acl.AllowedCIDRs {
			field := fmt.Sprintf("accessControlList.allowedCIDRs[%d]", i)
			pfx, err := netip.ParsePrefix(c)
			switch {
			case err != nil:
				problems = append(problems, FieldProblem{Field: field, Message: fmt.Sprintf("%q is not a CIDR such as 203.0.113.0/24", c)})
			case pfx.Masked() != pfx:
				problems = append(problems, FieldProblem{Field: field, Message: fmt.Sprintf("%q is not a network address: did you mean %s?", c, pfx.Masked())})
			}
		}
	}
	return problems
}

// ColocationProblem checks a provisioning's colocateControlPlane against the regions with a
// Gardener seed of its provider (seeds, read from the control plane by the caller): the runtime's
// region must be among them and offered by the plan in the platform region, as upstream allows
// (seed regions ∩ the plan's regions). It returns nil or a *ValidationError naming the regions
// that would do.
func (c *Catalog) ColocationProblem(r Resolved, platformRegion string, seeds []string) error {
	e, err := c.entryFor(r.Plan.ID, platformRegion)
	if err != nil {
		return fmt.Errorf("colocation: %w", err)
	}
	var allowed []string
	for _, o := range e.offers[r.Provider].regions {
		if slices.Contains(seeds, o.Code) {
			allowed = append(allowed, o.Code)
		}
	}
	if slices.Contains(allowed, r.ProviderRegion) {
		return nil
	}
	where := "none"
	if len(allowed) > 0 {
		where = strings.Join(allowed, ", ")
	}
	return newValidationError(subjectParameters, []FieldProblem{{Field: paramColocateControlPlane, Message: fmt.Sprintf(
		"cannot colocate the control plane in the %s region: %s can have control planes in the following regions: %s",
		r.ProviderRegion, providerLabel(r.Provider), where)}})
}

// Colocated reports whether a provisioning asks to colocate its control plane.
func (p ProvisioningParameters) Colocated() bool {
	return p.ColocateControlPlane != nil && *p.ColocateControlPlane
}

// externalLicenceTypes are the context's license types of instances outside SAP (customers,
// partners, trials): their egress is not filtered, and ingress filtering is not offered to them.
var externalLicenceTypes = []string{"CUSTOMER", "PARTNER", "TRIAL"}

// ExternalLicence reports whether a context's license_type is an external one.
func ExternalLicence(licenseType string) bool {
	return slices.ContainsFunc(externalLicenceTypes, func(e string) bool { return strings.EqualFold(e, licenseType) })
}

// LicenceProblems checks parameters against the instance's licence: ingress filtering is not
// available to external licences. It returns nil or a *ValidationError.
func LicenceProblems(p ProvisioningParameters, licenseType string) error {
	if p.IngressFiltering != nil && *p.IngressFiltering && ExternalLicence(licenseType) {
		return newValidationError(subjectParameters, []FieldProblem{{Field: paramIngressFiltering,
			Message: fmt.Sprintf("is not available for instances with the external licence type %s", licenseType)}})
	}
	return nil
}
