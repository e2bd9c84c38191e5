package runtime

// Namespace is the control-plane namespace holding Runtime CRs and their kubeconfig Secrets.
const Namespace = "kcp-system"

// KubeconfigKey is the key, in the kubeconfig Secret, of the kubeconfig YAML.
const KubeconfigKey = "config"

// KubeconfigSecretName names the Secret, in Namespace, in which the
// infrastructure manager publishes the runtime's kubeconfig once it is Ready.
func KubeconfigSecretName(runtimeID string) string { return "kubeconfig-" + runtimeID }
