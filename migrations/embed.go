// Package migrations holds keb's versioned SQL migrations. They are embedded in
// the binary so that `keb migrate up` and `keb serve` never depend on files
// next to the executable.
package migrations

import "embed"

// FS holds the numbered goose migrations (NNNNN_name.sql).
//
//go:embed *.sql
var FS embed.FS
