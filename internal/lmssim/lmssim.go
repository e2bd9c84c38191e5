// Package lmssim is a stand-in for the Log Management Service's tenant API
// (LMS), for tests and `keb dev`: tenants, their readiness, and the signing
// of Fluent Bit's certificates by a CA of its own, as a plain HTTP server.
// (internal/lmsim is another thing: the Lifecycle Manager simulator.)
//
// It is as strict as the contract (../shared/reference/integrations.md §4):
// every request needs the X-LMS-Token it was given; a tenant's creation must
// have exactly upstream's fields (unknown ones refused) with a name of
// letters and digits (at most 50), a region of eu, us or aus, a cluster type
// of ha or single-node, the group skr-logging-viewer, datacenter "all" and
// project "kyma"; a certificate request must be {"certId","csr"} with a PEM
// CSR of an RSA 2048 key signed with SHA-256, CN=fluentbit and an O and OU;
// an unknown tenant or certificate answers 404. A new tenant's DNS names
// resolve from the ReadyAfter-th status read on, a requested certificate is
// signed from the SignAfter-th read of its callback URL on (a 404 before),
// so that keb's polling shows.
//
// Where the contract is silent it assumes: a creation answers 200 with
// {"id","message"}; a tenant's DNS domain is <name>.<region>.lms.keb.local;
// a second tenant of one name and region is created like
// the first (LMS's own dedup, if any, is unknown: keb never relies on it),
// and errors are {"error","message"}.
//
// Routes, relative to where the handler is mounted:
//
//	POST /tenants                      {"name","region","samlGroups",...}
//	GET  /tenants/<id>
//	GET  /tenants/<id>/status
//	POST /tenants/<id>/certs           {"certId":0,"csr":"<PEM>"}
//	GET  /tenants/<id>/certs/<n>       (the callbackUrl)
//	GET  /tenants/<id>/certs/ca
package lmssim

import (
	"crypto/rand"
	"crypto/rsa"
	"crypto/subtle"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net/http"
	"regexp"
	"slices"
	"strconv"
	"time"

	"github.com/google/uuid"

	"github.com/kyma-keb/keb/internal/lms"
	"github.com/kyma-keb/keb/internal/standin"
)

// MaxTenants bounds what it keeps (requests: standin).
const MaxTenants = 100000

var tenantName = regexp.MustCompile(`^[A-Za-z0-9]{1,50}$`)

// Tenant is one tenant the stand-in holds.
type Tenant struct {
	lms.Tenant
	ID, DNS string
	// statusReads counts status reads, certs the certificates requested
	// (PEM; "" until signed) and their reads.
	statusReads int
	certs       []*cert
}

type cert struct {
	csr   *x509.CertificateRequest
	pem   string
	reads int
}

// Server is the stand-in's state; the core's lock guards it.
type Server struct {
	*standin.Core
	token string
	// ReadyAfter and SignAfter: see the package comment (0 or 1: at once).
	ReadyAfter, SignAfter int

	caKey   *rsa.PrivateKey
	caCert  *x509.Certificate
	caPEM   string
	tenants map[string]*Tenant
	order   []string
}

// New returns a stand-in that takes token, with a CA of its own.
func New(token string) (*Server, error) {
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		return nil, fmt.Errorf("LMS stand-in CA key: %w", err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "LMS stand-in CA"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().AddDate(1, 0, 0), IsCA: true,
		BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return nil, fmt.Errorf("LMS stand-in CA: %w", err)
	}
	ca, _ := x509.ParseCertificate(der)
	return &Server{Core: standin.NewCore(), token: token, ReadyAfter: 2, SignAfter: 2, caKey: key, caCert: ca,
		caPEM: string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})), tenants: map[string]*Tenant{}}, nil
}

// CA is the stand-in's CA certificate (PEM).
func (s *Server) CA() string { return s.caPEM }

// Tenants are the tenants created so far, oldest first.
func (s *Server) Tenants() []Tenant {
	s.Lock()
	defer s.Unlock()
	out := make([]Tenant, 0, len(s.order))
	for _, id := range s.order {
		out = append(out, *s.tenants[id])
	}
	return out
}

// Handler serves the stand-in's routes.
func (s *Server) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("POST /tenants", s.api(s.createTenant))
	mux.HandleFunc("GET /tenants/{id}", s.api(s.tenant(s.info)))
	mux.HandleFunc("GET /tenants/{id}/status", s.api(s.tenant(s.status)))
	mux.HandleFunc("POST /tenants/{id}/certs", s.api(s.tenant(s.requestCert)))
	mux.HandleFunc("GET /tenants/{id}/certs/ca", s.api(s.tenant(s.ca)))
	mux.HandleFunc("GET /tenants/{id}/certs/{n}", s.api(s.tenant(s.signed)))
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		writeError(w, http.StatusNotFound, fmt.Sprintf("no route %s %.200s", r.Method, r.URL.Path))
	})
	return mux
}

func (s *Server) api(h func(w http.ResponseWriter, r *http.Request, body []byte)) http.HandlerFunc {
	return s.Serve(func(r *http.Request) bool {
		return subtle.ConstantTimeCompare([]byte(r.Header.Get(lms.TokenHeader)), []byte(s.token)) == 1
	}, "application/json", writeError, h)
}

// tenant runs h with the path's tenant, 404 when it has none.
func (s *Server) tenant(h func(w http.ResponseWriter, r *http.Request, body []byte, t *Tenant)) func(http.ResponseWriter, *http.Request, []byte) {
	return func(w http.ResponseWriter, r *http.Request, body []byte) {
		t, ok := s.tenants[r.PathValue("id")]
		if !ok {
			writeError(w, http.StatusNotFound, "no tenant "+r.PathValue("id"))
			return
		}
		h(w, r, body, t)
	}
}

func (s *Server) createTenant(w http.ResponseWriter, _ *http.Request, body []byte) {
	var t lms.Tenant
	if err := standin.DecodeStrict(body, &t); err != nil {
		writeError(w, http.StatusBadRequest, "a tenant is upstream's creation: "+err.Error())
		return
	}
	switch {
	case !tenantName.MatchString(t.Name):
		writeError(w, http.StatusBadRequest, "name: 1 to 50 letters and digits")
	case !slices.Contains([]string{lms.RegionEU, lms.RegionUS, lms.RegionAUS}, t.Region):
		writeError(w, http.StatusBadRequest, "region: eu, us or aus")
	case t.ClusterType != lms.ClusterTypeHA && t.ClusterType != lms.ClusterTypeSingleNode:
		writeError(w, http.StatusBadRequest, "clusterType: ha or single-node")
	case !slices.Equal(t.SAMLGroups, []string{lms.SAMLGroup}) || t.Datacenter != lms.Datacenter || t.Project != lms.Project:
		writeError(w, http.StatusBadRequest, "samlGroups, datacenter and project must be keb's")
	case t.Environment == "":
		writeError(w, http.StatusBadRequest, "environment is required")
	case len(s.tenants) >= MaxTenants:
		writeError(w, http.StatusInsufficientStorage, "too many tenants")
	default:
		id := uuid.NewString()
		s.tenants[id] = &Tenant{Tenant: t, ID: id, DNS: t.Name + "." + t.Region + ".lms.keb.local"}
		s.order = append(s.order, id)
		standin.WriteJSON(w, http.StatusOK, map[string]string{"id": id, "message": "tenant created"})
	}
}

func (s *Server) info(w http.ResponseWriter, _ *http.Request, _ []byte, t *Tenant) {
	standin.WriteJSON(w, http.StatusOK, map[string]string{"id": t.ID, "dns": t.DNS})
}

func (s *Server) status(w http.ResponseWriter, _ *http.Request, _ []byte, t *Tenant) {
	t.statusReads++
	ready := t.statusReads >= s.ReadyAfter
	state := "creating"
	if ready {
		state = "green"
	}
	standin.WriteJSON(w, http.StatusOK, lms.Status{KibanaDNSResolves: ready, ElasticsearchDNSResolves: ready, KibanaState: state})
}

func (s *Server) requestCert(w http.ResponseWriter, r *http.Request, body []byte, t *Tenant) {
	var req struct {
		CertID *int    `json:"certId"`
		CSR    *string `json:"csr"`
	}
	if err := standin.DecodeStrict(body, &req); err != nil || req.CertID == nil || req.CSR == nil {
		writeError(w, http.StatusBadRequest, `a certificate request is {"certId","csr"}`)
		return
	}
	csr, err := parseCSR(*req.CSR)
	if err != nil {
		writeError(w, http.StatusBadRequest, err.Error())
		return
	}
	t.certs = append(t.certs, &cert{csr: csr})
	scheme := "http"
	if r.TLS != nil {
		scheme = "https"
	}
	standin.WriteJSON(w, http.StatusOK, map[string]string{
		"callbackUrl": fmt.Sprintf("%s://%s/tenants/%s/certs/%d", scheme, r.Host, t.ID, len(t.certs)-1)})
}

// parseCSR checks a CSR as LMS takes it.
func parseCSR(p string) (*x509.CertificateRequest, error) {
	block, _ := pem.Decode([]byte(p))
	if block == nil || block.Type != "CERTIFICATE REQUEST" {
		return nil, fmt.Errorf("csr: no PEM CERTIFICATE REQUEST")
	}
	csr, err := x509.ParseCertificateRequest(block.Bytes)
	if err != nil {
		return nil, fmt.Errorf("csr: %w", err)
	}
	if err := csr.CheckSignature(); err != nil {
		return nil, fmt.Errorf("csr: %w", err)
	}
	key, ok := csr.PublicKey.(*rsa.PublicKey)
	switch {
	case !ok || key.N.BitLen() != 2048 || csr.SignatureAlgorithm != x509.SHA256WithRSA:
		return nil, fmt.Errorf("csr: an RSA 2048 key signed with SHA-256")
	case csr.Subject.CommonName != "fluentbit" || len(csr.Subject.Organization) != 1 || csr.Subject.Organization[0] == "" ||
		len(csr.Subject.OrganizationalUnit) != 1 || csr.Subject.OrganizationalUnit[0] == "":
		return nil, fmt.Errorf("csr: subject CN=fluentbit with an O and an OU")
	}
	return csr, nil
}

func (s *Server) signed(w http.ResponseWriter, r *http.Request, _ []byte, t *Tenant) {
	n, err := strconv.Atoi(r.PathValue("n"))
	if err != nil || n < 0 || n >= len(t.certs) {
		writeError(w, http.StatusNotFound, "no certificate "+r.PathValue("n"))
		return
	}
	c := t.certs[n]
	c.reads++
	if c.reads < s.SignAfter {
		writeError(w, http.StatusNotFound, "not signed yet")
		return
	}
	if c.pem == "" {
		tmpl := &x509.Certificate{SerialNumber: big.NewInt(int64(n) + 2), Subject: c.csr.Subject,
			NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().AddDate(1, 0, 0),
			KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}
		der, err := x509.CreateCertificate(rand.Reader, tmpl, s.caCert, c.csr.PublicKey, s.caKey)
		if err != nil {
			writeError(w, http.StatusInternalServerError, err.Error())
			return
		}
		c.pem = string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}))
	}
	standin.WriteJSON(w, http.StatusOK, map[string]string{"cert": c.pem})
}

func (s *Server) ca(w http.ResponseWriter, _ *http.Request, _ []byte, _ *Tenant) {
	standin.WriteJSON(w, http.StatusOK, map[string]string{"cert": s.caPEM})
}

func writeError(w http.ResponseWriter, status int, msg string) {
	standin.WriteJSON(w, status, map[string]any{"error": http.StatusText(status), "message": msg})
}
