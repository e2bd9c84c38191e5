package httpapi

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync"

	"github.com/gorilla/mux"
	"github.com/pivotal-cf/brokerapi/v10/domain"
	"github.com/pivotal-cf/brokerapi/v10/domain/apiresponses"
)

// maxCatalogRegions bounds the prepared catalogs: the region is a path
// segment any caller can choose, so only that many are kept and further
// regions are encoded per request.
const maxCatalogRegions = 64

// servicesSource is the part of the broker the catalog is built from.
type servicesSource interface {
	Services(ctx context.Context) ([]domain.Service, error)
}

// preparedCatalog is the encoded catalog of one platform region with its
// entity tag.
type preparedCatalog struct {
	body []byte
	etag string
}

// catalogHandler serves GET /v2/catalog from bytes prepared once per platform
// region: the catalog only changes with a restart, and encoding it was most
// of a catalog request's CPU time. The body is exactly what brokerapi writes
// for the same services, so whatever the services marshal to is served; an
// ETag lets platforms revalidate with If-None-Match and get a 304.
type catalogHandler struct {
	source servicesSource
	mu     sync.RWMutex
	byRgn  map[string]preparedCatalog
}

func newCatalogHandler(source servicesSource) *catalogHandler {
	return &catalogHandler{source: source, byRgn: map[string]preparedCatalog{}}
}

func (h *catalogHandler) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	c, err := h.prepared(req.Context(), mux.Vars(req)["region"])
	if err != nil {
		writeError(w, http.StatusInternalServerError, "InternalServerError", "the catalog could not be built")
		return
	}
	w.Header().Set("ETag", c.etag)
	if etagMatches(req.Header.Get("If-None-Match"), c.etag) {
		w.WriteHeader(http.StatusNotModified)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Content-Length", fmt.Sprint(len(c.body)))
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(c.body)
}

// prepared returns the region's catalog, encoding it on first use.
func (h *catalogHandler) prepared(ctx context.Context, region string) (preparedCatalog, error) {
	h.mu.RLock()
	c, ok := h.byRgn[region]
	h.mu.RUnlock()
	if ok {
		return c, nil
	}
	services, err := h.source.Services(ctx)
	if err != nil {
		return preparedCatalog{}, fmt.Errorf("reading the catalog: %w", err)
	}
	// Encoded as brokerapi's handler does: no HTML escaping, trailing newline.
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(apiresponses.CatalogResponse{Services: services}); err != nil {
		return preparedCatalog{}, fmt.Errorf("encoding the catalog: %w", err)
	}
	sum := sha256.Sum256(buf.Bytes())
	c = preparedCatalog{body: buf.Bytes(), etag: `"` + base64.RawURLEncoding.EncodeToString(sum[:16]) + `"`}
	h.mu.Lock()
	if len(h.byRgn) < maxCatalogRegions {
		h.byRgn[region] = c
	}
	h.mu.Unlock()
	return c, nil
}

// etagMatches implements If-None-Match's weak comparison (RFC 9110 §13.1.2)
// for a list of entity tags or "*".
func etagMatches(header, etag string) bool {
	for tag := range strings.SplitSeq(header, ",") {
		tag = strings.TrimSpace(tag)
		if tag == "*" || strings.TrimPrefix(tag, "W/") == etag {
			return true
		}
	}
	return false
}
