package main

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// apiServer is the control plane's kube-apiserver as the tool measures it:
// its process (CPU, RSS) and its own endpoints (/metrics, /debug/pprof),
// read as the cluster admin the tool is.
type apiServer struct {
	pid  int
	rest rest.Interface
}

func newAPIServer(cfg *rest.Config, pid int) (*apiServer, error) {
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	return &apiServer{pid: pid, rest: cs.CoreV1().RESTClient()}, nil
}

func (a *apiServer) get(ctx context.Context, path string, params ...string) ([]byte, error) {
	req := a.rest.Get().AbsPath(path)
	for i := 0; i+1 < len(params); i += 2 {
		req = req.Param(params[i], params[i+1])
	}
	b, err := req.DoRaw(ctx)
	if err != nil {
		return nil, fmt.Errorf("kube-apiserver %s: %w", path, err)
	}
	return b, nil
}

// heapProfile writes the kube-apiserver's heap profile (after a GC) to
// file and returns its RSS: what holds its memory.
func (a *apiServer) heapProfile(ctx context.Context, file string) (uint64, error) {
	b, err := a.get(ctx, "/debug/pprof/heap", "gc", "1")
	if err != nil {
		return 0, err
	}
	if err := os.WriteFile(file, b, 0o644); err != nil {
		return 0, err
	}
	return rss(a.pid)
}

// requests are the kube-apiserver's apiserver_request_total counters
// summed by "VERB resource[/subresource]".
func (a *apiServer) requests(ctx context.Context) (map[string]float64, error) {
	b, err := a.get(ctx, "/metrics")
	if err != nil {
		return nil, err
	}
	return requestCounts(b)
}

// requestCounts reads apiserver_request_total out of a /metrics answer.
func requestCounts(b []byte) (map[string]float64, error) {
	out := map[string]float64{}
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		rest, ok := strings.CutPrefix(line, "apiserver_request_total{")
		if !ok {
			continue
		}
		labels, value, ok := strings.Cut(rest, "} ")
		if !ok {
			continue
		}
		v, err := strconv.ParseFloat(value, 64)
		if err != nil {
			continue
		}
		l := promLabels(labels)
		key := l["verb"] + " " + l["resource"]
		if l["subresource"] != "" {
			key += "/" + l["subresource"]
		}
		out[key] += v
	}
	return out, sc.Err()
}

// promLabels parses `a="x",b="y"` (the values the apiserver gives these
// counters hold no quotes or commas).
func promLabels(s string) map[string]string {
	out := map[string]string{}
	for _, kv := range strings.Split(s, ",") {
		k, v, ok := strings.Cut(kv, "=")
		if ok {
			out[k] = strings.Trim(v, `"`)
		}
	}
	return out
}
