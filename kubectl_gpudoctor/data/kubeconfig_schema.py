"""client-go's kubeconfig v1 types (k8s.io/client-go/tools/clientcmd/api/v1/types.go): each struct's JSON keys and
their Go types, which its decoder enforces (a string where a bool belongs, a number where a string belongs: the
file is refused); keys not listed are ignored, as client-go ignores them."""

# A type is a Go type name: "string", "bool", "[]uint8" (base64 text), "[]string", "map[string]string",
# "map[string][]string", "raw" (runtime.RawExtension: anything), a named string type ("v1.ExecInteractiveMode"),
# a struct of this table ("v1.Cluster") or a list of one ("[]v1.NamedCluster").
STRUCTS = {
    "Config": {
        "kind": "string", "apiVersion": "string", "preferences": "v1.Preferences",
        "clusters": "[]v1.NamedCluster", "users": "[]v1.NamedAuthInfo", "contexts": "[]v1.NamedContext",
        "current-context": "string", "extensions": "[]v1.NamedExtension",
    },
    "Preferences": {"colors": "bool", "extensions": "[]v1.NamedExtension"},
    "NamedCluster": {"name": "string", "cluster": "v1.Cluster"},
    "NamedContext": {"name": "string", "context": "v1.Context"},
    "NamedAuthInfo": {"name": "string", "user": "v1.AuthInfo"},
    "NamedExtension": {"name": "string", "extension": "raw"},
    "Cluster": {
        "server": "string", "tls-server-name": "string", "insecure-skip-tls-verify": "bool",
        "certificate-authority": "string", "certificate-authority-data": "[]uint8", "proxy-url": "string",
        "disable-compression": "bool", "extensions": "[]v1.NamedExtension",
    },
    "AuthInfo": {
        "client-certificate": "string", "client-certificate-data": "[]uint8", "client-key": "string",
        "client-key-data": "[]uint8", "token": "string", "tokenFile": "string", "as": "string", "as-uid": "string",
        "as-groups": "[]string", "as-user-extra": "map[string][]string", "username": "string", "password": "string",
        "auth-provider": "v1.AuthProviderConfig", "exec": "v1.ExecConfig", "extensions": "[]v1.NamedExtension",
    },
    "Context": {"cluster": "string", "user": "string", "namespace": "string", "extensions": "[]v1.NamedExtension"},
    "AuthProviderConfig": {"name": "string", "config": "map[string]string"},
    "ExecConfig": {
        "command": "string", "args": "[]string", "env": "[]v1.ExecEnvVar", "apiVersion": "string",
        "installHint": "string", "provideClusterInfo": "bool", "interactiveMode": "v1.ExecInteractiveMode",
    },
    "ExecEnvVar": {"name": "string", "value": "string"},
}

# Named string types: decoded as strings.
STRING_TYPES = {"string", "v1.ExecInteractiveMode"}

# The lists that become maps by name, and client-go's wording when a name repeats in one file
# (api/v1/conversion.go).
NAMED_LISTS = {
    "clusters": "*[]NamedCluster into *map[string]*api.Cluster",
    "users": "*[]NamedAuthInfo into *map[string]*api.AuthInfo",
    "contexts": "*[]NamedContext into *map[string]*api.Context",
    "extensions": "*[]NamedExtension into *map[string]runtime.Object",
}

# Exec interactiveMode values (api/types.go) and the plugin API versions that default it to IfAvailable
# (api/v1/defaults.go SetDefaults_ExecConfig); any other apiVersion must say it.
INTERACTIVE_MODES = ("Never", "IfAvailable", "Always")
INTERACTIVE_DEFAULTED = ("client.authentication.k8s.io/v1beta1", "client.authentication.k8s.io/v1alpha1")
# The ExecCredential versions client-go runs a plugin with (plugin/pkg/client/auth/exec apiVersions).
EXEC_API_VERSIONS = ("client.authentication.k8s.io/v1beta1", "client.authentication.k8s.io/v1")

# Auth providers client-go has removed, and its message (plugin/pkg/client/auth/{gcp,azure}): first line
# and the replacement it names.
REMOVED_AUTH_PROVIDERS = {
    "gcp": 'The gcp auth plugin has been removed. Please use the "gke-gcloud-auth-plugin" kubectl/client-go '
           "credential plugin instead.",
    "azure": "The azure auth plugin has been removed. Please use the https://github.com/Azure/kubelogin "
             "kubectl/client-go credential plugin instead.",
}
