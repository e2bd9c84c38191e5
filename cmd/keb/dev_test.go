package main

import (
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// keb dev with its port taken says so, names the flag and the variable that
// change it, and starts nothing (no PostgreSQL data directory appears).
func TestDevWithPortTaken(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	port := ln.Addr().(*net.TCPAddr).Port
	dir := t.TempDir()
	code, _, errOut := runKeb("dev", "--port", fmt.Sprint(port), "--dir", dir)
	if code != 1 {
		t.Errorf("exit code %d, want 1", code)
	}
	for _, w := range []string{fmt.Sprintf("port %d", port), "--port", "APP_PORT"} {
		if !strings.Contains(errOut, w) {
			t.Errorf("stderr does not mention %q:\n%s", w, errOut)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "pgdata")); !os.IsNotExist(err) {
		t.Errorf("keb dev started PostgreSQL although its port was taken: %v", err)
	}
}
