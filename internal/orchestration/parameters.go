// Package orchestration serves fleet-wide upgrades: POST /upgrade/kyma and
// /upgrade/cluster create an orchestration, GET /orchestrations/** report
// it, PUT .../cancel and .../retry steer it, and its scheduler (a durable
// queue job) resolves the targets when it starts, freezes them, and starts
// each runtime's upgrade operation within the workers bound and the
// runtimes' maintenance windows.
package orchestration

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"reflect"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/kyma-keb/keb/internal/catalog"
	"github.com/kyma-keb/keb/internal/controlplane"
	"github.com/kyma-keb/keb/internal/kyma"
	"github.com/kyma-keb/keb/internal/storage"
	"github.com/kyma-keb/keb/internal/strictjson"
)

// Schedules of the parallel strategy.
const (
	ScheduleImmediate         = "immediate"
	ScheduleNow               = "now"
	ScheduleMaintenanceWindow = "maintenanceWindow"
	StrategyParallel          = "parallel"
	TargetAll                 = "all"
)

// MaxWorkers bounds parallel.workers: more upgrades at once than this is a
// mistake, not a plan.
const MaxWorkers = 1000

// Parameters is the body of POST /upgrade/kyma and /upgrade/cluster, and
// what GET /orchestrations/{id} shows back with defaults applied.
type Parameters struct {
	Targets    Targets     `json:"targets"`
	Strategy   Strategy    `json:"strategy"`
	DryRun     bool        `json:"dryRun"`
	Kyma       *Kyma       `json:"kyma,omitempty"`
	Kubernetes *Kubernetes `json:"kubernetes,omitempty"`
}

// Targets selects runtimes: any include selector matches, no exclude does.
type Targets struct {
	Include Selectors `json:"include"`
	Exclude Selectors `json:"exclude,omitempty"`
}

// Selector selects runtimes; its fields are ANDed.
type Selector struct {
	Target        string `json:"target,omitempty"`
	GlobalAccount string `json:"globalAccount,omitempty"`
	SubAccount    string `json:"subAccount,omitempty"`
	RuntimeID     string `json:"runtimeID,omitempty"`
	PlanName      string `json:"planName,omitempty"`
	Region        string `json:"region,omitempty"`
	Shoot         string `json:"shoot,omitempty"`
}

// Selectors is a list of selectors; a single object is read as a list of
// one, as upstream's tutorial sends it.
type Selectors []Selector

// UnmarshalJSON accepts a list or a single selector.
func (s *Selectors) UnmarshalJSON(b []byte) error {
	b = bytes.TrimSpace(b)
	if len(b) > 0 && b[0] == '{' {
		var one Selector
		if err := strictUnmarshal(b, &one); err != nil {
			return err
		}
		*s = Selectors{one}
		return nil
	}
	var list []Selector
	if err := strictUnmarshal(b, &list); err != nil {
		return err
	}
	*s = list
	return nil
}

// Strategy is how the upgrades are started.
type Strategy struct {
	Type     string   `json:"type"`
	Schedule string   `json:"schedule"`
	Parallel Parallel `json:"parallel"`
}

// Parallel bounds the upgrades in progress at once.
type Parallel struct {
	Workers int `json:"workers"`
}

// Kyma is the target of a Kyma upgrade.
type Kyma struct {
	Version string `json:"version,omitempty"`
	Channel string `json:"channel,omitempty"`
}

// Kubernetes is the target of a cluster upgrade.
type Kubernetes struct {
	Version             string `json:"version,omitempty"`
	MachineImage        string `json:"machineImage,omitempty"`
	MachineImageVersion string `json:"machineImageVersion,omitempty"`
}

// Defaults fill what a request leaves out.
type Defaults struct {
	KymaVersion, KubernetesVersion, MachineImage, MachineImageVersion string
}

// request is the body as sent: "strategies" is upstream's tutorial's
// spelling of "strategy".
type request struct {
	Parameters
	Strategies *Strategy `json:"strategies,omitempty"`
}

// FieldError names the body field that is wrong.
type FieldError struct {
	Field string
	Msg   string
}

func (e *FieldError) Error() string { return e.Field + ": " + e.Msg }

// requestType is what strictjson checks a body's field names against.
var requestType = reflect.TypeFor[request]()

// ParseRequest reads and validates a body for an orchestration of opType,
// applying defaults. Errors name the field at fault. A body that readers
// could take in two ways is refused: a field named twice ("dryRun":true,
// "dryRun":false) or in another letter case ("DryRun"; encoding/json would
// read either as dryRun), or null for a field (encoding/json would read
// "dryRun": null as false).
func ParseRequest(body []byte, opType storage.OperationType, d Defaults) (Parameters, error) {
	body = withoutTrailingCommas(body)
	var req request
	if err := strictUnmarshal(body, &req); err != nil {
		return Parameters{}, describeJSONError(err)
	}
	if p := strictjson.Check(body, strictjson.Rules{Type: requestType, NoNulls: true}); p != nil {
		return Parameters{}, &FieldError{p.Path, p.Msg}
	}
	p := req.Parameters
	if req.Strategies != nil {
		if p.Strategy != (Strategy{}) {
			return Parameters{}, &FieldError{"strategies", "give either strategy or strategies, not both"}
		}
		p.Strategy = *req.Strategies
	}
	if len(p.Targets.Include) == 0 {
		return Parameters{}, &FieldError{"targets.include", "at least one selector is required (use {\"target\": \"all\"} for every runtime)"}
	}
	for name, list := range map[string]Selectors{"targets.include": p.Targets.Include, "targets.exclude": p.Targets.Exclude} {
		for i, s := range list {
			if err := s.validate(); err != nil {
				return Parameters{}, &FieldError{fmt.Sprintf("%s[%d]", name, i), err.Error()}
			}
		}
	}
	switch p.Strategy.Type {
	case "":
		p.Strategy.Type = StrategyParallel
	case StrategyParallel:
	default:
		return Parameters{}, &FieldError{"strategy.type", fmt.Sprintf("%q is not a strategy; the only one is %q", p.Strategy.Type, StrategyParallel)}
	}
	switch p.Strategy.Schedule {
	case "":
		p.Strategy.Schedule = ScheduleImmediate
	case ScheduleImmediate, ScheduleNow, ScheduleMaintenanceWindow:
	default:
		return Parameters{}, &FieldError{"strategy.schedule", fmt.Sprintf("%q is not a schedule; want %s, %s or %s",
			p.Strategy.Schedule, ScheduleImmediate, ScheduleMaintenanceWindow, ScheduleNow)}
	}
	switch w := p.Strategy.Parallel.Workers; {
	case w == 0:
		p.Strategy.Parallel.Workers = 1
	case w < 0 || w > MaxWorkers:
		return Parameters{}, &FieldError{"strategy.parallel.workers", fmt.Sprintf("must be between 1 and %d, got %d", MaxWorkers, w)}
	}
	switch opType {
	case storage.OperationTypeUpgradeKyma:
		if p.Kubernetes != nil {
			return Parameters{}, &FieldError{"kubernetes", "is a parameter of cluster upgrades (POST /upgrade/cluster)"}
		}
		if p.Kyma == nil {
			p.Kyma = &Kyma{}
		}
		if p.Kyma.Version == "" {
			p.Kyma.Version = d.KymaVersion
		}
		// As provisioning's kymaVersion and the Kyma CR's spec.channel take them.
		if err := catalog.ValidateKymaVersion(p.Kyma.Version); err != nil {
			return Parameters{}, &FieldError{"kyma.version", err.Error()}
		}
		// The version becomes the runtimes' recorded Kyma version with its
		// component list: a version without one would fail every upgrade.
		if _, err := kyma.Components(p.Kyma.Version, "", nil); errors.Is(err, kyma.ErrUnknownKymaVersion) {
			return Parameters{}, &FieldError{"kyma.version", fmt.Sprintf("%q has no runtime component list in this keb", p.Kyma.Version)}
		}
		switch p.Kyma.Channel {
		case "", controlplane.ChannelRegular, controlplane.ChannelFast:
		default:
			return Parameters{}, &FieldError{"kyma.channel", fmt.Sprintf("%.80q is not a channel; want %s or %s (or none: the runtime's channel stays)",
				p.Kyma.Channel, controlplane.ChannelRegular, controlplane.ChannelFast)}
		}
	case storage.OperationTypeUpgradeCluster:
		if p.Kyma != nil {
			return Parameters{}, &FieldError{"kyma", "is a parameter of Kyma upgrades (POST /upgrade/kyma)"}
		}
		if p.Kubernetes == nil {
			p.Kubernetes = &Kubernetes{}
		}
		k := p.Kubernetes
		if k.Version == "" {
			k.Version = d.KubernetesVersion
		}
		if k.MachineImage == "" && k.MachineImageVersion == "" {
			k.MachineImage, k.MachineImageVersion = d.MachineImage, d.MachineImageVersion
		}
		if k.Version == "" && k.MachineImage == "" && k.MachineImageVersion == "" {
			return Parameters{}, &FieldError{"kubernetes", "name a version or a machine image to upgrade to (none is configured as default)"}
		}
		for f, v := range map[string]string{"kubernetes.version": k.Version, "kubernetes.machineImage": k.MachineImage,
			"kubernetes.machineImageVersion": k.MachineImageVersion} {
			if err := checkValue(f, v); err != nil {
				return Parameters{}, err
			}
		}
	}
	return p, nil
}

func (s Selector) validate() error {
	if s == (Selector{}) {
		return errors.New("an empty selector selects nothing; name a field or use {\"target\": \"all\"}")
	}
	if s.Target != "" && s.Target != TargetAll {
		return fmt.Errorf("target %q: the only target is %q", s.Target, TargetAll)
	}
	for _, v := range []string{s.GlobalAccount, s.SubAccount, s.RuntimeID, s.PlanName, s.Region, s.Shoot} {
		if len(v) > 256 || !printable(v) {
			return errors.New("a value is longer than 256 characters, not UTF-8, or holds a control character")
		}
	}
	return nil
}

// checkValue refuses values no version or image name has.
func checkValue(field, v string) error {
	if len(v) > 128 || !printable(v) || strings.ContainsAny(v, " \"'") {
		return &FieldError{field, fmt.Sprintf("%.80q is not a valid value", v)}
	}
	return nil
}

// printable is valid UTF-8 without control characters: what PostgreSQL
// stores as it came and a log line shows as it is.
func printable(v string) bool {
	if !utf8.ValidString(v) {
		return false
	}
	for _, r := range v {
		if unicode.IsControl(r) {
			return false
		}
	}
	return true
}

// selectors converts to the store's selectors.
func selectors(list Selectors) []storage.Selector {
	out := make([]storage.Selector, 0, len(list))
	for _, s := range list {
		out = append(out, storage.Selector{All: s.Target == TargetAll, GlobalAccountID: s.GlobalAccount,
			SubAccountID: s.SubAccount, RuntimeID: s.RuntimeID, PlanName: s.PlanName, Region: s.Region, Shoot: s.Shoot})
	}
	return out
}

func strictUnmarshal(b []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return err
	}
	if _, err := dec.Token(); err != io.EOF {
		return errors.New("unexpected data after the JSON object")
	}
	return nil
}

// describeJSONError turns a decoding error into one naming the field.
func describeJSONError(err error) error {
	var typeErr *json.UnmarshalTypeError
	var fe *FieldError
	switch {
	case errors.As(err, &fe):
		return fe
	case errors.As(err, &typeErr):
		field := typeErr.Field
		if field == "" {
			field = "body"
		}
		return &FieldError{field, fmt.Sprintf("must be a %s, got a JSON %s", typeErr.Type, typeErr.Value)}
	case strings.HasPrefix(err.Error(), "json: unknown field "):
		name := strings.Trim(strings.TrimPrefix(err.Error(), "json: unknown field "), `"`)
		if name == "" {
			name = `""` // the empty key, named visibly
		}
		return &FieldError{name, "unknown field"}
	default:
		return &FieldError{"body", "not a JSON object: " + err.Error()}
	}
}

// withoutTrailingCommas drops commas that directly precede a closing brace
// or bracket outside strings: upstream's tutorial sends its bodies with them,
// and they carry no meaning.
func withoutTrailingCommas(b []byte) []byte {
	out := make([]byte, 0, len(b))
	inString, escaped := false, false
	for i := 0; i < len(b); i++ {
		c := b[i]
		if inString {
			out = append(out, c)
			switch {
			case escaped:
				escaped = false
			case c == '\\':
				escaped = true
			case c == '"':
				inString = false
			}
			continue
		}
		if c == '"' {
			inString = true
		}
		if c == ',' {
			j := i + 1
			for j < len(b) && (b[j] == ' ' || b[j] == '\t' || b[j] == '\n' || b[j] == '\r') {
				j++
			}
			if j < len(b) && (b[j] == '}' || b[j] == ']') {
				continue
			}
		}
		out = append(out, c)
	}
	return out
}
