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
const contextSchema = `{
  "$schema": "http://json-schema.org/draft-04/schema#",
  "type": "object",
  "required": ["globalaccount_id", "subaccount_id", "user_id"],
  "properties": {
    "globalaccount_id": {"type": "string", "minLength": 1},
    "subaccount_id": {"type": "string", "minLength": 1},
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

// maxContextSize caps the raw context like the parameters; platforms send a few hundred bytes.
const maxContextSize = 64 << 10

// ValidateContext checks a provision request's OSB context: globalaccount_id, subaccount_id and
// user_id are required, and sm_operator_credentials, when present, must carry non-empty
// clientid, clientsecret, sm_url and url. Bad input gives a *ValidationError naming the fields.
func ValidateContext(raw json.RawMessage) (ProvisioningContext, error) {
	cs, err := compiledContextSchema()
	if err != nil {
		return ProvisioningContext{}, fmt.Errorf("validate context: %w", err)
	}
	doc, verr := decodeObject(subjectContext, raw, maxContextSize)
	if verr != nil {
		return ProvisioningContext{}, verr
	}
	if err := cs.schema.Validate(doc); err != nil {
		return ProvisioningContext{}, asValidationError(subjectContext, err, doc, cs.doc)
	}
	var ctx ProvisioningContext
	if err := decodeValidated(doc, &ctx); err != nil {
		return ProvisioningContext{}, fmt.Errorf("validate context: %w", err)
	}
	ctx.UserID = strings.ToLower(ctx.UserID)
	return ctx, nil
}
