package catalog

import (
	"fmt"
	"slices"
	"testing"

	"github.com/google/uuid"
)

// TestPickZonesFromTheRegionsList: a runtime's zones are zones its region has (SAP Cloud
// Infrastructure eu-de-1 has no c, eu-de-2 two zones, ap-jp-1 one; AWS ca-central-1 no c),
// as many as asked for and the region has, named as the provider names them; the same runtime
// always gets the same zones, and runtimes spread over every zone of the region.
func TestPickZonesFromTheRegionsList(t *testing.T) {
	t.Parallel()
	cat, err := Load("")
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		provider, region string
		n                int
		wantFrom         []string
		wantCount        int
	}{
		{provider: "openstack", region: "eu-de-1", n: 3, wantFrom: []string{"eu-de-1a", "eu-de-1b", "eu-de-1d"}, wantCount: 3},
		{provider: "openstack", region: "eu-de-2", n: 3, wantFrom: []string{"eu-de-2a", "eu-de-2b"}, wantCount: 2},
		{provider: "openstack", region: "ap-jp-1", n: 3, wantFrom: []string{"ap-jp-1a"}, wantCount: 1},
		{provider: "aws", region: "ca-central-1", n: 3, wantFrom: []string{"ca-central-1a", "ca-central-1b", "ca-central-1d"}, wantCount: 3},
		{provider: "aws", region: "us-east-1", n: 3, wantFrom: []string{"us-east-1a", "us-east-1b", "us-east-1c", "us-east-1d", "us-east-1f"}, wantCount: 3},
		{provider: "aws", region: "us-east-1", n: 1, wantFrom: []string{"us-east-1a", "us-east-1b", "us-east-1c", "us-east-1d", "us-east-1f"}, wantCount: 1},
		{provider: "gcp", region: "europe-west3", n: 3, wantFrom: []string{"europe-west3-a", "europe-west3-b", "europe-west3-c"}, wantCount: 3},
		{provider: "azure", region: "westeurope", n: 1, wantFrom: []string{"1", "2", "3"}, wantCount: 1},
	}
	for _, tc := range tests {
		t.Run(fmt.Sprintf("%s %s %d", tc.provider, tc.region, tc.n), func(t *testing.T) {
			t.Parallel()
			if got := cat.RegionZones(tc.provider, tc.region); !slices.Equal(got, tc.wantFrom) {
				t.Fatalf("RegionZones = %v, want %v", got, tc.wantFrom)
			}
			used := map[string]bool{}
			for range 200 {
				seed := uuid.NewString()
				got := cat.PickZones(tc.provider, tc.region, seed, tc.n)
				if len(got) != tc.wantCount {
					t.Fatalf("PickZones(%s) = %v, want %d zones", seed, got, tc.wantCount)
				}
				for i, z := range got {
					if !slices.Contains(tc.wantFrom, z) || slices.Contains(got[:i], z) {
						t.Fatalf("PickZones(%s) = %v: %q is not one of %v or twice", seed, got, z, tc.wantFrom)
					}
					used[z] = true
				}
				if again := cat.PickZones(tc.provider, tc.region, seed, tc.n); !slices.Equal(again, got) {
					t.Fatalf("PickZones(%s) gave %v, then %v", seed, got, again)
				}
				if more := cat.PickZones(tc.provider, tc.region, seed, 5); !slices.Equal(more[:len(got)], got) {
					t.Fatalf("PickZones(%s, 5) = %v does not begin with PickZones(%s, %d) = %v", seed, more, seed, tc.n, got)
				}
			}
			if len(used) != len(tc.wantFrom) {
				t.Errorf("200 runtimes used zones %v of %v", used, tc.wantFrom)
			}
		})
	}
}

// TestKeepZones: a running pool keeps its zones, even ones the region's list lacks (written by
// an earlier keb version: ca-central-1c); a plan with more zones adds the region's others.
func TestKeepZones(t *testing.T) {
	t.Parallel()
	cat, err := Load("")
	if err != nil {
		t.Fatal(err)
	}
	old := []string{"ca-central-1a", "ca-central-1b", "ca-central-1c"}
	if got := cat.KeepZones(old, "aws", "ca-central-1", "rt", 3); !slices.Equal(got, old) {
		t.Errorf("KeepZones(%v) = %v, want them unchanged", old, got)
	}
	got := cat.KeepZones([]string{"ca-central-1b"}, "aws", "ca-central-1", "rt", 3)
	if !slices.Equal(slices.Sorted(slices.Values(got)), []string{"ca-central-1a", "ca-central-1b", "ca-central-1d"}) || got[0] != "ca-central-1b" {
		t.Errorf("KeepZones([ca-central-1b], 3) = %v, want ca-central-1b first, then a and d", got)
	}
	if got := cat.KeepZones(nil, "openstack", "ap-jp-1", "rt", 3); !slices.Equal(got, []string{"ap-jp-1a"}) {
		t.Errorf("KeepZones(nil) on ap-jp-1 = %v, want [ap-jp-1a]", got)
	}
}

// TestPoolZones: an additional pool takes the Kyma pool's zones, all three with haZones, the
// first without, and the first only on a single-zone plan.
func TestPoolZones(t *testing.T) {
	t.Parallel()
	cat, err := Load("")
	if err != nil {
		t.Fatal(err)
	}
	aws, _ := cat.PlanByID(AWSPlanID)
	lite, _ := cat.PlanByID(AzureLitePlanID)
	kyma := []string{"eu-de-1d", "eu-de-1a", "eu-de-1b"}
	f := false
	for _, tc := range []struct {
		name string
		plan Plan
		pool WorkerPool
		want []string
	}{
		{name: "haZones", plan: aws, pool: WorkerPool{Name: "p"}, want: kyma},
		{name: "no haZones", plan: aws, pool: WorkerPool{Name: "p", HAZones: &f}, want: kyma[:1]},
		{name: "single-zone plan", plan: lite, pool: WorkerPool{Name: "p"}, want: kyma[:1]},
	} {
		if got := cat.PoolZones(tc.plan, tc.pool, kyma); !slices.Equal(got, tc.want) {
			t.Errorf("%s: PoolZones = %v, want %v", tc.name, got, tc.want)
		}
	}
}
