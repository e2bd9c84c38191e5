package httpapi

import (
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"strconv"
	"strings"

	"github.com/pivotal-cf/brokerapi/v10/domain"
)

// serveCatalog answers GET /v2/catalog. brokerapi's own encoding writes
// every schema slot, empty ones as `"parameters": null`, which the OSB
// catalog schema rejects; keb leaves out what is empty. The body is built
// once: the catalog does not change while keb runs, and encoding it was most
// of a catalog request's CPU time. Its ETag lets platforms revalidate with
// If-None-Match and get a 304. A client that accepts gzip (Go's and most
// HTTP clients do, unasked) gets the body compressed once at start: 42 KB
// become under 4 KB, one write instead of a dozen, and writing was most of
// what a catalog request still cost.
//
// Unlike keb's other answers (no-store, securityHeaders), the catalog may be
// stored: it names no account and is the same for every caller of a
// platform region. "no-cache" makes a cache revalidate it with the ETag on
// every use, so a platform sees a new catalog with its next read, and
// "private" keeps it out of shared caches (the request carries a token).
func serveCatalog(services []domain.Service) (http.Handler, error) {
	raw, err := json.Marshal(map[string]any{"services": services})
	if err != nil {
		return nil, err
	}
	var doc map[string]any
	if err := json.Unmarshal(raw, &doc); err != nil {
		return nil, err
	}
	for _, s := range doc["services"].([]any) {
		for _, p := range s.(map[string]any)["plans"].([]any) {
			plan := p.(map[string]any)
			// schemas → service_instance|service_binding → create|update
			// → parameters: the schemas themselves are left as they are.
			if schemas, keep := withoutEmpty(plan["schemas"], 3); keep {
				plan["schemas"] = schemas
			} else {
				delete(plan, "schemas")
			}
		}
	}
	body, err := json.Marshal(doc)
	if err != nil {
		return nil, err
	}
	body = append(body, '\n')
	identity := newRepresentation(body, "", "")
	var zipped bytes.Buffer
	zw, err := gzip.NewWriterLevel(&zipped, gzip.BestCompression)
	if err != nil {
		return nil, err
	}
	if _, err := zw.Write(body); err != nil {
		return nil, err
	}
	if err := zw.Close(); err != nil {
		return nil, err
	}
	// A strong ETag names one representation: the gzip one has its own.
	compressed := newRepresentation(zipped.Bytes(), "gzip", "-gzip")
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		rep := &identity
		if acceptsGzip(req.Header.Values("Accept-Encoding")) {
			rep = &compressed
		}
		// The header values are the representation's own slices (see
		// securityHeaders): a catalog read allocates none.
		h := w.Header()
		h["Vary"] = headerVaryEncoding
		h["Etag"] = rep.etag
		h["Cache-Control"] = headerCatalogCacheControl
		if etagMatches(req.Header.Values("If-None-Match"), rep.etag[0]) {
			w.WriteHeader(http.StatusNotModified)
			return
		}
		h["Content-Type"] = headerJSON
		if rep.encoding != nil {
			h["Content-Encoding"] = rep.encoding
		}
		h["Content-Length"] = rep.length
		w.WriteHeader(http.StatusOK)
		_, _ = w.Write(rep.body)
	}), nil
}

// headerCatalogCacheControl is the catalog's Cache-Control, on its 200 and
// 304 (RFC 9110 §15.4.5: a 304 carries what the 200 would).
var (
	headerCatalogCacheControl = []string{"private, no-cache"}
	headerVaryEncoding        = []string{"Accept-Encoding"}
	headerJSON                = []string{"application/json"}
)

// representation is one encoding of the catalog, prepared at start, with
// its header values.
type representation struct {
	body                   []byte
	encoding, etag, length []string
}

func newRepresentation(body []byte, encoding, etagSuffix string) representation {
	sum := sha256.Sum256(body)
	rep := representation{body: body, length: []string{strconv.Itoa(len(body))},
		etag: []string{`"` + base64.RawURLEncoding.EncodeToString(sum[:16]) + etagSuffix + `"`}}
	if encoding != "" {
		rep.encoding = []string{encoding}
	}
	return rep
}

// acceptsGzip reads Accept-Encoding (RFC 9110 §12.5.3): gzip, x-gzip or *
// with a q-value above zero.
func acceptsGzip(values []string) bool {
	for _, v := range values {
		for coding := range strings.SplitSeq(v, ",") {
			name, params, _ := strings.Cut(coding, ";")
			switch strings.ToLower(strings.TrimSpace(name)) {
			case "gzip", "x-gzip", "*":
			default:
				continue
			}
			if !zeroQuality(params) {
				return true
			}
		}
	}
	return false
}

// zeroQuality reports a q parameter of 0 (q=0, q=0.0, ...): "not acceptable".
func zeroQuality(params string) bool {
	for p := range strings.SplitSeq(params, ";") {
		k, v, ok := strings.Cut(strings.TrimSpace(p), "=")
		if !ok || !strings.EqualFold(strings.TrimSpace(k), "q") {
			continue
		}
		q, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
		return err == nil && q == 0
	}
	return false
}

// etagMatches implements If-None-Match's weak comparison (RFC 9110 §13.1.2)
// for "*" or lists of entity tags, over every If-None-Match line sent (a
// list may be split across lines, §5.3). Tags are read as quoted strings,
// not split at commas, which an entity tag may hold; a line that is not a
// list of entity tags matches from its first malformed element on nothing.
func etagMatches(lines []string, etag string) bool {
	for _, line := range lines {
		for rest := line; ; {
			rest = strings.TrimLeft(rest, " \t,")
			if rest == "" {
				break
			}
			if rest[0] == '*' {
				if len(rest) == 1 || strings.ContainsRune(" \t,", rune(rest[1])) {
					return true
				}
				break
			}
			rest = strings.TrimPrefix(rest, "W/")
			if rest == "" || rest[0] != '"' {
				break
			}
			end := strings.IndexByte(rest[1:], '"')
			if end < 0 {
				break
			}
			if rest[:end+2] == etag {
				return true
			}
			// Elements are separated by commas.
			rest = strings.TrimLeft(rest[end+2:], " \t")
			if rest != "" && rest[0] != ',' {
				break
			}
		}
	}
	return false
}

// withoutEmpty drops nulls and objects left empty from the top levels of a
// decoded tree; keep is false when nothing is left of v.
func withoutEmpty(v any, levels int) (out any, keep bool) {
	switch t := v.(type) {
	case nil:
		return nil, false
	case map[string]any:
		if levels == 0 {
			return t, true
		}
		for k, x := range t {
			if y, ok := withoutEmpty(x, levels-1); ok {
				t[k] = y
			} else {
				delete(t, k)
			}
		}
		return t, len(t) > 0
	default:
		return v, true
	}
}
