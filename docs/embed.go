// Package docs embeds the documents keb serves itself: the OpenAPI document
// at /openapi.yaml.
package docs

import _ "embed"

// OpenAPI is docs/openapi.yaml, the OpenAPI 3.1 document of every endpoint.
//
//go:embed openapi.yaml
var OpenAPI []byte
