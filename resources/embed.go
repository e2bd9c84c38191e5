// Package resources holds the files keb ships inside its binary.
package resources

import "embed"

// PlansFile is the name, inside FS, of the default plans file: hyperscaler regions, machine
// types and plan defaults read by internal/catalog.
const PlansFile = "plans.yaml"

// ZonesFile is the name, inside FS, of the availability zones of every region of the plans file
// and the number of zones a worker pool gets, read by internal/catalog.
const ZonesFile = "zones.yaml"

// OIDCDefaultFile is the name, inside FS, of the default OIDC provider of runtimes' API
// servers, read by internal/catalog.
const OIDCDefaultFile = "oidc.yaml"

// FS holds the embedded resources. Files are listed by name, not by directory, so that a file
// dropped into resources/ is only shipped once someone decides it should be.
//
//go:embed plans.yaml zones.yaml oidc.yaml
var FS embed.FS
