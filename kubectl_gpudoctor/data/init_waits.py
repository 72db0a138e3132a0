"""What an init container that waits for another service prints while it waits, and how its command names that
service, in real wording; data only (kube/initwait.py reads it).

Named groups: `host` and `port` name the peer; a pattern without them says only that the container waits (the
peer then comes from its command/args, or from a `waiting for NAME` line whose NAME is a Service).
"""

# Lines a waiting loop repeats (matched case-insensitively, one line at a time).
WAIT_LINES = (
    # vishnubob/wait-for-it: `wait-for-it.sh: waiting 15 seconds for redis:6379`,
    # `wait-for-it.sh: waiting for db:5432 without a timeout`, `wait-for-it.sh: timeout occurred after waiting 15
    # seconds for redis:6379` (Flagsmith/flagsmith-charts#12 uses it as an init container).
    r"wait-for-it(?:\.sh)?: (?:timeout occurred after )?waiting (?:\d+ seconds )?for (?P<host>[\w.-]+):(?P<port>\d+)",
    # pg_isready: `postgres:5432 - no response` (openclarity/openclarity#26, `until pg_isready -h postgres ...; do
    # echo waiting for database; sleep 2; done`), `db:5432 - rejecting connections`.
    r"(?<![\w.-])(?P<host>[a-z0-9][\w.-]*):(?P<port>\d+) - (?:no response|rejecting connections)",
    # jwilder/dockerize: `Waiting for: tcp://db:5432`, `Problem with dial: dial tcp 10.96.0.12:5432: connect:
    # connection refused. Sleeping 1s`.
    r"Waiting for: (?:tcp|http|https)://(?P<host>[\w.-]+):(?P<port>\d+)",
    r"Problem with dial: dial tcp (?P<host>[\w.-]+):(?P<port>\d+)",
    # KubeRay's injected wait-gcs-ready (ray-operator/controllers/ray/common/pod.go): `45 seconds elapsed: Waiting
    # for GCS to be ready.`, `125 seconds elapsed: Still waiting for GCS to be ready.`; after 120 s `ray
    # health-check` prints `Failed to connect to GCS at address x-head-svc.ns.svc.cluster.local:6379 within 5
    # seconds.` (vllm-project/aibrix#915).
    r"Failed to connect to GCS at address (?P<host>[\w.-]+):(?P<port>\d+)",
    r"seconds elapsed: (?:Still )?waiting for GCS to be ready",
    # busybox nc / nslookup inside `until ...; do echo waiting for X; sleep 2; done` loops (kubernetes.io init
    # containers page; kubesphere/kubesphere#158 `until nc -z openpitrix-db.openpitrix-system.svc 3306`):
    # `nc: bad address 'mydb'`, `nslookup: can't resolve 'mydb'`, `** server can't find mydb.ns.svc.cluster.local:
    # NXDOMAIN` (sandervanvugt/cka#2), and the loop's own `waiting for mydb` (chatwoot/charts#200).
    r"nc: bad address '(?P<host>[\w.-]+)'",
    r"nslookup: can't resolve '(?P<host>[\w.-]+)'",
    r"\*\* server can't find (?P<host>[\w.-]+?)(?:\.svc\.cluster\.local)?: NXDOMAIN",
    r"(?<![\w-])waiting for (?P<host>[a-z0-9][\w.-]*?)(?::(?P<port>\d+))?(?:\.{2,}| to (?:be |become |start)|\s*$|\s*\.\s*$)",
    # Clients retrying a connection in a loop (the same wording dependency-unreachable reads in a failed run):
    # Go `dial tcp 10.96.0.12:5432: connect: connection refused`, curl, Python sockets, botocore's model download
    # `Could not connect to the endpoint URL: "http://minio-service.kubeflow:9000/..."` (KServe storage-initializer).
    r"dial tcp (?P<host>[\w.-]+):(?P<port>\d+): connect: (?:connection refused|connection timed out|no route to host)",
    r"dial tcp: lookup (?P<host>[\w.-]+)(?: on [\d.:]+)?: (?:no such host|i/o timeout)",
    r"curl: \(\d+\) (?:Failed to connect to (?P<host>[\w.-]+) port (?P<port>\d+)|Could not resolve host: (?P<host2>[\w.-]+))",
    r"Could not connect to the endpoint URL: \"?https?://(?P<host>[\w.-]+)(?::(?P<port>\d+))?",
    # urllib3 retries (a model download from the Hugging Face hub or an object store): `HTTPSConnectionPool(host=
    # 'huggingface.co', port=443): Max retries exceeded with url: …`
    r"HTTPS?ConnectionPool\(host='(?P<host>[^']+)', port=(?P<port>\d+)\)",
    r"connect (?:ECONNREFUSED|ETIMEDOUT|EHOSTUNREACH) (?P<host>[\d.]+):(?P<port>\d+)",
)

# How a waiting command names its peer (matched on the init container's command and args joined by spaces, with
# the kubelet's `$(VAR)` and the shell's `$VAR`/`${VAR}` replaced from the container's literal env values).
COMMAND_PEERS = (
    r"\bnc (?:-[a-zA-Z]+ (?:\d+ )?)*(?P<host>[a-z0-9][\w.-]*) (?P<port>\d+)",          # nc -z -w 5 host 5432
    r"\bnslookup (?P<host>[a-z0-9][\w.-]*)",
    r"\bpg_isready\b[^;|&]*?(?:-h|--host[= ])\s*(?P<host>[a-z0-9][\w.-]*)(?:[^;|&]*?(?:-p|--port[= ])\s*(?P<port>\d+))?",
    r"wait-for-it(?:\.sh)? (?P<host>[a-z0-9][\w.-]*):(?P<port>\d+)",
    r"-wait (?:tcp|http|https)://(?P<host>[\w.-]+):(?P<port>\d+)",                    # dockerize -wait tcp://db:5432
    r"--address[= ](?P<host>[a-z0-9][\w.-]*):(?P<port>\d+)",                           # ray health-check --address
    r"\b(?:curl|wget)\b[^;|&]*?https?://(?P<host>[a-z0-9][\w.-]*)(?::(?P<port>\d+))?",
    r"/dev/tcp/(?P<host>[a-z0-9][\w.-]*)/(?P<port>\d+)",                               # bash </dev/tcp/host/port
)

# A shell loop that repeats a check until it passes: the command is a wait, whatever it prints.
WAIT_LOOP = r"\buntil\b.+\bdo\b|\bwhile\b.+\bdo\b.*\bsleep\b|wait-for-it|dockerize\b.*-wait|\bkubectl wait\b"

# `$(cat /var/run/secrets/kubernetes.io/serviceaccount/namespace)`: the pod's own namespace (kubernetes.io's
# init-container example `until nslookup myservice.$(cat …/namespace).svc.cluster.local`).
OWN_NAMESPACE = r"\$\(cat /var/run/secrets/kubernetes\.io/serviceaccount/namespace\)"

# Words a `waiting for X` line uses for a kind of service, not a host: the peer then comes from the command.
NOT_HOSTS = frozenset({"database", "db", "the", "it", "service", "services", "server", "dependencies", "connection",
                       "gcs", "master", "head", "pod", "pods", "network", "dns", "startup", "ready", "a", "an"})

# `name.ns` is how a pod names Service `name` of namespace `ns` (its resolver appends `svc.<cluster domain>`), but
# `huggingface.co` is a public host: a two-label host whose last label is a common public suffix is not a Service.
PUBLIC_SUFFIXES = frozenset({"com", "net", "org", "io", "co", "ai", "dev", "app", "cloud", "edu", "gov", "us", "uk",
                             "de", "cn", "jp", "fr", "in", "me", "info", "biz", "xyz", "tech", "sh", "local"})
