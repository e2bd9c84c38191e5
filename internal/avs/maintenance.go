package avs

import (
	"fmt"
	"os"
	"slices"

	"sigs.k8s.io/yaml"
)

// Maintenance is what an upgrade did to a runtime's evaluations: each one
// it put into MAINTENANCE, with the status to restore afterwards. It is
// kept in the upgrade operation's record (JSON key "avsMaintenance"), the
// status to restore saved before the status is changed, so that a re-run
// after a crash restores what was there before the upgrade.
type Maintenance struct {
	Evaluations []InMaintenance `json:"evaluations"`
}

// InMaintenance is one evaluation an upgrade put into maintenance.
type InMaintenance struct {
	ID int64 `json:"id"`
	// Original is the status it had before; restored at the end.
	Original Status `json:"original"`
	// Set: MAINTENANCE was set; Restored: Original was restored.
	Set      bool `json:"set,omitempty"`
	Restored bool `json:"restored,omitempty"`
}

// Restore is the status to put back: the original one, ACTIVE when it is
// not a status AVS knows.
func (m InMaintenance) Restore() Status {
	if m.Original.Valid() && m.Original != StatusMaintenance {
		return m.Original
	}
	return StatusActive
}

// MaintenanceExemptions is the global accounts whose runtimes are never
// put into maintenance during upgrades: upstream's YAML file, key
// maintenanceModeDuringUpgradeAlwaysDisabledGAIDs.
type MaintenanceExemptions struct {
	GlobalAccounts []string `json:"maintenanceModeDuringUpgradeAlwaysDisabledGAIDs"`
}

// ReadMaintenanceExemptions reads the exemptions file ("": none).
func ReadMaintenanceExemptions(path string) (MaintenanceExemptions, error) {
	var m MaintenanceExemptions
	if path == "" {
		return m, nil
	}
	raw, err := os.ReadFile(path)
	if err != nil {
		return m, fmt.Errorf("reading the AVS maintenance exemptions: %w", err)
	}
	if err := yaml.UnmarshalStrict(raw, &m); err != nil {
		return m, fmt.Errorf("AVS maintenance exemptions %s: %w", path, err)
	}
	return m, nil
}

// Exempt reports whether a global account's runtimes stay monitored
// during upgrades.
func (m MaintenanceExemptions) Exempt(globalAccountID string) bool {
	return slices.Contains(m.GlobalAccounts, globalAccountID)
}
