package auth

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/MicahParks/jwkset"
	"github.com/golang-jwt/jwt/v5"
	"github.com/google/uuid"
)

const devKeyFile = "dev-signing-key.pem"

// DevKey is the local signing key of `keb dev` (ECDSA P-256, ES256). It is
// persisted so that tokens minted earlier stay valid across restarts.
type DevKey struct {
	priv *ecdsa.PrivateKey
	kid  string
}

// LoadOrCreateDevKey reads dir/dev-signing-key.pem, creating it (mode 0600)
// on first use.
func LoadOrCreateDevKey(dir string) (*DevKey, error) {
	path := filepath.Join(dir, devKeyFile)
	data, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		data, err = createDevKeyFile(path)
	}
	if err != nil {
		return nil, fmt.Errorf("loading dev signing key %s: %w", path, err)
	}
	block, _ := pem.Decode(data)
	if block == nil || block.Type != "PRIVATE KEY" {
		return nil, fmt.Errorf("loading dev signing key %s: no PEM \"PRIVATE KEY\" block", path)
	}
	parsed, err := x509.ParsePKCS8PrivateKey(block.Bytes)
	if err != nil {
		return nil, fmt.Errorf("loading dev signing key %s: %w", path, err)
	}
	priv, ok := parsed.(*ecdsa.PrivateKey)
	if !ok || priv.Curve != elliptic.P256() {
		return nil, fmt.Errorf("loading dev signing key %s: want an ECDSA P-256 key, got %T", path, parsed)
	}
	kid, err := thumbprint(&priv.PublicKey)
	if err != nil {
		return nil, fmt.Errorf("loading dev signing key %s: %w", path, err)
	}
	return &DevKey{priv: priv, kid: kid}, nil
}

func createDevKeyFile(path string) ([]byte, error) {
	priv, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("generating key: %w", err)
	}
	der, err := x509.MarshalPKCS8PrivateKey(priv)
	if err != nil {
		return nil, fmt.Errorf("encoding key: %w", err)
	}
	return writeFileOnce(path, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}))
}

// writeFileOnce creates path with mode 0600 holding data, unless it already
// exists; either way it returns the file's content. The data is written to a
// temporary file and hard-linked into place, so that concurrent `keb`
// processes never see a half-written file and never overwrite each other.
func writeFileOnce(path string, data []byte) ([]byte, error) {
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	tmp, err := os.CreateTemp(dir, ".tmp-"+filepath.Base(path)+"-*") // mode 0600
	if err != nil {
		return nil, err
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return nil, err
	}
	if err := tmp.Close(); err != nil {
		return nil, err
	}
	if err := os.Link(tmp.Name(), path); err != nil {
		if errors.Is(err, os.ErrExist) {
			return os.ReadFile(path) // another process won the race
		}
		return nil, err
	}
	return data, nil
}

// Public returns the verification key (*ecdsa.PublicKey).
func (k *DevKey) Public() crypto.PublicKey { return &k.priv.PublicKey }

// KeyID is the RFC 7638 thumbprint of the key, as a Verifier computes it.
func (k *DevKey) KeyID() string { return k.kid }

// mintClaims is the payload of a dev token; scope is a space-separated string
// as in RFC 8693.
type mintClaims struct {
	jwt.RegisteredClaims
	ClientID string `json:"client_id,omitempty"`
	Scope    string `json:"scope"`
}

// Mint signs an access token for subject (also used as client_id) valid for ttl.
func (k *DevKey) Mint(issuer, audience, subject string, scopes []string, ttl time.Duration) (string, error) {
	now := time.Now()
	claims := mintClaims{
		RegisteredClaims: jwt.RegisteredClaims{
			Issuer:    issuer,
			Subject:   subject,
			IssuedAt:  jwt.NewNumericDate(now),
			NotBefore: jwt.NewNumericDate(now),
			ExpiresAt: jwt.NewNumericDate(now.Add(ttl)),
			ID:        uuid.NewString(),
		},
		ClientID: subject,
		Scope:    strings.Join(scopes, " "),
	}
	if audience != "" {
		claims.Audience = jwt.ClaimStrings{audience}
	}
	token := jwt.NewWithClaims(jwt.SigningMethodES256, claims)
	token.Header["kid"] = k.kid
	signed, err := token.SignedString(k.priv)
	if err != nil {
		return "", fmt.Errorf("signing dev token: %w", err)
	}
	return signed, nil
}

// JWKS returns the public key as a JWK Set, as served on a well-known URL, so
// that a `keb serve` can verify tokens of a dev stack through Config.JWKSURLs.
func (k *DevKey) JWKS() ([]byte, error) {
	jwk, err := jwkset.NewJWKFromKey(k.Public(), jwkset.JWKOptions{
		Metadata: jwkset.JWKMetadataOptions{ALG: jwkset.AlgES256, KID: k.kid, USE: jwkset.UseSig},
	})
	if err != nil {
		return nil, fmt.Errorf("building dev JWKS: %w", err)
	}
	return json.Marshal(jwkset.JWKSMarshal{Keys: []jwkset.JWKMarshal{jwk.Marshal()}})
}
