package storage

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
)

// sealedPrefix versions the sealed format so that a later scheme can coexist
// with rows written by this one.
const sealedPrefix = "v1"

// Cipher seals secret request data (sm_operator_credentials) with AES-256-GCM
// before it reaches the database. Every sealed value names the ID of its key,
// so keys can be rotated: the first key seals, every key opens.
type Cipher struct {
	sealID string
	aeads  map[string]cipher.AEAD
}

// NewCipher builds a Cipher from the current key and any previous keys that
// rows may still be sealed with. A key is 32 bytes, given raw or as standard
// base64.
func NewCipher(current string, previous ...string) (*Cipher, error) {
	if current == "" {
		return nil, errors.New("database secret key is empty: set APP_DATABASE_SECRET_KEY to 32 bytes (raw or base64), e.g. `openssl rand -base64 32`")
	}
	c := &Cipher{aeads: map[string]cipher.AEAD{}}
	for i, k := range append([]string{current}, previous...) {
		if k == "" {
			continue
		}
		id, aead, err := newAEAD(k)
		if err != nil {
			return nil, fmt.Errorf("database secret key #%d: %w", i+1, err)
		}
		if i == 0 {
			c.sealID = id
		}
		c.aeads[id] = aead
	}
	return c, nil
}

func newAEAD(key string) (string, cipher.AEAD, error) {
	raw := []byte(key)
	if b, err := base64.StdEncoding.DecodeString(key); err == nil && len(b) == 32 {
		raw = b
	}
	if len(raw) != 32 {
		return "", nil, fmt.Errorf("must be 32 bytes raw or base64-encoded, got %d bytes", len(raw))
	}
	block, err := aes.NewCipher(raw)
	if err != nil {
		return "", nil, fmt.Errorf("creating AES cipher: %w", err)
	}
	aead, err := cipher.NewGCM(block)
	if err != nil {
		return "", nil, fmt.Errorf("creating GCM: %w", err)
	}
	sum := sha256.Sum256(raw)
	return hex.EncodeToString(sum[:4]), aead, nil
}

// KeyID is the ID of the key that seals new values.
func (c *Cipher) KeyID() string { return c.sealID }

// Seal encrypts plaintext. bound is authenticated but not stored (the
// instance ID), so a sealed value copied onto another row does not open.
func (c *Cipher) Seal(plaintext []byte, bound string) (string, error) {
	aead := c.aeads[c.sealID]
	nonce := make([]byte, aead.NonceSize())
	if _, err := rand.Read(nonce); err != nil {
		return "", fmt.Errorf("reading nonce: %w", err)
	}
	out := aead.Seal(nonce, nonce, plaintext, []byte(bound))
	return sealedPrefix + "." + c.sealID + "." + base64.RawURLEncoding.EncodeToString(out), nil
}

// Open decrypts a value produced by Seal with the same bound.
func (c *Cipher) Open(sealed, bound string) ([]byte, error) {
	parts := strings.SplitN(sealed, ".", 3)
	if len(parts) != 3 || parts[0] != sealedPrefix {
		return nil, errors.New("sealed value has an unknown format")
	}
	aead, ok := c.aeads[parts[1]]
	if !ok {
		return nil, fmt.Errorf("sealed with key %s, which is not configured (add it to APP_DATABASE_SECRET_KEYS_PREVIOUS)", parts[1])
	}
	raw, err := base64.RawURLEncoding.DecodeString(parts[2])
	if err != nil || len(raw) < aead.NonceSize() {
		return nil, errors.New("sealed value is corrupt")
	}
	plain, err := aead.Open(nil, raw[:aead.NonceSize()], raw[aead.NonceSize():], []byte(bound))
	if err != nil {
		return nil, fmt.Errorf("opening sealed value with key %s: %w", parts[1], err)
	}
	return plain, nil
}
