package avs

import (
	"encoding/json"
	"fmt"
	"unicode/utf8"
)

// Kind says which of a runtime's two evaluations: the internal one (a BASIC
// monitor run by a tester inside the landscape) or the external one (an
// HTTPS GET of the runtime's health endpoint from outside).
type Kind string

// The two kinds of evaluation.
const (
	Internal Kind = "int"
	External Kind = "ext"
)

// Status is an evaluation's lifecycle status.
type Status string

// The statuses AVS knows.
const (
	StatusActive      Status = "ACTIVE"
	StatusMaintenance Status = "MAINTENANCE"
	StatusInactive    Status = "INACTIVE"
	StatusRetired     Status = "RETIRED"
	StatusDeleted     Status = "DELETED"
)

// Valid reports whether s is one of AVS's statuses.
func (s Status) Valid() bool {
	switch s {
	case StatusActive, StatusMaintenance, StatusInactive, StatusRetired, StatusDeleted:
		return true
	}
	return false
}

// Tag is one of an evaluation's tags.
type Tag struct {
	Content      string `json:"content"`
	TagClassID   int64  `json:"tag_class_id"`
	TagClassName string `json:"tag_class_name"`
}

// CreateRequest is the body of an evaluation's creation
// (BasicEvaluationCreateRequest).
type CreateRequest struct {
	DefinitionType   string `json:"definition_type"`
	Name             string `json:"name"`
	Description      string `json:"description"`
	Service          string `json:"service"`
	URL              string `json:"url"`
	CheckType        string `json:"check_type"`
	Interval         int32  `json:"interval"`
	TesterAccessID   int64  `json:"tester_access_id"`
	Timeout          int    `json:"timeout"`
	ReadOnly         bool   `json:"read_only"`
	ContentCheck     string `json:"content_check"`
	ContentCheckType string `json:"content_check_type"`
	// Threshold is a string on the way in (a number on the way out).
	Threshold  string `json:"threshold"`
	GroupID    int64  `json:"group_id"`
	Visibility string `json:"visibility"`
	ParentID   int64  `json:"parent_id"`
	Tags       []Tag  `json:"tags"`
}

// Evaluation is what AVS answers about an evaluation (the fields keb reads).
type Evaluation struct {
	ID     int64  `json:"id"`
	Name   string `json:"name"`
	Status Status `json:"status"`
}

// Runtime is what an evaluation is about.
type Runtime struct {
	InstanceID, InstanceName, GlobalAccountID, SubAccountID string
	PlanName, PlatformRegion, Region, ShootName             string
	// Domain is the runtime's DNS domain, <shoot>.<shoot domain>.
	Domain string
}

// Bounds of an evaluation's name and description.
const (
	maxName        = 80
	maxDescription = 255
)

// providerCode is the provider part of an evaluation's name: AZR for the
// Azure plans, trial, free and every plan not named here.
func providerCode(plan string) string {
	switch {
	case plan == "aws" || plan == "build-runtime-aws":
		return "AWS"
	case plan == "gcp" || plan == "build-runtime-gcp":
		return "GCP"
	case plan == "sap-converged-cloud":
		return "CC"
	}
	return "AZR"
}

// Name is the evaluation's name: K8S-<PROV>-Kyma-<int|ext>-<instance>-<instance name>, cut to 80.
func Name(kind Kind, rt Runtime) string {
	return cut(fmt.Sprintf("K8S-%s-Kyma-%s-%s-%s", providerCode(rt.PlanName), kind, rt.InstanceID, rt.InstanceName), maxName)
}

// TrialPlan reports whether a plan is trial or free: no external
// evaluation, and the trial tester for the internal one.
func TrialPlan(plan string) bool { return plan == "trial" || plan == "free" }

// NewCreateRequest builds the creation of a runtime's evaluation of kind.
func (c Config) NewCreateRequest(kind Kind, rt Runtime) CreateRequest {
	name := Name(kind, rt)
	desc, _ := json.Marshal(struct {
		InstanceName    string `json:"instanceName"`
		GlobalAccountID string `json:"globalAccountID"`
		SubAccountID    string `json:"subAccountID"`
		InstanceID      string `json:"instanceID"`
		ShootName       string `json:"shootName"`
	}{rt.InstanceName, rt.GlobalAccountID, rt.SubAccountID, rt.InstanceID, rt.ShootName})
	req := CreateRequest{
		DefinitionType: "BASIC", Name: name, Description: cut(string(desc), maxDescription), Service: name,
		Interval: 60, Timeout: 30000, ContentCheck: "error", ContentCheckType: "NOT_CONTAINS", Threshold: "30000",
		Visibility: "PUBLIC", Tags: c.tags(rt),
	}
	switch kind {
	case Internal:
		req.TesterAccessID, req.GroupID, req.ParentID = c.InternalTesterAccessID, c.GroupID, c.ParentID
		if TrialPlan(rt.PlanName) && c.trialTester() {
			req.TesterAccessID, req.GroupID, req.ParentID = c.TrialInternalTesterAccessID, c.TrialGroupID, c.TrialParentID
		}
		if c.InternalTesterService != "" {
			req.Service = c.InternalTesterService
		}
	case External:
		req.URL, req.CheckType = "https://healthz."+rt.Domain+"/healthz/ready", "HTTPSGET"
		req.TesterAccessID, req.GroupID, req.ParentID = c.ExternalTesterAccessID, c.GroupID, c.ParentID
		if c.ExternalTesterService != "" {
			req.Service = c.ExternalTesterService
		}
	}
	return req
}

// ParentOf is the parent an evaluation of kind of a plan hangs under.
func (c Config) ParentOf(kind Kind, plan string) int64 {
	if kind == Internal && TrialPlan(plan) && c.trialTester() {
		return c.TrialParentID
	}
	return c.ParentID
}

// tags are the evaluation's seven tags, in AVS's order.
func (c Config) tags(rt Runtime) []Tag {
	provider := providerCode(rt.PlanName)
	if provider == "AZR" {
		provider = "Azure"
	}
	t := c.TagClasses
	return []Tag{
		{Content: rt.InstanceID, TagClassID: t.InstanceID},
		{Content: rt.GlobalAccountID, TagClassID: t.GlobalAccountID},
		{Content: rt.SubAccountID, TagClassID: t.SubAccountID},
		{Content: rt.PlatformRegion, TagClassID: t.Landscape},
		{Content: provider, TagClassID: t.Provider},
		{Content: rt.ShootName, TagClassID: t.ShootName},
		{Content: rt.Region, TagClassID: t.Region},
	}
}

func cut(s string, n int) string {
	if len(s) <= n {
		return s
	}
	s = s[:n]
	// Never half a rune.
	for !utf8.ValidString(s) {
		s = s[:len(s)-1]
	}
	return s
}
