package pgtest

// AdminURL exposes the server's admin URL to this package's own tests.
func AdminURL() string { return adminURL }
