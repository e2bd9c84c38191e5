package storage

// RuntimesPageSQL exposes the page statement so a test can EXPLAIN it.
func RuntimesPageSQL(q RuntimeQuery) (string, []any) {
	page, args, _, _ := runtimesSQL(q)
	return page, args
}
