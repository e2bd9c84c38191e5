package httpapi

import (
	"context"
	"encoding/json"
	"net/http"
	"time"
)

func healthz(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write([]byte(`{"status":"ok"}` + "\n"))
}

// readyz answers 503 with the reason while ready fails, so that a load
// balancer keeps traffic away from a replica without a usable database.
func readyz(ready func(ctx context.Context) error) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		ctx, cancel := context.WithTimeout(req.Context(), 2*time.Second)
		defer cancel()
		w.Header().Set("Content-Type", "application/json")
		if ready != nil {
			if err := ready(ctx); err != nil {
				w.WriteHeader(http.StatusServiceUnavailable)
				_ = json.NewEncoder(w).Encode(map[string]string{"status": "unavailable", "reason": err.Error()})
				return
			}
		}
		_, _ = w.Write([]byte(`{"status":"ready"}` + "\n"))
	})
}
