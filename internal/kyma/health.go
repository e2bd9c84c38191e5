package kyma

import (
	"fmt"
	"strings"
)

// Health is what keb shows of a runtime's Kyma CR: the state Lifecycle Manager reports for it and
// for each module. The btp-operator module's state is its BtpOperator CR's state, which Lifecycle
// Manager reads from the runtime: keb learns it here, from the control plane, without a request
// to the runtime.
type Health struct {
	State   State          `json:"state"`
	Modules []ModuleHealth `json:"modules,omitempty"`
}

// ModuleHealth is one module's state, and the message explaining it when Lifecycle Manager gives
// one.
type ModuleHealth struct {
	Name    string `json:"name"`
	State   State  `json:"state"`
	Message string `json:"message,omitempty"`
}

// HealthOf reads k's status. A Kyma CR Lifecycle Manager has not reported on yet has State "".
func HealthOf(k *Kyma) Health {
	h := Health{State: k.Status.State}
	for _, m := range k.Status.Modules {
		h.Modules = append(h.Modules, ModuleHealth{Name: m.Name, State: m.State, Message: m.Message})
	}
	return h
}

// Module returns the health of the module name, if reported.
func (h Health) Module(name string) (ModuleHealth, bool) {
	for _, m := range h.Modules {
		if m.Name == name {
			return m, true
		}
	}
	return ModuleHealth{}, false
}

// Problems describes the modules that are not Ready (nor Unmanaged), for a platform user:
// `module foo: Error (no template in channel "fast")`; "" when there are none.
func (h Health) Problems() string {
	var out []string
	for _, m := range h.Modules {
		if m.State == StateReady || m.State == StateUnmanaged {
			continue
		}
		state := string(m.State)
		if state == "" {
			state = "not reported yet"
		}
		p := fmt.Sprintf("module %s: %s", m.Name, state)
		if m.Message != "" {
			p += " (" + m.Message + ")"
		}
		out = append(out, p)
	}
	return strings.Join(out, "; ")
}
