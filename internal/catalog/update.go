package catalog

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
)

// fixedParameters cannot change on a running runtime: moving the region, the network or the
// control plane would mean a new cluster, and the Kyma worker pool's zones and disk are set once
// (its roll-out, maxSurge and maxUnavailable, may change, as upstream allows). The update schema leaves them out; ValidateUpdate names them with a reason instead of
// "not allowed".
var fixedParameters = []string{paramRegion, paramProvider, paramNetworking, paramColocateControlPlane, paramZones, paramVolumeSizeGb}

// UpdateRequest is a PATCH of a running instance's parameters, plan, or both.
type UpdateRequest struct {
	// FromPlanID is the instance's plan; ToPlanID is the plan asked for ("" keeps the plan).
	FromPlanID, ToPlanID string
	// PlatformRegion is the instance's platform region.
	PlatformRegion string
	// ProviderRegion is the hyperscaler region the runtime runs in.
	ProviderRegion string
	// Stored are the instance's recorded parameters, without defaults.
	Stored ProvisioningParameters
	// Raw are the PATCH's parameters; nil, empty or null means none.
	Raw json.RawMessage
}

// ErrPlanNotUpgradable is wrapped by a *PlanChangeError.
var ErrPlanNotUpgradable = errors.New("plan cannot change")

// PlanChangeError says that a running instance cannot move from one plan to another, naming both
// plans and the ones it can move to.
type PlanChangeError struct {
	From, To string
	Allowed  []string
	// Reason, when set, says why a plan in Allowed does not fit this instance.
	Reason string
}

func (e *PlanChangeError) Error() string {
	switch {
	case e.Reason != "":
		return fmt.Sprintf("plan %s cannot change to %s: %s", e.From, e.To, e.Reason)
	case len(e.Allowed) == 0:
		return fmt.Sprintf("plan %s cannot change to %s: a %s instance cannot change its plan", e.From, e.To, e.From)
	default:
		return fmt.Sprintf("plan %s cannot change to %s: a %s instance can change to %s", e.From, e.To, e.From, strings.Join(e.Allowed, ", "))
	}
}

func (e *PlanChangeError) Unwrap() error { return ErrPlanNotUpgradable }

// updateParameters are a PATCH's parameters as the update schema allows them; nil means "keep".
type updateParameters struct {
	Name                      *string            `json:"name"`
	AdditionalWorkerNodePools *[]WorkerPool      `json:"additionalWorkerNodePools"`
	IngressFiltering          *bool              `json:"ingressFiltering"`
	AccessControlList         *AccessControlList `json:"accessControlList"`
	AdditionalVolumeSizeGi    *int               `json:"additionalVolumeSizeGi"`
	GVisor                    *GVisor            `json:"gvisor"`
	MachineType               *string            `json:"machineType"`
	AutoScalerMin             *int               `json:"autoScalerMin"`
	AutoScalerMax             *int               `json:"autoScalerMax"`
	MaxSurge                  *int               `json:"maxSurge"`
	MaxUnavailable            *int               `json:"maxUnavailable"`
	Administrators            []string           `json:"administrators"`
	OIDC                      *OIDC              `json:"oidc"`
}

// ValidateUpdate checks a PATCH against the target plan's update schema (the one served in the
// catalog) and returns the instance's parameters after it: the stored ones with the PATCH's over
// them. A plan change must be listed in the instance plan's upgradableToPlans; it keeps the
// runtime's region (a trial's moves to the target provider's region for the trial region). The
// result is validated as a whole against the target plan's create schema, and autoScalerMin <=
// autoScalerMax is checked across the stored and the new values. Bad input gives a
// *ValidationError or a *PlanChangeError; an unknown plan an error wrapping ErrUnknownPlan.
func (c *Catalog) ValidateUpdate(r UpdateRequest) (ProvisioningParameters, error) {
	from, ok := c.plans[r.FromPlanID]
	if !ok {
		return ProvisioningParameters{}, fmt.Errorf("validate update: %w %q", ErrUnknownPlan, r.FromPlanID)
	}
	to := from
	if r.ToPlanID != "" && r.ToPlanID != r.FromPlanID {
		if to, ok = c.plans[r.ToPlanID]; !ok {
			return ProvisioningParameters{}, fmt.Errorf("validate update: %w %q", ErrUnknownPlan, r.ToPlanID)
		}
		if !slices.Contains(from.plan.UpgradableTo, to.plan.Name) {
			return ProvisioningParameters{}, &PlanChangeError{From: from.plan.Name, To: to.plan.Name, Allowed: slices.Clone(from.plan.UpgradableTo)}
		}
	}

	doc, verr := decodeObject(subjectParameters, r.Raw, MaxParametersSize)
	if verr != nil {
		return ProvisioningParameters{}, verr
	}
	if obj, ok := doc.(map[string]any); ok {
		var problems []FieldProblem
		for _, k := range fixedParameters {
			if _, sent := obj[k]; sent {
				problems = append(problems, FieldProblem{Field: k, Message: "cannot be changed on a running runtime"})
			}
		}
		if len(problems) > 0 {
			return ProvisioningParameters{}, newValidationError(subjectParameters, problems)
		}
	}
	doc, problems := withoutAuditLogAccess(to.plan, doc)
	if len(problems) > 0 {
		return ProvisioningParameters{}, newValidationError(subjectParameters, problems)
	}
	kept := keptGatedParameters(doc, r.Stored, to.update.doc)
	checkedDoc, problems := c.withoutSchemalessGVisor(to.plan, without(doc, kept))
	if len(problems) > 0 {
		return ProvisioningParameters{}, newValidationError(subjectParameters, problems)
	}
	if problems := unavailableProblems(to.plan, checkedDoc, to.update.doc); len(problems) > 0 {
		return ProvisioningParameters{}, newValidationError(subjectParameters, problems)
	}
	if err := to.update.compiled.Validate(withoutStoredAdministrators(checkedDoc, r.Stored.Administrators)); err != nil {
		return ProvisioningParameters{}, asValidationError(subjectParameters, err, doc, to.update.doc)
	}
	var patch updateParameters
	if err := decodeValidated(doc, &patch); err != nil {
		return ProvisioningParameters{}, fmt.Errorf("validate update: %w", err)
	}

	merged := r.Stored
	// nodeCount was never applied; runtimes provisioned with it keep their autoscaler bounds.
	merged.NodeCount = nil
	if patch.Name != nil {
		merged.Name = *patch.Name
	}
	if patch.AdditionalWorkerNodePools != nil {
		if problems := poolProblems(to.plan, patch.AdditionalWorkerNodePools, r.Stored.AdditionalWorkerNodePools); len(problems) > 0 {
			return ProvisioningParameters{}, newValidationError(subjectParameters, problems)
		}
		merged.AdditionalWorkerNodePools = patch.AdditionalWorkerNodePools
	}
	if patch.IngressFiltering != nil {
		merged.IngressFiltering = patch.IngressFiltering
	}
	if patch.AccessControlList != nil {
		merged.AccessControlList = patch.AccessControlList
	}
	if patch.AdditionalVolumeSizeGi != nil {
		merged.AdditionalVolumeSizeGi = patch.AdditionalVolumeSizeGi
	}
	if patch.GVisor != nil {
		merged.GVisor = patch.GVisor
	}
	if patch.MachineType != nil {
		merged.MachineType = patch.MachineType
	}
	if patch.AutoScalerMin != nil {
		merged.AutoScalerMin = patch.AutoScalerMin
	}
	if patch.AutoScalerMax != nil {
		merged.AutoScalerMax = patch.AutoScalerMax
	}
	if patch.MaxSurge != nil {
		merged.MaxSurge = patch.MaxSurge
	}
	if patch.MaxUnavailable != nil {
		merged.MaxUnavailable = patch.MaxUnavailable
	}
	if patch.Administrators != nil {
		merged.Administrators = patch.Administrators
	}
	if patch.OIDC != nil {
		merged.OIDC = patch.OIDC
	}
	if !to.plan.Trial {
		// A trial's provider parameter does not outlive the trial.
		merged.Provider = nil
	}
	if to != from {
		region, err := c.regionAfterPlanChange(from, to, r)
		if err != nil {
			return ProvisioningParameters{}, err
		}
		merged.Region = &region
	}
	if p := autoScalerProblem(to.plan, r.Stored, patch, merged); p != nil {
		return ProvisioningParameters{}, newValidationError(subjectParameters, []FieldProblem{*p})
	}

	// The whole result must be what the target plan would accept at provisioning: stored values
	// outside its bounds (a lite plan's machine type, a smaller autoscaler minimum) are named.
	checked := merged
	if storedAdministrators(merged.Administrators, r.Stored.Administrators) {
		checked.Administrators = nil
	}
	// A gated parameter the plan no longer offers (its setting narrowed since the instance
	// stored it) is kept as stored and not checked again, whether the PATCH repeats it or not.
	offered, _ := to.create.doc["properties"].(map[string]any)
	for _, k := range gatedParameters {
		if _, ok := offered[k]; !ok && storedGated(k, merged, r.Stored) {
			clearGated(k, &checked)
		}
	}
	whole, err := json.Marshal(checked)
	if err != nil {
		return ProvisioningParameters{}, fmt.Errorf("validate update: encoding parameters: %w", err)
	}
	var params ProvisioningParameters
	if to == from {
		// The runtime stays where it is: a region its platform region no longer offers (the plans
		// file narrowed it later) must not block its updates.
		params, err = c.validateParameters(to, r.PlatformRegion, whole)
	} else {
		params, err = c.ValidateParameters(to.plan.ID, r.PlatformRegion, whole)
	}
	if err != nil {
		return ProvisioningParameters{}, err
	}
	params.Administrators = merged.Administrators
	for _, k := range gatedParameters {
		if _, ok := offered[k]; !ok && storedGated(k, merged, r.Stored) {
			restoreGated(k, &params, merged)
		}
	}
	return params, nil
}

// gatedParameters are the parameters a setting offers on some plans only (plans.yaml's
// ingressFiltering, accessControlList, maxAdditionalVolumeSizeGi; upstream's
// ingressFilteringPlans, ACLEnabledPlans, additionalVolumeSizeGiPlans). Narrowing the setting must
// lose no instance: one that stored such a value on a plan that no longer offers it keeps it, and
// an update repeating it unchanged is accepted; changing it is refused as on any plan without it.
var gatedParameters = []string{paramIngressFiltering, paramAccessControlList, paramAdditionalVolume}

// storedGated reports whether the merged value of gated parameter k is the instance's stored,
// non-empty value.
func storedGated(k string, merged, stored ProvisioningParameters) bool {
	switch k {
	case paramIngressFiltering:
		return stored.IngressFiltering != nil && merged.IngressFiltering != nil && *stored.IngressFiltering == *merged.IngressFiltering
	case paramAccessControlList:
		return stored.AccessControlList != nil && merged.AccessControlList != nil &&
			slices.Equal(stored.AccessControlList.AllowedCIDRs, merged.AccessControlList.AllowedCIDRs)
	case paramAdditionalVolume:
		return stored.AdditionalVolumeSizeGi != nil && merged.AdditionalVolumeSizeGi != nil && *stored.AdditionalVolumeSizeGi == *merged.AdditionalVolumeSizeGi
	}
	return false
}

func clearGated(k string, p *ProvisioningParameters) {
	switch k {
	case paramIngressFiltering:
		p.IngressFiltering = nil
	case paramAccessControlList:
		p.AccessControlList = nil
	case paramAdditionalVolume:
		p.AdditionalVolumeSizeGi = nil
	}
}

// restoreGated copies gated parameter k from the merged parameters into p.
func restoreGated(k string, p *ProvisioningParameters, merged ProvisioningParameters) {
	switch k {
	case paramIngressFiltering:
		p.IngressFiltering = merged.IngressFiltering
	case paramAccessControlList:
		p.AccessControlList = merged.AccessControlList
	case paramAdditionalVolume:
		p.AdditionalVolumeSizeGi = merged.AdditionalVolumeSizeGi
	}
}

// keptGatedParameters names the gated parameters of a PATCH the plan's update schema does not
// offer whose value is the stored one: they change nothing and are not refused.
func keptGatedParameters(doc any, stored ProvisioningParameters, schemaDoc map[string]any) []string {
	obj, ok := doc.(map[string]any)
	if !ok {
		return nil
	}
	props, _ := schemaDoc["properties"].(map[string]any)
	var kept []string
	for _, k := range gatedParameters {
		sent, ok := obj[k]
		if _, offered := props[k]; !ok || offered {
			continue
		}
		var patch ProvisioningParameters
		if err := decodeValidated(map[string]any{k: sent}, &patch); err != nil {
			continue
		}
		if storedGated(k, patch, stored) {
			kept = append(kept, k)
		}
	}
	return kept
}

// without is doc without the keys named.
func without(doc any, keys []string) any {
	obj, ok := doc.(map[string]any)
	if !ok || len(keys) == 0 {
		return doc
	}
	rest := make(map[string]any, len(obj))
	for k, v := range obj {
		if !slices.Contains(keys, k) {
			rest[k] = v
		}
	}
	return rest
}

// storedAdministrators reports whether admins is the instance's stored, non-empty administrators
// list. keb asks new administrators to be e-mail addresses, stricter than upstream, which takes any
// string; a list stored before (by upstream, or an earlier keb) stays acceptable as long as it is
// not changed, so such instances can still be updated.
func storedAdministrators(admins, stored []string) bool {
	return len(stored) > 0 && slices.Equal(admins, stored)
}

// withoutStoredAdministrators is doc without an administrators value equal to the stored list
// (see storedAdministrators), for the update schema to check only what changes.
func withoutStoredAdministrators(doc any, stored []string) any {
	obj, ok := doc.(map[string]any)
	if !ok {
		return doc
	}
	sent, ok := obj[paramAdministrators].([]any)
	if !ok || len(sent) != len(stored) {
		return doc
	}
	for i, v := range sent {
		if s, ok := v.(string); !ok || s != stored[i] {
			return doc
		}
	}
	if len(stored) == 0 {
		return doc
	}
	rest := make(map[string]any, len(obj))
	for k, v := range obj {
		if k != paramAdministrators {
			rest[k] = v
		}
	}
	return rest
}

// regionAfterPlanChange is where the runtime runs on the new plan: the same hyperscaler region,
// or for a trial, the new provider's region for the trial region (the plan's default region
// where it does not offer that one). Either must be offered by the new plan.
func (c *Catalog) regionAfterPlanChange(from, to *planEntry, r UpdateRequest) (string, error) {
	region := r.ProviderRegion
	trialProvider := from.plan.Provider
	if tp := TrialProvider(r.Stored.Provider); tp != "" {
		trialProvider = tp
	}
	// A trial moving to a plan of its own provider stays where it runs (where that plan offers
	// it): a forced EU access region, or an area chosen by an earlier keb's rules.
	if from.plan.Trial && (to.plan.Provider != trialProvider || !c.offersRegion(to, r.PlatformRegion, region)) {
		trialRegion := c.trialArea(r.PlatformRegion, r.Stored.Region, trialProvider)
		hs, ok := c.providerTrialRegions[to.plan.Provider][trialRegion]
		if !ok {
			return "", &PlanChangeError{From: from.plan.Name, To: to.plan.Name, Allowed: from.plan.UpgradableTo,
				Reason: fmt.Sprintf("%s has no region for the trial region %s", providerLabel(to.plan.Provider), trialRegion)}
		}
		region = hs
	}
	regional, err := c.entryFor(to.plan.ID, r.PlatformRegion)
	if err != nil {
		return "", &PlanChangeError{From: from.plan.Name, To: to.plan.Name, Allowed: from.plan.UpgradableTo, Reason: err.Error()}
	}
	if from.plan.Trial && !hasOption(regional.offers[to.plan.Provider].regions, region) && regional.plan.DefaultRegion != "" {
		// A trial region paid plans do not offer (AWS trials' eu-west-1): the plan's default
		// region there (eu-central-1).
		region = regional.plan.DefaultRegion
	}
	if !hasOption(regional.offers[to.plan.Provider].regions, region) {
		return "", &PlanChangeError{From: from.plan.Name, To: to.plan.Name, Allowed: from.plan.UpgradableTo,
			Reason: fmt.Sprintf("the runtime's region %s is not offered by plan %s", region, to.plan.Name)}
	}
	return region, nil
}

// offersRegion reports whether plan e offers region in platform region pr.
func (c *Catalog) offersRegion(e *planEntry, pr, region string) bool {
	regional, err := c.entryFor(e.plan.ID, pr)
	return err == nil && hasOption(regional.offers[e.plan.Provider].regions, region)
}

// autoScalerProblem checks autoScalerMin <= autoScalerMax after a PATCH that sets one or both,
// naming the field the PATCH set and where the other value comes from.
func autoScalerProblem(plan Plan, stored ProvisioningParameters, patch updateParameters, merged ProvisioningParameters) *FieldProblem {
	if patch.AutoScalerMin == nil && patch.AutoScalerMax == nil {
		return nil
	}
	minNodes, _ := valueOr(merged.AutoScalerMin, plan.DefaultAutoScalerMin)
	maxNodes, _ := valueOr(merged.AutoScalerMax, plan.DefaultAutoScalerMax)
	if minNodes <= maxNodes {
		return nil
	}
	source := func(v *int) string {
		if v != nil {
			return "the runtime's current value"
		}
		return "the plan's default"
	}
	switch {
	case patch.AutoScalerMin != nil && patch.AutoScalerMax != nil:
		return &FieldProblem{Field: paramAutoScalerMin, Message: fmt.Sprintf("must not be greater than autoScalerMax (%d > %d)", minNodes, maxNodes)}
	case patch.AutoScalerMin != nil:
		return &FieldProblem{Field: paramAutoScalerMin, Message: fmt.Sprintf("must not be greater than autoScalerMax (%d > %d, %s)", minNodes, maxNodes, source(stored.AutoScalerMax))}
	default:
		return &FieldProblem{Field: paramAutoScalerMax, Message: fmt.Sprintf("must not be less than autoScalerMin (%d < %d, %s)", maxNodes, minNodes, source(stored.AutoScalerMin))}
	}
}
