// Package iassim is a stand-in for SAP Cloud Identity Services - Identity
// Authentication's service provider API (IAS), for tests and `keb dev`: one
// company ("global") with its identity providers and the service providers
// keb creates, as a plain HTTP server. It is as strict as the contract
// (../shared/reference/integrations.md §5): every call needs the API user's
// HTTP Basic credentials; a service provider is created from a form
// (sp_name, company_id=global), changed by JSON bodies of exactly the
// shapes keb sends, and deleted with PUT .../delete?sp_id=; an unknown
// service provider, identity provider or client secret answers 404. Where
// the contract is silent the stand-in is stricter than nothing and says so:
// a second service provider of one display name answers 409 (IAS's own
// answer is not recorded), so that a double creation shows.
//
// Routes, relative to where the handler is mounted:
//
//	GET    /service/company/global
//	POST   /service/sps                  form sp_name, company_id
//	PUT    /service/sps/<id>             {"ssoType",...} | {"assertion_attributes"} | {"name_id_attribute"}
//	PUT    /service/sps                  {"organization","id","default_auth_idp"} | {...,"rest_api_client_secret"}
//	PUT    /service/sps/<id>/rba         {"service_provider":{"rba_config":...}}
//	DELETE /service/sps/clientSecret     {"clientId","clientSecretsIds"}
//	PUT    /service/sps/delete?sp_id=<id>
package iassim

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"

	"github.com/kyma-keb/keb/internal/ias"
	"github.com/kyma-keb/keb/internal/standin"
)

// MaxServiceProviders bounds what it keeps (requests: standin).
const MaxServiceProviders = 100000

// ServiceProvider is a service provider as the stand-in keeps it.
type ServiceProvider struct {
	ias.ServiceProvider
	SSOType      string
	SPName       string
	RedirectURIs []string
	NameID       string
	DefaultIdP   string
	// Rules are the access rules, "<action>:<group>:<group type>", and
	// DefaultAction what applies to everyone else.
	Rules         []string
	DefaultAction string
	// Secrets are the client secrets' values by ID.
	Secrets map[string]string
}

// Server is the stand-in's state; the core's lock guards it.
type Server struct {
	*standin.Core
	user, password string
	idps           []ias.IdentityProvider
	sps            map[string]*ServiceProvider // by ID
}

// New returns a stand-in whose API user is user with password, and whose
// company has identity providers of the given names.
func New(user, password string, identityProviders ...string) *Server {
	s := &Server{Core: standin.NewCore(), user: user, password: password, sps: map[string]*ServiceProvider{}}
	for _, name := range identityProviders {
		s.idps = append(s.idps, ias.IdentityProvider{ID: newID(), Name: name})
	}
	return s
}

// ServiceProviders are the service providers, by display name.
func (s *Server) ServiceProviders() map[string]ServiceProvider {
	s.Lock()
	defer s.Unlock()
	out := map[string]ServiceProvider{}
	for _, sp := range s.sps {
		c := *sp
		c.Secrets = map[string]string{}
		for k, v := range sp.Secrets {
			c.Secrets[k] = v
		}
		c.ClientSecrets = slices.Clone(sp.ClientSecrets)
		out[sp.DisplayName] = c
	}
	return out
}

// IdentityProviderID is the ID of the identity provider named name.
func (s *Server) IdentityProviderID(name string) string {
	for _, idp := range s.idps {
		if idp.Name == name {
			return idp.ID
		}
	}
	return ""
}

// Handler serves the stand-in's routes.
func (s *Server) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /service/company/{company}", s.api(s.company))
	mux.HandleFunc("POST /service/sps", s.Serve(standin.Basic(s.user, s.password), "application/x-www-form-urlencoded", writeError, s.create))
	mux.HandleFunc("PUT /service/sps/delete", s.api(s.delete))
	mux.HandleFunc("PUT /service/sps/{id}", s.api(s.change))
	mux.HandleFunc("PUT /service/sps", s.api(s.changeOrganization))
	mux.HandleFunc("PUT /service/sps/{id}/rba", s.api(s.rules))
	mux.HandleFunc("DELETE /service/sps/clientSecret", s.api(s.deleteSecrets))
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		writeError(w, http.StatusNotFound, fmt.Sprintf("no route %s %.200s", r.Method, r.URL.Path))
	})
	return mux
}

func (s *Server) api(h func(w http.ResponseWriter, r *http.Request, body []byte)) http.HandlerFunc {
	return s.Serve(standin.Basic(s.user, s.password), "application/json", writeError, h)
}

func (s *Server) company(w http.ResponseWriter, r *http.Request, _ []byte) {
	if r.PathValue("company") != ias.CompanyID {
		writeError(w, http.StatusNotFound, "no company "+r.PathValue("company"))
		return
	}
	type sp struct {
		ias.ServiceProvider
		SSOType string `json:"ssoType,omitempty"`
	}
	out := struct {
		ServiceProviders  []sp                   `json:"service_providers"`
		IdentityProviders []ias.IdentityProvider `json:"identity_providers"`
	}{ServiceProviders: []sp{}, IdentityProviders: s.idps}
	for _, id := range s.sortedIDs() {
		out.ServiceProviders = append(out.ServiceProviders, sp{s.sps[id].ServiceProvider, s.sps[id].SSOType})
	}
	standin.WriteJSON(w, http.StatusOK, out)
}

func (s *Server) sortedIDs() []string {
	ids := make([]string, 0, len(s.sps))
	for id := range s.sps {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	return ids
}

func (s *Server) create(w http.ResponseWriter, _ *http.Request, body []byte) {
	form, err := url.ParseQuery(string(body))
	if err != nil || len(form["sp_name"]) != 1 || form.Get("sp_name") == "" || len(form) != 2 {
		writeError(w, http.StatusBadRequest, "a service provider is the form sp_name=<name>&company_id=global")
		return
	}
	if form.Get("company_id") != ias.CompanyID {
		writeError(w, http.StatusNotFound, "no company "+form.Get("company_id"))
		return
	}
	name := form.Get("sp_name")
	for _, sp := range s.sps {
		if sp.DisplayName == name {
			writeError(w, http.StatusConflict, "a service provider named "+name+" exists")
			return
		}
	}
	if len(s.sps) >= MaxServiceProviders {
		writeError(w, http.StatusInsufficientStorage, "too many service providers")
		return
	}
	id := newID()
	s.sps[id] = &ServiceProvider{ServiceProvider: ias.ServiceProvider{ID: id, DisplayName: name, UserForRest: "T" + newID()[:12]},
		Secrets: map[string]string{}}
	w.WriteHeader(http.StatusCreated)
}

func (s *Server) sp(w http.ResponseWriter, id string) (*ServiceProvider, bool) {
	sp, ok := s.sps[id]
	if !ok {
		writeError(w, http.StatusNotFound, "no service provider "+id)
	}
	return sp, ok
}

// change is one of the three changes of a service provider by its ID.
func (s *Server) change(w http.ResponseWriter, r *http.Request, body []byte) {
	var c struct {
		SSOType *string `json:"ssoType"`
		SPName  *string `json:"sp_name"`
		OIDC    *struct {
			RedirectURIs []string `json:"redirect_uris"`
		} `json:"openId_connect_configuration"`
		Attributes []ias.AssertionAttribute `json:"assertion_attributes"`
		NameID     *string                  `json:"name_id_attribute"`
	}
	if err := standin.DecodeStrict(body, &c); err != nil {
		writeError(w, http.StatusBadRequest, "an unknown change: "+err.Error())
		return
	}
	oidc, attrs, nameID := c.SSOType != nil || c.SPName != nil || c.OIDC != nil, c.Attributes != nil, c.NameID != nil
	if n := btoi(oidc) + btoi(attrs) + btoi(nameID); n != 1 {
		writeError(w, http.StatusBadRequest, "a change is the OIDC type, the assertion attributes or the name ID, one at a time")
		return
	}
	sp, ok := s.sp(w, r.PathValue("id"))
	if !ok {
		return
	}
	switch {
	case oidc:
		if c.SSOType == nil || *c.SSOType != ias.SSOType || c.SPName == nil || *c.SPName == "" || c.OIDC == nil ||
			len(c.OIDC.RedirectURIs) == 0 {
			writeError(w, http.StatusBadRequest, "an OIDC type is ssoType openIdConnect, sp_name and redirect_uris")
			return
		}
		for _, u := range c.OIDC.RedirectURIs {
			if p, err := url.Parse(u); err != nil || p.Scheme != "https" || p.Host == "" {
				writeError(w, http.StatusBadRequest, "a redirect URI is an absolute https URL: "+u)
				return
			}
		}
		sp.SSOType, sp.SPName, sp.RedirectURIs = *c.SSOType, *c.SPName, c.OIDC.RedirectURIs
	case attrs:
		for _, a := range c.Attributes {
			if a.AssertionAttribute == "" || a.UserAttribute == "" {
				writeError(w, http.StatusBadRequest, "an assertion attribute has assertionAttribute and userAttribute")
				return
			}
		}
		sp.AssertionAttributes = c.Attributes
	default:
		if *c.NameID == "" {
			writeError(w, http.StatusBadRequest, "name_id_attribute is empty")
			return
		}
		sp.NameID = *c.NameID
	}
	w.WriteHeader(http.StatusOK)
}

// changeOrganization sets a service provider's default identity provider
// or generates a client secret.
func (s *Server) changeOrganization(w http.ResponseWriter, r *http.Request, body []byte) {
	var c struct {
		Organization string  `json:"organization"`
		ID           string  `json:"id"`
		DefaultIdP   *string `json:"default_auth_idp"`
		Secret       *struct {
			Description string   `json:"description"`
			Scopes      []string `json:"scopes"`
		} `json:"rest_api_client_secret"`
	}
	if err := standin.DecodeStrict(body, &c); err != nil || c.ID == "" || (c.DefaultIdP == nil) == (c.Secret == nil) {
		writeError(w, http.StatusBadRequest, "a change is {organization, id} with default_auth_idp or rest_api_client_secret")
		return
	}
	if c.Organization != ias.CompanyID {
		writeError(w, http.StatusNotFound, "no organization "+c.Organization)
		return
	}
	sp, ok := s.sp(w, c.ID)
	if !ok {
		return
	}
	if c.DefaultIdP != nil {
		// <tenant URL>/service/idp/<id> of a known identity provider.
		base, id, found := strings.Cut(*c.DefaultIdP, "/service/idp/")
		if u, err := url.Parse(base); !found || err != nil || u.Host == "" || s.idpName(id) == "" {
			writeError(w, http.StatusBadRequest, "default_auth_idp is <tenant>/service/idp/<id of an identity provider>")
			return
		}
		sp.DefaultIdP = *c.DefaultIdP
		w.WriteHeader(http.StatusOK)
		return
	}
	known := []string{"ManageApp", "ManageUsers", "OAuth"}
	if len(c.Secret.Scopes) == 0 || slices.ContainsFunc(c.Secret.Scopes, func(sc string) bool { return !slices.Contains(known, sc) }) {
		writeError(w, http.StatusBadRequest, "scopes are some of ManageApp, ManageUsers, OAuth")
		return
	}
	id, secret := newID(), newID()
	sp.Secrets[id] = secret
	sp.ClientSecrets = append(sp.ClientSecrets, ias.ClientSecret{ID: id})
	standin.WriteJSON(w, http.StatusOK, ias.Credentials{ClientID: sp.UserForRest, ClientSecret: secret})
}

func (s *Server) idpName(id string) string {
	for _, idp := range s.idps {
		if idp.ID == id {
			return idp.Name
		}
	}
	return ""
}

func (s *Server) rules(w http.ResponseWriter, r *http.Request, body []byte) {
	var c struct {
		SP struct {
			RBA struct {
				Rules []struct {
					Action    string `json:"action"`
					Group     string `json:"group"`
					GroupType string `json:"group_type"`
				} `json:"rba_rules"`
				DefaultAction string `json:"default_action"`
			} `json:"rba_config"`
		} `json:"service_provider"`
	}
	if err := standin.DecodeStrict(body, &c); err != nil {
		writeError(w, http.StatusBadRequest, "access rules are {service_provider:{rba_config:{rba_rules,default_action}}}")
		return
	}
	var rules []string
	for _, rule := range append(c.SP.RBA.Rules, struct {
		Action    string `json:"action"`
		Group     string `json:"group"`
		GroupType string `json:"group_type"`
	}{c.SP.RBA.DefaultAction, "-", "-"}) {
		if rule.Action != "Allow" && rule.Action != "Deny" || rule.Group == "" || rule.GroupType == "" {
			writeError(w, http.StatusBadRequest, "a rule's action is Allow or Deny, with a group and its type")
			return
		}
		rules = append(rules, rule.Action+":"+rule.Group+":"+rule.GroupType)
	}
	sp, ok := s.sp(w, r.PathValue("id"))
	if !ok {
		return
	}
	sp.Rules, sp.DefaultAction = rules[:len(rules)-1], c.SP.RBA.DefaultAction
	w.WriteHeader(http.StatusOK)
}

func (s *Server) deleteSecrets(w http.ResponseWriter, _ *http.Request, body []byte) {
	var c struct {
		ClientID string   `json:"clientId"`
		IDs      []string `json:"clientSecretsIds"`
	}
	if err := standin.DecodeStrict(body, &c); err != nil || c.ClientID == "" || len(c.IDs) == 0 {
		writeError(w, http.StatusBadRequest, "a deletion is {clientId, clientSecretsIds}")
		return
	}
	for _, sp := range s.sps {
		if sp.UserForRest != c.ClientID {
			continue
		}
		for _, id := range c.IDs {
			if _, ok := sp.Secrets[id]; !ok {
				writeError(w, http.StatusNotFound, "no client secret "+id)
				return
			}
		}
		for _, id := range c.IDs {
			delete(sp.Secrets, id)
		}
		sp.ClientSecrets = slices.DeleteFunc(sp.ClientSecrets, func(cs ias.ClientSecret) bool { return slices.Contains(c.IDs, cs.ID) })
		w.WriteHeader(http.StatusOK)
		return
	}
	writeError(w, http.StatusNotFound, "no client "+c.ClientID)
}

func (s *Server) delete(w http.ResponseWriter, r *http.Request, body []byte) {
	q := r.URL.Query()
	if len(body) > 0 || len(q["sp_id"]) != 1 || len(q) != 1 {
		writeError(w, http.StatusBadRequest, "a deletion is PUT /service/sps/delete?sp_id=<id>, without a body")
		return
	}
	if _, ok := s.sp(w, q.Get("sp_id")); ok {
		delete(s.sps, q.Get("sp_id"))
		w.WriteHeader(http.StatusOK)
	}
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

func newID() string {
	raw := make([]byte, 16)
	_, _ = rand.Read(raw)
	return hex.EncodeToString(raw)
}

func writeError(w http.ResponseWriter, status int, msg string) {
	standin.WriteJSON(w, status, map[string]any{"status": status, "message": msg})
}
