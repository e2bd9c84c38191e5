package catalog

import (
	"fmt"
	"math/big"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Bounds of a number in a request's context or parameters: PostgreSQL's jsonb refuses numbers
// with more than 16,383 digits after the decimal point or 131,072 before it (counted once the
// exponent is applied); keb's bounds lie far inside that and far outside anything a platform sends.
const (
	maxNumberDigits   = 1000
	maxNumberExponent = 1000
)

// unstorable says why PostgreSQL's jsonb would refuse a JSON text that Go decodes without
// complaint, or returns "" when it would store it: invalid UTF-8 (Go reads each bad byte as
// U+FFFD), the escape \u0000 (text cannot hold NUL), a lone UTF-16 surrogate escape (Go reads it
// as U+FFFD), and numbers beyond numeric's range. The context is stored as sent and parameters as
// compacted, so these would reach the database and come back as a 500.
func unstorable(raw []byte) string {
	if !utf8.Valid(raw) {
		return "must be valid UTF-8"
	}
	for i := 0; i < len(raw); i++ {
		switch c := raw[i]; {
		case c == '"':
			end, why := scanString(raw, i+1)
			if why != "" {
				return why
			}
			i = end
		case c == '-' || '0' <= c && c <= '9':
			end, why := scanNumber(raw, i)
			if why != "" {
				return why
			}
			i = end - 1
		}
	}
	return ""
}

// scanString checks the escapes of the string starting at raw[i] (after its quote) and returns
// the index of its closing quote.
func scanString(raw []byte, i int) (int, string) {
	for ; i < len(raw); i++ {
		switch raw[i] {
		case '"':
			return i, ""
		case '\\':
			if i+1 < len(raw) && raw[i+1] == 'u' {
				r, ok := hex4(raw, i+2)
				if !ok {
					return i, "" // malformed: the JSON parser names it
				}
				switch {
				case r == 0:
					return i, `must not contain the escape \u0000 (a NUL character cannot be stored)`
				case 0xDC00 <= r && r <= 0xDFFF:
					return i, fmt.Sprintf(`must not contain a lone UTF-16 surrogate escape (\u%04x)`, r)
				case 0xD800 <= r && r <= 0xDBFF:
					low, ok := rune(-1), i+8 < len(raw) && raw[i+6] == '\\' && raw[i+7] == 'u'
					if ok {
						low, ok = hex4(raw, i+8)
					}
					if !ok || low < 0xDC00 || low > 0xDFFF {
						return i, fmt.Sprintf(`must not contain a lone UTF-16 surrogate escape (\u%04x)`, r)
					}
					i += 6 // the low half
				}
				i += 5
				continue
			}
			i++ // any other escape is two bytes
		}
	}
	return i, ""
}

func hex4(raw []byte, i int) (rune, bool) {
	if i+4 > len(raw) {
		return 0, false
	}
	v, err := strconv.ParseUint(string(raw[i:i+4]), 16, 32)
	return rune(v), err == nil
}

// scanNumber checks the number starting at raw[i] and returns the index after it.
func scanNumber(raw []byte, i int) (int, string) {
	start, digits := i, 0
	if raw[i] == '-' {
		i++
	}
	for ; i < len(raw) && (raw[i] >= '0' && raw[i] <= '9' || raw[i] == '.'); i++ {
		if raw[i] != '.' {
			digits++
		}
	}
	if digits > maxNumberDigits {
		return i, fmt.Sprintf("must not hold a number of more than %d digits", maxNumberDigits)
	}
	if i < len(raw) && (raw[i] == 'e' || raw[i] == 'E') {
		j := i + 1
		if j < len(raw) && (raw[j] == '+' || raw[j] == '-') {
			j++
		}
		k := j
		for k < len(raw) && raw[k] >= '0' && raw[k] <= '9' {
			k++
		}
		exp, err := strconv.Atoi(string(raw[i+1 : k]))
		if k > j && (err != nil || exp > maxNumberExponent || exp < -maxNumberExponent) {
			return k, fmt.Sprintf("must not hold a number with an exponent beyond ±%d (%.40s)", maxNumberExponent, raw[start:k])
		}
		i = k
	}
	return i, ""
}

// WholeNumbers returns raw JSON with every whole number written with a
// fraction or an exponent (20.0, 2e1, 200e-1) written as the integer (20):
// the schemas take such a number for an integer, and so must every later
// typed decoding of the stored parameters (encoding/json refuses 20.0 for
// an int). Nothing else changes: no key is reordered and no string touched.
// It returns raw itself when no number changes, and leaves alone a number
// beyond keb's bounds (the validator refuses it).
func WholeNumbers(raw []byte) []byte {
	var out []byte
	last := 0
	for i := 0; i < len(raw); i++ {
		switch c := raw[i]; {
		case c == '"':
			for i++; i < len(raw) && raw[i] != '"'; i++ {
				if raw[i] == '\\' {
					i++
				}
			}
		case c == '-' || '0' <= c && c <= '9':
			end := i
			for end < len(raw) && strings.IndexByte("0123456789+-.eE", raw[end]) >= 0 {
				end++
			}
			if whole, ok := wholeNumber(string(raw[i:end])); ok {
				out = append(append(out, raw[last:i]...), whole...)
				last = end
			}
			i = end - 1
		}
	}
	if out == nil {
		return raw
	}
	return append(out, raw[last:]...)
}

// wholeNumber returns a number token written with a fraction or an exponent
// as an integer, when it is whole and within keb's bounds.
func wholeNumber(tok string) (string, bool) {
	if !strings.ContainsAny(tok, ".eE") {
		return "", false
	}
	mantissa, exp, hasExp := strings.Cut(strings.ToLower(tok), "e")
	if len(mantissa) > maxNumberDigits+2 {
		return "", false
	}
	if hasExp {
		if len(exp) > 6 {
			return "", false
		}
		e, err := strconv.Atoi(exp)
		if err != nil || e > maxNumberExponent || e < -maxNumberExponent {
			return "", false
		}
	}
	r, ok := new(big.Rat).SetString(tok)
	if !ok || !r.IsInt() {
		return "", false
	}
	return r.Num().String(), true
}
