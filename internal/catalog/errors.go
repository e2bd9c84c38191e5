package catalog

import (
	"fmt"
	"math/big"
	"slices"
	"strconv"
	"strings"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/santhosh-tekuri/jsonschema/v6/kind"
	"golang.org/x/text/language"
	"golang.org/x/text/message"
)

// defaultPrinter renders the messages of error kinds this file has no words of its own for.
var defaultPrinter = message.NewPrinter(language.English)

// ValidationError says what is wrong with a request's parameters or context, field by field, in
// words a platform user understands. The broker answers it with 400 and Error() as description.
type ValidationError struct {
	// Subject is what was validated: "parameters" or "context".
	Subject  string
	Problems []FieldProblem
}

// FieldProblem is one offending field. Field is a dotted path with array indexes
// ("autoScalerMax", "modules.list[0].name", "globalaccount_id"); "" means the whole object.
type FieldProblem struct {
	Field   string
	Message string
}

// String returns the problem with its subject, such as "parameters.autoScalerMax: must be at most 20".
func (p FieldProblem) String(subject string) string {
	if p.Field == "" {
		return subject + ": " + p.Message
	}
	return subject + "." + p.Field + ": " + p.Message
}

// Error is one sentence naming every field, such as
// `invalid parameters: autoScalerMax must be at most 20; region "mars" is not one of: eastus, westeurope`.
func (e *ValidationError) Error() string {
	parts := make([]string, len(e.Problems))
	for i, p := range e.Problems {
		if p.Field == "" {
			parts[i] = p.Message
		} else {
			parts[i] = p.Field + " " + p.Message
		}
	}
	return "invalid " + e.Subject + ": " + strings.Join(parts, "; ")
}

// Fields returns the offending field names, in the order of Problems.
func (e *ValidationError) Fields() []string {
	out := make([]string, len(e.Problems))
	for i, p := range e.Problems {
		out[i] = p.Field
	}
	return out
}

// newValidationError sorts and de-duplicates the problems, so the same input always gives the
// same message.
func newValidationError(subject string, problems []FieldProblem) *ValidationError {
	slices.SortStableFunc(problems, func(a, b FieldProblem) int {
		if c := strings.Compare(a.Field, b.Field); c != 0 {
			return c
		}
		return strings.Compare(a.Message, b.Message)
	})
	return &ValidationError{Subject: subject, Problems: slices.Compact(problems)}
}

// schemaProblems converts jsonschema's error tree into field problems. instance is the validated
// document (to tell array indexes from property names); schemaDoc is the schema, to describe the
// alternatives of a failed oneOf.
func schemaProblems(err *jsonschema.ValidationError, instance any, schemaDoc map[string]any) []FieldProblem {
	conv := problemConverter{instance: instance, schemaDoc: schemaDoc}
	conv.walk(err)
	return conv.dropShadowed()
}

type problemConverter struct {
	instance  any
	schemaDoc map[string]any
	problems  []FieldProblem
	// typeFields are fields with a wrong JSON type, typeProblems the indexes of those problems:
	// a field's other problems add noise next to "must be a whole number".
	typeFields   map[string]bool
	typeProblems map[int]bool
}

func (c *problemConverter) walk(e *jsonschema.ValidationError) {
	switch k := e.ErrorKind.(type) {
	case *kind.Schema, *kind.Group, *kind.Reference, *kind.AllOf:
		for _, cause := range e.Causes {
			c.walk(cause)
		}
	case *kind.OneOf:
		c.oneOf(e, len(k.Subschemas) > 0)
	case *kind.AnyOf:
		c.oneOf(e, false)
	default:
		c.leaf(e)
	}
}

// oneOf reports the problems of the alternative the user evidently meant: the one whose shape
// fits the value (no wrong type, unknown or missing key right at the value). For modules,
// {"list": [{"name": ""}]} clearly means the custom list, so the user hears about the empty
// name, not about "default" being missing. When no alternative fits, it lists the alternatives.
func (c *problemConverter) oneOf(e *jsonschema.ValidationError, tooMany bool) {
	field := c.field(e.InstanceLocation)
	if tooMany {
		c.add(field, "matches more than one of its allowed forms; "+c.describeAlternatives(e))
		return
	}
	for _, branch := range e.Causes {
		if !fitsShape(branch, len(e.InstanceLocation)) {
			continue
		}
		c.walk(branch)
		return
	}
	c.add(field, "must match one of its allowed forms: "+c.describeAlternatives(e))
}

// fitsShape reports whether a branch's failures all lie deeper than the value itself, or are
// about its values rather than its keys.
func fitsShape(e *jsonschema.ValidationError, depth int) bool {
	if len(e.InstanceLocation) == depth {
		switch e.ErrorKind.(type) {
		case *kind.Type, *kind.AdditionalProperties, *kind.Required, *kind.OneOf, *kind.AnyOf, *kind.FalseSchema:
			return false
		}
	}
	for _, cause := range e.Causes {
		if !fitsShape(cause, depth) {
			return false
		}
	}
	return true
}

// describeAlternatives names each alternative by title and keys, read from the schema document
// at the failing keyword's location.
func (c *problemConverter) describeAlternatives(e *jsonschema.ValidationError) string {
	node := schemaAt(c.schemaDoc, e.SchemaURL)
	branches, _ := node["oneOf"].([]any)
	if branches == nil {
		branches, _ = node["anyOf"].([]any)
	}
	var alts []string
	for _, b := range branches {
		bm, _ := b.(map[string]any)
		var keys []string
		if order, ok := bm["_controlsOrder"].([]any); ok {
			for _, k := range order {
				keys = append(keys, fmt.Sprint(k))
			}
		}
		title, _ := bm["title"].(string)
		alts = append(alts, strings.TrimSpace(fmt.Sprintf("%s {%s}", title, strings.Join(keys, ", "))))
	}
	if len(alts) == 0 {
		return "see the plan's parameter schema"
	}
	return strings.Join(alts, " or ")
}

// schemaAt follows the JSON pointer in a schema URL's fragment through the schema document.
func schemaAt(doc map[string]any, url string) map[string]any {
	_, frag, _ := strings.Cut(url, "#")
	var node any = doc
	for _, tok := range strings.Split(strings.TrimPrefix(frag, "/"), "/") {
		if tok == "" {
			continue
		}
		tok = strings.ReplaceAll(strings.ReplaceAll(tok, "~1", "/"), "~0", "~")
		switch n := node.(type) {
		case map[string]any:
			node = n[tok]
		case []any:
			i, err := strconv.Atoi(tok)
			if err != nil || i < 0 || i >= len(n) {
				return nil
			}
			node = n[i]
		default:
			return nil
		}
	}
	m, _ := node.(map[string]any)
	return m
}

func (c *problemConverter) leaf(e *jsonschema.ValidationError) {
	field := c.field(e.InstanceLocation)
	switch k := e.ErrorKind.(type) {
	case *kind.Required:
		for _, m := range k.Missing {
			c.add(joinField(field, m), "is required")
		}
	case *kind.AdditionalProperties:
		for _, p := range k.Properties {
			c.add(joinField(field, p), "is not a supported parameter")
		}
	case *kind.Type:
		if c.typeFields == nil {
			c.typeFields, c.typeProblems = map[string]bool{}, map[int]bool{}
		}
		c.typeFields[field] = true
		c.typeProblems[len(c.problems)] = true
		c.add(field, "must be "+typeWords(k.Want)+", not "+typeWords([]string{k.Got}))
	case *kind.Enum:
		c.add(field, fmt.Sprintf("%s is not one of: %s", display(k.Got), joinValues(k.Want)))
	case *kind.Const:
		c.add(field, "must be "+display(k.Want))
	case *kind.MinLength:
		if k.Want == 1 {
			c.add(field, "must not be empty")
		} else {
			c.add(field, fmt.Sprintf("must be at least %d characters long", k.Want))
		}
	case *kind.MaxLength:
		c.add(field, fmt.Sprintf("must be at most %d characters long (is %d)", k.Want, k.Got))
	case *kind.Pattern:
		if meaning, ok := patternMeanings[k.Want]; ok {
			c.add(field, meaning)
		} else {
			c.add(field, fmt.Sprintf("must match the pattern %s", k.Want))
		}
	case *kind.Minimum:
		c.add(field, "must be at least "+ratString(k.Want))
	case *kind.Maximum:
		c.add(field, "must be at most "+ratString(k.Want))
	case *kind.ExclusiveMinimum:
		c.add(field, "must be more than "+ratString(k.Want))
	case *kind.ExclusiveMaximum:
		c.add(field, "must be less than "+ratString(k.Want))
	case *kind.MultipleOf:
		c.add(field, "must be a multiple of "+ratString(k.Want))
	case *kind.MinItems:
		c.add(field, fmt.Sprintf("must have at least %d entries", k.Want))
	case *kind.MaxItems:
		c.add(field, fmt.Sprintf("must have at most %d entries", k.Want))
	case *kind.UniqueItems:
		c.add(field, fmt.Sprintf("must not repeat entries (entries %d and %d are equal)", k.Duplicates[0], k.Duplicates[1]))
	case *kind.Format:
		c.add(field, formatWords(k.Want))
	case *kind.FalseSchema, *kind.Not:
		c.add(field, "is not allowed")
	default:
		c.add(field, e.ErrorKind.LocalizedString(defaultPrinter))
	}
}

func (c *problemConverter) add(field, msg string) {
	c.problems = append(c.problems, FieldProblem{Field: field, Message: msg})
}

// dropShadowed removes the other problems of a field whose JSON type is wrong: "must be an
// integer" says it all.
func (c *problemConverter) dropShadowed() []FieldProblem {
	var out []FieldProblem
	for i, p := range c.problems {
		if c.typeFields[p.Field] && !c.typeProblems[i] {
			continue
		}
		out = append(out, p)
	}
	return out
}

// field turns an instance location into a dotted path, writing array indexes as [i]; it walks
// the instance because a token alone cannot tell index 0 from a property named "0".
func (c *problemConverter) field(loc []string) string {
	var sb strings.Builder
	node := c.instance
	for _, tok := range loc {
		switch n := node.(type) {
		case []any:
			sb.WriteString("[" + tok + "]")
			if i, err := strconv.Atoi(tok); err == nil && i >= 0 && i < len(n) {
				node = n[i]
			} else {
				node = nil
			}
		default:
			if sb.Len() > 0 {
				sb.WriteByte('.')
			}
			sb.WriteString(tok)
			if m, ok := n.(map[string]any); ok {
				node = m[tok]
			} else {
				node = nil
			}
		}
	}
	return sb.String()
}

func joinField(parent, child string) string {
	if parent == "" {
		return child
	}
	return parent + "." + child
}

var typeNames = map[string]string{
	"string":  "a string",
	"integer": "a whole number",
	"number":  "a number",
	"boolean": "true or false",
	"object":  "an object",
	"array":   "a list",
	"null":    "null",
}

func typeWords(types []string) string {
	words := make([]string, len(types))
	for i, t := range types {
		if w, ok := typeNames[t]; ok {
			words[i] = w
		} else {
			words[i] = t
		}
	}
	return strings.Join(words, " or ")
}

func formatWords(format string) string {
	switch format {
	case "email":
		return "must be a valid e-mail address"
	case "uri":
		return "must be a valid absolute URL"
	default:
		return "must be a valid " + format
	}
}

// display renders a JSON value the way the user wrote it.
func display(v any) string {
	switch v := v.(type) {
	case string:
		return strconv.Quote(v)
	case nil:
		return "null"
	case map[string]any:
		return "an object"
	case []any:
		return "a list"
	default:
		return fmt.Sprint(v)
	}
}

func joinValues(vals []any) string {
	out := make([]string, 0, len(vals))
	for _, v := range vals {
		if s, ok := v.(string); ok && s == "" {
			continue // the forms' "not chosen"; listing "" confuses more than it helps
		}
		out = append(out, fmt.Sprint(v))
	}
	return strings.Join(out, ", ")
}

func ratString(r *big.Rat) string {
	if r.IsInt() {
		return r.Num().String()
	}
	return r.FloatString(6)
}
