package guardrails

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/kyma-keb/keb/internal/cis"
)

// entitlements is CIS's entitlements API (cis.Entitlements).
type entitlements interface {
	Amount(ctx context.Context, plan, subaccountID string) (int, error)
}

// subaccountInstances counts a subaccount's live instances of a plan.
type subaccountInstances interface {
	InstancesOfSubaccountPlan(ctx context.Context, subaccountID, planID, exceptInstanceID string) (int, error)
}

// Quota enforces the subaccount's entitlement of a plan: a provisioning
// beyond the instances CIS assigns the subaccount is refused.
type Quota struct {
	Entitlements entitlements
	Instances    subaccountInstances
	// SkipPlans (names) are not checked: plans a global account has one of
	// anyway (trial, free).
	SkipPlans []string
}

// ErrQuotaUnavailable (wrapped) means the quota could not be read: CIS did
// not answer, or the instances could not be counted.
var ErrQuotaUnavailable = errors.New("the subaccount's quota could not be checked")

// Refusal returns upstream's 400 text when provisioning instanceID of the
// plan in the subaccount would exceed its quota (or the subaccount is
// unknown to CIS), "" when it may go ahead, or ErrQuotaUnavailable.
func (q *Quota) Refusal(ctx context.Context, planID, planName, subaccountID, instanceID string) (string, error) {
	if slices.Contains(q.SkipPlans, planName) {
		return "", nil
	}
	amount, err := q.Entitlements.Amount(ctx, planName, subaccountID)
	switch {
	case errors.Is(err, cis.ErrSubaccountUnknown):
		return fmt.Sprintf("Subaccount %s does not exist", subaccountID), nil
	case err != nil:
		return "", fmt.Errorf("%w: %w", ErrQuotaUnavailable, err)
	}
	// The instance itself is left out: a PUT sent again must get its
	// instance's answer, not a refusal.
	have, err := q.Instances.InstancesOfSubaccountPlan(ctx, subaccountID, planID, instanceID)
	if err != nil {
		return "", fmt.Errorf("%w: %w", ErrQuotaUnavailable, err)
	}
	if have >= amount {
		return fmt.Sprintf("Kyma instances quota exceeded for plan %s. assignedQuota: %d, remainingQuota: 0. Contact your administrator.",
			planName, amount), nil
	}
	return "", nil
}
