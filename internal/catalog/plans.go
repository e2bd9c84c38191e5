package catalog

import (
	"maps"
	"time"
)

// Plan IDs. Platforms store them with every instance they ever provisioned, so they are a
// forever-contract: never change one, only add new plans.
const (
	AzurePlanID             = "4deee563-e5ec-4731-b9b1-53b42d855f0c"
	AWSPlanID               = "361c511f-f939-4621-b228-d0fb79a1fe15"
	GCPPlanID               = "ca6e5357-707f-4565-bbbd-b3ab732597c6"
	AzureLitePlanID         = "8cb22518-aa26-44c5-91a0-e669ec9bf443"
	TrialPlanID             = "7d55d31d-35ae-4438-bf13-6ffdfa107d9f"
	FreePlanID              = "b1a5764e-2ea1-4f95-94c0-2b4538b37b55"
	PreviewPlanID           = "5cb3d976-b85c-42ea-a636-79cadda109a9"
	SapConvergedCloudPlanID = "03b812ac-c991-4528-b5bd-08b303523a63"
	BuildRuntimeAWSPlanID   = "6aae0ff3-89f7-4f12-86de-51466145422e"
	BuildRuntimeGCPPlanID   = "a310cd6b-6452-45a0-935d-d24ab53f9eba"
	BuildRuntimeAzurePlanID = "499244b4-1bef-48c9-be68-495269899f8e"
	// Upstream's plans on Alibaba Cloud and Google Distributed Cloud Hosted (upstream-today.md §4).
	AlicloudPlanID             = "9f2c3b4d-5e6f-7a8b-9c0d-1e2f3a4b5c6d"
	BuildRuntimeAlicloudPlanID = "72efa867-7b54-4d59-8df7-68f4759ff271"
	GDCHPlanID                 = "024e11fb-40df-4753-a992-24d136e2d15c"
)

// Plan names, as they appear in the catalog, in the enabled-plans setting and in the plans file.
// Like the IDs, they are stored by platforms and must not change.
const (
	AzurePlanName                = "azure"
	AWSPlanName                  = "aws"
	GCPPlanName                  = "gcp"
	AzureLitePlanName            = "azure_lite"
	TrialPlanName                = "trial"
	FreePlanName                 = "free"
	PreviewPlanName              = "preview"
	SapConvergedCloudPlanName    = "sap-converged-cloud"
	BuildRuntimeAWSPlanName      = "build-runtime-aws"
	BuildRuntimeGCPPlanName      = "build-runtime-gcp"
	BuildRuntimeAzurePlanName    = "build-runtime-azure"
	AlicloudPlanName             = "alicloud"
	BuildRuntimeAlicloudPlanName = "build-runtime-alicloud"
	GDCHPlanName                 = "gdch"
)

// planIDs maps every plan name keb knows to its ID. The plans file describes plans by name; only
// names listed here are accepted, so a typo in the file cannot invent a plan with no ID.
var planIDs = map[string]string{
	AzurePlanName:                AzurePlanID,
	AWSPlanName:                  AWSPlanID,
	GCPPlanName:                  GCPPlanID,
	AzureLitePlanName:            AzureLitePlanID,
	TrialPlanName:                TrialPlanID,
	FreePlanName:                 FreePlanID,
	PreviewPlanName:              PreviewPlanID,
	SapConvergedCloudPlanName:    SapConvergedCloudPlanID,
	BuildRuntimeAWSPlanName:      BuildRuntimeAWSPlanID,
	BuildRuntimeGCPPlanName:      BuildRuntimeGCPPlanID,
	BuildRuntimeAzurePlanName:    BuildRuntimeAzurePlanID,
	AlicloudPlanName:             AlicloudPlanID,
	BuildRuntimeAlicloudPlanName: BuildRuntimeAlicloudPlanID,
	GDCHPlanName:                 GDCHPlanID,
}

// DefaultEnabledPlans returns the plans offered when the operator does not configure a list.
// A fresh slice each call, so callers may modify it.
func DefaultEnabledPlans() []string {
	return []string{AzurePlanName, GCPPlanName, AzureLitePlanName, TrialPlanName, AWSPlanName,
		BuildRuntimeAWSPlanName, BuildRuntimeGCPPlanName, BuildRuntimeAzurePlanName}
}

// Plan is one service plan with the limits and defaults the plans file gives it. Values are
// copies: changing a returned Plan does not change the catalog.
type Plan struct {
	ID          string
	Name        string
	DisplayName string
	Description string

	// Provider is the hyperscaler the plan runs on: "azure", "aws", "gcp" or "openstack".
	// It is "" for plans whose provider follows the platform region (free); use
	// Catalog.ProviderForPlan to resolve it for a request.
	Provider string
	// Providers lists, for a plan with Provider "", the providers it may run on; a platform
	// region of any other provider falls back to the first one.
	Providers []string

	// Lite plans get smaller runtimes; overrides labelled default-for-lite skip them.
	Lite bool
	// Trial plans skip paid provisioning steps and are removed after Lifetime.
	Trial bool
	// SharedPool plans take their hyperscaler account from the shared pool (never claimed by
	// one tenant).
	SharedPool bool
	// OnePerGlobalAccount plans allow at most one runtime per global account.
	OnePerGlobalAccount bool
	// Lifetime is how long a runtime of this plan lives; 0 means until deprovisioned.
	Lifetime time.Duration

	// AutoScalerMin and AutoScalerMax bound what users may request for either autoscaler
	// parameter. For plans with a basic form users cannot set them at all.
	AutoScalerMin int
	AutoScalerMax int
	// DefaultAutoScalerMin and DefaultAutoScalerMax apply when the user does not set them.
	DefaultAutoScalerMin int
	DefaultAutoScalerMax int
	// DefaultNodeCount applies when the user does not set nodeCount.
	DefaultNodeCount int
	// MaxZonesCount bounds zonesCount; DefaultZonesCount applies when the user does not set it.
	MaxZonesCount     int
	DefaultZonesCount int

	// DefaultRegion is the region used when the request has none. It is "" for trial plans
	// (the default follows the platform region, see Catalog.trialArea) and for plans whose
	// provider follows the platform region.
	DefaultRegion string
	// DefaultMachineType is the machine type used when the request has none; "" for plans
	// whose provider follows the platform region.
	DefaultMachineType string

	// BasicForm plans accept only name, region, modules, administrators and oidc.
	BasicForm bool
	// UpgradableTo names the plans a running instance of this plan may move to with a PATCH
	// (upgradableToPlans in the plans file); empty means the plan cannot change.
	UpgradableTo []string

	// Purpose is the Gardener shoot purpose of the plan's runtimes
	// (PurposeDevelopment unless the plans file says otherwise).
	Purpose string
	// VolumeSizeGb is the size of each worker node's disk.
	VolumeSizeGb int

	// DefaultMachineTypes are the default machine per provider of a plan whose provider varies
	// (trial, free), over DefaultMachineType and the provider's default.
	DefaultMachineTypes map[string]string
	// SmallerMachineTypes replace them in a catalog loaded with SmallerMachineTypes.
	SmallerMachineTypes map[string]string
	// VolumeTypes are the worker disk type per provider, over the provider's (Catalog.VolumeType).
	VolumeTypes map[string]string
	// ForcedRegions are, per provider, the region the plan's runtimes run in whatever the region
	// parameter says (upstream's free on AWS: eu-central-1).
	ForcedRegions map[string]string

	// TrialProviders, on a trial plan, are the providers the provider parameter may choose,
	// Provider (the default) first; empty: the trial runs on Provider only.
	TrialProviders []string

	// DisabledParameters are parameters the plan does not offer although its form would
	// (upstream's disableNetworking, disableColocateControlPlane, disableGvisor).
	DisabledParameters []string

	// IngressFiltering and AccessControlList enable the parameters of those names;
	// MaxAdditionalVolumeSizeGi bounds additionalVolumeSizeGi (0: not offered).
	IngressFiltering          bool
	AccessControlList         bool
	MaxAdditionalVolumeSizeGi int
}

// AdditionalPools reports whether the plan offers additionalWorkerNodePools: paid plans with the
// full form (not trial, not free).
func (p Plan) AdditionalPools() bool { return !p.BasicForm && !p.Trial }

// ByPlatformRegion reports whether the plan's provider is chosen per request from the
// platform region rather than fixed.
func (p Plan) ByPlatformRegion() bool { return p.Provider == "" }

// clone returns a deep copy, so callers cannot change the catalog through shared slices.
func (p Plan) clone() Plan {
	p.Providers = append([]string(nil), p.Providers...)
	p.UpgradableTo = append([]string(nil), p.UpgradableTo...)
	p.TrialProviders = append([]string(nil), p.TrialProviders...)
	p.DefaultMachineTypes = maps.Clone(p.DefaultMachineTypes)
	p.SmallerMachineTypes = maps.Clone(p.SmallerMachineTypes)
	p.VolumeTypes = maps.Clone(p.VolumeTypes)
	p.ForcedRegions = maps.Clone(p.ForcedRegions)
	p.DisabledParameters = append([]string(nil), p.DisabledParameters...)
	return p
}
