package simstack

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"maps"
	"os"
	"slices"
	"strconv"
	"strings"

	"github.com/kyma-keb/keb/internal/config"
)

// Settings are what keb needs to reach the running stand-ins, in the terms
// of keb serve's environment (APP_AVS_API_ENDPOINT, ...): a stand-in's URLs
// and the credentials it accepts, new on every start. `keb sim` writes them
// to its settings file once every stand-in answers; `keb dev` reads them
// from there, and an operator trying keb against a cluster sources the file
// before `keb serve`.
type Settings map[string]string

// Apply points cfg's integrations at the stand-ins: the settings of keb
// serve's variables (config.BindEngine) that s holds.
func (s Settings) Apply(cfg *config.Config) error {
	var errs []error
	str := func(p *string) func(string) { return func(v string) { *p = v } }
	i64 := func(p *int64) func(string) {
		return func(v string) {
			n, err := strconv.ParseInt(v, 10, 64)
			if err != nil {
				errs = append(errs, fmt.Errorf("stand-ins' setting %q is not an integer", v))
			}
			*p = n
		}
	}
	a, e, i, l, d := &cfg.AVS, &cfg.EDP, &cfg.IAS, &cfg.LMS, &cfg.Director
	set := map[string]func(string){
		envAVSAPIEndpoint: str(&a.APIEndpoint), "APP_AVS_OAUTH_TOKEN_ENDPOINT": str(&a.OAuthTokenEndpoint),
		"APP_AVS_OAUTH_CLIENT_ID": str(&a.OAuthClientID), "APP_AVS_OAUTH_USERNAME": str(&a.OAuthUsername),
		"APP_AVS_OAUTH_PASSWORD": str(&a.OAuthPassword), "APP_AVS_INTERNAL_TESTER_ACCESS_ID": i64(&a.InternalTesterAccessID),
		"APP_AVS_EXTERNAL_TESTER_ACCESS_ID": i64(&a.ExternalTesterAccessID), "APP_AVS_GROUP_ID": i64(&a.GroupID),
		"APP_AVS_PARENT_ID": i64(&a.ParentID), "APP_AVS_TRIAL_INTERNAL_TESTER_ACCESS_ID": i64(&a.TrialInternalTesterAccessID),
		"APP_AVS_TRIAL_GROUP_ID": i64(&a.TrialGroupID), "APP_AVS_TRIAL_PARENT_ID": i64(&a.TrialParentID),
		envEDPAdminURL: str(&e.AdminURL), "APP_EDP_AUTH_URL": str(&e.AuthURL), "APP_EDP_SECRET": str(&e.Secret),
		envIASURL: str(&i.URL), "APP_IAS_USER_ID": str(&i.UserID), "APP_IAS_USER_SECRET": str(&i.UserSecret),
		"APP_IAS_IDENTITY_PROVIDER": str(&i.IdentityProvider),
		envLMSURL:                   str(&l.URL), "APP_LMS_TOKEN": str(&l.Token),
		envDirectorURL: str(&d.URL), "APP_DIRECTOR_OAUTH_TOKEN_URL": str(&d.OAuthTokenURL),
		"APP_DIRECTOR_OAUTH_CLIENT_ID": str(&d.OAuthClientID), "APP_DIRECTOR_OAUTH_CLIENT_SECRET": str(&d.OAuthClientSecret),
	}
	for _, name := range slices.Sorted(maps.Keys(s)) {
		f, ok := set[name]
		if !ok {
			errs = append(errs, fmt.Errorf("stand-ins' setting %s is not one keb dev knows", name))
			continue
		}
		f(s[name])
	}
	// A stand-in that runs is used: a configured "disabled" is for a real
	// service that keb should leave alone.
	if s[envEDPAdminURL] != "" {
		e.Disabled = false
	}
	if s[envIASURL] != "" {
		i.Disabled = false
	}
	return errors.Join(errs...)
}

// The variables that say a stand-in runs.
const (
	envAVSAPIEndpoint = "APP_AVS_API_ENDPOINT"
	envEDPAdminURL    = "APP_EDP_ADMIN_URL"
	envIASURL         = "APP_IAS_URL"
	envLMSURL         = "APP_LMS_URL"
	envDirectorURL    = "APP_DIRECTOR_URL"
)

// AVSAPIEndpoint, EDPAdminURL, IASURL and DirectorURL are the running
// stand-ins' addresses ("": not running).
func (s Settings) AVSAPIEndpoint() string { return s[envAVSAPIEndpoint] }
func (s Settings) EDPAdminURL() string    { return s[envEDPAdminURL] }
func (s Settings) IASURL() string         { return s[envIASURL] }
func (s Settings) DirectorURL() string    { return s[envDirectorURL] }

// marshal writes s as an environment file: NAME=value lines, sorted, which
// a shell sources (`set -a; . ./sim.env; set +a`). Values are URLs, hex
// secrets, names and numbers: no quoting is needed, and one that would need
// it is refused.
func (s Settings) marshal() ([]byte, error) {
	var b bytes.Buffer
	b.WriteString("# keb sim: the stand-ins' settings for keb serve (new on every start)\n")
	for _, k := range slices.Sorted(maps.Keys(s)) {
		if strings.ContainsAny(s[k], " \t\n'\"$`\\;&|<>()") {
			return nil, fmt.Errorf("stand-ins' setting %s=%q would need quoting", k, s[k])
		}
		fmt.Fprintf(&b, "%s=%s\n", k, s[k])
	}
	return b.Bytes(), nil
}

// WriteFile writes s to path (readable by its owner only: it holds the
// stand-ins' credentials), atomically: a reader never sees half of it.
func (s Settings) WriteFile(path string) error {
	b, err := s.marshal()
	if err != nil {
		return err
	}
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, b, 0o600); err != nil {
		return fmt.Errorf("writing the stand-ins' settings: %w", err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return fmt.Errorf("writing the stand-ins' settings: %w", err)
	}
	return nil
}

// ReadSettings reads what WriteFile wrote.
func ReadSettings(path string) (Settings, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	s := Settings{}
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		k, v, ok := strings.Cut(line, "=")
		if !ok {
			return nil, fmt.Errorf("%s: %q is not NAME=value", path, line)
		}
		s[k] = v
	}
	return s, sc.Err()
}
