package catalog

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math/big"
	"strings"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

// MaxParametersSize caps a request's raw parameters; nothing legitimate comes close, and the cap
// keeps schema validation and storage cheap.
const MaxParametersSize = 64 << 10

const subjectParameters = "parameters"

// ValidateParameters checks a provision request's raw OSB parameters (nil, empty or null means
// {}) against the plan's create schema — the one served in the catalog — and against the rules a
// schema cannot express: autoScalerMin <= autoScalerMax (plan defaults filling the missing one),
// module names unique, networking CIDRs that are well-formed and do not overlap, and for plans whose provider follows the platform region, a region that
// provider offers. Bad input gives a *ValidationError listing every offending field; an unknown
// plan gives an error wrapping ErrUnknownPlan.
func (c *Catalog) ValidateParameters(planID, platformRegion string, raw json.RawMessage) (ProvisioningParameters, error) {
	e, err := c.entryFor(planID, platformRegion)
	if err != nil {
		return ProvisioningParameters{}, fmt.Errorf("validate parameters: %w", err)
	}
	return c.validateParameters(e, platformRegion, raw)
}

// validateParameters is ValidateParameters against one variant of a plan.
func (c *Catalog) validateParameters(e *planEntry, platformRegion string, raw json.RawMessage) (ProvisioningParameters, error) {
	doc, verr := decodeObject(subjectParameters, raw, MaxParametersSize)
	if verr != nil {
		return ProvisioningParameters{}, verr
	}
	shown, hidden := e.splitHidden(doc)
	if hidden != nil {
		if err := e.hidden.compiled.Validate(hidden); err != nil {
			return ProvisioningParameters{}, asValidationError(subjectParameters, err, hidden, e.hidden.doc)
		}
	}
	shown, problems := c.withoutSchemalessGVisor(e.plan, shown)
	if len(problems) > 0 {
		return ProvisioningParameters{}, newValidationError(subjectParameters, problems)
	}
	if problems := unavailableProblems(e.plan, shown, e.create.doc); len(problems) > 0 {
		return ProvisioningParameters{}, newValidationError(subjectParameters, problems)
	}
	if err := e.create.compiled.Validate(shown); err != nil {
		return ProvisioningParameters{}, asValidationError(subjectParameters, err, shown, e.create.doc)
	}
	var params ProvisioningParameters
	if err := decodeValidated(doc, &params); err != nil {
		return ProvisioningParameters{}, fmt.Errorf("validate parameters: %w", err)
	}
	if problems := c.crossFieldProblems(e, platformRegion, params); len(problems) > 0 {
		return ProvisioningParameters{}, newValidationError(subjectParameters, problems)
	}
	return params, nil
}

// splitHidden parts doc into what the form shows and the hidden parameters it carries (nil:
// none, or a plan without hidden parameters).
func (e *planEntry) splitHidden(doc any) (shown any, hidden map[string]any) {
	obj, ok := doc.(map[string]any)
	if !ok || e.hidden.compiled == nil {
		return doc, nil
	}
	props, _ := e.hidden.doc["properties"].(map[string]any)
	rest := make(map[string]any, len(obj))
	for k, v := range obj {
		if _, isHidden := props[k]; isHidden {
			if hidden == nil {
				hidden = map[string]any{}
			}
			hidden[k] = v
			continue
		}
		rest[k] = v
	}
	return rest, hidden
}

// decodeObject parses raw JSON as schema input (numbers kept exact). Empty input and null
// stand for {}, as OSB allows omitting parameters and context.
func decodeObject(subject string, raw json.RawMessage, maxSize int) (any, *ValidationError) {
	if maxSize > 0 && len(raw) > maxSize {
		return nil, newValidationError(subject, []FieldProblem{{
			Message: fmt.Sprintf("must not be larger than %d KiB (got %d bytes)", maxSize>>10, len(raw)),
		}})
	}
	trimmed := bytes.TrimSpace(raw)
	if len(trimmed) == 0 || bytes.Equal(trimmed, []byte("null")) {
		return map[string]any{}, nil
	}
	if why := unstorable(trimmed); why != "" {
		return nil, newValidationError(subject, []FieldProblem{{Message: why}})
	}
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(trimmed))
	if err != nil {
		return nil, newValidationError(subject, []FieldProblem{{Message: "must be valid JSON: " + err.Error()}})
	}
	if d := depth(doc); d > MaxNesting {
		return nil, newValidationError(subject, []FieldProblem{{
			Message: fmt.Sprintf("must not nest objects and arrays more than %d levels deep (got %d)", MaxNesting, d),
		}})
	}
	return doc, nil
}

// MaxNesting bounds how deep parameters and context may nest: the schemas go four levels deep,
// and a stored context thousands of levels deep makes every later read of the instance slow.
const MaxNesting = 32

// depth is how many objects and arrays nest in a decoded document (a scalar is 0).
func depth(v any) int {
	deepest := 0
	switch t := v.(type) {
	case map[string]any:
		for _, x := range t {
			deepest = max(deepest, depth(x))
		}
	case []any:
		for _, x := range t {
			deepest = max(deepest, depth(x))
		}
	default:
		return 0
	}
	return deepest + 1
}

// asValidationError turns a schema failure into a *ValidationError.
func asValidationError(subject string, err error, doc any, schemaDoc map[string]any) error {
	var serr *jsonschema.ValidationError
	if !errors.As(err, &serr) {
		return fmt.Errorf("validate %s: %w", subject, err)
	}
	problems := schemaProblems(serr, doc, schemaDoc)
	if len(problems) == 0 {
		// Never answer "invalid" without saying why.
		problems = []FieldProblem{{Message: serr.Error()}}
	}
	return newValidationError(subject, problems)
}

// decodeValidated copies a schema-validated document into a Go struct. Numbers are first made
// plain integers where they are whole (the schema accepts 3.0 as an integer, encoding/json into
// an int does not).
func decodeValidated(doc any, into any) error {
	b, err := json.Marshal(wholeNumbers(doc))
	if err != nil {
		return fmt.Errorf("re-encode validated document: %w", err)
	}
	if err := json.Unmarshal(b, into); err != nil {
		return fmt.Errorf("decode validated document: %w", err)
	}
	return nil
}

func wholeNumbers(v any) any {
	switch v := v.(type) {
	case map[string]any:
		for k, x := range v {
			v[k] = wholeNumbers(x)
		}
		return v
	case []any:
		for i, x := range v {
			v[i] = wholeNumbers(x)
		}
		return v
	case json.Number:
		if r, ok := new(big.Rat).SetString(string(v)); ok && r.IsInt() {
			return json.Number(r.Num().String())
		}
		return v
	default:
		return v
	}
}

func (c *Catalog) crossFieldProblems(e *planEntry, platformRegion string, p ProvisioningParameters) []FieldProblem {
	var problems []FieldProblem
	plan := e.plan

	if !plan.BasicForm {
		minNodes, minDefault := valueOr(p.AutoScalerMin, plan.DefaultAutoScalerMin)
		maxNodes, maxDefault := valueOr(p.AutoScalerMax, plan.DefaultAutoScalerMax)
		if minNodes > maxNodes {
			// Name the field the user set; if they set both, the minimum is the odd one out.
			field, msg := paramAutoScalerMin, fmt.Sprintf("must not be greater than autoScalerMax (%d > %d%s)", minNodes, maxNodes, defaultNote(maxDefault))
			if minDefault {
				field, msg = paramAutoScalerMax, fmt.Sprintf("must not be less than autoScalerMin (%d < %d, the plan's default)", maxNodes, minNodes)
			}
			problems = append(problems, FieldProblem{Field: field, Message: msg})
		}
	}

	if plan.ByPlatformRegion() && p.Region != nil {
		provider := e.providerFor(platformRegion)
		offered := e.offers[provider].regions
		if !hasOption(offered, *p.Region) {
			problems = append(problems, FieldProblem{Field: paramRegion, Message: fmt.Sprintf(
				"%q is not offered in this platform region (%s); choose one of: %s",
				*p.Region, providerLabel(provider), strings.Join(optionCodes(offered), ", "))})
		}
	}

	problems = append(problems, p.Networking.problems(maxClusterNodes(plan, p))...)
	problems = append(problems, oidcProblems(p.OIDC)...)
	problems = append(problems, poolProblems(plan, p.AdditionalWorkerNodePools, nil)...)
	if !plan.Trial {
		provider := e.providerFor(platformRegion)
		region := c.regionFor(e, provider, p)
		problems = append(problems, c.workerProblems(provider, region, p)...)
		problems = append(problems, featureProblems(e.offers[provider], provider, region, p)...)
	}

	if list, ok := p.Modules.CustomList(); ok {
		seen := map[string]int{}
		for i, m := range list {
			if first, dup := seen[m.Name]; dup {
				problems = append(problems, FieldProblem{
					Field:   fmt.Sprintf("modules.list[%d].name", i),
					Message: fmt.Sprintf("%q is already listed at modules.list[%d]", m.Name, first),
				})
				continue
			}
			seen[m.Name] = i
		}
	}
	return problems
}

// maxClusterNodes is the most nodes the runtime's autoscalers allow: the
// Kyma pool's maximum and every additional pool's (plan defaults for the
// missing ones).
func maxClusterNodes(plan Plan, p ProvisioningParameters) int {
	n, _ := valueOr(p.AutoScalerMax, plan.DefaultAutoScalerMax)
	if p.AdditionalWorkerNodePools != nil {
		for _, pool := range *p.AdditionalWorkerNodePools {
			m, _ := valueOr(pool.AutoScalerMax, plan.DefaultAutoScalerMax)
			n += m
		}
	}
	return n
}

func valueOr(v *int, def int) (value int, isDefault bool) {
	if v == nil {
		return def, true
	}
	return *v, false
}

func defaultNote(isDefault bool) string {
	if isDefault {
		return ", the plan's default"
	}
	return ""
}

var providerLabels = map[string]string{
	ProviderAzure:     "Azure",
	ProviderAWS:       "AWS",
	ProviderGCP:       "GCP",
	ProviderOpenStack: "SAP Cloud Infrastructure",
	ProviderAlicloud:  "Alibaba Cloud",
	ProviderGDCH:      "GDCH",
}

func providerLabel(p string) string {
	if l, ok := providerLabels[p]; ok {
		return l
	}
	return p
}
