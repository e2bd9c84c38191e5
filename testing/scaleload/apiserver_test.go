package main

import (
	"maps"
	"testing"
)

func TestRequestCountsSumByVerbAndResource(t *testing.T) {
	t.Parallel()
	metrics := `# HELP apiserver_request_total [STABLE] Counter of apiserver requests broken out for each verb, ...
# TYPE apiserver_request_total counter
apiserver_request_total{code="200",component="apiserver",dry_run="",group="",resource="secrets",scope="namespace",subresource="",verb="LIST",version="v1"} 7
apiserver_request_total{code="201",component="apiserver",dry_run="",group="",resource="secrets",scope="resource",subresource="",verb="POST",version="v1"} 3
apiserver_request_total{code="409",component="apiserver",dry_run="",group="",resource="secrets",scope="resource",subresource="",verb="POST",version="v1"} 2
apiserver_request_total{code="200",component="apiserver",dry_run="",group="operator.kyma-project.io",resource="kymas",scope="resource",subresource="status",verb="PUT",version="v1beta2"} 1.5e+06
apiserver_request_duration_seconds_count{component="apiserver",resource="secrets",verb="LIST"} 99
`
	got, err := requestCounts([]byte(metrics))
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]float64{"LIST secrets": 7, "POST secrets": 5, "PUT kymas/status": 1.5e6}
	if !maps.Equal(got, want) {
		t.Errorf("requestCounts = %v, want %v", got, want)
	}
}
