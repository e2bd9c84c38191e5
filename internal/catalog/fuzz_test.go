package catalog

import (
	"bytes"
	"encoding/json"
	"net/netip"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"

	"k8s.io/apimachinery/pkg/util/validation"
)

// caseVariantIn reports a key of obj that differs from one of known only in
// letter case.
func caseVariantIn(obj map[string]json.RawMessage, known []string) string {
	for k := range obj {
		for _, want := range known {
			if k != want && strings.EqualFold(k, want) {
				return k
			}
		}
	}
	return ""
}

// checkAcceptedContext holds what an accepted context guarantees: within
// the size limit, keys exactly as keb reads them, and credentials, when
// sent, complete.
func checkAcceptedContext(t *testing.T, raw []byte, creds *SMOperatorCredentials) {
	t.Helper()
	if len(raw) > MaxContextSize {
		t.Fatalf("accepted a %d-byte context", len(raw))
	}
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(raw, &obj); err == nil {
		if k := caseVariantIn(obj, contextKeys); k != "" {
			t.Fatalf("accepted case variant %q", k)
		}
		var c map[string]json.RawMessage
		if json.Unmarshal(obj["sm_operator_credentials"], &c) == nil {
			if k := caseVariantIn(c, credentialKeys); k != "" {
				t.Fatalf("accepted credentials case variant %q", k)
			}
		}
	}
	if creds != nil && (creds.ClientID == "" || creds.ClientSecret == "" || creds.SMURL == "" || creds.URL == "") {
		t.Fatalf("accepted incomplete credentials %v", creds)
	}
	checkStorable(t, raw)
}

var (
	// escapedBackslash is `\\` in JSON text: what follows it is not an escape.
	escapedBackslash = regexp.MustCompile(`\\\\`)
	nulEscape        = regexp.MustCompile(`\\u0000`)
	surrogatePair    = regexp.MustCompile(`\\u[dD][89abAB][0-9a-fA-F]{2}\\u[dD][c-fC-F][0-9a-fA-F]{2}`)
	surrogate        = regexp.MustCompile(`\\u[dD][89a-fA-F][0-9a-fA-F]{2}`)
)

// checkStorable holds what an accepted document guarantees PostgreSQL's
// jsonb: valid UTF-8, no NUL escape, no lone surrogate escape, numbers of
// at most 1,000 digits with an exponent within ±1,000.
func checkStorable(t *testing.T, raw []byte) {
	t.Helper()
	if !utf8.Valid(raw) {
		t.Fatalf("accepted invalid UTF-8: %q", raw)
	}
	text := escapedBackslash.ReplaceAll(raw, []byte("__"))
	if nulEscape.Match(text) {
		t.Fatalf("accepted a NUL escape: %q", raw)
	}
	if surrogate.Match(surrogatePair.ReplaceAll(text, []byte("__"))) {
		t.Fatalf("accepted a lone surrogate escape: %q", raw)
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	for {
		tok, err := dec.Token()
		if err != nil {
			return
		}
		if n, ok := tok.(json.Number); ok {
			mantissa, exp, _ := strings.Cut(strings.ToLower(string(n)), "e")
			digits := strings.Count(mantissa, "") - 1 - strings.Count(mantissa, ".") - strings.Count(mantissa, "-")
			if digits > maxNumberDigits || len(strings.TrimLeft(exp, "+-0")) > 4 ||
				len(strings.TrimLeft(exp, "+-0")) == 4 && strings.TrimLeft(exp, "+-0") > "1000" {
				t.Fatalf("accepted number %s", n)
			}
		}
	}
}

// FuzzValidateContext: a PUT's context.
func FuzzValidateContext(f *testing.F) {
	f.Add([]byte(`{"globalaccount_id":"ga","subaccount_id":"sa","user_id":"u"}`))
	f.Fuzz(func(t *testing.T, raw []byte) {
		ctx, err := ValidateContext(raw)
		if err != nil {
			return
		}
		if ctx.GlobalAccountID == "" || ctx.SubAccountID == "" || ctx.UserID == "" {
			t.Fatalf("accepted a context without its required fields: %+v", ctx)
		}
		for _, id := range []string{ctx.GlobalAccountID, ctx.SubAccountID} {
			if problems := validation.IsValidLabelValue(id); len(problems) > 0 {
				t.Fatalf("accepted account ID %q, no label value: %v", id, problems)
			}
		}
		checkAcceptedContext(t, raw, ctx.SMOperatorCredentials)
	})
}

// FuzzValidateUpdateContext: a PATCH's context.
func FuzzValidateUpdateContext(f *testing.F) {
	f.Add([]byte(`{"active":false}`))
	f.Fuzz(func(t *testing.T, raw []byte) {
		ctx, err := ValidateUpdateContext(raw)
		if err != nil {
			return
		}
		checkAcceptedContext(t, raw, ctx.SMOperatorCredentials)
	})
}

// FuzzValidateParameters: a PUT's parameters for each plan and a few
// platform regions. Accepted parameters always resolve.
func FuzzValidateParameters(f *testing.F) {
	cat, err := Load("")
	if err != nil {
		f.Fatal(err)
	}
	var planIDs []string
	for id := range cat.plans {
		planIDs = append(planIDs, id)
	}
	slices.Sort(planIDs)
	regions := []string{"cf-eu10", "cf-eu20", "cf-us30", "cf-eu01", "mars", "cf-eu11", "cf-ch20", "cf-sa30", "cf-us10", "cf-eu02", "cf-jp20"}
	f.Add(uint8(0), uint8(0), []byte(`{"name":"c1"}`))
	f.Add(uint8(1), uint8(6), []byte(`{"name":"c1","additionalWorkerNodePools":[{"name":"p","machineType":"Standard_D4s_v5",`+
		`"taints":[{"key":"k","effect":"NoSchedule"}],"labels":{"a":"b"}}],"oidc":{"list":[{"clientID":"c",`+
		`"issuerURL":"https://i.example.com","signingAlgs":["RS256"],"requiredClaims":["a=b"]}]},"zones":["1"],"maxSurge":1}`))
	f.Add(uint8(2), uint8(7), []byte(`{"name":"c1","networking":{"nodes":"10.180.0.0/16"},"accessControlList":{"allowedCIDRs":["10.0.0.0/8"]},`+
		`"colocateControlPlane":true,"ingressFiltering":true,"additionalVolumeSizeGi":5}`))
	// Issue 38's rules: whole numbers written as floats, OIDC issuers
	// without a host and repeated claims, networks no cluster can use or
	// too small for its nodes.
	f.Add(uint8(1), uint8(0), []byte(`{"name":"c1","autoScalerMax":20.0,"autoScalerMin":3e0,"volumeSizeGb":80.00,"zonesCount":1.0,`+
		`"additionalWorkerNodePools":[{"name":"p","machineType":"Standard_D4s_v5","autoScalerMin":30e-1,"autoScalerMax":5.0}]}`))
	f.Add(uint8(1), uint8(0), []byte(`{"name":"c1","oidc":{"list":[{"clientID":"c","issuerURL":"https://:443","signingAlgs":["RS256"]}]}}`))
	f.Add(uint8(1), uint8(0), []byte(`{"name":"c1","oidc":{"clientID":"c","issuerURL":"https://i.example.com","requiredClaims":["aud=a","aud=b"]}}`))
	for _, n := range []string{`"nodes":"127.0.0.0/16"`, `"nodes":"10.180.0.0/16","pods":"169.254.0.0/16"`,
		`"nodes":"10.180.0.0/16","services":"224.0.0.0/16"`, `"nodes":"0.0.0.0/16"`, `"nodes":"255.255.254.0/23"`,
		`"nodes":"10.180.0.0/16","pods":"10.100.0.1/32"`, `"nodes":"10.180.0.0/16","services":"10.100.0.1/32"`,
		`"nodes":"10.180.0.0/16","pods":"10.100.0.0/20"`} {
		f.Add(uint8(1), uint8(0), []byte(`{"name":"c1","networking":{`+n+`}}`))
	}
	// Issue 37: dualStack (AWS plans only) and auditLogAccess (hidden on paid plans).
	for plan := range uint8(len(planIDs)) {
		f.Add(plan, uint8(0), []byte(`{"name":"c1","networking":{"nodes":"10.180.0.0/16","dualStack":true},"auditLogAccess":false}`))
	}
	f.Fuzz(func(t *testing.T, plan, region uint8, raw []byte) {
		planID := planIDs[int(plan)%len(planIDs)]
		r := regions[int(region)%len(regions)]
		params, err := cat.ValidateParameters(planID, r, raw)
		if err != nil {
			return
		}
		// Accepted parameters are stored with whole numbers as integers,
		// and decode from that form into the typed parameters.
		var stored ProvisioningParameters
		if err := json.Unmarshal(WholeNumbers(raw), &stored); err != nil {
			t.Fatalf("accepted parameters do not decode as stored: %v (%s)", err, raw)
		}
		checkNetworking(t, cat.plans[planID].plan, params, raw)
		if len(raw) > MaxParametersSize {
			t.Fatalf("accepted %d bytes of parameters", len(raw))
		}
		checkStorable(t, raw)
		if params.KymaVersion != "" && ValidateKymaVersion(params.KymaVersion) != nil {
			t.Fatalf("accepted kymaVersion %q", params.KymaVersion)
		}
		res, err := cat.Resolve(planID, r, params)
		if err != nil {
			t.Fatalf("accepted parameters do not resolve: %v (%s)", err, raw)
		}
		// Wherever a runtime is placed (a trial's eu-west-1, an EU access trial's region), its
		// region has zones to place its nodes in.
		if len(cat.RegionZones(res.Provider, res.ProviderRegion)) == 0 {
			t.Fatalf("placed in %s %s, a region without zones (%s on %s: %s)", res.Provider, res.ProviderRegion, planID, r, raw)
		}
		if pools := params.AdditionalWorkerNodePools; pools != nil {
			seen := map[string]bool{}
			for _, p := range *pools {
				if p.Name == KymaWorkerName || seen[p.Name] || len(validation.IsDNS1123Label(p.Name)) > 0 {
					t.Fatalf("accepted pool name %q (%s)", p.Name, raw)
				}
				seen[p.Name] = true
			}
		}
		for _, z := range params.Zones {
			if !slices.Contains(cat.RegionZones(res.Provider, res.ProviderRegion), z) {
				t.Fatalf("accepted zone %q in %s (%s)", z, res.ProviderRegion, raw)
			}
		}
		if _, list, listForm := params.OIDC.Providers(); listForm {
			for _, p := range list {
				if !strings.HasPrefix(p.IssuerURL, "https://") || len(p.SigningAlgs) == 0 {
					t.Fatalf("accepted OIDC provider %+v", p)
				}
				checkOIDCProvider(t, p)
			}
		}
	})
}

// checkOIDCProvider: an accepted provider's issuer has a host, and no
// required claim is named twice.
func checkOIDCProvider(t *testing.T, p OIDCProvider) {
	t.Helper()
	if u, err := url.Parse(p.IssuerURL); p.IssuerURL != "" && (err != nil || u.Hostname() == "") {
		t.Fatalf("accepted OIDC issuer %q", p.IssuerURL)
	}
	seen := map[string]bool{}
	for _, c := range p.RequiredClaims {
		k, _, _ := strings.Cut(c, "=")
		if seen[k] {
			t.Fatalf("accepted required claims %q", p.RequiredClaims)
		}
		seen[k] = true
	}
}

// checkNetworking: accepted CIDRs lie outside every range no cluster can
// use, and the pods range holds a /24 per node the autoscalers allow.
func checkNetworking(t *testing.T, plan Plan, p ProvisioningParameters, raw []byte) {
	t.Helper()
	if p.Networking == nil {
		return
	}
	nodes, pods, services := p.Networking.CIDRs()
	for _, c := range []string{nodes, pods, services} {
		pfx := netip.MustParsePrefix(c)
		for _, r := range unroutableRanges {
			if pfx.Overlaps(netip.MustParsePrefix(r.cidr)) {
				t.Fatalf("accepted %s, which overlaps %s (%s)", c, r.cidr, raw)
			}
		}
	}
	if pfx := netip.MustParsePrefix(pods); pfx.Bits() > 24 || 1<<(24-pfx.Bits()) < maxClusterNodes(plan, p) {
		t.Fatalf("accepted pods %s for %d nodes (%s)", pods, maxClusterNodes(plan, p), raw)
	}
	if netip.MustParsePrefix(services).Bits() > 24 {
		t.Fatalf("accepted services %s (%s)", services, raw)
	}
}
