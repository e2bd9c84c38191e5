package auth

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"os"
	"strings"
)

// staticKey is a verification key known at start-up (PEM file or code).
type staticKey struct {
	kid string // RFC 7638 thumbprint, so tokens minted with it as kid select it directly
	key crypto.PublicKey
}

func newStaticKey(key crypto.PublicKey) (staticKey, error) {
	kid, err := thumbprint(key)
	if err != nil {
		return staticKey{}, err
	}
	return staticKey{kid: kid, key: key}, nil
}

// loadPEMKeys reads every public key in a PEM file; a file may bundle several.
func loadPEMKeys(path string) ([]staticKey, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("loading PEM key %s: %w", path, err)
	}
	var keys []staticKey
	for {
		var block *pem.Block
		block, data = pem.Decode(data)
		if block == nil {
			break
		}
		key, err := parsePEMBlock(block)
		if err != nil {
			return nil, fmt.Errorf("loading PEM key %s: %w", path, err)
		}
		sk, err := newStaticKey(key)
		if err != nil {
			return nil, fmt.Errorf("loading PEM key %s: %w", path, err)
		}
		keys = append(keys, sk)
	}
	if len(keys) == 0 {
		return nil, fmt.Errorf("loading PEM key %s: no PEM encoded public key found", path)
	}
	return keys, nil
}

func parsePEMBlock(block *pem.Block) (crypto.PublicKey, error) {
	switch block.Type {
	case "PUBLIC KEY":
		return x509.ParsePKIXPublicKey(block.Bytes)
	case "RSA PUBLIC KEY":
		return x509.ParsePKCS1PublicKey(block.Bytes)
	case "CERTIFICATE":
		cert, err := x509.ParseCertificate(block.Bytes)
		if err != nil {
			return nil, err
		}
		return cert.PublicKey, nil
	}
	// Refusing private keys here keeps secrets from being configured by accident
	// where only public material belongs.
	return nil, fmt.Errorf("unsupported PEM block %q (want PUBLIC KEY, RSA PUBLIC KEY or CERTIFICATE)", block.Type)
}

// thumbprint computes the RFC 7638 JWK thumbprint (SHA-256, base64url). The
// members are written in the lexicographic order the RFC prescribes, and
// base64url values need no JSON escaping, so plain formatting is exact.
func thumbprint(key crypto.PublicKey) (string, error) {
	b64 := base64.RawURLEncoding.EncodeToString
	var canonical string
	switch k := key.(type) {
	case *rsa.PublicKey:
		e := big.NewInt(int64(k.E)).Bytes()
		canonical = fmt.Sprintf(`{"e":%q,"kty":"RSA","n":%q}`, b64(e), b64(k.N.Bytes()))
	case *ecdsa.PublicKey:
		ek, err := k.ECDH()
		if err != nil {
			return "", fmt.Errorf("unsupported ECDSA key: %w", err)
		}
		point := ek.Bytes()[1:] // uncompressed: 0x04 || X || Y, coordinates zero-padded
		n := len(point) / 2
		canonical = fmt.Sprintf(`{"crv":%q,"kty":"EC","x":%q,"y":%q}`,
			k.Curve.Params().Name, b64(point[:n]), b64(point[n:]))
	case ed25519.PublicKey:
		canonical = fmt.Sprintf(`{"crv":"Ed25519","kty":"OKP","x":%q}`, b64(k))
	default:
		return "", fmt.Errorf("unsupported public key type %T (want RSA, ECDSA or Ed25519)", key)
	}
	sum := sha256.Sum256([]byte(canonical))
	return b64(sum[:]), nil
}

// fitsAlg reports whether key can verify signatures of alg, so that trying
// "all static keys" only offers the parser keys of the right family.
func fitsAlg(key crypto.PublicKey, alg string) bool {
	switch key.(type) {
	case *rsa.PublicKey:
		return strings.HasPrefix(alg, "RS") || strings.HasPrefix(alg, "PS")
	case *ecdsa.PublicKey:
		return strings.HasPrefix(alg, "ES")
	case ed25519.PublicKey:
		return alg == "EdDSA"
	}
	return false
}

var errNoKey = errors.New("no verification key")
