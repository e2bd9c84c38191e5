// Package catalogtest holds catalogs for tests of the parameters a setting offers on some plans
// only (ingressFiltering, accessControlList, additionalVolumeSizeGi): out of the box keb offers
// them as upstream's shipped defaults do (ingress filtering on aws, azure and gcp, the others
// nowhere), and the tests of what they do need them offered.
package catalogtest

import (
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/kyma-keb/keb/internal/catalog"
	"github.com/kyma-keb/keb/resources"
)

// gated are the plans offering every gated parameter in PlansFileWithGatedParameters, with the
// largest additionalVolumeSizeGi each offers.
var gated = map[string]int{
	catalog.AzurePlanName: 1024, catalog.AWSPlanName: 1024, catalog.GCPPlanName: 1024, catalog.AzureLitePlanName: 256,
	catalog.PreviewPlanName: 1024, catalog.SapConvergedCloudPlanName: 1024, catalog.BuildRuntimeAWSPlanName: 1024,
	catalog.BuildRuntimeGCPPlanName: 1024, catalog.BuildRuntimeAzurePlanName: 1024,
}

var planHeader = regexp.MustCompile(`(?m)^  ([a-z_-]+):\n`)

// PlansFileWithGatedParameters writes the embedded plans file with ingressFiltering,
// accessControlList and additionalVolumeSizeGi offered on every paid plan (an operator's
// plans.yaml could), and returns its path.
func PlansFileWithGatedParameters(t testing.TB) string {
	t.Helper()
	b, err := resources.FS.ReadFile(resources.PlansFile)
	if err != nil {
		t.Fatal(err)
	}
	text := string(b)
	start := strings.Index(text, "\nplans:\n")
	if start < 0 {
		t.Fatal("the plans file changed: no plans section")
	}
	head, plans := text[:start], text[start:]
	var out strings.Builder
	last := 0
	locs := planHeader.FindAllStringSubmatchIndex(plans, -1)
	for i, loc := range locs {
		end := len(plans)
		if i+1 < len(locs) {
			end = locs[i+1][0]
		}
		name := plans[loc[2]:loc[3]]
		out.WriteString(plans[last:loc[1]])
		if max, ok := gated[name]; ok {
			block := plans[loc[1]:end]
			if !strings.Contains(block, "    ingressFiltering:") {
				out.WriteString("    ingressFiltering: true\n")
			}
			if !strings.Contains(block, "    accessControlList:") {
				out.WriteString("    accessControlList: true\n")
			}
			if !strings.Contains(block, "    maxAdditionalVolumeSizeGi:") {
				out.WriteString("    maxAdditionalVolumeSizeGi: " + strconv.Itoa(max) + "\n")
			}
		}
		last = loc[1]
	}
	out.WriteString(plans[last:])
	path := filepath.Join(t.TempDir(), "plans-gated.yaml")
	if err := os.WriteFile(path, []byte(head+out.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// WithGatedParameters is the catalog of PlansFileWithGatedParameters.
func WithGatedParameters(t testing.TB) *catalog.Catalog {
	t.Helper()
	c, err := catalog.Load(PlansFileWithGatedParameters(t))
	if err != nil {
		t.Fatal(err)
	}
	for name := range gated {
		if p, ok := c.PlanByName(name); !ok || !p.IngressFiltering || !p.AccessControlList || p.MaxAdditionalVolumeSizeGi == 0 {
			t.Fatalf("plan %s does not offer every gated parameter in %s", name, "plans-gated.yaml")
		}
	}
	return c
}
