package httpapi

import (
	"net/http"

	"github.com/kyma-keb/keb/docs"
)

// openAPI serves docs/openapi.yaml, the document of every route below; no
// auth, since it holds nothing secret and clients are generated from it.
func openAPI(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "application/yaml")
	_, _ = w.Write(docs.OpenAPI)
}
