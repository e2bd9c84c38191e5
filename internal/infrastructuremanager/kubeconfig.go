package infrastructuremanager

// KubeconfigKey is the key, in the kubeconfig Secret, of the kubeconfig YAML.
const KubeconfigKey = "config"

// KubeconfigSecretName names the Secret, in the control-plane namespace, in which the
// infrastructure manager publishes the runtime's kubeconfig once it is Ready.
func KubeconfigSecretName(runtimeID string) string { return "kubeconfig-" + runtimeID }
