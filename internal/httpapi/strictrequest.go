package httpapi

import (
	"fmt"
	"net/http"
	"strings"

	"github.com/gorilla/mux"

	"github.com/kyma-keb/keb/internal/broker"
)

// maxQueryParameters bounds a query: no route takes more than a dozen, and
// Go's parser drops a whole query beyond its own limit (10,000), which would
// make a filtered listing an unfiltered one.
const maxQueryParameters = 100

// strictRequest refuses requests keb would read otherwise than their
// sender meant:
//   - a query Go's parser cannot read whole (a ";" separator, a broken "%"
//     escape, too many parameters): url.Values silently drops such a pair, and
//     a listing would lose its filter with it;
//   - a path with a "." or ".." segment: a router cleaning it would answer
//     a redirect, and a client following a 307 re-sends its body to another
//     resource.
func strictRequest(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if err := checkQuery(req.URL.RawQuery); err != nil {
			writeError(w, http.StatusBadRequest, "BadRequest", err.Error())
			return
		}
		if seg, ok := dotSegment(req.URL.Path); ok {
			writeError(w, http.StatusBadRequest, "BadRequest",
				fmt.Sprintf("the path has a %q segment; keb serves no path with dot segments", seg))
			return
		}
		next.ServeHTTP(w, req)
	})
}

// checkQuery says why url.ParseQuery would not read q whole; it allocates
// nothing, since every poll has a query.
func checkQuery(q string) error {
	params := 1
	for i := 0; i < len(q); i++ {
		switch q[i] {
		case '&':
			if params++; params > maxQueryParameters {
				return fmt.Errorf("the query has more than %d parameters", maxQueryParameters)
			}
		case ';':
			return fmt.Errorf("the query has a ';' at byte %d: separate parameters with '&' (and escape a ';' in a value as %%3B)", i)
		case '%':
			if i+2 >= len(q) || !isHex(q[i+1]) || !isHex(q[i+2]) {
				return fmt.Errorf("the query has a broken %%-escape at byte %d", i)
			}
			i += 2
		}
	}
	return nil
}

func isHex(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F'
}

// dotSegment finds a "." or ".." segment of a (decoded) path.
func dotSegment(path string) (string, bool) {
	if !strings.Contains(path, "/.") {
		return "", false
	}
	for seg := range strings.SplitSeq(path, "/") {
		if seg == "." || seg == ".." {
			return seg, true
		}
	}
	return "", false
}

// checkPathIDs refuses, with 400, path variables that cannot name a stored
// record (broker.ValidateStoredID: too long, not UTF-8, control characters),
// which PostgreSQL would refuse with an error instead of finding nothing.
func checkPathIDs(vars ...string) func(http.Handler) http.Handler {
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
			values := mux.Vars(req)
			for _, name := range vars {
				if v, ok := values[name]; ok {
					if err := broker.ValidateStoredID(strings.ReplaceAll(name, "_", " "), v); err != nil {
						writeError(w, http.StatusBadRequest, "BadRequest", err.Error())
						return
					}
				}
			}
			next.ServeHTTP(w, req)
		})
	}
}
