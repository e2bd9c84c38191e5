package provisioning

import (
	"context"
	"fmt"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kyma-keb/keb/internal/catalog"
	"github.com/kyma-keb/keb/internal/controlplane"
	"github.com/kyma-keb/keb/internal/infrastructuremanager"
	"github.com/kyma-keb/keb/internal/kube"
	"github.com/kyma-keb/keb/internal/kyma"
	"github.com/kyma-keb/keb/internal/process"
)

// CreateRuntime asks the infrastructure manager for the cluster: a Runtime CR
// in the control plane carrying the cluster and the Kyma configuration.
type CreateRuntime struct {
	KCP    client.Client
	Config Config
}

// Name implements process.Step.
func (s *CreateRuntime) Name() string { return "create_runtime" }

// SharesCheckpoint implements process.SharedCheckpoint: a re-run converges
// the Runtime CR on the record.
func (s *CreateRuntime) SharesCheckpoint(*process.Operation) bool { return true }

// Run implements process.Step. CreateOrUpdate makes a re-run converge on the
// same CR instead of failing on AlreadyExists.
func (s *CreateRuntime) Run(ctx context.Context, op *process.Operation) (process.StepResult, error) {
	op.Describe("Requesting the cluster from the infrastructure manager")
	params, err := Parameters(op)
	if err != nil {
		return process.Fail("%v", err)
	}
	d := op.Record
	admins := params.Administrators
	if len(admins) == 0 {
		admins = []string{op.Instance.UserID}
	}
	rt := &infrastructuremanager.Runtime{ObjectMeta: metav1.ObjectMeta{Name: kyma.Name(op.Instance.RuntimeID), Namespace: s.Config.Namespace}}
	_, err = kube.CreateOrUpdate(ctx, s.KCP, rt, func() error {
		rt.Labels = mergeLabels(rt.Labels, Labels(op))
		rt.Spec = infrastructuremanager.RuntimeSpec{
			Shoot: infrastructuremanager.RuntimeShoot{
				Name:              op.Instance.ShootName,
				PlatformRegion:    op.Instance.PlatformRegion,
				Region:            d.ProviderRegion,
				SecretBindingName: d.HyperscalerSecret,
				Kubernetes:        infrastructuremanager.RuntimeKubernetes{KubeAPIServer: infrastructuremanager.APIServer{OIDCConfig: OIDCConfig(params.OIDC)}},
				Provider: infrastructuremanager.RuntimeProvider{
					Type: d.Provider,
					Workers: []infrastructuremanager.Worker{{
						Name:        "cpu-worker-0",
						MachineType: d.MachineType,
						Minimum:     d.AutoScalerMin,
						Maximum:     d.AutoScalerMax,
						Zones:       Zones(d.Provider, d.ProviderRegion, d.ZonesCount),
					}},
				},
			},
			Security: infrastructuremanager.RuntimeSecurity{Administrators: admins},
			Kyma: infrastructuremanager.RuntimeKyma{
				Version:            d.KymaVersion,
				Components:         d.Components,
				OverridesSecretRef: d.OverridesSecret,
			},
		}
		return nil
	})
	if err != nil {
		return process.StepResult{}, fmt.Errorf("creating Runtime CR: %w", err)
	}
	return process.Done()
}

// OIDCConfig is the Runtime CR's form of the oidc parameter; nil for none.
func OIDCConfig(p *catalog.OIDC) *infrastructuremanager.OIDCConfig {
	if p == nil {
		return nil
	}
	return &infrastructuremanager.OIDCConfig{ClientID: p.ClientID, IssuerURL: p.IssuerURL, GroupsClaim: p.GroupsClaim,
		SigningAlgs: append([]string(nil), p.SigningAlgs...), UsernameClaim: p.UsernameClaim, UsernamePrefix: p.UsernamePrefix}
}

// Labels are the labels of the control-plane CRs of an operation's runtime.
func Labels(op *process.Operation) map[string]string {
	i := op.Instance
	return map[string]string{
		controlplane.LabelInstanceID:      i.InstanceID,
		controlplane.LabelRuntimeID:       op.Instance.RuntimeID,
		controlplane.LabelGlobalAccountID: i.GlobalAccountID,
		controlplane.LabelSubAccountID:    i.SubAccountID,
		controlplane.LabelPlanID:          i.PlanID,
		controlplane.LabelPlanName:        i.PlanName,
		controlplane.LabelRegion:          op.Record.Region,
		controlplane.LabelPlatformRegion:  i.PlatformRegion,
		controlplane.LabelShootName:       op.Instance.ShootName,
		controlplane.LabelKymaName:        kyma.Name(op.Instance.RuntimeID),
	}
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
