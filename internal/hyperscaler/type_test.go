package hyperscaler

import "testing"

func TestHyperscalerType(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		provider string
		want     string
		wantErr  bool
	}{
		{name: "azure", provider: "azure", want: TypeAzure},
		{name: "aws", provider: "aws", want: TypeAWS},
		{name: "gcp", provider: "gcp", want: TypeGCP},
		{name: "openstack", provider: "openstack", want: TypeOpenStack},
		{name: "case and spaces ignored", provider: " Azure ", want: TypeAzure},
		{name: "alicloud", provider: "alicloud", want: TypeAliCloud},
		{name: "gdch", provider: "gdch", want: TypeGDCH},
		{name: "unknown", provider: "alibaba", wantErr: true},
		{name: "empty", provider: "", wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := HyperscalerType(tt.provider)
			if (err != nil) != tt.wantErr {
				t.Fatalf("err = %v, wantErr %v", err, tt.wantErr)
			}
			if got != tt.want {
				t.Errorf("HyperscalerType(%q) = %q, want %q", tt.provider, got, tt.want)
			}
		})
	}
}
