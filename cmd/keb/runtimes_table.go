package main

import (
	"fmt"
	"time"

	"github.com/kyma-keb/keb/internal/devstack"
	"github.com/kyma-keb/keb/internal/runtimelisting"
)

// runtimeColumns are the columns of `keb runtimes`: -o table's and -o
// wide's (which adds SUBACCOUNT, SHOOT and KYMA, the Kyma CR's state); ages
// are counted to now.
func runtimeColumns(now time.Time) (table, wide []col[runtimelisting.RuntimeDTO]) {
	type r = runtimelisting.RuntimeDTO
	instance := col[r]{"INSTANCE", func(r r) string { return r.InstanceID }}
	runtime := col[r]{"RUNTIME", func(r r) string { return r.RuntimeID }}
	account := col[r]{"ACCOUNT", func(r r) string { return r.GlobalAccountID }}
	subaccount := col[r]{"SUBACCOUNT", func(r r) string { return r.SubAccountID }}
	shoot := col[r]{"SHOOT", func(r r) string { return r.ShootName }}
	plan := col[r]{"PLAN", func(r r) string { return r.ServicePlanName }}
	region := col[r]{"REGION", func(r r) string { return r.ProviderRegion }}
	state := col[r]{"STATE", func(r r) string { return r.Status.State }}
	kyma := col[r]{"KYMA", func(r r) string { return r.KymaState }}
	ageCol := col[r]{"AGE", func(r r) string { return age(now, r.Status.CreatedAt) }}
	return []col[r]{instance, runtime, account, plan, region, state, ageCol},
		[]col[r]{instance, runtime, account, subaccount, shoot, plan, region, state, kyma, ageCol}
}

// operationLines are the operations of a runtime, for --ops under each
// runtime's row.
func operationLines(now time.Time) func(runtimelisting.RuntimeDTO) []string {
	return func(r runtimelisting.RuntimeDTO) []string {
		var lines []string
		for _, op := range r.Status.Operations {
			lines = append(lines, fmt.Sprintf("%s\t%s\t%s\t%s\t%s", op.Type, op.OperationID, op.State, age(now, op.CreatedAt), op.Description))
		}
		return lines
	}
}

// devURL is the broker the operator commands call without --url: keb
// login's, else the running keb dev's URL, from its endpoints file in the dev
// directory, else keb dev's default.
func devURL(dir string) string {
	if c, ok, _ := readLoginConfig(); ok && c.URL != "" {
		return c.URL // keb login's; a config that does not parse is reported when the token is read
	}
	if e, err := devstack.LoadEndpoints(dir); err == nil && e.BrokerURL != "" {
		return e.BrokerURL
	}
	return "http://127.0.0.1:8080"
}
