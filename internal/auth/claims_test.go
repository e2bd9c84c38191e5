package auth

import (
	"encoding/json"
	"slices"
	"testing"
)

func TestClaimsUnmarshal(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name       string
		json       string
		wantScopes []string
		wantClient string
		wantErr    bool
	}{
		{name: "scp array", json: `{"scp":["broker:write","cld:read"]}`, wantScopes: []string{ScopeBrokerWrite, ScopeCLDRead}},
		{name: "scp string", json: `{"scp":"broker:write cld:read"}`, wantScopes: []string{ScopeBrokerWrite, ScopeCLDRead}},
		{name: "scope string", json: `{"scope":" broker-upgrade:read\tbroker-upgrade:write "}`, wantScopes: []string{ScopeUpgradeRead, ScopeUpgradeWrite}},
		{name: "scope array", json: `{"scope":["cld:read"]}`, wantScopes: []string{ScopeCLDRead}},
		{name: "scp and scope merged without duplicates", json: `{"scp":["cld:read"],"scope":"cld:read broker:write"}`, wantScopes: []string{ScopeCLDRead, ScopeBrokerWrite}},
		{name: "no scopes", json: `{"sub":"x"}`},
		{name: "null scopes", json: `{"scp":null,"scope":null}`},
		{name: "client_id wins over azp", json: `{"client_id":"a","azp":"b"}`, wantClient: "a"},
		{name: "azp as fallback", json: `{"azp":"b"}`, wantClient: "b"},
		{name: "scp number", json: `{"scp":7}`, wantErr: true},
		{name: "scope array of numbers", json: `{"scope":[1,2]}`, wantErr: true},
		{name: "client_id object", json: `{"client_id":{}}`, wantErr: true},
		{name: "bad registered claim", json: `{"exp":"tomorrow"}`, wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var c Claims
			err := json.Unmarshal([]byte(tt.json), &c)
			if tt.wantErr {
				if err == nil {
					t.Fatalf("want error, got %+v", c)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(c.Scopes, tt.wantScopes) {
				t.Errorf("Scopes = %q, want %q", c.Scopes, tt.wantScopes)
			}
			if c.ClientID != tt.wantClient {
				t.Errorf("ClientID = %q, want %q", c.ClientID, tt.wantClient)
			}
		})
	}
}

func TestClaimsRoundTrip(t *testing.T) {
	t.Parallel()
	in := Claims{Scopes: []string{ScopeCLDRead}, ClientID: "c"}
	in.Subject = "s"
	data, err := json.Marshal(in)
	if err != nil {
		t.Fatal(err)
	}
	var out Claims
	if err := json.Unmarshal(data, &out); err != nil {
		t.Fatal(err)
	}
	if out.Subject != "s" || out.ClientID != "c" || !slices.Equal(out.Scopes, in.Scopes) {
		t.Fatalf("round trip of %s gave %+v", data, out)
	}
}

func TestHasScope(t *testing.T) {
	t.Parallel()
	c := &Claims{Scopes: []string{ScopeBrokerWrite}}
	tests := []struct {
		name   string
		claims *Claims
		scope  string
		want   bool
	}{
		{name: "granted", claims: c, scope: ScopeBrokerWrite, want: true},
		{name: "not granted", claims: c, scope: ScopeCLDRead},
		{name: "prefix is not a match", claims: c, scope: "broker"},
		{name: "nil claims", claims: nil, scope: ScopeBrokerWrite},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if got := tt.claims.HasScope(tt.scope); got != tt.want {
				t.Errorf("HasScope(%q) = %v, want %v", tt.scope, got, tt.want)
			}
		})
	}
}

func TestClaimsFromContextEmpty(t *testing.T) {
	t.Parallel()
	if c, ok := ClaimsFromContext(t.Context()); ok || c != nil {
		t.Fatalf("ClaimsFromContext on empty context = %v, %v", c, ok)
	}
}
