package catalog

import (
	"cmp"
	"fmt"
	"regexp"
	"slices"
	"strings"
)

// machineVersion is one of a provider's machinesVersions: a version-agnostic machine name
// pattern (mi.{size}) and the machine type it stands for (m7i.{size}).
type machineVersion struct {
	input, output string
	re            *regexp.Regexp
	placeholders  int
	literals      int
}

// placeholder is a {name} in a machinesVersions template.
var placeholder = regexp.MustCompile(`\{([a-zA-Z0-9_]+)\}`)

// parseMachineVersion compiles an input template into an anchored pattern whose placeholders
// match [a-zA-Z0-9]+, and checks that the output names only the input's placeholders.
func parseMachineVersion(input, output string) (machineVersion, error) {
	if input == "" || output == "" {
		return machineVersion{}, fmt.Errorf("%q: %q: neither template may be empty", input, output)
	}
	var re strings.Builder
	re.WriteString("^")
	names := map[string]bool{}
	literals, last := 0, 0
	for _, m := range placeholder.FindAllStringSubmatchIndex(input, -1) {
		lit := input[last:m[0]]
		re.WriteString(regexp.QuoteMeta(lit))
		literals += len(lit)
		name := input[m[2]:m[3]]
		if names[name] {
			return machineVersion{}, fmt.Errorf("%q: placeholder {%s} is used twice", input, name)
		}
		names[name] = true
		re.WriteString("(?P<" + name + ">[a-zA-Z0-9]+)")
		last = m[1]
	}
	re.WriteString(regexp.QuoteMeta(input[last:]) + "$")
	literals += len(input) - last
	if strings.ContainsAny(placeholder.ReplaceAllString(input, ""), "{}") {
		return machineVersion{}, fmt.Errorf("%q: a brace outside a {placeholder}", input)
	}
	for _, m := range placeholder.FindAllStringSubmatch(output, -1) {
		if !names[m[1]] {
			return machineVersion{}, fmt.Errorf("%q: %q: placeholder {%s} is not in the input", input, output, m[1])
		}
	}
	return machineVersion{input: input, output: output, re: regexp.MustCompile(re.String()),
		placeholders: len(names), literals: literals}, nil
}

// parseMachineVersions compiles a provider's machinesVersions in the order upstream tries
// them: fewer placeholders first, then more literal characters, then the input's lexical order.
func parseMachineVersions(templates map[string]string) ([]machineVersion, error) {
	var out []machineVersion
	for _, in := range sortedKeys(templates) {
		mv, err := parseMachineVersion(in, templates[in])
		if err != nil {
			return nil, err
		}
		out = append(out, mv)
	}
	slices.SortStableFunc(out, func(a, b machineVersion) int {
		return cmp.Or(cmp.Compare(a.placeholders, b.placeholders), cmp.Compare(b.literals, a.literals), cmp.Compare(a.input, b.input))
	})
	return out, nil
}

// resolveMachineVersion is the machine type the first matching template gives name; ok is false when none
// matches (the name is then used as it is).
func resolveMachineVersion(versions []machineVersion, name string) (string, bool) {
	for _, mv := range versions {
		m := mv.re.FindStringSubmatch(name)
		if m == nil {
			continue
		}
		return placeholder.ReplaceAllStringFunc(mv.output, func(ph string) string {
			return m[mv.re.SubexpIndex(ph[1:len(ph)-1])]
		}), true
	}
	return "", false
}
