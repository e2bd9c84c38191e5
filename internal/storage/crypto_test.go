package storage_test

import (
	"bytes"
	"encoding/base64"
	"strings"
	"testing"

	"github.com/kyma-keb/keb/internal/storage"
)

// Fixed test keys: 32 raw bytes each, and their standard base64 forms.
const (
	rawKeyA = "0123456789abcdef0123456789abcdef"
	rawKeyB = "fedcba9876543210fedcba9876543210"
)

var (
	b64KeyA = base64.StdEncoding.EncodeToString([]byte(rawKeyA))
	b64KeyB = base64.StdEncoding.EncodeToString([]byte(rawKeyB))
)

func mustCipher(t *testing.T, current string, previous ...string) *storage.Cipher {
	t.Helper()
	c, err := storage.NewCipher(current, previous...)
	if err != nil {
		t.Fatalf("NewCipher: %v", err)
	}
	return c
}

func TestCipherRoundTrip(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name      string
		key       string
		plaintext []byte
	}{
		{name: "credentials JSON, base64 key", key: b64KeyA, plaintext: []byte(`{"clientid":"cid","clientsecret":"s3cr3t-value","sm_url":"https://sm","url":"https://uaa"}`)},
		{name: "credentials JSON, raw key", key: rawKeyA, plaintext: []byte(`{"clientsecret":"s3cr3t-value"}`)},
		{name: "binary bytes", key: b64KeyB, plaintext: []byte{0, 1, 2, 0xff, 0xfe, '.', 0}},
		{name: "unicode", key: b64KeyA, plaintext: []byte("geheimnis-äöü-秘密")},
		{name: "large value", key: b64KeyA, plaintext: bytes.Repeat([]byte("secret-"), 64<<10)},
		{name: "empty value", key: b64KeyA, plaintext: []byte{}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			c := mustCipher(t, tc.key)
			const bound = "instance-1"
			sealed, err := c.Seal(tc.plaintext, bound)
			if err != nil {
				t.Fatalf("Seal: %v", err)
			}
			if want := "v1." + c.KeyID() + "."; !strings.HasPrefix(sealed, want) {
				t.Errorf("sealed value %.40q does not start with %q", sealed, want)
			}
			got, err := c.Open(sealed, bound)
			if err != nil {
				t.Fatalf("Open: %v", err)
			}
			if !bytes.Equal(got, tc.plaintext) {
				t.Errorf("Open returned %d bytes that differ from the %d sealed", len(got), len(tc.plaintext))
			}
		})
	}
}

func TestSealedValueHidesPlaintext(t *testing.T) {
	t.Parallel()
	c := mustCipher(t, b64KeyA)
	const secret = "s3cr3t-client-secret"
	plaintext := []byte(`{"clientsecret":"` + secret + `"}`)
	a, err := c.Seal(plaintext, "inst")
	if err != nil {
		t.Fatal(err)
	}
	b, err := c.Seal(plaintext, "inst")
	if err != nil {
		t.Fatal(err)
	}
	for _, sealed := range []string{a, b} {
		if strings.Contains(sealed, secret) || strings.Contains(sealed, "clientsecret") {
			t.Errorf("sealed value contains the plaintext: %s", sealed)
		}
		if strings.Contains(sealed, base64.RawURLEncoding.EncodeToString([]byte(secret))) ||
			strings.Contains(sealed, base64.StdEncoding.EncodeToString(plaintext)) {
			t.Errorf("sealed value contains the plaintext merely encoded: %s", sealed)
		}
		if strings.Contains(sealed, rawKeyA) || strings.Contains(sealed, b64KeyA) {
			t.Errorf("sealed value contains the key: %s", sealed)
		}
	}
	if a == b {
		t.Error("sealing the same value twice gave the same output: the nonce is not random")
	}
}

func TestOpenRejects(t *testing.T) {
	t.Parallel()
	c := mustCipher(t, b64KeyA)
	sealed, err := c.Seal([]byte("secret"), "instance-1")
	if err != nil {
		t.Fatal(err)
	}
	parts := strings.SplitN(sealed, ".", 3)
	body, err := base64.RawURLEncoding.DecodeString(parts[2])
	if err != nil {
		t.Fatal(err)
	}
	body[len(body)-1] ^= 0x01
	tampered := parts[0] + "." + parts[1] + "." + base64.RawURLEncoding.EncodeToString(body)

	tests := []struct {
		name      string
		sealed    string
		bound     string
		errSubstr string
	}{
		{name: "other instance ID", sealed: sealed, bound: "instance-2"},
		{name: "empty instance ID", sealed: sealed, bound: ""},
		{name: "tampered ciphertext", sealed: tampered, bound: "instance-1"},
		{name: "empty string", sealed: "", bound: "instance-1", errSubstr: "unknown format"},
		{name: "plaintext in the column", sealed: `{"clientsecret":"x"}`, bound: "instance-1", errSubstr: "unknown format"},
		{name: "unknown version", sealed: "v2." + parts[1] + "." + parts[2], bound: "instance-1", errSubstr: "unknown format"},
		{name: "missing body", sealed: "v1." + parts[1], bound: "instance-1", errSubstr: "unknown format"},
		{name: "body not base64", sealed: "v1." + parts[1] + ".!!!", bound: "instance-1", errSubstr: "corrupt"},
		{name: "body shorter than nonce", sealed: "v1." + parts[1] + ".AAAA", bound: "instance-1", errSubstr: "corrupt"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got, err := c.Open(tc.sealed, tc.bound)
			if err == nil {
				t.Fatalf("Open succeeded with %q", got)
			}
			if tc.errSubstr != "" && !strings.Contains(err.Error(), tc.errSubstr) {
				t.Errorf("error %q does not contain %q", err, tc.errSubstr)
			}
		})
	}
}

func TestCipherKeyRotation(t *testing.T) {
	t.Parallel()
	old := mustCipher(t, b64KeyA)
	sealedWithA, err := old.Seal([]byte("secret"), "inst")
	if err != nil {
		t.Fatal(err)
	}

	rotated := mustCipher(t, b64KeyB, b64KeyA)
	if rotated.KeyID() == old.KeyID() {
		t.Fatalf("KeyID did not change with the key: both %s", old.KeyID())
	}
	if got, err := rotated.Open(sealedWithA, "inst"); err != nil || string(got) != "secret" {
		t.Fatalf("rotated cipher cannot open a value sealed with the previous key: %q, %v", got, err)
	}
	sealedWithB, err := rotated.Seal([]byte("secret"), "inst")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(sealedWithB, "v1."+rotated.KeyID()+".") {
		t.Errorf("new values are not sealed with the current key %s: %.30s", rotated.KeyID(), sealedWithB)
	}
	if strings.HasPrefix(sealedWithB, "v1."+old.KeyID()+".") {
		t.Errorf("new values are still sealed with the previous key")
	}

	// A cipher that was told only the new key names the missing one.
	onlyB := mustCipher(t, b64KeyB)
	_, err = onlyB.Open(sealedWithA, "inst")
	if err == nil {
		t.Fatal("a cipher without key A opened a value sealed with key A")
	}
	for _, want := range []string{old.KeyID(), "APP_DATABASE_SECRET_KEYS_PREVIOUS"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not name %q", err, want)
		}
	}
	// The old cipher cannot open what the new key sealed either.
	if _, err := old.Open(sealedWithB, "inst"); err == nil || !strings.Contains(err.Error(), rotated.KeyID()) {
		t.Errorf("old cipher opening a new value: error %v, want one naming key %s", err, rotated.KeyID())
	}
}

func TestCipherKeyForms(t *testing.T) {
	t.Parallel()
	// The same 32 bytes, raw or base64, are the same key.
	raw := mustCipher(t, rawKeyA)
	b64 := mustCipher(t, b64KeyA)
	if raw.KeyID() != b64.KeyID() {
		t.Errorf("raw and base64 forms of one key have different IDs: %s, %s", raw.KeyID(), b64.KeyID())
	}
	sealed, err := raw.Seal([]byte("x"), "i")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := b64.Open(sealed, "i"); err != nil {
		t.Errorf("base64 form cannot open what the raw form sealed: %v", err)
	}
	// Empty previous keys (an unset list element) are ignored.
	if c, err := storage.NewCipher(b64KeyA, "", ""); err != nil || c.KeyID() != b64.KeyID() {
		t.Errorf("NewCipher with empty previous keys: %v", err)
	}
}

func TestNewCipherRejectsBadKeys(t *testing.T) {
	t.Parallel()
	b64 := func(n int) string { return base64.StdEncoding.EncodeToString(bytes.Repeat([]byte{7}, n)) }
	tests := []struct {
		name     string
		current  string
		previous []string
		want     []string
	}{
		{name: "empty key", current: "", want: []string{"APP_DATABASE_SECRET_KEY", "32 bytes"}},
		{name: "empty key with previous keys", current: "", previous: []string{b64KeyA}, want: []string{"APP_DATABASE_SECRET_KEY"}},
		{name: "raw 31 bytes", current: rawKeyA[:31], want: []string{"32 bytes", "got 31"}},
		{name: "raw 33 bytes", current: rawKeyA + "x", want: []string{"32 bytes", "got 33"}},
		{name: "raw 16 bytes", current: rawKeyA[:16], want: []string{"32 bytes"}},
		{name: "base64 of 16 bytes", current: b64(16), want: []string{"32 bytes"}},
		{name: "base64 of 31 bytes", current: b64(31), want: []string{"32 bytes"}},
		{name: "base64 of 33 bytes", current: b64(33), want: []string{"32 bytes"}},
		{name: "base64 of 64 bytes", current: b64(64), want: []string{"32 bytes"}},
		{name: "hex of 32 bytes", current: strings.Repeat("ab", 32), want: []string{"32 bytes", "got 64"}},
		{name: "bad previous key", current: b64KeyA, previous: []string{"short"}, want: []string{"#2", "32 bytes"}},
		{name: "bad second previous key", current: b64KeyA, previous: []string{b64KeyB, b64(20)}, want: []string{"#3"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			c, err := storage.NewCipher(tc.current, tc.previous...)
			if err == nil {
				t.Fatalf("NewCipher accepted the key (ID %s)", c.KeyID())
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not mention %q", err, w)
				}
			}
		})
	}
}
