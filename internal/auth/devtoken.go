package auth

import (
	"crypto/rand"
	"crypto/subtle"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"mime"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"
)

const (
	devClientFile = "dev-client.json"
	devClientID   = "keb-dev"
	devTokenTTL   = time.Hour
	// maxTokenRequest bounds the body of a token request; real ones are tiny.
	maxTokenRequest = 64 << 10
)

// DevClient is the client-credentials pair `keb dev` prints at start.
type DevClient struct {
	ID     string `json:"client_id"`
	Secret string `json:"client_secret"`
}

// LoadOrCreateDevClient reads dir/dev-client.json, creating it (mode 0600)
// with a random secret on first use.
func LoadOrCreateDevClient(dir string) (DevClient, error) {
	path := filepath.Join(dir, devClientFile)
	data, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		data, err = createDevClientFile(path)
	}
	if err != nil {
		return DevClient{}, fmt.Errorf("loading dev client %s: %w", path, err)
	}
	var c DevClient
	if err := json.Unmarshal(data, &c); err != nil {
		return DevClient{}, fmt.Errorf("loading dev client %s: %w", path, err)
	}
	if c.ID == "" || c.Secret == "" {
		return DevClient{}, fmt.Errorf("loading dev client %s: client_id and client_secret must be set", path)
	}
	return c, nil
}

func createDevClientFile(path string) ([]byte, error) {
	secret := make([]byte, 32)
	if _, err := rand.Read(secret); err != nil {
		return nil, fmt.Errorf("generating secret: %w", err)
	}
	data, err := json.MarshalIndent(DevClient{ID: devClientID, Secret: base64.RawURLEncoding.EncodeToString(secret)}, "", "  ")
	if err != nil {
		return nil, err
	}
	return writeFileOnce(path, append(data, '\n'))
}

// DevTokenHandler serves the DEV-ONLY OAuth2 token endpoint (RFC 6749 §4.4,
// client_credentials grant) that mints tokens with key. It accepts
// urlencoded and multipart bodies because the documented tutorial posts with
// `curl -F`.
func DevTokenHandler(key *DevKey, client DevClient, issuer, audience string) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost {
			w.Header().Set("Allow", http.MethodPost)
			writeOAuthError(w, http.StatusMethodNotAllowed, "invalid_request", "use POST")
			return
		}
		r.Body = http.MaxBytesReader(w, r.Body, maxTokenRequest)
		if err := parseTokenForm(r); err != nil {
			writeOAuthError(w, http.StatusBadRequest, "invalid_request", err.Error())
			return
		}
		if err := authenticateClient(r, client); err != nil {
			w.Header().Set("WWW-Authenticate", `Basic realm="keb-dev"`)
			writeOAuthError(w, http.StatusUnauthorized, "invalid_client", err.Error())
			return
		}
		switch grant := r.PostForm.Get("grant_type"); grant {
		case "client_credentials":
		case "":
			writeOAuthError(w, http.StatusBadRequest, "invalid_request", "grant_type is required")
			return
		default:
			writeOAuthError(w, http.StatusBadRequest, "unsupported_grant_type", "only client_credentials is supported")
			return
		}
		var scopes []string
		for _, s := range strings.Fields(r.PostForm.Get("scope")) {
			if !slices.Contains(allScopes, s) {
				writeOAuthError(w, http.StatusBadRequest, "invalid_scope", "unknown scope "+s)
				return
			}
			if !slices.Contains(scopes, s) {
				scopes = append(scopes, s)
			}
		}
		if len(scopes) == 0 {
			scopes = allScopes
		}
		token, err := key.Mint(issuer, audience, client.ID, scopes, devTokenTTL)
		if err != nil {
			writeOAuthError(w, http.StatusInternalServerError, "server_error", err.Error())
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Cache-Control", "no-store")
		w.Header().Set("Pragma", "no-cache")
		_ = json.NewEncoder(w).Encode(map[string]any{
			"access_token": token,
			"token_type":   "bearer",
			"expires_in":   int(devTokenTTL.Seconds()),
			"scope":        strings.Join(scopes, " "),
		})
	})
}

func parseTokenForm(r *http.Request) error {
	mediaType, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type"))
	if mediaType == "multipart/form-data" {
		// Also fills r.PostForm with the multipart values.
		if err := r.ParseMultipartForm(maxTokenRequest); err != nil {
			return fmt.Errorf("parsing multipart body: %w", err)
		}
		return nil
	}
	if err := r.ParseForm(); err != nil {
		return fmt.Errorf("parsing form body: %w", err)
	}
	return nil
}

// authenticateClient checks HTTP Basic credentials (form-urlencoded inside,
// RFC 6749 §2.3.1) or, alternatively, client_id/client_secret form fields.
func authenticateClient(r *http.Request, client DevClient) error {
	id, secret, basic := r.BasicAuth()
	if basic {
		if r.PostForm.Has("client_secret") {
			return errors.New("use only one client authentication method")
		}
		id, secret = formUnescape(id), formUnescape(secret)
	} else {
		id, secret = r.PostForm.Get("client_id"), r.PostForm.Get("client_secret")
		if id == "" && secret == "" {
			return errors.New("client authentication required")
		}
	}
	idOK := subtle.ConstantTimeCompare([]byte(id), []byte(client.ID)) == 1
	secretOK := subtle.ConstantTimeCompare([]byte(secret), []byte(client.Secret)) == 1
	if !idOK || !secretOK {
		return errors.New("invalid client credentials")
	}
	return nil
}

// formUnescape undoes the form encoding of Basic credentials; clients that
// skip the encoding (most do) are unaffected unless they use '%' or '+'.
func formUnescape(s string) string {
	if u, err := url.QueryUnescape(s); err == nil {
		return u
	}
	return s
}

func writeOAuthError(w http.ResponseWriter, status int, code, description string) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(map[string]string{"error": code, "error_description": description})
}
