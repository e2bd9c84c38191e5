package catalog

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// minimalPlansFile describes one provider and one plan: enough for an operator who offers azure only.
const minimalPlansFile = `
providers:
  azure:
    displayName: Microsoft Azure
    defaultRegion: northeurope
    defaultMachineType: Standard_D4s_v5
    regions:
      - {code: northeurope, displayName: "North Europe"}
      - {code: swedencentral, displayName: "Sweden Central", zones: ["1", "2", "3"]}
    machineTypes:
      - {code: Standard_D4s_v5, displayName: "Standard_D4s_v5 (4vCPU, 16GB RAM)"}
trialRegions:
  default: europe
  regions:
    - {code: europe, displayName: Europe, platformRegions: [cf-eu10]}
plans:
  azure:
    displayName: Azure
    description: Kyma on Azure.
    provider: azure
    form: full
    autoScaler: {min: 3, max: 20, defaultMin: 3, defaultMax: 20}
    nodeCount: 3
    zones: {max: 3, default: 3}
`

func writeFile(t *testing.T, content string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "plans.yaml")
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestLoadReplacementFile(t *testing.T) {
	t.Parallel()
	c, err := Load(writeFile(t, minimalPlansFile))
	if err != nil {
		t.Fatalf("Load: %v", err)
	}

	services, err := c.Services([]string{"azure"})
	if err != nil {
		t.Fatalf("Services: %v", err)
	}
	schema := services[0].Plans[0].Schemas.Instance.Create.Parameters
	region := schema["properties"].(map[string]any)["region"].(map[string]any)
	if got := asStrings(region["enum"]); !slices.Equal(got, []string{"northeurope", "swedencentral"}) {
		t.Errorf("region enum = %v", got)
	}
	if region["default"] != "northeurope" {
		t.Errorf("region default = %v", region["default"])
	}

	if _, err := c.ValidateParameters(AzurePlanID, "", json.RawMessage(`{"name":"x","region":"swedencentral"}`)); err != nil {
		t.Errorf("region of the replacement file rejected: %v", err)
	}
	_, err = c.ValidateParameters(AzurePlanID, "", json.RawMessage(`{"name":"x","region":"eastus"}`))
	var verr *ValidationError
	if !errors.As(err, &verr) || !slices.Equal(verr.Fields(), []string{"region"}) {
		t.Errorf("region of the embedded file accepted: %v", err)
	}

	// A known plan the file does not describe is reported as such.
	if _, err := c.Services([]string{"azure", "gcp"}); err == nil || !strings.Contains(err.Error(), `"gcp"`) || !strings.Contains(err.Error(), "not described") {
		t.Errorf("Services with undescribed plan: %v", err)
	}
	if _, ok := c.PlanByID(GCPPlanID); ok {
		t.Errorf("PlanByID found a plan the file does not describe")
	}
}

func TestLoadBrokenFiles(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		content string
		// wantInError are substrings of the error besides the file name.
		wantInError []string
	}{
		{name: "not YAML", content: "providers: [unclosed", wantInError: []string{"yaml"}},
		{name: "misspelt key", content: strings.Replace(minimalPlansFile, "defaultRegion: northeurope", "defaultRegoin: northeurope", 1),
			wantInError: []string{"defaultRegoin"}},
		{name: "default region not listed", content: strings.Replace(minimalPlansFile, "defaultRegion: northeurope", "defaultRegion: westeurope", 1),
			wantInError: []string{"providers.azure.defaultRegion", `"westeurope"`}},
		{name: "unknown plan", content: minimalPlansFile + "  azure_xl:\n    description: x\n    provider: azure\n",
			wantInError: []string{"plans.azure_xl: unknown plan"}},
		{name: "unknown provider of plan", content: strings.Replace(minimalPlansFile, "provider: azure", "provider: alibaba", 1),
			wantInError: []string{"plans.azure.provider", `"alibaba"`}},
		{name: "autoscaler default outside bounds", content: strings.Replace(minimalPlansFile, "defaultMin: 3", "defaultMin: 1", 1),
			wantInError: []string{"plans.azure.autoScaler.defaultMin"}},
		{name: "several mistakes all reported", content: strings.NewReplacer("defaultRegion: northeurope", "defaultRegion: mars", "form: full", "form: fancy").Replace(minimalPlansFile),
			wantInError: []string{"providers.azure.defaultRegion", "plans.azure.form"}},
		{name: "region without zones", content: strings.Replace(minimalPlansFile, `, zones: ["1", "2", "3"]}`, "}", 1),
			wantInError: []string{"providers.azure.swedencentral: missing"}},
		{name: "empty file", content: "", wantInError: []string{"providers: none described", "plans: none described"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			path := writeFile(t, tt.content)
			_, err := Load(path)
			if err == nil {
				t.Fatal("Load succeeded, want error")
			}
			if !strings.Contains(err.Error(), path) {
				t.Errorf("error %q does not name the file %s", err, path)
			}
			for _, want := range tt.wantInError {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("error %q does not contain %q", err, want)
				}
			}
		})
	}
}

func TestLoadMissingFile(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "nope.yaml")
	_, err := Load(path)
	if err == nil || !strings.Contains(err.Error(), path) || !errors.Is(err, os.ErrNotExist) {
		t.Errorf("err = %v, want a not-exist error naming %s", err, path)
	}
}
