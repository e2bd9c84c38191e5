package cisstub

import (
	"fmt"
	"net/http"
	"reflect"

	"github.com/kyma-keb/keb/internal/cis"
)

// Entitlements routes: CIS's, and the stand-in's own to set an amount.
const (
	// EntitlementsPattern is CIS's route (cis.EntitlementsPath).
	EntitlementsPattern = "/entitlements/v1/services/kymaruntime/plans/{plan}/subaccounts/{subaccount}/entitlements"
	// SetEntitlementPath sets a subaccount's entitlement of a plan.
	SetEntitlementPath = "/entitlements"
	// MaxEntitlements bounds what the stand-in keeps.
	MaxEntitlements = 10000
)

type entitlementKey struct{ plan, subaccount string }

// SetEntitlement makes the subaccount known with amount instances of plan
// (a plan name); a subaccount without any is unknown (404).
func (s *Server) SetEntitlement(subaccountID, plan string, amount int) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.entitlements == nil {
		s.entitlements = map[entitlementKey]int{}
	}
	k := entitlementKey{plan, subaccountID}
	if _, ok := s.entitlements[k]; !ok && len(s.entitlements) >= MaxEntitlements {
		return fmt.Errorf("the stand-in keeps at most %d entitlements", MaxEntitlements)
	}
	s.entitlements[k] = amount
	return nil
}

func (s *Server) entitlement(w http.ResponseWriter, r *http.Request) {
	if !s.admit(w, r) {
		return
	}
	plan, sub := r.PathValue("plan"), r.PathValue("subaccount")
	s.mu.Lock()
	amount, ok := s.entitlements[entitlementKey{plan, sub}]
	known := ok
	for k := range s.entitlements {
		if k.subaccount == sub {
			known = true
			break
		}
	}
	s.mu.Unlock()
	if !known {
		writeError(w, http.StatusNotFound, "NotFound", "subaccount "+sub+" does not exist")
		return
	}
	writeJSON(w, http.StatusOK, cis.WireEntitlement{Amount: amount})
}

// SetEntitlementRequest is the body of POST /entitlements.
type SetEntitlementRequest struct {
	SubaccountID string `json:"subaccount_id"`
	Plan         string `json:"plan"`
	Amount       int    `json:"amount"`
}

var setEntitlementRequest = reflect.TypeFor[SetEntitlementRequest]()

func (s *Server) setEntitlement(w http.ResponseWriter, r *http.Request) {
	var req SetEntitlementRequest
	if !decodeBody(w, r, &req, setEntitlementRequest) {
		return
	}
	if err := checkSubaccountID(req.SubaccountID); err != nil {
		writeError(w, http.StatusBadRequest, "BadRequest", err.Error())
		return
	}
	if err := checkSubaccountID(req.Plan); err != nil || req.Amount < 0 || req.Amount > 1000 {
		writeError(w, http.StatusBadRequest, "BadRequest", "plan must be a plan name and amount 0 to 1000")
		return
	}
	if err := s.SetEntitlement(req.SubaccountID, req.Plan, req.Amount); err != nil {
		writeError(w, http.StatusTooManyRequests, "TooManyRequests", err.Error())
		return
	}
	writeJSON(w, http.StatusOK, req)
}
