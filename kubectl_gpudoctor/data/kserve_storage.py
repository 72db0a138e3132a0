"""KServe's storage-initializer as data: how its model download is configured and where its credentials come from.

KServe's pod mutator adds the `storage-initializer` init container to a predictor pod when the InferenceService
names a `storageUri`; it is in no pod template and no InferenceService field, so a fix never edits it. Its
credentials are built at pod creation from the Secrets listed in the `secrets` of the pod's ServiceAccount (the
InferenceService's `spec.predictor.serviceAccountName`, else `default`): kserve/kserve
pkg/credentials/service_account_credentials.go picks each Secret by the keys it holds (pkg/credentials/s3, gcs,
azure, hf: `HF_TOKEN`), and S3 settings by the Secret's or ServiceAccount's `serving.kserve.io/s3-*` annotations.
An env var on the model container does not reach it (kserve/website#482, kserve/kserve#4400). KServe's docs:
kserve.github.io/website/docs/model-serving/storage/providers/{s3,hf} ("Create S3 Secret and attach to Service
Account"; the HF token Secret `storage-config` with key HF_TOKEN, referenced by a ServiceAccount)."""

NAME = "storage-initializer"
# The source URI KServe records on the pod (KServe; KFServing before the rename), besides the init container's
# first argument.
SOURCE_ANNOTATIONS = ("internal.serving.kserve.io/storage-initializer-sourceuri",
                      "internal.serving.kubeflow.org/storage-initializer-sourceuri")
# InferenceService API groups: KServe, and KFServing before the rename (its annotations carry the same prefix).
GROUPS = ("serving.kserve.io", "serving.kubeflow.org")

# URI scheme -> (the Secret keys KServe looks for in a ServiceAccount's Secrets, what else it reads).
SCHEMES = {
    "hf": (("HF_TOKEN",), "an account granted access to the model (gated models: request it on the model page)"),
    "s3": (("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY"),
           "annotations {prefix}/s3-endpoint, {prefix}/s3-usehttps and {prefix}/s3-region on that Secret (or an "
           "IAM role: eks.amazonaws.com/role-arn on the ServiceAccount)"),
    "gs": (("gcloud-application-credentials.json",), "a Google service account allowed to read the bucket"),
    "https": (("AZURE_CLIENT_SECRET",), "for Azure Blob also AZURE_CLIENT_ID and AZURE_TENANT_ID"),
}
# Environment the injected container gets from those annotations: an empty one is a setting left blank.
S3_SETTINGS = {"S3_ENDPOINT": "s3-endpoint", "AWS_ENDPOINT_URL": "s3-endpoint", "AWS_REGION": "s3-region"}

# Where the injected container's resources come from (KServe docs "Storage Containers", since 0.11): the
# ClusterStorageContainer whose supportedUriFormats match the storageUri gives its whole container spec, resources
# included (KServe's chart installs one named `default`, limits memory 1Gi, for gs://, s3://, hdfs://, https://);
# without a matching one, the `storageInitializer` JSON of ConfigMap inferenceservice-config in KServe's namespace
# (memoryRequest 100Mi, memoryLimit 1Gi by default). Both are cluster-wide: every InferenceService's download.
CLUSTER_STORAGE_CONTAINER = "default"
RESOURCE_FIELD = "spec.container.resources.limits.memory"
CONFIGMAP, CONFIGMAP_NAMESPACE, CONFIGMAP_KEY = "inferenceservice-config", "kserve", "storageInitializer"
# Termination reasons that make a failure about the container's resources, not its credentials.
RESOURCE_REASONS = ("OOMKilled",)
