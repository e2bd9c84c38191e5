package guardrails

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sirupsen/logrus"
)

// FileBlocklist is a blocklist file that keb reads again when it changes:
// mounted from a ConfigMap, the file is replaced when the ConfigMap is.
// A change that does not parse is logged and ignored (the last good rules
// stay); only the start refuses a bad file.
type FileBlocklist struct {
	path string
	log  logrus.FieldLogger
	cur  atomic.Pointer[Blocklist]
	raw  []byte
	mu   sync.Mutex // serialises reloads
}

// LoadFile reads and parses the blocklist file at path: an error means keb
// must not start.
func LoadFile(path string, log logrus.FieldLogger) (*FileBlocklist, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("reading the operation blocklist: %w", err)
	}
	b, err := Parse(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	f := &FileBlocklist{path: path, log: log, raw: data}
	f.cur.Store(b)
	return f, nil
}

// Blocked implements the broker's blocklist with the current rules.
func (f *FileBlocklist) Blocked(op Operation, plan, globalAccount string) (string, bool) {
	return f.cur.Load().Blocked(op, plan, globalAccount)
}

// Reload reads the file again and takes its rules if they changed and
// parse; it reports whether it took new rules.
func (f *FileBlocklist) Reload() (bool, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	data, err := os.ReadFile(f.path)
	if err != nil {
		return false, fmt.Errorf("reading the operation blocklist: %w", err)
	}
	if bytes.Equal(data, f.raw) {
		return false, nil
	}
	b, err := Parse(data)
	if err != nil {
		return false, fmt.Errorf("%s: %w (the previous rules stay)", f.path, err)
	}
	f.raw = data
	f.cur.Store(b)
	return true, nil
}

// Watch reloads the file every interval until ctx ends.
func (f *FileBlocklist) Watch(ctx context.Context, interval time.Duration) {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			changed, err := f.Reload()
			switch {
			case err != nil:
				f.log.WithError(err).Error("operation blocklist not reloaded")
			case changed:
				f.log.WithField("rules", f.cur.Load().Rules()).Info("operation blocklist reloaded")
			}
		}
	}
}

// AllowedGlobalAccounts restricts provisioning to a list of global
// accounts (APP_BROKER_RESTRICT_TO_ALLOWED_GLOBAL_ACCOUNTS).
type AllowedGlobalAccounts struct {
	Restrict bool
	Accounts []string
}

// Refusal is the message refusing a global account; "" when it may
// provision.
func (a AllowedGlobalAccounts) Refusal(globalAccount string) string {
	if !a.Restrict {
		return ""
	}
	for _, g := range a.Accounts {
		if g == globalAccount {
			return ""
		}
	}
	return fmt.Sprintf("The Global Account %s is not allowed to provision a Kyma runtime", globalAccount)
}
