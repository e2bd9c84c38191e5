package buildinfo

import (
	"database/sql"
	"testing"

	_ "github.com/jackc/pgx/v5/stdlib"
	"github.com/pressly/goose/v3"

	"github.com/kyma-keb/keb/migrations"
)

// TestSchemaVersionIsGoosesHead: the version reported is the one goose
// migrates to.
func TestSchemaVersionIsGoosesHead(t *testing.T) {
	// Listing the sources never connects.
	db, err := sql.Open("pgx", "postgres://127.0.0.1:1/unused")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	p, err := goose.NewProvider(goose.DialectPostgres, db, migrations.FS)
	if err != nil {
		t.Fatal(err)
	}
	srcs := p.ListSources()
	if got, want := Read().SchemaVersion, srcs[len(srcs)-1].Version; got != want || got == 0 {
		t.Fatalf("schema version %d, goose's head %d", got, want)
	}
}
