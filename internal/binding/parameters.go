package binding

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"
)

// ExpirationParameter names the binding's lifetime in seconds.
const ExpirationParameter = "expiration_seconds"

// expiration reads a PUT's parameters: expiration_seconds (an integer
// between the configured bounds) or the default; any other parameter is
// refused, naming it.
func (s *Service) expiration(raw json.RawMessage) (time.Duration, error) {
	if len(bytes.TrimSpace(raw)) == 0 || string(bytes.TrimSpace(raw)) == "null" {
		return s.cfg.DefaultExpiration, nil
	}
	var params map[string]json.RawMessage
	if err := json.Unmarshal(raw, &params); err != nil {
		return 0, refuse(KindInvalid, "parameters must be a JSON object")
	}
	var unknown []string
	for k := range params {
		if k != ExpirationParameter {
			unknown = append(unknown, fmt.Sprintf("%q", k))
		}
	}
	if len(unknown) > 0 {
		slices.Sort(unknown)
		return 0, refuse(KindInvalid, "unknown parameters %s: a binding takes only %s", strings.Join(unknown, ", "), ExpirationParameter)
	}
	v, ok := params[ExpirationParameter]
	if !ok {
		return s.cfg.DefaultExpiration, nil
	}
	lo, hi := int64(s.cfg.MinExpiration/time.Second), int64(s.cfg.MaxExpiration/time.Second)
	var f float64
	if err := json.Unmarshal(v, &f); err != nil || f != math.Trunc(f) || f < float64(lo) || f > float64(hi) {
		return 0, refuse(KindInvalid, "%s must be an integer from %d to %d (got %s)", ExpirationParameter, lo, hi, truncate(string(v), 32))
	}
	return time.Duration(f) * time.Second, nil
}

func truncate(s string, n int) string {
	if len(s) > n {
		return s[:n] + "…"
	}
	return s
}
