package storage

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
)

// SubaccountState is a subaccount's CIS attributes as the subaccount sync
// last applied them.
type SubaccountState struct {
	SubaccountID      string
	BetaEnabled       bool
	UsedForProduction string
	// ChangedAt is the action time of the change they came from.
	ChangedAt time.Time
}

// SaveSubaccountState stores st unless a change at least as new is stored
// already; newer reports whether st was stored (the newest change wins).
func (s *Store) SaveSubaccountState(ctx context.Context, st SubaccountState) (newer bool, err error) {
	var one int
	err = s.pool.QueryRow(ctx, `INSERT INTO subaccount_states (subaccount_id, beta_enabled, used_for_production, changed_at)
		VALUES ($1, $2, $3, $4)
		ON CONFLICT (subaccount_id) DO UPDATE SET beta_enabled = EXCLUDED.beta_enabled,
			used_for_production = EXCLUDED.used_for_production, changed_at = EXCLUDED.changed_at, updated_at = now()
		WHERE subaccount_states.changed_at < EXCLUDED.changed_at
		RETURNING 1`, st.SubaccountID, st.BetaEnabled, st.UsedForProduction, st.ChangedAt).Scan(&one)
	if errors.Is(err, pgx.ErrNoRows) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("storing the state of subaccount %s: %w", st.SubaccountID, err)
	}
	return true, nil
}

// SubaccountStateOf reads what SaveSubaccountState stored; ErrNotFound when
// nothing.
func (s *Store) SubaccountStateOf(ctx context.Context, subaccountID string) (SubaccountState, error) {
	st := SubaccountState{SubaccountID: subaccountID}
	err := s.pool.QueryRow(ctx, `SELECT beta_enabled, used_for_production, changed_at FROM subaccount_states
		WHERE subaccount_id = $1`, subaccountID).Scan(&st.BetaEnabled, &st.UsedForProduction, &st.ChangedAt)
	return st, interpretError(err)
}
