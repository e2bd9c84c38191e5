package catalog

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation"
)

// KymaWorkerName is the Kyma worker pool's name; additional pools may not take it.
const KymaWorkerName = "cpu-worker-0"

// Bounds of the seed's worker parameters and of additional pools.
const (
	minVolumeSizeGb   = 50
	maxVolumeSizeGb   = 1024
	poolNameMaxLength = 15
	// haPoolMinNodes is the least nodes of a pool spread over zones: one per zone.
	haPoolMinNodes = maxZones
)

// poolNamePattern is a DNS label: pool names become node labels and Gardener resource names.
const poolNamePattern = "^[a-z0-9]([-a-z0-9]*[a-z0-9])?$"

// TaintEffects are the effects a pool's taint may have.
var TaintEffects = []string{"NoSchedule", "PreferNoSchedule", "NoExecute"}

// haPool reports an additional pool spread over zones: haZones on a multi-zone plan.
func haPool(plan Plan, p WorkerPool) bool { return p.HA() && plan.MaxZonesCount > 1 }

// addRolloutSchemas adds the Kyma worker pool's roll-out parameters, which create and update
// accept alike, as upstream does.
func addRolloutSchemas(p *properties, plan Plan) {
	p.add(paramMaxSurge, map[string]any{
		"type": "integer", "title": "Max surge", "minimum": 0, "maximum": plan.AutoScalerMax,
		"description": "Nodes added above the maximum while the pool rolls out a change (default: one per zone).",
	})
	p.add(paramMaxUnavailable, map[string]any{
		"type": "integer", "title": "Max unavailable", "minimum": 0, "maximum": plan.AutoScalerMax,
		"description": "Nodes that may be unavailable while the pool rolls out a change (default 0).",
	})
}

// addWorkerSchemas adds the Kyma worker pool's seed parameters and the additional pools.
func (c *Catalog) addWorkerSchemas(p *properties, e *planEntry) {
	plan := e.plan
	if plan.MaxZonesCount > 1 {
		p.add(paramZones, map[string]any{
			"type": "array", "title": "Zones", "uniqueItems": true, "minItems": 1, "maxItems": plan.MaxZonesCount,
			"description": "Availability zones of the Kyma worker nodes, by name (Azure: 1, 2, 3; AWS: eu-central-1a; GCP: europe-west3-a). Instead of zonesCount.",
			"items":       map[string]any{"type": "string", "minLength": 1},
		})
	}
	addRolloutSchemas(p, plan)
	p.add(paramVolumeSizeGb, map[string]any{
		"type": "integer", "title": "Volume size (GB)", "minimum": minVolumeSizeGb, "maximum": maxVolumeSizeGb,
		"default":     plan.VolumeSizeGb,
		"description": "Disk size of each Kyma worker node.",
	})
	if plan.AdditionalPools() {
		p.add(paramAdditionalPools, poolsSchema(e, true))
		p.add(paramGVisor, gvisorSchema())
	}
}

// gvisorSchema is {enabled}: the pool's containers run in gVisor's sandbox.
func gvisorSchema() map[string]any {
	var p properties
	p.add("enabled", map[string]any{"type": "boolean", "title": "Enabled", "description": "Run the containers in gVisor's sandbox."})
	return p.object(map[string]any{"title": "gVisor", "required": []string{"enabled"},
		"description": "gVisor sandbox for the nodes' containers (global accounts allowed by the operator only)."})
}

// GVisorProblems refuses gvisor (of the runtime or a pool) for a global account the operator
// has not allowed (allowed holds account IDs or "*"). It returns nil or a *ValidationError.
func GVisorProblems(p ProvisioningParameters, globalAccountID string, allowed []string) error {
	if slices.Contains(allowed, "*") || slices.Contains(allowed, globalAccountID) {
		return nil
	}
	var problems []FieldProblem
	msg := "is not available for global account " + globalAccountID + " (APP_GVISOR_ALLOWED_GLOBAL_ACCOUNTS)"
	if p.GVisor.On() {
		problems = append(problems, FieldProblem{Field: paramGVisor, Message: msg})
	}
	if p.AdditionalWorkerNodePools != nil {
		for i, pool := range *p.AdditionalWorkerNodePools {
			if pool.GVisor.On() {
				problems = append(problems, FieldProblem{Field: fmt.Sprintf("%s[%d].gvisor", paramAdditionalPools, i), Message: msg})
			}
		}
	}
	if len(problems) == 0 {
		return nil
	}
	return newValidationError(subjectParameters, problems)
}

// poolsSchema is additionalWorkerNodePools' schema; create carries the defaults a form shows.
func poolsSchema(e *planEntry, create bool) map[string]any {
	plan := e.plan
	def := func(s map[string]any, v any) map[string]any {
		if create {
			s["default"] = v
		}
		return s
	}
	var item properties
	item.add("name", map[string]any{
		"type": "string", "title": "Name", "minLength": 1, "maxLength": poolNameMaxLength, "pattern": poolNamePattern,
		"description": "Name of the worker pool, unique in the runtime (not " + KymaWorkerName + ").",
	})
	item.add("machineType", enumSchema("Machine Type", "Type of the pool's nodes.", e.offers[e.plan.Provider].poolMachineTypes))
	if plan.MaxZonesCount > 1 {
		item.add("haZones", def(map[string]any{
			"type": "boolean", "title": "HA zones",
			"description": "Spread the nodes over three zones (needs at least 3 nodes); cannot change later.",
		}, true))
	}
	item.add("autoScalerMin", def(map[string]any{
		"type": "integer", "title": "Minimum nodes", "minimum": 0, "maximum": plan.AutoScalerMax,
		"description": "Fewest nodes the autoscaler keeps (at least 3 with HA zones).",
	}, plan.DefaultAutoScalerMin))
	item.add("autoScalerMax", def(map[string]any{
		"type": "integer", "title": "Maximum nodes", "minimum": 1, "maximum": plan.AutoScalerMax,
		"description": "Most nodes the autoscaler may add.",
	}, plan.DefaultAutoScalerMax))
	stringMap := func(title, desc string) map[string]any {
		// _controlType keyvalue: the cockpit's key-value editor, as upstream's form has it.
		return map[string]any{"type": "object", "title": title, "description": desc, "_controlType": "keyvalue",
			"additionalProperties": map[string]any{"type": "string"}}
	}
	item.add("labels", stringMap("Labels", "Kubernetes labels of the pool's nodes."))
	item.add("annotations", stringMap("Annotations", "Kubernetes annotations of the pool's nodes."))
	var taint properties
	taint.add("key", map[string]any{"type": "string", "title": "Key", "minLength": 1})
	taint.add("value", map[string]any{"type": "string", "title": "Value"})
	taint.add("effect", map[string]any{"type": "string", "title": "Effect", "enum": TaintEffects})
	item.add("taints", map[string]any{
		"type": "array", "title": "Taints", "description": "Kubernetes taints of the pool's nodes.",
		"items": taint.object(map[string]any{"required": []string{"key", "effect"}}),
	})
	if plan.MaxAdditionalVolumeSizeGi > 0 {
		item.add(paramAdditionalVolume, additionalVolumeSchema(plan))
	}
	item.add(paramGVisor, gvisorSchema())
	if slices.Contains(plan.DisabledParameters, paramGVisor) {
		item.drop([]string{paramGVisor})
	}
	return map[string]any{
		"type": "array", "title": "Additional worker node pools",
		"description": "Worker pools beside the Kyma one. On update the list replaces the pools; [] removes them all.",
		"items":       item.object(map[string]any{"required": []string{"name", "machineType"}}),
	}
}

// workerProblems checks the seed's worker parameters against the runtime's region.
func (c *Catalog) workerProblems(provider, region string, p ProvisioningParameters) []FieldProblem {
	var problems []FieldProblem
	if len(p.Zones) > 0 {
		offered := c.RegionZones(provider, region)
		for i, z := range p.Zones {
			if !slices.Contains(offered, z) {
				problems = append(problems, FieldProblem{Field: fmt.Sprintf("zones[%d]", i),
					Message: fmt.Sprintf("%q is not a zone of region %s; choose among: %s", z, region, strings.Join(offered, ", "))})
			}
		}
		if p.ZonesCount != nil && *p.ZonesCount != len(p.Zones) {
			problems = append(problems, FieldProblem{Field: paramZones,
				Message: fmt.Sprintf("names %d zones but zonesCount is %d: send one of the two", len(p.Zones), *p.ZonesCount)})
		}
	}
	if p.MaxSurge != nil && p.MaxUnavailable != nil && *p.MaxSurge == 0 && *p.MaxUnavailable == 0 {
		problems = append(problems, FieldProblem{Field: paramMaxSurge,
			Message: "must not be 0 when maxUnavailable is 0 too: a roll-out could then replace no node"})
	}
	return problems
}

// poolProblems checks additional pools beyond their schema; stored are the runtime's pools on
// update (nil on create), whose haZones cannot change.
func poolProblems(plan Plan, pools *[]WorkerPool, stored *[]WorkerPool) []FieldProblem {
	if pools == nil {
		return nil
	}
	var problems []FieldProblem
	add := func(i int, field, format string, args ...any) {
		f := fmt.Sprintf("%s[%d]", paramAdditionalPools, i)
		if field != "" {
			f += "." + field
		}
		problems = append(problems, FieldProblem{Field: f, Message: fmt.Sprintf(format, args...)})
	}
	before := map[string]WorkerPool{}
	if stored != nil {
		for _, s := range *stored {
			before[s.Name] = s
		}
	}
	seen := map[string]int{}
	for i, pool := range *pools {
		if pool.Name == KymaWorkerName {
			add(i, "name", "%q is the Kyma worker pool's name", pool.Name)
		}
		if first, dup := seen[pool.Name]; dup {
			add(i, "name", "%q is already the name of additionalWorkerNodePools[%d]", pool.Name, first)
		}
		seen[pool.Name] = i
		minNodes, _ := valueOr(pool.AutoScalerMin, plan.DefaultAutoScalerMin)
		maxNodes, _ := valueOr(pool.AutoScalerMax, plan.DefaultAutoScalerMax)
		ha := haPool(plan, pool)
		if ha && minNodes < haPoolMinNodes {
			add(i, "autoScalerMin", "must be at least %d with haZones true (one node per zone; got %d)", haPoolMinNodes, minNodes)
		}
		if minNodes > maxNodes {
			add(i, "autoScalerMin", "must not be greater than autoScalerMax (%d > %d)", minNodes, maxNodes)
		}
		if old, ok := before[pool.Name]; ok && old.HA() != pool.HA() && plan.MaxZonesCount > 1 {
			add(i, "haZones", "cannot change: pool %s was created with haZones %t (rename the pool to create a new one)", pool.Name, old.HA())
		}
		for _, k := range slices.Sorted(maps.Keys(pool.Labels)) {
			for _, why := range validation.IsQualifiedName(k) {
				add(i, "labels."+k, "is not a label key: %s", why)
			}
			for _, why := range validation.IsValidLabelValue(pool.Labels[k]) {
				add(i, "labels."+k, "is not a label value: %s", why)
			}
		}
		for _, k := range slices.Sorted(maps.Keys(pool.Annotations)) {
			for _, why := range validation.IsQualifiedName(k) {
				add(i, "annotations."+k, "is not an annotation key: %s", why)
			}
		}
		taints := map[string]int{}
		for j, t := range pool.Taints {
			for _, why := range validation.IsQualifiedName(t.Key) {
				add(i, fmt.Sprintf("taints[%d].key", j), "is not a taint key: %s", why)
			}
			for _, why := range validation.IsValidLabelValue(t.Value) {
				add(i, fmt.Sprintf("taints[%d].value", j), "is not a taint value: %s", why)
			}
			if first, dup := taints[t.Key+"\x00"+t.Effect]; dup {
				add(i, fmt.Sprintf("taints[%d]", j), "repeats key %q with effect %s of taints[%d]", t.Key, t.Effect, first)
			}
			taints[t.Key+"\x00"+t.Effect] = j
		}
	}
	return problems
}
