// Package catalog is keb's OSB catalog: the kymaruntime service, its plans, the parameter JSON
// schemas platforms render as forms, and the validation of provisioning parameters and context
// against those very schemas.
//
// Regions, machine types and plan defaults come from a plans file (resources/plans.yaml, embedded,
// replaceable by the operator); service and plan IDs are Go constants because platforms store
// them forever.
package catalog

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"

	"github.com/pivotal-cf/brokerapi/v10/domain"
	"github.com/santhosh-tekuri/jsonschema/v6"
	"sigs.k8s.io/yaml"

	"github.com/kyma-keb/keb/resources"
)

// The kymaruntime service. Its ID and name are stored by every platform that provisioned a
// runtime, so they never change.
const (
	ServiceID          = "47c9dcbf-ff30-448e-ab36-d3bad66ba281"
	ServiceName        = "kymaruntime"
	serviceDescription = "SAP BTP, Kyma Runtime"
)

// ErrUnknownPlan is wrapped by errors about a plan ID or name the catalog does not hold.
var ErrUnknownPlan = errors.New("unknown plan")

// Catalog holds the plans described by one plans file, each with its compiled parameter schema.
// It is immutable after Load and safe for concurrent use.
type Catalog struct {
	source string                // the plans file, for error messages
	plans  map[string]*planEntry // by plan ID
	byName map[string]*planEntry

	trialRegions    []Option
	trialByPlatform map[string]string
	// providerTrialRegions maps provider → trial region → hyperscaler region.
	providerTrialRegions map[string]map[string]string
	// providerDefaults holds each provider's default region and machine type, used where the
	// provider is only known per request (free).
	providerDefaults map[string]providerDefault
	// regional holds each platform region's variant of every plan, by plan ID (nil: not offered
	// there); otherPlatformRegions keys the variant of the regions the plans file does not name.
	regional map[string]map[string]*planEntry
	// otherRegions holds the variant of the platform regions the plans file does not name, by
	// their class (OtherRegionClasses).
	otherRegions map[string]map[string]*planEntry
	// concreteMachines maps, per provider, a version-agnostic machine type to the concrete one
	// (resolvesTo); machineVersions are the providers' machinesVersions templates, tried after.
	concreteMachines map[string]map[string]string
	machineVersions  map[string][]machineVersion
	// euAccess are the EU access platform regions (trialRegions.euAccessPlatformRegions).
	euAccess []string
	// forcedRegions holds, per provider and platform region, the region its trials run in.
	forcedRegions map[string]map[string]string
	// lenient schemas accept parameters they do not name (IgnoreUnsupportedParameters).
	lenient bool
	// smaller picks the plans' smallerMachineTypes (SmallerMachineTypes).
	smaller bool
	// zones are every region's availability zones (resources/zones.yaml).
	zones regionZones
	// defaultOIDC is the runtimes' default OIDC provider, read from oidcFile ("" for the
	// embedded resources/oidc.yaml): written into every Runtime CR and offered first by the
	// create form's OIDC list, as upstream does with its skrOIDCDefaultValues.
	defaultOIDC OIDCProvider
	oidcFile    string
	// gvisorOffered puts gvisor into the plans' forms (OfferGVisor).
	gvisorOffered bool
	// dualStackDocsURL is the page networking.dualStack's description links to (DualStackDocsURL).
	dualStackDocsURL string
}

type providerDefault struct {
	region, machineType string
	image               *machineImageSpec
	volumeType          string
	// trialRegion is the trial region of a trial nothing else places; euAccessRegion the
	// region of a trial in an EU access platform region ("": none).
	trialRegion, euAccessRegion string
	// dualStack: the provider's plans offer networking.dualStack.
	dualStack bool
}

// planEntry is one plan with everything needed to list and validate it.
type planEntry struct {
	plan Plan
	// offers holds, per provider the plan may run on, the regions and machine types it offers.
	offers map[string]offer
	// create and update are the parameter schemas: served in the catalog and compiled from the
	// same bytes, so what platforms show and what keb enforces cannot drift apart.
	create planSchema
	update planSchema
	// hidden checks the parameters accepted but not shown in the form (hiddenSchema); its
	// compiled is nil for plans without any.
	hidden planSchema
}

// planSchema is one parameter schema as served (json), as parsed (doc, to describe errors) and
// compiled.
type planSchema struct {
	json     []byte
	doc      map[string]any
	compiled *jsonschema.Schema
}

type offer struct {
	regions      []Option
	machineTypes []Option
	// poolMachineTypes are what additional worker pools may use: machineTypes and the
	// provider's additional families.
	poolMachineTypes []Option
}

// Load reads the plans file at path, or the embedded resources/plans.yaml when path is "", checks
// it and compiles every plan's parameter schema. Any mistake in the file is an error naming the
// file and each offending entry.
func Load(path string, opts ...LoadOption) (*Catalog, error) {
	source, data, err := readPlansFile(path)
	if err != nil {
		return nil, err
	}
	var f plansFile
	// Strict, so that a misspelt key is reported instead of silently falling back to zero.
	if err := yaml.UnmarshalStrict(data, &f); err != nil {
		return nil, fmt.Errorf("plans file %s: %w", source, err)
	}
	if err := f.check(); err != nil {
		return nil, fmt.Errorf("plans file %s: %w", source, err)
	}
	c, err := build(source, &f, opts...)
	if err != nil {
		return nil, fmt.Errorf("plans file %s: %w", source, err)
	}
	return c, nil
}

func readPlansFile(path string) (source string, data []byte, err error) {
	if path == "" {
		source = "embedded resources/" + resources.PlansFile
		data, err = resources.FS.ReadFile(resources.PlansFile)
	} else {
		source = path
		data, err = os.ReadFile(path)
	}
	if err != nil {
		return source, nil, fmt.Errorf("read plans file %s: %w", source, err)
	}
	return source, data, nil
}

// build turns a checked plans file into a catalog, compiling each plan's schema once.
func build(source string, f *plansFile, opts ...LoadOption) (*Catalog, error) {
	c := &Catalog{
		source:               source,
		plans:                map[string]*planEntry{},
		byName:               map[string]*planEntry{},
		euAccess:             slices.Clone(f.TrialRegions.EUAccessPlatformRegions),
		trialByPlatform:      map[string]string{},
		providerTrialRegions: map[string]map[string]string{},
		providerDefaults:     map[string]providerDefault{},
		dualStackDocsURL:     DefaultDualStackDocsURL,
	}
	for _, o := range opts {
		o(c)
	}
	zones, err := loadZones(f)
	if err != nil {
		return nil, err
	}
	c.zones = zones
	if c.defaultOIDC, err = loadDefaultOIDC(c.oidcFile); err != nil {
		return nil, err
	}
	for _, r := range f.TrialRegions.Regions {
		c.trialRegions = append(c.trialRegions, Option{Code: r.Code, DisplayName: r.DisplayName})
		for _, pr := range r.PlatformRegions {
			c.trialByPlatform[pr] = r.Code
		}
	}
	for name, p := range f.Providers {
		c.providerTrialRegions[name] = p.TrialRegions
		c.providerDefaults[name] = providerDefault{region: p.DefaultRegion, machineType: p.DefaultMachineType, image: p.MachineImage,
			volumeType: p.VolumeType, trialRegion: firstNonEmpty(p.TrialDefaultRegion, f.TrialRegions.Default),
			euAccessRegion: p.EUAccessRegion, dualStack: p.DualStack}
		versions, err := parseMachineVersions(p.MachinesVersions)
		if err != nil { // checked with the file
			return nil, fmt.Errorf("providers.%s.machinesVersions: %w", name, err)
		}
		if len(versions) > 0 {
			if c.machineVersions == nil {
				c.machineVersions = map[string][]machineVersion{}
			}
			c.machineVersions[name] = versions
		}
		for _, o := range slices.Concat(p.MachineTypes, p.AdditionalMachineTypes) {
			if o.ResolvesTo != "" {
				if c.concreteMachines == nil {
					c.concreteMachines = map[string]map[string]string{}
				}
				if c.concreteMachines[name] == nil {
					c.concreteMachines[name] = map[string]string{}
				}
				c.concreteMachines[name][o.Code] = o.ResolvesTo
			}
		}
		for pr, regions := range p.PlatformRegions {
			if c.forcedRegions == nil {
				c.forcedRegions = map[string]map[string]string{}
			}
			if c.forcedRegions[name] == nil {
				c.forcedRegions[name] = map[string]string{}
			}
			c.forcedRegions[name][pr] = regions[0]
		}
	}

	compiler := newSchemaCompiler()
	for _, name := range sortedKeys(f.Plans) {
		spec := f.Plans[name]
		e := &planEntry{plan: spec.toPlan(name, f.Providers), offers: map[string]offer{}}
		providers := e.plan.Providers
		if !e.plan.ByPlatformRegion() {
			providers = []string{e.plan.Provider}
		}
		for _, prov := range providers {
			ps := f.Providers[prov]
			o := offer{
				regions:      narrow(ps.Regions, spec.Regions),
				machineTypes: narrow(ps.MachineTypes, spec.MachineTypes),
			}
			o.poolMachineTypes = slices.Clone(o.machineTypes)
			if !e.plan.Lite {
				// A lite plan's pools use its own machine types only, as upstream's azure_lite.
				o.poolMachineTypes = append(o.poolMachineTypes, narrow(ps.AdditionalMachineTypes, nil)...)
			}
			e.offers[prov] = o
		}
		if err := e.compile(compiler, name, c.schemaDoc(c.createSchema(e)), c.schemaDoc(updateSchema(e)), c.hiddenSchema(e)); err != nil {
			return nil, fmt.Errorf("plan %s: %w", name, err)
		}
		c.plans[e.plan.ID] = e
		c.byName[name] = e
	}
	if err := c.buildRegional(f); err != nil {
		return nil, err
	}
	return c, nil
}

// Services returns the OSB catalog: the kymaruntime service with the enabled plans, in the order
// given. A name that is not a known plan, or a plan the plans file does not describe, is an error
// naming it, so that a typo in the configuration stops keb at start-up.
func (c *Catalog) Services(enabledPlans []string) ([]domain.Service, error) {
	return c.services(enabledPlans, func(e *planEntry) *planEntry { return e }, false)
}

// services lists the enabled plans as pick offers them (nil: left out).
// A platform region offering none of them gets no service (regional).
func (c *Catalog) services(enabledPlans []string, pick func(*planEntry) *planEntry, regional bool) ([]domain.Service, error) {
	var plans []domain.ServicePlan
	seen := map[string]bool{}
	for _, raw := range enabledPlans {
		name := strings.TrimSpace(raw)
		if name == "" || seen[name] {
			continue
		}
		seen[name] = true
		e, err := c.entryByName(name)
		if err != nil {
			return nil, fmt.Errorf("enabled plans: %w", err)
		}
		if e = pick(e); e == nil {
			continue
		}
		sp, err := e.servicePlan()
		if err != nil {
			return nil, fmt.Errorf("enabled plans: plan %s: %w", name, err)
		}
		plans = append(plans, sp)
	}
	if len(plans) == 0 {
		// OSB requires at least one plan per service.
		if regional && len(seen) > 0 {
			return []domain.Service{}, nil
		}
		return nil, errors.New("enabled plans: none given")
	}
	return []domain.Service{{
		ID:                   ServiceID,
		Name:                 ServiceName,
		Description:          serviceDescription,
		Bindable:             false,
		InstancesRetrievable: true,
		PlanUpdatable:        false,
		Tags:                 []string{"SAP", "Kyma"},
		Plans:                plans,
		Metadata: &domain.ServiceMetadata{
			DisplayName:         "Kyma Environment",
			ProviderDisplayName: "SAP",
			LongDescription:     "Kyma Environment",
			DocumentationUrl:    "https://kyma-project.io/docs",
			SupportUrl:          "https://kyma-project.io",
		},
	}}, nil
}

func (c *Catalog) entryByName(name string) (*planEntry, error) {
	if e, ok := c.byName[name]; ok {
		return e, nil
	}
	if _, known := planIDs[name]; known {
		return nil, fmt.Errorf("%w %q: not described in plans file %s", ErrUnknownPlan, name, c.source)
	}
	return nil, fmt.Errorf("%w %q (known: %s)", ErrUnknownPlan, name, strings.Join(sortedKeys(planIDs), ", "))
}

// servicePlan renders the plan for the OSB catalog. The schema is decoded afresh from the
// compiled bytes each time, so callers may change the result without touching the catalog.
func (e *planEntry) servicePlan() (domain.ServicePlan, error) {
	create, err := decodeSchema(e.create.json)
	if err != nil {
		return domain.ServicePlan{}, err
	}
	update, err := decodeSchema(e.update.json)
	if err != nil {
		return domain.ServicePlan{}, err
	}
	updatable := len(e.plan.UpgradableTo) > 0
	return domain.ServicePlan{
		ID:          e.plan.ID,
		Name:        e.plan.Name,
		Description: e.plan.Description,
		// OSB treats a plan without "free" as free of charge; only trial and free are.
		Free:     domain.FreeValue(e.plan.Trial || e.plan.Name == FreePlanName),
		Metadata: &domain.ServicePlanMetadata{DisplayName: e.plan.DisplayName},
		// Per plan, as OSB allows: only plans with upgradableToPlans may change plan.
		PlanUpdatable: &updatable,
		Schemas: &domain.ServiceSchemas{Instance: domain.ServiceInstanceSchema{
			Create: domain.Schema{Parameters: create},
			Update: domain.Schema{Parameters: update},
		}},
	}, nil
}

func decodeSchema(b []byte) (map[string]any, error) {
	var m map[string]any
	d := json.NewDecoder(strings.NewReader(string(b)))
	d.UseNumber()
	if err := d.Decode(&m); err != nil {
		return nil, fmt.Errorf("decode parameter schema: %w", err)
	}
	return m, nil
}

// PlanByID returns the plan with that ID, if the plans file describes it. Enabled or not does
// not matter: instances of a plan disabled later must still be served.
func (c *Catalog) PlanByID(id string) (Plan, bool) {
	e, ok := c.plans[id]
	if !ok {
		return Plan{}, false
	}
	return e.plan.clone(), true
}

// PlanByName returns the plan with that name, if the plans file describes it.
func (c *Catalog) PlanByName(name string) (Plan, bool) {
	e, ok := c.byName[name]
	if !ok {
		return Plan{}, false
	}
	return e.plan.clone(), true
}

// Plans returns every plan the plans file describes, sorted by name.
func (c *Catalog) Plans() []Plan {
	out := make([]Plan, 0, len(c.byName))
	for _, name := range sortedKeys(c.byName) {
		out = append(out, c.byName[name].plan.clone())
	}
	return out
}

// CreateSchema returns the create-parameters JSON schema of a plan, the exact document served
// in the catalog and used by ValidateParameters.
func (c *Catalog) CreateSchema(planID string) (json.RawMessage, error) {
	e, ok := c.plans[planID]
	if !ok {
		return nil, fmt.Errorf("%w %q", ErrUnknownPlan, planID)
	}
	return slices.Clone(e.create.json), nil
}

// UpdateSchema returns the update-parameters JSON schema of a plan, the exact document served in
// the catalog and used by ValidateUpdate.
func (c *Catalog) UpdateSchema(planID string) (json.RawMessage, error) {
	e, ok := c.plans[planID]
	if !ok {
		return nil, fmt.Errorf("%w %q", ErrUnknownPlan, planID)
	}
	return slices.Clone(e.update.json), nil
}

// ConcreteMachineType is the machine type the Runtime CR names for a provider's machine type: a
// version-agnostic name (mi.large) resolved as the plans file says (the machine's resolvesTo,
// else the first of the provider's machinesVersions that matches: mi.large → m7i.large), any
// other as it is.
func (c *Catalog) ConcreteMachineType(provider, machineType string) string {
	if concrete, ok := c.concreteMachines[provider][machineType]; ok {
		return concrete
	}
	if concrete, ok := resolveMachineVersion(c.machineVersions[provider], machineType); ok {
		return concrete
	}
	return machineType
}

// VolumeType is the worker nodes' disk type of a plan's runtime on provider: the plan's
// volumeTypes entry, else the provider's volumeType; "" for none (the Runtime CR then names
// none, as upstream's for SAP Cloud Infrastructure).
func (c *Catalog) VolumeType(plan Plan, provider string) string {
	if t, ok := plan.VolumeTypes[provider]; ok {
		return t
	}
	return c.providerDefaults[provider].volumeType
}

// MachineImage returns the OS image the plans file configures for a
// provider's worker nodes (version "" for the image's default), and whether
// it configures one.
func (c *Catalog) MachineImage(provider string) (name, version string, ok bool) {
	img := c.providerDefaults[provider].image
	if img == nil {
		return "", "", false
	}
	return img.Name, img.Version, true
}
