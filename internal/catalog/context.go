package catalog

import (
	"encoding/json"
	"fmt"
	"strings"
	"sync"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

// ProvisioningContext is the validated OSB context of a provision request.
type ProvisioningContext struct {
	GlobalAccountID string `json:"globalaccount_id"`
	SubAccountID    string `json:"subaccount_id"`
	// UserID is lower-cased: platforms send the same user with varying case.
	UserID      string `json:"user_id"`
	Platform    string `json:"platform,omitempty"`
	LicenseType string `json:"license_type,omitempty"`
	Active      *bool  `json:"active,omitempty"`
	// SMOperatorCredentials hold a secret: encrypt at rest, never log.
	SMOperatorCredentials *SMOperatorCredentials `json:"sm_operator_credentials,omitempty"`
}

// SMOperatorCredentials are the Service Manager credentials BTP Manager needs in the runtime.
type SMOperatorCredentials struct {
	ClientID     string `json:"clientid"`
	ClientSecret string `json:"clientsecret"`
	SMURL        string `json:"sm_url"`
	URL          string `json:"url"`
	XSAppName    string `json:"xsappname"`
}

// String hides the secret, so that logging the credentials by accident leaks nothing.
func (c SMOperatorCredentials) String() string {
	return fmt.Sprintf("{clientid:%s clientsecret:*** sm_url:%s url:%s xsappname:%s}", c.ClientID, c.SMURL, c.URL, c.XSAppName)
}

// GoString hides the secret from %#v as well.
func (c SMOperatorCredentials) GoString() string { return c.String() }

const subjectContext = "context"

// contextSchema is the OSB context keb requires. Unknown fields are allowed: platforms send more
// than keb reads. BTP Manager rejects a Secret with an empty key, so the credentials, when sent,
// must be complete.
// The account IDs label the runtime's resources, so they must be label values (at most 63
// characters, labelValuePattern).
const contextSchema = `{
  "$schema": "http://json-schema.org/draft-04/schema#",
  "type": "object",
  "required": ["globalaccount_id", "subaccount_id", "user_id"],
  "properties": {
    "globalaccount_id": {"type": "string", "minLength": 1, "maxLength": 63, "pattern": "` + labelValuePattern + `"},
    "subaccount_id": {"type": "string", "minLength": 1, "maxLength": 63, "pattern": "` + labelValuePattern + `"},
    "user_id": {"type": "string", "minLength": 1},
    "platform": {"type": "string"},
    "license_type": {"type": "string"},
    "active": {"type": "boolean"},
    "sm_operator_credentials": {
      "type": "object",
      "required": ["clientid", "clientsecret", "sm_url", "url"],
      "properties": {
        "clientid": {"type": "string", "minLength": 1},
        "clientsecret": {"type": "string", "minLength": 1},
        "sm_url": {"type": "string", "minLength": 1},
        "url": {"type": "string", "minLength": 1},
        "xsappname": {"type": "string"}
      }
    }
  }
}`

type compiledSchema struct {
	schema *jsonschema.Schema
	doc    map[string]any
}

// compiledContextSchema compiles contextSchema once, on first use.
var compiledContextSchema = sync.OnceValues(func() (compiledSchema, error) {
	sch, doc, err := compileSchema(newSchemaCompiler(), "keb:///context.json", []byte(contextSchema))
	return compiledSchema{schema: sch, doc: doc}, err
})

// compiledUpdateContextSchema is contextSchema without its required fields: a PATCH may send only
// what changed, but what it sends must have the same shape (complete credentials above all).
var compiledUpdateContextSchema = sync.OnceValues(func() (compiledSchema, error) {
	var doc map[string]any
	if err := json.Unmarshal([]byte(contextSchema), &doc); err != nil {
		return compiledSchema{}, fmt.Errorf("decoding context schema: %w", err)
	}
	delete(doc, "required")
	raw, err := json.Marshal(doc)
	if err != nil {
		return compiledSchema{}, fmt.Errorf("encoding update context schema: %w", err)
	}
	sch, sdoc, err := compileSchema(newSchemaCompiler(), "keb:///update-context.json", raw)
	return compiledSchema{schema: sch, doc: sdoc}, err
})

// MaxContextSize caps the raw context of a PUT and a PATCH alike; platforms send a few hundred
// bytes, and the context is stored.
const MaxContextSize = 64 << 10

// contextKeys are the context fields keb reads, and credentialKeys those of
// sm_operator_credentials. encoding/json matches keys case-insensitively, so a key differing from
// one of these only in case would be read as it (skipping the schema, which is case-sensitive)
// and stored as an unknown field in plain text: such keys are refused.
var (
	contextKeys    = []string{"globalaccount_id", "subaccount_id", "user_id", "platform", "license_type", "active", "sm_operator_credentials"}
	credentialKeys = []string{"clientid", "clientsecret", "sm_url", "url", "xsappname"}
)

// ValidateContext checks a provision request's OSB context: globalaccount_id, subaccount_id and
// user_id are required, and sm_operator_credentials, when present, must carry non-empty
// clientid, clientsecret, sm_url and url. Bad input gives a *ValidationError naming the fields.
func ValidateContext(raw json.RawMessage) (ProvisioningContext, error) {
	var ctx ProvisioningContext
	if err := validateContext(compiledContextSchema, raw, &ctx); err != nil {
		return ProvisioningContext{}, err
	}
	ctx.UserID = strings.ToLower(ctx.UserID)
	return ctx, nil
}

// UpdateContext is the validated OSB context of an update (PATCH) request: every field is
// optional.
type UpdateContext struct {
	GlobalAccountID string `json:"globalaccount_id"`
	SubAccountID    string `json:"subaccount_id"`
	Active          *bool  `json:"active"`
	// SMOperatorCredentials hold a secret: encrypt at rest, never log.
	SMOperatorCredentials *SMOperatorCredentials `json:"sm_operator_credentials"`
}

// ValidateUpdateContext checks a PATCH's OSB context with the PUT's rules (size, depth, field
// types, exact key case, complete credentials) except that no field is required.
func ValidateUpdateContext(raw json.RawMessage) (UpdateContext, error) {
	var ctx UpdateContext
	if err := validateContext(compiledUpdateContextSchema, raw, &ctx); err != nil {
		return UpdateContext{}, err
	}
	return ctx, nil
}

func validateContext(compiled func() (compiledSchema, error), raw json.RawMessage, into any) error {
	cs, err := compiled()
	if err != nil {
		return fmt.Errorf("validate context: %w", err)
	}
	doc, verr := decodeObject(subjectContext, raw, MaxContextSize)
	if verr != nil {
		return verr
	}
	if problems := caseVariants(doc); len(problems) > 0 {
		return newValidationError(subjectContext, problems)
	}
	if err := cs.schema.Validate(doc); err != nil {
		return asValidationError(subjectContext, err, doc, cs.doc)
	}
	if err := decodeValidated(doc, into); err != nil {
		return fmt.Errorf("validate context: %w", err)
	}
	return nil
}

// caseVariants names every key of the context, and of its sm_operator_credentials, that differs
// from a field keb reads only in letter case.
func caseVariants(doc any) []FieldProblem {
	obj, ok := doc.(map[string]any)
	if !ok {
		return nil
	}
	problems := keyVariants("", obj, contextKeys)
	if creds, ok := obj["sm_operator_credentials"].(map[string]any); ok {
		problems = append(problems, keyVariants("sm_operator_credentials.", creds, credentialKeys)...)
	}
	return problems
}

func keyVariants(prefix string, obj map[string]any, known []string) []FieldProblem {
	var problems []FieldProblem
	for k := range obj {
		for _, want := range known {
			if k != want && strings.EqualFold(k, want) {
				problems = append(problems, FieldProblem{Field: prefix + k,
					Message: fmt.Sprintf("is not a context field; field names are case-sensitive: use %q", want)})
			}
		}
	}
	return problems
}
