package main

import (
	"fmt"
	"os"
	"runtime"
	"strings"
	"time"
)

const (
	sectionTitle = "## Fleet scale: the control plane at N runtimes"
	beginMarker  = "<!-- scale:begin (written by make scale: testing/scaleload) -->"
	endMarker    = "<!-- scale:end -->"
)

// render is the results as markdown tables.
func render(sizes []int, fills []fillReport, runs []run, commit string, soak time.Duration, rate int) string {
	var b strings.Builder
	fmt.Fprintf(&b, "Measured at %s on %s (`make scale`, %d cores shared with other work); soak: %s of steady polling, %d requests/s per replica.\n\n",
		orDash(commit), time.Now().UTC().Format("2006-01-02 15:04 UTC"), numCPU(), soak, rate)
	fmt.Fprintf(&b, "Control plane: kube-apiserver flags beyond envtest's: `%s`, its environment: `%s`; load average (1, 5, 15 min) at the end `%s`.\n\n",
		orNone(apiserverArgs), orNone(apiserverEnv), loadAverage())
	b.WriteString("Filling the control plane (Runtime CR + status, Kyma CR + status, kubeconfig Secret per runtime):\n\n")
	b.WriteString("| N | runtimes (not suspended) | through the API: objects | API requests | took | objects/s | into etcd: objects | took | objects/s | kube-apiserver RSS after |\n")
	b.WriteString("|---|---|---|---|---|---|---|---|---|---|\n")
	for i, f := range fills {
		fmt.Fprintf(&b, "| %d | %d | %d | %d | %s | %.0f | %d | %s | %.0f | %s |\n", sizes[i], f.Runtimes, f.APIObjects, f.APIRequests,
			f.APITook.Round(time.Second), perSecond(f.APIObjects, f.APITook), f.BulkObjects, f.BulkTook.Round(time.Second),
			perSecond(f.BulkObjects, f.BulkTook), mib(f.APIServerRSS))
	}
	b.WriteString("\n`keb serve`, two replicas started together (watch running = its first full list synced: what a resync costs again; CPU: user+system):\n\n")
	b.WriteString("| N | binary | replica | /readyz 200 | watch running | keb CPU until then | apiserver CPU (both lists) | apiserver RSS then | RSS after start | live heap after start | RSS after soak | live heap after soak |\n")
	b.WriteString("|---|---|---|---|---|---|---|---|---|---|---|---|\n")
	for _, r := range runs {
		for _, x := range r.Replica {
			fmt.Fprintf(&b, "| %d | %s | %s | %.1f s | %.1f s | %.1f s | %.1f s | %s | %s | %s | %s | %s |\n", r.N, r.Binary, x.Name[len(x.Name)-1:],
				x.Ready.Seconds(), x.Synced.Seconds(), x.CPUAtSync.Seconds(), r.APIServerCPU.Seconds(), mib(r.APIServerRSS),
				mib(x.Start.RSS), mib(x.Start.HeapAlloc), mibOrDash(x.Soak.RSS), mibOrDash(x.Soak.HeapAlloc))
		}
	}
	for _, r := range runs {
		if r.Upgrades != nil {
			b.WriteString(renderUpgrades(*r.Upgrades))
		}
	}
	if len(sizes) > 1 {
		b.WriteString("\nMemory per extra 1,000 runtimes (mean of the two replicas, after start):\n\n")
		b.WriteString("| binary | N | RSS per 1,000 | live heap per 1,000 |\n|---|---|---|---|\n")
		byKey := map[string]run{}
		var names []string
		for _, r := range runs {
			if _, ok := byKey[fmt.Sprint(r.Binary, sizes[0])]; !ok && r.N == sizes[0] {
				names = append(names, r.Binary)
			}
			byKey[fmt.Sprint(r.Binary, r.N)] = r
		}
		for _, name := range names {
			for i := 1; i < len(sizes); i++ {
				lo, hi := byKey[fmt.Sprint(name, sizes[i-1])], byKey[fmt.Sprint(name, sizes[i])]
				k := float64(sizes[i]-sizes[i-1]) / 1000
				rss := (mean(hi, func(m memory) uint64 { return m.RSS }) - mean(lo, func(m memory) uint64 { return m.RSS })) / k
				heap := (mean(hi, func(m memory) uint64 { return m.HeapAlloc }) - mean(lo, func(m memory) uint64 { return m.HeapAlloc })) / k
				fmt.Fprintf(&b, "| %s | %d → %d | %.2f MiB | %.2f MiB |\n", name, sizes[i-1], sizes[i], rss/(1<<20), heap/(1<<20))
			}
		}
	}
	return b.String()
}

func mean(r run, f func(memory) uint64) float64 {
	if len(r.Replica) == 0 {
		return 0
	}
	var sum float64
	for _, x := range r.Replica {
		sum += float64(f(x.Start))
	}
	return sum / float64(len(r.Replica))
}

func mibOrDash(b uint64) string {
	if b == 0 {
		return "–"
	}
	return mib(b)
}

func orDash(s string) string {
	if s == "" {
		return "an uncommitted tree"
	}
	return "commit " + s
}

// writeSection replaces what the markers enclose in path's scale section,
// adding the section at the end when the file has none. The prose around
// the markers is the reader's and stays.
func writeSection(path, body string) error {
	raw, err := os.ReadFile(path)
	if err != nil && !os.IsNotExist(err) {
		return err
	}
	s := string(raw)
	block := beginMarker + "\n" + body + endMarker
	i, j := strings.Index(s, beginMarker), strings.Index(s, endMarker)
	switch {
	case i >= 0 && j > i:
		s = s[:i] + block + s[j+len(endMarker):]
	default:
		s = strings.TrimRight(s, "\n") + "\n\n" + sectionTitle + "\n\n" + block + "\n"
	}
	return os.WriteFile(path, []byte(s), 0o644)
}

func numCPU() int { return runtime.NumCPU() }

func orNone(s string) string {
	if s == "" {
		return "none"
	}
	return s
}

// loadAverage is /proc/loadavg's first three fields: the machine's load.
func loadAverage() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "?"
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return "?"
	}
	return strings.Join(f[:3], " ")
}
