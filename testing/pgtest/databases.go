package pgtest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/kyma-keb/keb/internal/storage"
)

// dbTimeout bounds each CREATE/DROP DATABASE and the template migration.
const dbTimeout = 2 * time.Minute

var (
	// The migrated template every test database is cloned from: migrating
	// once per package and copying files is much faster than migrating each
	// test database.
	templateOnce sync.Once
	templateName string
	templateErr  error

	// created lists the databases this binary made and has not dropped yet,
	// so that Main can leave a shared server clean.
	createdMu sync.Mutex
	created   = map[string]bool{}
)

// NewPool returns a pool connected to a brand-new database with all keb
// migrations applied. The pool is closed and the database dropped when the
// test ends.
func NewPool(t testing.TB) *pgxpool.Pool {
	t.Helper()
	dbURL := NewDatabase(t)
	ctx, cancel := context.WithTimeout(context.Background(), dbTimeout)
	defer cancel()
	pool, err := storage.Open(ctx, dbURL, 0)
	if err != nil {
		t.Fatalf("pgtest: %v", err)
	}
	// Registered after NewDatabase's drop, so it runs before it.
	t.Cleanup(pool.Close)
	return pool
}

// NewDatabase is like NewPool but returns the database's URL, for tests that
// start a whole keb server or process. The database is dropped when the test
// ends, even if something is still connected to it.
func NewDatabase(t testing.TB) string {
	t.Helper()
	if admin == nil {
		t.Fatal("pgtest: no database server; the package's TestMain must call pgtest.Main(m)")
	}
	tmpl, err := template()
	if err != nil {
		t.Fatalf("pgtest: %v", err)
	}
	name := dbName("t", t.Name())
	ctx, cancel := context.WithTimeout(context.Background(), dbTimeout)
	defer cancel()
	if err := createDatabase(ctx, name, tmpl); err != nil {
		t.Fatalf("pgtest: %v", err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), dbTimeout)
		defer cancel()
		if err := dropDatabase(ctx, name); err != nil {
			t.Errorf("pgtest: %v", err)
		}
	})
	return databaseURL(adminURL, name)
}

// template returns the migrated template database, creating it on first use.
// sync.Once makes parallel tests wait for the one creation.
func template() (string, error) {
	templateOnce.Do(func() {
		began := time.Now()
		templateName = dbName("tpl", packageName())
		templateErr = createTemplate(templateName)
		if templateErr != nil {
			templateErr = fmt.Errorf("creating migrated template database %s: %w", templateName, templateErr)
			return
		}
		if testing.Verbose() {
			fmt.Fprintf(os.Stderr, "pgtest: migrated template %s in %s\n", templateName, time.Since(began).Round(time.Millisecond))
		}
	})
	return templateName, templateErr
}

func createTemplate(name string) error {
	ctx, cancel := context.WithTimeout(context.Background(), dbTimeout)
	defer cancel()
	if err := createDatabase(ctx, name, ""); err != nil {
		return err
	}
	pool, err := storage.Open(ctx, databaseURL(adminURL, name), 0)
	if err != nil {
		return err
	}
	_, err = storage.MigrateUp(ctx, pool)
	pool.Close()
	if err != nil {
		return err
	}
	// CREATE DATABASE ... TEMPLATE refuses a template anyone is connected
	// to. Closing the pool ends our sessions, but their backends exit
	// asynchronously; forbidding new connections and ending any that remain
	// makes every later clone safe.
	if _, err := admin.Exec(ctx, "ALTER DATABASE "+ident(name)+" WITH ALLOW_CONNECTIONS false"); err != nil {
		return fmt.Errorf("closing template to connections: %w", err)
	}
	if _, err := admin.Exec(ctx,
		"SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = $1 AND pid <> pg_backend_pid()", name); err != nil {
		return fmt.Errorf("ending connections to template: %w", err)
	}
	return nil
}

// createDatabase creates name, as a copy of tmpl unless tmpl is empty.
func createDatabase(ctx context.Context, name, tmpl string) error {
	sql := "CREATE DATABASE " + ident(name)
	if tmpl != "" {
		sql += " TEMPLATE " + ident(tmpl)
	}
	for attempt := 1; ; attempt++ {
		_, err := admin.Exec(ctx, sql)
		if err == nil {
			break
		}
		// "source database is being accessed by other users": a backend of
		// the template's own setup that has not quite exited yet.
		var pgErr *pgconn.PgError
		if errors.As(err, &pgErr) && pgErr.Code == "55006" && attempt < 5 {
			time.Sleep(time.Duration(attempt) * 200 * time.Millisecond)
			continue
		}
		return fmt.Errorf("%s: %w", sql, err)
	}
	createdMu.Lock()
	created[name] = true
	createdMu.Unlock()
	return nil
}

// dropDatabase drops name, cutting off any client still connected (a keb
// server a test forgot to stop must not turn into a failed cleanup).
func dropDatabase(ctx context.Context, name string) error {
	sql := "DROP DATABASE IF EXISTS " + ident(name)
	if serverNum >= 130000 {
		sql += " WITH (FORCE)"
	} else if _, err := admin.Exec(ctx,
		"SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = $1", name); err != nil {
		return fmt.Errorf("ending connections to %s: %w", name, err)
	}
	if _, err := admin.Exec(ctx, sql); err != nil {
		return fmt.Errorf("%s: %w", sql, err)
	}
	createdMu.Lock()
	delete(created, name)
	createdMu.Unlock()
	return nil
}

// dropCreated drops whatever is left, template last (a clone may still be
// in the making otherwise, though by now all tests are done).
func dropCreated(ctx context.Context) error {
	createdMu.Lock()
	var names []string
	for name := range created {
		if name != templateName {
			names = append(names, name)
		}
	}
	if created[templateName] {
		names = append(names, templateName)
	}
	createdMu.Unlock()
	var errs []error
	for _, name := range names {
		errs = append(errs, dropDatabase(ctx, name))
	}
	return errors.Join(errs...)
}

// dbName builds a database name that says where it comes from (handy when
// looking at a shared server) and cannot collide with another package or run
// using the same server. PostgreSQL truncates identifiers at 63 bytes.
func dbName(kind, hint string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(hint) {
		switch {
		case r >= 'a' && r <= 'z', r >= '0' && r <= '9':
			b.WriteRune(r)
		default:
			b.WriteByte('_')
		}
	}
	clean := b.String()
	if len(clean) > 40 {
		clean = clean[:40]
	}
	suffix := make([]byte, 4)
	_, _ = rand.Read(suffix) // crypto/rand.Read never fails
	return fmt.Sprintf("keb_%s_%s_%s", kind, clean, hex.EncodeToString(suffix))
}

// packageName guesses the package under test from the binary's name
// ("storage.test").
func packageName() string {
	name := filepath.Base(os.Args[0])
	name = strings.TrimSuffix(name, ".exe")
	return strings.TrimSuffix(name, ".test")
}

func ident(name string) string { return pgx.Identifier{name}.Sanitize() }

// databaseURL points the admin URL at another database, in either of the
// forms libpq and pgx accept.
func databaseURL(admin, name string) string {
	u, err := url.Parse(admin)
	if err == nil && (u.Scheme == "postgres" || u.Scheme == "postgresql") {
		u.Path, u.RawPath = "/"+name, ""
		return u.String()
	}
	// keyword=value form: a later dbname wins. Our names need no quoting.
	return admin + " dbname=" + name
}
