package migrations

import (
	"fmt"
	"io/fs"
	"maps"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// Migrations run while the previous release's replicas serve (a rolling
// upgrade), so a migration must never hold a lock that stops their queries
// for longer than a moment. keb's migrator opens every migration's
// connections with lock_timeout and statement_timeout
// (storage.MigrateUpWith; TestEveryMigrationRunsWithTheLimits proves every
// statement runs under them); this lint keeps the files from undoing that
// and from the slow locking statements: an index on a table an earlier
// migration created is built CONCURRENTLY, in a migration without a
// transaction whose every statement is safe to run again.

// grandfathered are the migrations that broke these rules before the lint
// existed. They ran in every database keb serves: editing them now would
// not change how they ran, and moving their indexes to a later migration
// would change the schema the releases between them rely on.
var grandfathered = map[int64]string{
	2:  "instances_runtime_id_idx on instances",
	4:  "instances_archive_created_idx on instances_archive",
	5:  "four listing indexes on instances",
	8:  "recreates the one-trial-per-global-account unique index on instances",
	9:  "operations_orchestration_running_idx on operations",
	12: "instances_target_secret_idx on instances",
	// 13 stays as it is: the unique index is the constraint the accept
	// transaction relies on from release 13 on (a second PUT of a
	// one-per-global-account plan fails on it with 23505), and 13 drops
	// the trial-only index it replaces in the same transaction. Built
	// concurrently in a later migration, a database migrated through 13 to
	// that one would hold no uniqueness in between; a transactional
	// migration cannot build CONCURRENTLY.
	13: "instances_one_per_global_account, the unique index of the one-per-global-account plans",
	15: "instances_kyma_state_created_idx on instances",
	16: "instances_archive_leftovers_idx on instances_archive",
}

var (
	createTable   = regexp.MustCompile(`(?i)\bCREATE\s+TABLE\s+(?:IF\s+NOT\s+EXISTS\s+)?([a-z_][a-z0-9_]*)`)
	createIndex   = regexp.MustCompile(`(?i)\bCREATE\s+(?:UNIQUE\s+)?INDEX\s+(CONCURRENTLY\s+)?(IF\s+NOT\s+EXISTS\s+)?(?:[a-z_][a-z0-9_]*\s+)?ON\s+(?:ONLY\s+)?([a-z_][a-z0-9_]*)`)
	addConstraint = regexp.MustCompile(`(?i)\bALTER\s+TABLE\s+(?:ONLY\s+)?(?:IF\s+EXISTS\s+)?([a-z_][a-z0-9_]*)\s.*\bADD\s+(?:CONSTRAINT\s+[a-z_][a-z0-9_]*\s+)?(UNIQUE|PRIMARY\s+KEY|EXCLUDE)\b`)
	usingIndex    = regexp.MustCompile(`(?i)\bUSING\s+INDEX\b`)
	reindex       = regexp.MustCompile(`(?i)\bREINDEX\b`)
	concurrently  = regexp.MustCompile(`(?i)\bCONCURRENTLY\b`)
	setsLimits    = regexp.MustCompile(`(?i)(\b(SET|RESET)\s+(SESSION\s+|LOCAL\s+)?(lock_timeout|statement_timeout|ALL)\b|set_config\s*\(\s*'(lock_timeout|statement_timeout)')`)
	idempotent    = regexp.MustCompile(`(?i)\bIF\s+(NOT\s+)?EXISTS\b`)
	lineComment   = regexp.MustCompile(`--[^\n]*`)
)

// migration is one file, split as goose reads it.
type migration struct {
	version       int64
	name          string
	noTransaction bool
	up, down      []string // statements, comments removed
}

func parse(name, text string) (migration, error) {
	m := migration{name: name}
	digits := strings.SplitN(name, "_", 2)[0]
	v, err := strconv.ParseInt(digits, 10, 64)
	if err != nil {
		return m, fmt.Errorf("%s: no version number: %w", name, err)
	}
	m.version = v
	m.noTransaction = strings.Contains(text, "-- +goose NO TRANSACTION")
	up, down, ok := strings.Cut(text, "-- +goose Down")
	if !ok || !strings.Contains(up, "-- +goose Up") {
		return m, fmt.Errorf("%s: no -- +goose Up and Down sections", name)
	}
	_, up, _ = strings.Cut(up, "-- +goose Up")
	m.up, m.down = statements(up), statements(down)
	return m, nil
}

func statements(section string) []string {
	var out []string
	for s := range strings.SplitSeq(lineComment.ReplaceAllString(section, ""), ";") {
		if s = strings.Join(strings.Fields(s), " "); s != "" {
			out = append(out, s)
		}
	}
	return out
}

// lint lists what m does that would stop the previous release's queries;
// existing are the tables earlier migrations created.
func lint(m migration, existing map[string]bool) []string {
	var problems []string
	for _, section := range [][]string{m.up, m.down} {
		for _, s := range section {
			short := s[:min(len(s), 80)]
			if setsLimits.MatchString(s) {
				problems = append(problems, fmt.Sprintf("sets its own lock or statement timeout (the migrator's apply): %q", short))
			}
			if m.noTransaction && !idempotent.MatchString(s) {
				problems = append(problems, fmt.Sprintf("without a transaction, a statement must be safe to run again after a failure part-way (IF [NOT] EXISTS): %q", short))
			}
			if !m.noTransaction && concurrently.MatchString(s) {
				problems = append(problems, fmt.Sprintf("CONCURRENTLY cannot run in a transaction: add -- +goose NO TRANSACTION: %q", short))
			}
			if reindex.MatchString(s) && !concurrently.MatchString(s) {
				problems = append(problems, fmt.Sprintf("REINDEX locks out writes: REINDEX CONCURRENTLY: %q", short))
			}
		}
	}
	for _, s := range m.up {
		short := s[:min(len(s), 80)]
		if c := createIndex.FindStringSubmatch(s); c != nil && existing[strings.ToLower(c[3])] {
			if c[1] == "" || c[2] == "" || !m.noTransaction {
				problems = append(problems, fmt.Sprintf("builds an index on %s, a table an earlier migration created, without "+
					"CREATE INDEX CONCURRENTLY IF NOT EXISTS in a NO TRANSACTION migration (it would block the table's writes while it builds): %q",
					c[3], short))
			}
		}
		if c := addConstraint.FindStringSubmatch(s); c != nil && existing[strings.ToLower(c[1])] && !usingIndex.MatchString(s) {
			problems = append(problems, fmt.Sprintf("adds a %s constraint to %s, which builds its index under an exclusive lock: "+
				"build the unique index CONCURRENTLY first and add the constraint USING INDEX: %q", c[2], c[1], short))
		}
	}
	return problems
}

func readAll(t *testing.T) []migration {
	t.Helper()
	files, err := fs.Glob(FS, "*.sql")
	if err != nil {
		t.Fatal(err)
	}
	var ms []migration
	for _, f := range files {
		b, err := FS.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		m, err := parse(f, string(b))
		if err != nil {
			t.Fatal(err)
		}
		ms = append(ms, m)
	}
	slices.SortFunc(ms, func(a, b migration) int { return int(a.version - b.version) })
	return ms
}

// TestMigrationsNeverBlockThePreviousRelease lints every migration (see
// above). A grandfathered migration that no longer breaks a rule is
// reported too, so that the list only names real exceptions.
func TestMigrationsNeverBlockThePreviousRelease(t *testing.T) {
	t.Parallel()
	existing := map[string]bool{}
	for _, m := range readAll(t) {
		problems := lint(m, existing)
		_, excused := grandfathered[m.version]
		switch {
		case excused && len(problems) == 0:
			t.Errorf("%s is grandfathered but breaks no rule: remove it from the list", m.name)
		case !excused:
			for _, p := range problems {
				t.Errorf("%s %s", m.name, p)
			}
		}
		for _, s := range m.up {
			if c := createTable.FindStringSubmatch(s); c != nil {
				existing[strings.ToLower(c[1])] = true
			}
		}
	}
	if len(existing) == 0 {
		t.Fatal("no table found in the migrations: the lint reads nothing")
	}
}

// TestLintCatches feeds the lint migrations it must refuse (and the shapes
// it must let pass), so that a lint which matches nothing cannot pass.
func TestLintCatches(t *testing.T) {
	t.Parallel()
	existing := map[string]bool{"instances": true}
	cases := []struct {
		name, text string
		want       string // a fragment of the problem; "" means none
	}{
		{"index on an existing table", "-- +goose Up\nCREATE INDEX i ON instances (a);\n-- +goose Down\nDROP INDEX i;", "without CREATE INDEX CONCURRENTLY"},
		{"unique index in a transaction", "-- +goose Up\nCREATE UNIQUE INDEX CONCURRENTLY IF NOT EXISTS i ON instances (a);\n-- +goose Down\nDROP INDEX IF EXISTS i;",
			"cannot run in a transaction"},
		{"concurrent without IF NOT EXISTS", "-- +goose NO TRANSACTION\n-- +goose Up\nCREATE INDEX CONCURRENTLY i ON instances (a);\n-- +goose Down\nDROP INDEX CONCURRENTLY IF EXISTS i;",
			"safe to run again"},
		{"the safe shape", "-- +goose NO TRANSACTION\n-- +goose Up\n-- CREATE INDEX x ON instances (a);\nCREATE UNIQUE INDEX CONCURRENTLY IF NOT EXISTS i\n ON instances (a) WHERE a IS NOT NULL;\n-- +goose Down\nDROP INDEX CONCURRENTLY IF EXISTS i;", ""},
		{"index on a table it creates", "-- +goose Up\nCREATE TABLE t (a int);\nCREATE INDEX i ON t (a);\n-- +goose Down\nDROP TABLE t;", ""},
		{"unique constraint", "-- +goose Up\nALTER TABLE instances ADD CONSTRAINT u UNIQUE (a);\n-- +goose Down\nALTER TABLE instances DROP CONSTRAINT u;", "adds a UNIQUE constraint"},
		{"unique constraint using an index", "-- +goose Up\nALTER TABLE instances ADD CONSTRAINT u UNIQUE USING INDEX i;\n-- +goose Down\nALTER TABLE instances DROP CONSTRAINT u;", ""},
		{"lock timeout off", "-- +goose Up\nSET lock_timeout = 0;\nALTER TABLE instances ADD COLUMN b text;\n-- +goose Down\nALTER TABLE instances DROP COLUMN b;", "timeout"},
		{"statement timeout by set_config", "-- +goose Up\nSELECT set_config('statement_timeout', '0', true);\n-- +goose Down\nSELECT 1;", "timeout"},
		{"plain reindex", "-- +goose Up\nREINDEX INDEX i;\n-- +goose Down\nSELECT 1;", "REINDEX CONCURRENTLY"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			m, err := parse("00099_case.sql", c.text)
			if err != nil {
				t.Fatal(err)
			}
			problems := lint(m, maps.Clone(existing))
			switch {
			case c.want == "" && len(problems) > 0:
				t.Errorf("refused a safe migration: %v", problems)
			case c.want != "" && !slices.ContainsFunc(problems, func(p string) bool { return strings.Contains(p, c.want) }):
				t.Errorf("problems %v, want one about %q", problems, c.want)
			}
		})
	}
}
