package provisioning

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kyma-keb/keb/internal/catalog"
	"github.com/kyma-keb/keb/internal/controlplane"
	im "github.com/kyma-keb/keb/internal/infrastructuremanager"
	"github.com/kyma-keb/keb/internal/kyma"
	"github.com/kyma-keb/keb/internal/process"
)

// CreateRuntime asks the infrastructure manager for the cluster: a Runtime CR
// in the control plane, in the infrastructure manager's shape and nothing of
// keb's own (the Kyma version and components are keb's records).
type CreateRuntime struct {
	KCP     client.Client
	Catalog *catalog.Catalog
	Config  Config
}

// Name implements process.Step.
func (s *CreateRuntime) Name() string { return "create_runtime" }

// SharesCheckpoint implements process.SharedCheckpoint: a re-run converges
// the Runtime CR on the record.
func (s *CreateRuntime) SharesCheckpoint(*process.Operation) bool { return true }

// Run implements process.Step. A re-run (after a crash) finds the CR and
// patches the fields this step sets, which converges it on the record and
// keeps whatever else the infrastructure manager or an operator set.
func (s *CreateRuntime) Run(ctx context.Context, op *process.Operation) (process.StepResult, error) {
	op.Describe("Requesting the cluster from the infrastructure manager")
	params, err := Parameters(op)
	if err != nil {
		return process.Fail("%v", err)
	}
	rt := DesiredRuntime(op, params, s.Catalog, s.Config.Namespace)
	err = s.KCP.Create(ctx, rt, client.FieldOwner(im.FieldManager), client.FieldValidation("Strict"))
	if apierrors.IsAlreadyExists(err) {
		fields, ferr := RuntimeFields(rt)
		if ferr != nil {
			return process.StepResult{}, ferr
		}
		_, _, err = im.Patch(ctx, s.KCP, client.ObjectKeyFromObject(rt), fields)
	}
	if err != nil {
		return process.StepResult{}, fmt.Errorf("creating Runtime CR: %w", err)
	}
	return process.Done()
}

// DesiredRuntime is the Runtime CR of an operation's runtime, as
// create_runtime writes it.
func DesiredRuntime(op *process.Operation, params catalog.ProvisioningParameters, cat *catalog.Catalog, namespace string) *im.Runtime {
	d := op.Record
	plan, _ := cat.PlanByID(op.Instance.PlanID)
	nodes, pods, services := params.Networking.CIDRs()
	rt := &im.Runtime{
		ObjectMeta: metav1.ObjectMeta{Name: kyma.Name(op.Instance.RuntimeID), Namespace: namespace, Labels: RuntimeLabels(op)},
		Spec: im.RuntimeSpec{
			Shoot: im.RuntimeShoot{
				Name:              op.Instance.ShootName,
				Purpose:           im.ShootPurpose(plan.Purpose),
				PlatformRegion:    op.Instance.PlatformRegion,
				Region:            d.ProviderRegion,
				LicenceType:       licenceType(op),
				SecretBindingName: d.HyperscalerSecret,
				Kubernetes:        im.Kubernetes{KubeAPIServer: im.APIServer{OIDCConfig: OIDCConfig(params.OIDC)}},
				Provider: im.Provider{
					Type:    d.Provider,
					Workers: []im.Worker{KymaWorker(op, cat, plan)},
				},
				Networking: im.Networking{Nodes: nodes, Pods: pods, Services: services},
			},
			Security: im.Security{
				Administrators: Administrators(op, params),
				Networking:     im.NetworkingSecurity{Filter: im.Filter{Egress: im.Egress{Enabled: !external(op)}}},
			},
		},
	}
	return rt
}

// KymaWorker is the runtime's Kyma worker pool as the record resolved it:
// machine type and image, autoscaler bounds, zones, disk, and a roll-out
// that adds a machine per zone and takes none away.
func KymaWorker(op *process.Operation, cat *catalog.Catalog, plan catalog.Plan) im.Worker {
	d := op.Record
	zones := Zones(d.Provider, d.ProviderRegion, d.ZonesCount)
	w := im.Worker{
		Name:           im.KymaWorkerName,
		Machine:        im.Machine{Type: d.MachineType},
		Minimum:        int32(d.AutoScalerMin),
		Maximum:        int32(d.AutoScalerMax),
		MaxSurge:       ptr(intstr.FromInt32(int32(len(zones)))),
		MaxUnavailable: ptr(intstr.FromInt32(0)),
		Zones:          zones,
		Volume:         &im.Volume{VolumeSize: fmt.Sprintf("%dGi", plan.VolumeSizeGb)},
	}
	if name, version, ok := cat.MachineImage(d.Provider); ok {
		w.Machine.Image = &im.ShootMachineImage{Name: name}
		if version != "" {
			w.Machine.Image.Version = &version
		}
	}
	return w
}

// RuntimeFields is the part of rt that keb sets, for im.Patch: its labels
// and spec, without the fields of rt's Go type that are empty.
func RuntimeFields(rt *im.Runtime) (im.Fields, error) {
	f := im.Fields{}
	if err := f.Set(rt.Labels, "metadata", "labels"); err != nil {
		return nil, err
	}
	if err := f.Set(rt.Spec, "spec"); err != nil {
		return nil, err
	}
	return f, nil
}

// Administrators are the runtime's cluster administrators: the
// administrators parameter, else the user who asked for the runtime.
func Administrators(op *process.Operation, params catalog.ProvisioningParameters) []string {
	if len(params.Administrators) > 0 {
		return params.Administrators
	}
	return []string{op.Instance.UserID}
}

// externalLicenceTypes are the context's license types of instances outside
// SAP (customers, partners, trials), whose egress is not filtered.
var externalLicenceTypes = []string{"CUSTOMER", "PARTNER", "TRIAL"}

// requestContext is the part of the stored OSB context the Runtime CR uses.
type requestContext struct {
	LicenseType string `json:"license_type"`
}

func storedContext(op *process.Operation) requestContext {
	var c requestContext
	if len(op.Instance.Context) > 0 {
		_ = json.Unmarshal(op.Instance.Context, &c) // validated on accept
	}
	return c
}

func licenceType(op *process.Operation) *string {
	if lt := storedContext(op).LicenseType; lt != "" {
		return &lt
	}
	return nil
}

func external(op *process.Operation) bool {
	lt := storedContext(op).LicenseType
	for _, e := range externalLicenceTypes {
		if strings.EqualFold(lt, e) {
			return true
		}
	}
	return false
}

// OIDCConfig is the Runtime CR's form of the oidc parameter; nil for none.
func OIDCConfig(p *catalog.OIDC) *im.OIDCConfig {
	if p == nil {
		return nil
	}
	opt := func(s string) *string {
		if s == "" {
			return nil
		}
		return &s
	}
	return &im.OIDCConfig{ClientID: opt(p.ClientID), IssuerURL: opt(p.IssuerURL), GroupsClaim: opt(p.GroupsClaim),
		SigningAlgs: append([]string(nil), p.SigningAlgs...), UsernameClaim: opt(p.UsernameClaim), UsernamePrefix: opt(p.UsernamePrefix)}
}

// Labels are the labels of the control-plane CRs of an operation's runtime
// that the infrastructure manager requires on a Runtime CR, with the
// hyperscaler region (a trial's too) in kyma-project.io/region.
func Labels(op *process.Operation) map[string]string {
	i := op.Instance
	return map[string]string{
		controlplane.LabelInstanceID:      i.InstanceID,
		controlplane.LabelRuntimeID:       op.Instance.RuntimeID,
		controlplane.LabelGlobalAccountID: i.GlobalAccountID,
		controlplane.LabelSubAccountID:    i.SubAccountID,
		controlplane.LabelPlanID:          i.PlanID,
		controlplane.LabelPlanName:        i.PlanName,
		controlplane.LabelRegion:          op.Record.ProviderRegion,
		controlplane.LabelPlatformRegion:  i.PlatformRegion,
		controlplane.LabelShootName:       op.Instance.ShootName,
		controlplane.LabelKymaName:        kyma.Name(op.Instance.RuntimeID),
	}
}

// RuntimeLabels are the Runtime CR's labels: Labels and the provider.
func RuntimeLabels(op *process.Operation) map[string]string {
	l := Labels(op)
	l[controlplane.LabelProvider] = op.Record.Provider
	return l
}

func mergeLabels(have, want map[string]string) map[string]string {
	if have == nil {
		have = map[string]string{}
	}
	for k, v := range want {
		have[k] = v
	}
	return have
}

// Zones names the first n availability zones of a region the way each
// provider does.
func Zones(provider, region string, n int) []string {
	zones := make([]string, 0, n)
	for i := range n {
		switch strings.ToLower(provider) {
		case "azure":
			zones = append(zones, fmt.Sprint(i+1))
		case "gcp":
			zones = append(zones, fmt.Sprintf("%s-%c", region, 'a'+i))
		default:
			zones = append(zones, fmt.Sprintf("%s%c", region, 'a'+i))
		}
	}
	return zones
}

func ptr[T any](v T) *T { return &v }
