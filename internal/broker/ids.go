package broker

import (
	"fmt"
	"regexp"
	"unicode"
	"unicode/utf8"
)

// MaxInstanceIDLength is the longest instance ID keb provisions: the ID
// becomes a Kubernetes label value on the runtime's resources, and label
// values are at most 63 characters.
const MaxInstanceIDLength = 63

// maxStoredIDLength bounds any ID a request names (instance or operation)
// on routes that only look records up: longer ones were never stored, and
// PostgreSQL's btree index refuses keys of a few kilobytes.
const maxStoredIDLength = 255

// instanceIDSyntax is a Kubernetes label value: alphanumerics, '-', '_' and
// '.', starting and ending alphanumeric. The platforms send GUIDs.
var instanceIDSyntax = regexp.MustCompile(`^[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$`)

// validateNewInstanceID refuses, at PUT, an instance ID that could never be
// provisioned: one that is not a valid Kubernetes label value would fail
// the operation only after it had retried until its deadline.
func validateNewInstanceID(id string) error { return validateLabelValueID("instance ID", id) }

// validateLabelValueID refuses an ID (what names it) that is not a
// Kubernetes label value, the syntax of instanceIDSyntax.
func validateLabelValueID(what, id string) error {
	if err := ValidateStoredID(what, id); err != nil {
		return err
	}
	if len(id) > MaxInstanceIDLength || !instanceIDSyntax.MatchString(id) {
		return fmt.Errorf("%s %q is not accepted: use 1 to %d characters of A-Z, a-z, 0-9, '-', '_' and '.', "+
			"starting and ending with a letter or digit (a GUID fits)", what, id, MaxInstanceIDLength)
	}
	return nil
}

// ValidateStoredID refuses an ID that cannot name a stored record: empty,
// too long, not UTF-8, or holding control characters (PostgreSQL refuses NUL
// in text).
func ValidateStoredID(what, id string) error {
	switch {
	case id == "":
		return fmt.Errorf("%s is empty", what)
	case len(id) > maxStoredIDLength:
		return fmt.Errorf("%s is %d bytes long; at most %d are accepted", what, len(id), maxStoredIDLength)
	case !utf8.ValidString(id):
		return fmt.Errorf("%s is not valid UTF-8", what)
	}
	for _, r := range id {
		if unicode.IsControl(r) {
			return fmt.Errorf("%s %q holds a control character", what, id)
		}
	}
	return nil
}
