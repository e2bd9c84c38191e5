package pgserver

import (
	"io"
	"os"
	"strings"
)

// maxLogSize is when server.log of a long-lived `keb dev` cluster is rotated;
// pg_ctl -l appends forever otherwise.
const maxLogSize = 10 << 20

// maxTail bounds how much of server.log goes into an error message.
const maxTail = 16 << 10

// rotateLog keeps one previous server.log; failures only mean a bigger log.
func rotateLog(path string) {
	if fileSize(path) > maxLogSize {
		_ = os.Rename(path, path+".1")
	}
}

func fileSize(path string) int64 {
	st, err := os.Stat(path)
	if err != nil {
		return 0
	}
	return st.Size()
}

// readFrom returns what was appended to path after offset (at most maxTail
// bytes of it), so a startup error shows this start's messages rather than
// those of earlier runs.
func readFrom(path string, offset int64) string {
	f, err := os.Open(path)
	if err != nil {
		return "(no log: " + err.Error() + ")"
	}
	defer f.Close()
	if size := fileSize(path); size-offset > maxTail {
		offset = size - maxTail
	}
	if _, err := f.Seek(offset, io.SeekStart); err != nil {
		return "(log unreadable: " + err.Error() + ")"
	}
	b, err := io.ReadAll(f)
	if err != nil {
		return "(log unreadable: " + err.Error() + ")"
	}
	return string(b)
}

// lastLines returns the last n lines of s.
func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
