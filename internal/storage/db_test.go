package storage_test

import (
	"testing"

	"github.com/kyma-keb/keb/internal/storage"
	"github.com/kyma-keb/keb/testing/pgtest"
)

// Open bounds every session's statements and idle transactions unless the
// database URL says otherwise.
func TestOpenBoundsSessions(t *testing.T) {
	t.Parallel()
	ctx := testCtx(t)
	url := pgtest.NewDatabase(t)
	for _, tc := range []struct {
		name, url, wantStatement string
	}{
		{"defaults", url, "1min"},
		{"the URL's own setting wins", url + "&statement_timeout=0", "0"},
	} {
		pool, err := storage.Open(ctx, tc.url, 2)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		var statement, idle string
		if err := pool.QueryRow(ctx, `SELECT current_setting('statement_timeout'), current_setting('idle_in_transaction_session_timeout')`).
			Scan(&statement, &idle); err != nil {
			t.Fatal(err)
		}
		pool.Close()
		if statement != tc.wantStatement || idle != "1min" {
			t.Errorf("%s: statement_timeout %q, idle_in_transaction_session_timeout %q; want %q and 1min", tc.name, statement, idle, tc.wantStatement)
		}
	}
}
