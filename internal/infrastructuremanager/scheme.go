package infrastructuremanager

import (
	k8sruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/scheme"
)

// GroupVersion is the API group and version of the Runtime CR.
var GroupVersion = schema.GroupVersion{Group: "infrastructuremanager.kyma-project.io", Version: "v1"}

var schemeBuilder = &scheme.Builder{GroupVersion: GroupVersion}

func init() { schemeBuilder.Register(&Runtime{}, &RuntimeList{}) }

// AddToScheme registers Runtime and RuntimeList, so typed clients can read and write them.
func AddToScheme(s *k8sruntime.Scheme) error { return schemeBuilder.AddToScheme(s) }
