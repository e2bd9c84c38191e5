package devstack

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"

	"github.com/kyma-keb/keb/internal/config"
	"github.com/kyma-keb/keb/internal/devstack/cisstub"
)

// EndpointsFile is where a running `keb dev` tells the operator commands
// (`keb cleanup`, `keb pool`) how to reach its parts; it is removed when
// `keb dev` stops.
const EndpointsFile = "dev-endpoints.json"

// CISPrefix is where `keb dev` serves its CIS stand-in, on the broker's port.
const CISPrefix = "/dev/cis"

// Endpoints are the parts of a running `keb dev`.
type Endpoints struct {
	BrokerURL     string `json:"broker_url"`
	DatabaseURL   string `json:"database_url"`
	KCPKubeconfig string `json:"kcp_kubeconfig"`
	// CIS holds the stand-in's settings in APP_CIS_* terms.
	CISEventsURL    string `json:"cis_event_service_url"`
	CISAuthURL      string `json:"cis_auth_url"`
	CISClientID     string `json:"cis_client_id"`
	CISClientSecret string `json:"cis_client_secret"`
	CISVersion      string `json:"cis_client_version"`
	// AVSAPIEndpoint is the AVS stand-in's evaluation API ("" without one).
	AVSAPIEndpoint string `json:"avs_api_endpoint,omitempty"`
	// EDPAdminURL is the EDP stand-in's admin API ("" without one).
	EDPAdminURL string `json:"edp_admin_url,omitempty"`
	// DirectorURL is the Director stand-in's GraphQL URL ("" without one).
	DirectorURL string `json:"director_url,omitempty"`
	// IASURL is the IAS stand-in's tenant URL ("" without one), IASUser
	// and IASPassword its API user.
	IASURL      string `json:"ias_url,omitempty"`
	IASUser     string `json:"ias_user_id,omitempty"`
	IASPassword string `json:"ias_user_secret,omitempty"`
	// LMSURL is the LMS stand-in's URL ("" without one), LMSToken its
	// X-LMS-Token.
	LMSURL   string `json:"lms_url,omitempty"`
	LMSToken string `json:"lms_token,omitempty"`
	// SimPID is the process ID of keb dev's stand-ins (keb sim): `make
	// bench` counts its CPU apart from keb's.
	SimPID int `json:"sim_pid,omitempty"`
}

// LoadEndpoints reads the endpoints of the `keb dev` running in dir.
func LoadEndpoints(dir string) (Endpoints, error) {
	b, err := os.ReadFile(filepath.Join(dir, EndpointsFile))
	if errors.Is(err, os.ErrNotExist) {
		return Endpoints{}, fmt.Errorf("no keb dev running in %s (no %s): start it with `make run`, or set APP_DATABASE_URL for production", dir, EndpointsFile)
	}
	if err != nil {
		return Endpoints{}, fmt.Errorf("reading dev endpoints: %w", err)
	}
	var e Endpoints
	if err := json.Unmarshal(b, &e); err != nil {
		return Endpoints{}, fmt.Errorf("reading %s: %w", EndpointsFile, err)
	}
	return e, nil
}

// FillConfig completes cfg from the dev stack: what the operator did not set
// comes from the running `keb dev` in dir (its database, secret key, control
// plane and CIS stand-in).
func FillConfig(cfg *config.Config, dir string) error {
	e, err := LoadEndpoints(dir)
	if err != nil {
		return err
	}
	if cfg.DatabaseURL == "" {
		cfg.DatabaseURL = e.DatabaseURL
	}
	if cfg.DatabaseSecretKey == "" {
		b, err := os.ReadFile(filepath.Join(dir, "secret-key"))
		if err != nil {
			return fmt.Errorf("reading the dev secret key: %w", err)
		}
		cfg.DatabaseSecretKey = strings.TrimSpace(string(b))
	}
	if cfg.Engine.KCPKubeconfig == "" {
		cfg.Engine.KCPKubeconfig = e.KCPKubeconfig
	}
	k := &cfg.Cleanup
	if k.CISEventsURL == "" {
		k.CISEventsURL, k.CISAuthURL, k.CISVersion = e.CISEventsURL, e.CISAuthURL, e.CISVersion
		k.CISClientID, k.CISClientSecret = e.CISClientID, e.CISClientSecret
	}
	return nil
}

// devCIS is the dev stack's CIS stand-in and the settings that reach it.
// Its client secret is new on every start: the stand-in's events name
// subaccounts, and only the cleanup job (and `keb cleanup`, through the
// endpoints file) needs them. Adding an event deprovisions runtimes, so it
// needs what a DELETE needs: a token with scope broker:write (guardAdd).
func devCIS(cfg *config.Config, ln net.Listener, guardAdd func(http.Handler) http.Handler) (http.Handler, error) {
	const id = "keb-dev-cis"
	raw := make([]byte, 16)
	if _, err := rand.Read(raw); err != nil {
		return nil, fmt.Errorf("generating the CIS stand-in's secret: %w", err)
	}
	secret := hex.EncodeToString(raw)
	stub := cisstub.New(id, secret)
	host, port, _ := net.SplitHostPort(ln.Addr().String())
	if ip := net.ParseIP(host); ip == nil || ip.IsUnspecified() {
		host = "127.0.0.1"
	}
	base := "http://" + net.JoinHostPort(host, port) + CISPrefix
	k := &cfg.Cleanup
	if k.CISEventsURL == "" {
		path := cisstub.CentralEventsPath
		switch k.CISVersion {
		case "v1.0":
			path = cisstub.EventsV1Path
		case "v2.0":
			path = cisstub.EventsV2Path
		}
		k.CISEventsURL, k.CISAuthURL = base+path, base+cisstub.TokenPath
		k.CISClientID, k.CISClientSecret, k.CISClientIDFile, k.CISClientSecretFile = id, secret, "", ""
		if cfg.CISEntitlementsURL == "" {
			cfg.CISEntitlementsURL = base
		}
	}
	return CISMount(stub, guardAdd), nil
}

// CISMount serves the stand-in under CISPrefix as `keb dev` does.
func CISMount(stub *cisstub.Server, guardAdd func(http.Handler) http.Handler) http.Handler {
	return http.StripPrefix(CISPrefix, stub.Handler(guardAdd))
}

// writeEndpoints records the running stack for the operator commands.
func writeEndpoints(dir string, e Endpoints) (remove func(), err error) {
	b, err := json.MarshalIndent(e, "", "  ")
	if err != nil {
		return nil, err
	}
	path := filepath.Join(dir, EndpointsFile)
	if err := os.WriteFile(path, append(b, '\n'), 0o600); err != nil {
		return nil, fmt.Errorf("writing dev endpoints: %w", err)
	}
	return func() { _ = os.Remove(path) }, nil
}
