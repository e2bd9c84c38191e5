package catalog

import "testing"

func TestProviderForPlatformRegion(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name           string
		platformRegion string
		want           string
		wantErr        bool
	}{
		{name: "aws europe", platformRegion: "cf-eu10", want: ProviderAWS},
		{name: "aws us", platformRegion: "cf-us10", want: ProviderAWS},
		{name: "azure europe", platformRegion: "cf-eu20", want: ProviderAzure},
		{name: "azure asia", platformRegion: "cf-ap21", want: ProviderAzure},
		{name: "gcp us", platformRegion: "cf-us30", want: ProviderGCP},
		{name: "openstack", platformRegion: "cf-eu01", want: ProviderOpenStack},
		{name: "no prefix", platformRegion: "eu20", want: ProviderAzure},
		{name: "empty", platformRegion: "", wantErr: true},
		{name: "no digit", platformRegion: "cf-eu", wantErr: true},
		{name: "unknown digit", platformRegion: "cf-eu50", wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := ProviderForPlatformRegion(tt.platformRegion)
			if (err != nil) != tt.wantErr {
				t.Fatalf("err = %v, wantErr %v", err, tt.wantErr)
			}
			if got != tt.want {
				t.Errorf("provider = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestTrialRegion(t *testing.T) {
	t.Parallel()
	c := defaultCatalog(t)
	tests := []struct {
		name, platformRegion, want string
	}{
		{name: "europe", platformRegion: "cf-eu10", want: "europe"},
		{name: "us", platformRegion: "cf-us10", want: "us"},
		{name: "asia", platformRegion: "cf-ap21", want: "asia"},
		{name: "other falls back to europe", platformRegion: "cf-jp20", want: "europe"},
		{name: "none falls back to europe", platformRegion: "", want: "europe"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if got := c.TrialRegion(tt.platformRegion); got != tt.want {
				t.Errorf("TrialRegion(%q) = %q, want %q", tt.platformRegion, got, tt.want)
			}
		})
	}
}

func TestProviderForPlan(t *testing.T) {
	t.Parallel()
	c := defaultCatalog(t)
	tests := []struct {
		name, planID, platformRegion, want string
	}{
		{name: "fixed provider ignores platform region", planID: GCPPlanID, platformRegion: "cf-eu20", want: ProviderGCP},
		{name: "free on aws region", planID: FreePlanID, platformRegion: "cf-eu10", want: ProviderAWS},
		{name: "free on azure region", planID: FreePlanID, platformRegion: "cf-eu20", want: ProviderAzure},
		{name: "free on gcp region falls back", planID: FreePlanID, platformRegion: "cf-us30", want: ProviderAWS},
		{name: "free on unparsable region falls back", planID: FreePlanID, platformRegion: "somewhere", want: ProviderAWS},
		{name: "free default platform region", planID: FreePlanID, platformRegion: "", want: ProviderAWS},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := c.ProviderForPlan(tt.planID, tt.platformRegion)
			if err != nil || got != tt.want {
				t.Errorf("ProviderForPlan = %q, %v; want %q", got, err, tt.want)
			}
		})
	}
}
