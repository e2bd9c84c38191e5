package httpapi

import (
	"encoding/json"
	"net/http"

	"github.com/pivotal-cf/brokerapi/v10/domain"
)

// serveCatalog answers GET /v2/catalog. brokerapi's own encoding writes
// every schema slot, empty ones as `"parameters": null`, which the OSB
// catalog schema rejects; keb leaves out what is empty. The body is built
// once: the catalog does not change while keb runs.
func serveCatalog(services []domain.Service) (http.Handler, error) {
	raw, err := json.Marshal(map[string]any{"services": services})
	if err != nil {
		return nil, err
	}
	var doc map[string]any
	if err := json.Unmarshal(raw, &doc); err != nil {
		return nil, err
	}
	for _, s := range doc["services"].([]any) {
		for _, p := range s.(map[string]any)["plans"].([]any) {
			plan := p.(map[string]any)
			// schemas → service_instance|service_binding → create|update
			// → parameters: the schemas themselves are left as they are.
			if schemas, keep := withoutEmpty(plan["schemas"], 3); keep {
				plan["schemas"] = schemas
			} else {
				delete(plan, "schemas")
			}
		}
	}
	body, err := json.Marshal(doc)
	if err != nil {
		return nil, err
	}
	return http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusOK)
		_, _ = w.Write(append(body, '\n'))
	}), nil
}

// withoutEmpty drops nulls and objects left empty from the top levels of a
// decoded tree; keep is false when nothing is left of v.
func withoutEmpty(v any, levels int) (out any, keep bool) {
	switch t := v.(type) {
	case nil:
		return nil, false
	case map[string]any:
		if levels == 0 {
			return t, true
		}
		for k, x := range t {
			if y, ok := withoutEmpty(x, levels-1); ok {
				t[k] = y
			} else {
				delete(t, k)
			}
		}
		return t, len(t) > 0
	default:
		return v, true
	}
}
