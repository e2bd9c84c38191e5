package catalog

import (
	"fmt"
	"net/netip"
)

// Networking is the networking parameter: the cluster's CIDRs, fixed at
// creation. Nodes is required when the parameter is given; Pods and Services
// default to DefaultPodsCIDR and DefaultServicesCIDR.
type Networking struct {
	Nodes    string `json:"nodes"`
	Pods     string `json:"pods,omitempty"`
	Services string `json:"services,omitempty"`
	// DualStack asks for IPv4 and IPv6 (plans of a provider with dualStack in the plans file:
	// AWS). It is recorded with the instance but not written into the Runtime CR: the Runtime CR
	// contract keb validates against (KIM's CRD in resources/crds) names no networking.dualStack.
	DualStack *bool `json:"dualStack,omitempty"`
}

// The cluster CIDRs of a runtime created without the networking parameter
// (upstream's defaults).
const (
	DefaultNodesCIDR    = "10.250.0.0/16"
	DefaultPodsCIDR     = "10.96.0.0/13"
	DefaultServicesCIDR = "10.104.0.0/13"
)

// maxNodesPrefix is the longest nodes prefix: a smaller range leaves too few
// addresses for the nodes of the largest autoscaler bound.
const maxNodesPrefix = 23

// unroutableRanges are IPv4 ranges no cluster network can use: "this
// network", loopback, link-local, multicast and the reserved class E range
// up to the broadcast address.
var unroutableRanges = []struct{ cidr, what string }{{"0.0.0.0/8", "\"this network\""}, {"127.0.0.0/8", "loopback"},
	{"169.254.0.0/16", "link-local"}, {"224.0.0.0/4", "multicast"}, {"240.0.0.0/4", "reserved (class E and broadcast)"}}

// Sizes a cluster needs: each node gets a /24 of the pods range
// (Kubernetes' node CIDR mask), the services range holds at least 256
// addresses, and a nodes range loses its network, broadcast and the three
// addresses a cloud subnet reserves.
const (
	podsPerNodePrefix  = 24
	maxServicesPrefix  = 24
	reservedNodesAddrs = 5
)

// reservedRanges are Gardener's own networks, which a runtime's CIDRs must
// not overlap.
var reservedRanges = []string{"10.243.128.0/17", "10.242.0.0/16", "10.243.0.0/17", "10.64.0.0/11", "10.254.0.0/16",
	"10.243.0.0/16", "192.168.123.0/24", "240.0.0.0/8"}

// CIDRs returns the runtime's nodes, pods and services CIDRs: the
// parameter's values over the defaults (n may be nil).
func (n *Networking) CIDRs() (nodes, pods, services string) {
	nodes, pods, services = DefaultNodesCIDR, DefaultPodsCIDR, DefaultServicesCIDR
	if n == nil {
		return nodes, pods, services
	}
	return firstNonEmpty(n.Nodes, nodes), firstNonEmpty(n.Pods, pods), firstNonEmpty(n.Services, services)
}

// problems checks the CIDRs: each a canonical IPv4 prefix (the nodes one at
// most /23), none overlapping another, one of Gardener's reserved ranges or
// a range no cluster can route, and each large enough for maxNodes nodes
// (every autoscaler's maximum, the additional pools' included). Each problem
// names the field and, for an overlap, the range it clashes with.
func (n *Networking) problems(maxNodes int) []FieldProblem {
	if n == nil {
		return nil
	}
	nodes, pods, services := n.CIDRs()
	fields := []struct{ name, cidr string }{{"networking.nodes", nodes}, {"networking.pods", pods}, {"networking.services", services}}
	var problems []FieldProblem
	parsed := make([]netip.Prefix, len(fields))
	for i, f := range fields {
		p, err := netip.ParsePrefix(f.cidr)
		switch {
		case err != nil || !p.Addr().Is4():
			problems = append(problems, FieldProblem{Field: f.name, Message: fmt.Sprintf("%q is not an IPv4 CIDR such as 10.250.0.0/16", f.cidr)})
			continue
		case p.Masked() != p:
			problems = append(problems, FieldProblem{Field: f.name, Message: fmt.Sprintf("%q is not a network address: did you mean %s?", f.cidr, p.Masked())})
			continue
		case i == 0 && p.Bits() > maxNodesPrefix:
			problems = append(problems, FieldProblem{Field: f.name, Message: fmt.Sprintf("%q is too small: the nodes range must be /%d or larger", f.cidr, maxNodesPrefix)})
			continue
		}
		if why := unroutable(p); why != "" {
			problems = append(problems, FieldProblem{Field: f.name, Message: fmt.Sprintf("%s %s", f.cidr, why)})
			continue
		}
		if why := tooSmall(i, p, maxNodes); why != "" {
			problems = append(problems, FieldProblem{Field: f.name, Message: fmt.Sprintf("%s is too small: %s", f.cidr, why)})
		}
		parsed[i] = p
	}
	for i := range fields {
		if !parsed[i].IsValid() {
			continue
		}
		for j := i + 1; j < len(fields); j++ {
			if parsed[j].IsValid() && parsed[i].Overlaps(parsed[j]) {
				note := ""
				if n.isDefault(j) {
					note = ", the default"
				}
				problems = append(problems, FieldProblem{Field: fields[i].name, Message: fmt.Sprintf(
					"%s overlaps %s (%s%s)", fields[i].cidr, fields[j].name, fields[j].cidr, note)})
			}
		}
		for _, r := range reservedRanges {
			if parsed[i].Overlaps(netip.MustParsePrefix(r)) {
				problems = append(problems, FieldProblem{Field: fields[i].name, Message: fmt.Sprintf(
					"%s overlaps %s, a range Gardener reserves", fields[i].cidr, r)})
			}
		}
	}
	return problems
}

// unroutable says which range no cluster can use p overlaps, or "".
func unroutable(p netip.Prefix) string {
	for _, r := range unroutableRanges {
		if p.Overlaps(netip.MustParsePrefix(r.cidr)) {
			return fmt.Sprintf("overlaps %s, a %s range no cluster can use", r.cidr, r.what)
		}
	}
	return ""
}

// tooSmall says why the i-th range (nodes, pods, services) cannot hold a
// cluster of maxNodes nodes, or "".
func tooSmall(i int, p netip.Prefix, maxNodes int) string {
	switch i {
	case 0:
		if usable := (1 << (32 - p.Bits())) - reservedNodesAddrs; usable < maxNodes {
			return fmt.Sprintf("it leaves %d node addresses, the autoscalers allow %d nodes", usable, maxNodes)
		}
	case 1:
		if p.Bits() > podsPerNodePrefix || 1<<(podsPerNodePrefix-p.Bits()) < maxNodes {
			return fmt.Sprintf("each node takes a /%d of the pods range, and the autoscalers allow %d nodes", podsPerNodePrefix, maxNodes)
		}
	case 2:
		if p.Bits() > maxServicesPrefix {
			return fmt.Sprintf("the services range must be /%d or larger", maxServicesPrefix)
		}
	}
	return ""
}

// isDefault reports whether the i-th CIDR (nodes, pods, services) is the default, not given.
func (n *Networking) isDefault(i int) bool {
	return [...]bool{n.Nodes == "", n.Pods == "", n.Services == ""}[i]
}

// dualStackTitle is upstream's title of networking.dualStack, warning of the Istio module.
const dualStackTitle = "Enable dual stack (Istio module doesn't support dual stack)"

// networkingSchema is the networking parameter's schema; dualStack adds networking.dualStack,
// whose description links to docsURL as upstream's does.
func networkingSchema(dualStack bool, docsURL string) map[string]any {
	var p properties
	cidr := func(title, description, def string) map[string]any {
		return map[string]any{"type": "string", "title": title, "description": description, "default": def, "minLength": 1}
	}
	p.add("nodes", cidr("Worker node network", "CIDR of the worker nodes' network, /23 or larger.", DefaultNodesCIDR))
	p.add("pods", cidr("Pod network", "CIDR of the pods' network.", DefaultPodsCIDR))
	p.add("services", cidr("Service network", "CIDR of the services' network.", DefaultServicesCIDR))
	if dualStack {
		p.add("dualStack", map[string]any{
			"type": "boolean", "title": dualStackTitle,
			"description": "Gives the cluster IPv6 addresses beside the IPv4 ones. Cannot change later. See " + docsURL,
		})
	}
	return p.object(map[string]any{
		"title":       "Networking",
		"description": "The cluster's networks; none may overlap another. They cannot change later.",
		"required":    []string{"nodes"},
	})
}
