package lms

import (
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"encoding/pem"
	"fmt"
	"strings"
	"time"
	"unicode"

	"github.com/google/uuid"
)

// Tenant is the creation of a tenant, as upstream sent it.
type Tenant struct {
	Name        string   `json:"name"`
	Region      string   `json:"region"`
	SAMLGroups  []string `json:"samlGroups"`
	ClusterType string   `json:"clusterType"`
	Datacenter  string   `json:"datacenter"`
	Environment string   `json:"environment"`
	Project     string   `json:"project"`
	SAMLTenant  string   `json:"samlTenant"`
	CostCenter  int      `json:"costcenter"`
	// GlobalAccountID was always sent empty by upstream; the name carries
	// the global account.
	GlobalAccountID string `json:"globalAccountID"`
}

// Fixed values of every tenant.
const (
	SAMLGroup  = "skr-logging-viewer"
	Datacenter = "all"
	Project    = "kyma"
)

// NewTenant is the creation of the tenant name in region, with cfg's
// cluster type, environment and SAML tenant.
func NewTenant(cfg Config, name, region string) Tenant {
	return Tenant{Name: name, Region: region, SAMLGroups: []string{SAMLGroup}, ClusterType: cfg.ClusterType,
		Datacenter: Datacenter, Environment: cfg.Environment, Project: Project, SAMLTenant: cfg.SAMLTenant}
}

// Status is a tenant's readiness: it takes certificates once both DNS
// names resolve.
type Status struct {
	KibanaDNSResolves        bool   `json:"kibanaDNSResolves"`
	ElasticsearchDNSResolves bool   `json:"elasticsearchDNSResolves"`
	KibanaState              string `json:"kibanaState"`
}

// Ready reports whether the tenant takes certificates.
func (s Status) Ready() bool { return s.KibanaDNSResolves && s.ElasticsearchDNSResolves }

// Info is what keb reads of a tenant: its DNS domain (Kibana is
// kibana.<dns>, Fluent Bit's endpoint forward.<dns>).
type Info struct {
	ID  string `json:"id"`
	DNS string `json:"dns"`
}

// TenantName is a global account's tenant name: its ID without what is not
// a letter or digit, at most 50 characters.
func TenantName(globalAccountID string) string {
	name := strings.Map(func(r rune) rune {
		if r < unicode.MaxASCII && (unicode.IsLetter(r) || unicode.IsDigit(r)) {
			return r
		}
		return -1
	}, globalAccountID)
	if len(name) > 50 {
		name = name[:50]
	}
	return name
}

// Regions of LMS.
const (
	RegionEU  = "eu"
	RegionUS  = "us"
	RegionAUS = "aus"
)

// regions maps a runtime's (Azure) region to upstream's LMS region; every
// other region, or none, is eu.
var regions = map[string]string{
	"westeurope": RegionEU, "northeurope": RegionEU, "westus2": RegionEU, "uksouth": RegionEU,
	"FranceCentral": RegionEU, "uaenorth": RegionEU,
	"eastus": RegionUS, "eastus2": RegionUS, "centralus": RegionUS, "EastUS2EUAP": RegionUS,
	"southeastasia": RegionAUS, "japaneast": RegionAUS,
}

// Region is the LMS region of a runtime in region: cfg's override when set.
func (c Config) RegionOf(region string) string {
	if c.Region != "" {
		return c.Region
	}
	if r, ok := regions[region]; ok {
		return r
	}
	return RegionEU
}

// CSR is a certificate signing request for Fluent Bit with its private key,
// both PEM: RSA 2048, SHA-256, subject CN=fluentbit, O=<global account>,
// OU=<a random UUID>.
type CSR struct {
	Request, Key []byte
}

// NewCSR makes a key and its signing request for a runtime of
// globalAccountID. The key is never stored outside the runtime's overrides.
func NewCSR(globalAccountID string) (CSR, error) {
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		return CSR{}, fmt.Errorf("generating the Fluent Bit key: %w", err)
	}
	der, err := x509.CreateCertificateRequest(rand.Reader, &x509.CertificateRequest{
		Subject:            pkix.Name{CommonName: "fluentbit", Organization: []string{globalAccountID}, OrganizationalUnit: []string{uuid.NewString()}},
		SignatureAlgorithm: x509.SHA256WithRSA,
	}, key)
	if err != nil {
		return CSR{}, fmt.Errorf("creating the Fluent Bit certificate request: %w", err)
	}
	return CSR{
		Request: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE REQUEST", Bytes: der}),
		Key:     pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(key)}),
	}, nil
}

// OverridesComponent is the Kyma component whose overrides configure Fluent
// Bit.
const OverridesComponent = "logging"

// overridePrefixes are the two spellings of Fluent Bit's configuration in
// the logging chart's generations; upstream wrote every key in both.
var overridePrefixes = []string{"fluent-bit.conf", "fluent-bit.config"}

// Overrides are the logging component's overrides that make Fluent Bit
// forward the runtime's logs to the tenant at dns over TLS with the
// certificate (ca, cert and key PEM), each log marked with the runtime's
// subaccount.
func Overrides(dns, subaccountID string, ca, cert, key []byte) map[string]string {
	b64 := base64.StdEncoding.EncodeToString
	out := map[string]string{}
	for _, p := range overridePrefixes {
		for k, v := range map[string]string{
			"outputs.forward.enabled":         "true",
			"outputs.forward.match":           "kube.*",
			"outputs.forward.host":            "forward." + dns,
			"outputs.forward.port":            "8443",
			"outputs.forward.tls.enabled":     "true",
			"outputs.forward.tls.verify":      "On",
			"outputs.forward.tls.ca":          b64(ca),
			"outputs.forward.tls.cert":        b64(cert),
			"outputs.forward.tls.key":         b64(key),
			"filters.record_modifier.enabled": "true",
			"filters.record_modifier.match":   "kube.*",
			"filters.record_modifier.record":  "subaccount_id " + subaccountID,
			"filters.kubernetes.mergeLog":     "Off",
			"inputs.tail.exclude_path":        "*_dex-*.log,*_kcproxy-*.log",
		} {
			out[p+"."+k] = v
		}
	}
	return out
}

// keyKey is the override holding the key, base64 of its PEM.
const keyKey = "outputs.forward.tls.key"

// KeyOverrides are the logging component's overrides holding only the
// certificate's key (PEM), stored before its CSR is sent.
func KeyOverrides(key []byte) map[string]string {
	out := map[string]string{}
	for _, p := range overridePrefixes {
		out[p+"."+keyKey] = base64.StdEncoding.EncodeToString(key)
	}
	return out
}

// StoredKey reads the key KeyOverrides stored back from the logging
// component's overrides.
func StoredKey(logging map[string]string) ([]byte, bool) {
	key, err := base64.StdEncoding.DecodeString(logging[overridePrefixes[0]+"."+keyKey])
	return key, err == nil && len(key) > 0
}

// Record is what keb set up in LMS for a runtime, kept in the provisioning
// operation's record (JSON key "lms"); the key and certificates are only in
// the runtime's overrides Secret.
type Record struct {
	// TenantID is the global account's tenant in Region, Name its name.
	TenantID string `json:"tenantID,omitempty"`
	Name     string `json:"name,omitempty"`
	Region   string `json:"region,omitempty"`
	// Reused is set when the tenant existed (another runtime of the global
	// account created it).
	Reused bool `json:"reused,omitempty"`
	// RequestedAt is when the tenant was first asked for: its readiness is
	// awaited for 30 minutes from then.
	RequestedAt *time.Time `json:"requestedAt,omitempty"`
	// RefusedSince is when LMS began refusing the current step's calls.
	RefusedSince *time.Time `json:"refusedSince,omitempty"`
	// Failed is set once LMS failed and was skipped (APP_LMS_MANDATORY
	// false): the certificates are not requested.
	Failed bool `json:"failed,omitempty"`
	// DNS is the tenant's domain, CallbackURL where its certificate will
	// be, CertRequestedAt when it was requested (its signing is awaited for
	// 30 minutes from then).
	DNS             string     `json:"dns,omitempty"`
	CallbackURL     string     `json:"callbackURL,omitempty"`
	CertRequestedAt *time.Time `json:"certRequestedAt,omitempty"`
	// KibanaURL is the tenant's Kibana once the certificates are in the
	// overrides.
	KibanaURL string `json:"kibanaURL,omitempty"`
}
