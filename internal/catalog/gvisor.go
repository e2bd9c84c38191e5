package catalog

import (
	"fmt"
	"slices"
)

// OfferGVisor puts gvisor (the runtime's and each pool's) into the plans' forms, as upstream's
// broker.gvisorEnabled does. Without it, as upstream's shipped false, no schema names gvisor and
// the plans that would offer it accept it all the same, checked here instead of by the schema;
// whether the global account may turn it on is GVisorProblems' to say either way.
func OfferGVisor() LoadOption {
	return func(c *Catalog) { c.gvisorOffered = true }
}

// acceptsGVisor reports whether a plan takes gvisor, in its form or not: the plans with
// additional worker pools that do not disable it.
func acceptsGVisor(plan Plan) bool {
	return plan.AdditionalPools() && !slices.Contains(plan.DisabledParameters, paramGVisor)
}

// withoutSchemalessGVisor checks the gvisor values of doc (the runtime's and each pool's) that
// the plan accepts without its schema naming them, and returns doc without them for the schema
// to check the rest; doc itself is not changed. With gvisor in the form, or on a plan that does
// not take it, doc is returned as it is.
func (c *Catalog) withoutSchemalessGVisor(plan Plan, doc any) (any, []FieldProblem) {
	obj, ok := doc.(map[string]any)
	if !ok || c.gvisorOffered || !acceptsGVisor(plan) {
		return doc, nil
	}
	var problems []FieldProblem
	rest := make(map[string]any, len(obj))
	for k, v := range obj {
		rest[k] = v
	}
	if v, sent := obj[paramGVisor]; sent {
		problems = append(problems, gvisorValueProblems(paramGVisor, v)...)
		delete(rest, paramGVisor)
	}
	if pools, isList := obj[paramAdditionalPools].([]any); isList {
		stripped := make([]any, len(pools))
		for i, item := range pools {
			stripped[i] = item
			pool, isObject := item.(map[string]any)
			v, sent := pool[paramGVisor]
			if !isObject || !sent {
				continue
			}
			problems = append(problems, gvisorValueProblems(fmt.Sprintf("%s[%d].%s", paramAdditionalPools, i, paramGVisor), v)...)
			copied := make(map[string]any, len(pool))
			for k, pv := range pool {
				if k != paramGVisor {
					copied[k] = pv
				}
			}
			stripped[i] = copied
		}
		rest[paramAdditionalPools] = stripped
	}
	return rest, problems
}

// gvisorValueProblems checks one gvisor value as gvisorSchema would: {"enabled": bool}.
func gvisorValueProblems(field string, v any) []FieldProblem {
	obj, ok := v.(map[string]any)
	if !ok {
		return []FieldProblem{{Field: field, Message: `must be an object such as {"enabled": true}`}}
	}
	var problems []FieldProblem
	enabled, sent := obj["enabled"]
	if _, isBool := enabled.(bool); !sent || !isBool {
		problems = append(problems, FieldProblem{Field: field + ".enabled", Message: "is required and must be a boolean"})
	}
	for k := range obj {
		if k != "enabled" {
			problems = append(problems, FieldProblem{Field: field + "." + k, Message: "is not a supported parameter"})
		}
	}
	return problems
}

// dropGVisor removes gvisor from a built schema: from its root and from its pools' items.
func dropGVisor(doc map[string]any) {
	drop := func(s map[string]any) {
		props, _ := s["properties"].(map[string]any)
		delete(props, paramGVisor)
		if order, ok := s["_controlsOrder"].([]string); ok {
			s["_controlsOrder"] = slices.DeleteFunc(slices.Clone(order), func(n string) bool { return n == paramGVisor })
		}
	}
	drop(doc)
	props, _ := doc["properties"].(map[string]any)
	pools, _ := props[paramAdditionalPools].(map[string]any)
	if items, ok := pools["items"].(map[string]any); ok {
		drop(items)
	}
}
