"""Log signatures of what a container reaches over the network at start (credentials a hub, object store or API
rejects, services that do not answer), in real wording; data only, imported through log_signatures (never directly).

Named groups carry what a rule reports: `host`, `port`, `why`, `kind`, `op`, `url`.
"""
from .signature import Signature

REMOTE = (
    # --- credentials rejected ------------------------------------------------------------------------------
    # huggingface_hub (city96/ComfyUI_ExtraModels#99, ariG23498/gemma3-object-detection#5)
    Signature("hf-gated-401", "auth-failure", r"(?P<kind>GatedRepoError): 401 Client Error|You must (?:have access to it and )?"
              r"be authenticated to access it", "the hub refused an anonymous or invalid token for a gated repo"),
    # `Access to model meta-llama/Meta-Llama-3-8B-Instruct is restricted and you are not in the authorized list`
    # (awslabs/data-on-eks#605), `Access to model x is restricted. You must have access to it and be authenticated`.
    Signature("hf-gated-403", "auth-failure", r"(?P<kind>not in the authorized list)|GatedRepoError: 403 Client Error"
              r"|Access to model \S+ is (?P<kind2>restricted)",
              "the token is valid but its account was not granted access to the gated repo"),
    Signature("hf-gated", "auth-failure", r"Cannot access gated repo for url (?P<url>\S+?)\.?\s*$|You are trying to access a gated repo",
              "a gated hub repo"),
    Signature("hf-invalid-token", "auth-failure",
              r"(?P<kind>Invalid credentials in Authorization header|Invalid user token|token seems invalid)",
              "the hub rejected the token"),
    Signature("http-401-403", "auth-failure",
              r"(?P<kind>40[13]) Client Error:? (?:Unauthorized|Forbidden)?(?: for url: (?P<url>\S+))?",
              "an HTTP 401/403 from the server the program downloads from"),
    Signature("urllib-401-403", "auth-failure", r"HTTP Error (?P<kind>40[13]): (?:Unauthorized|Forbidden)", "an HTTP 401/403"),
    # botocore: `An error occurred (403) when calling the HeadObject operation: Forbidden`,
    # `An error occurred (AccessDenied) when calling the ListObjects operation: Access Denied` (kserve/kserve#2377)
    Signature("s3-denied", "auth-failure",
              r"An error occurred \((?P<kind>40[13]|AccessDenied|InvalidAccessKeyId|SignatureDoesNotMatch|ExpiredToken|"
              r"InvalidToken|Forbidden|AllAccessDisabled|AccountProblem)\) when calling the (?P<op>\w+) operation",
              "the object store rejected the credentials"),
    Signature("s3-no-credentials", "auth-failure", r"(?P<kind>NoCredentialsError|Unable to locate credentials)",
              "no object-store credentials at all"),
    Signature("gcs-denied", "auth-failure", r"(?P<kind>does not have storage\.\w+\.\w+ access)", "GCS denied the service account"),
    Signature("azure-denied", "auth-failure", r"(?P<kind>AuthorizationPermissionMismatch|AuthenticationFailed|AuthorizationFailure)",
              "Azure storage denied the identity"),
    Signature("k8s-rbac", "auth-failure",
              r"is forbidden: User \"(?P<kind>system:serviceaccount:[^\"]+)\" cannot (?P<op>\w+) resource",
              "the service account lacks RBAC permission"),
    Signature("openai-401", "auth-failure", r"(?P<kind>AuthenticationError: Error code: 401|Incorrect API key provided|invalid_api_key)",
              "an OpenAI-compatible API rejected the key"),
    Signature("generic-denied", "auth-failure",
              r"(?P<kind>401 Unauthorized|403 Forbidden|Invalid (?:API )?[Tt]oken|Access [Dd]enied|invalid_token)",
              "credentials were rejected"),
    # --- another service is not reachable at start ----------------------------------------------------------
    # redis-py `Error 111 connecting to redis:6379. Connection refused.`; Go `dial tcp: lookup redis on
    # 10.96.0.10:53: no such host`; libpq; urllib3; Node; curl; Java.
    Signature("redis-connect", "dependency-unreachable",
              r"Error -?\d+ connecting to (?P<host>[\w.-]+):(?P<port>\d+)\. (?P<why>[^.]+)", "redis-py could not connect"),
    Signature("libpq-dns", "dependency-unreachable", r"could not translate host name \"(?P<host>[^\"]+)\" to address(?:: (?P<why>.+))?",
              "PostgreSQL client: the host name does not resolve"),
    Signature("libpq-refused", "dependency-unreachable",
              r"connection to server at \"(?P<host>[^\"]+)\"[^,]*, port (?P<port>\d+) failed: "
               r"(?P<why>Connection refused|timeout expired|Connection timed out)",
              "PostgreSQL client: connection failed"),
    Signature("urllib3-pool", "dependency-unreachable",
              r"HTTPS?ConnectionPool\(host='(?P<host>[^']+)', port=(?P<port>\d+)\).{0,600}?(?P<why>Connection refused|Name or service not known|"
              r"Temporary failure in name resolution|No address associated with hostname|nodename nor servname|timed out|getaddrinfo failed)",
              "an HTTP client could not connect"),
    Signature("go-dial-refused", "dependency-unreachable",
              r"dial tcp (?P<host>[\w.-]+|\[[0-9a-f:]+\]):(?P<port>\d+): connect: (?P<why>connection refused|connection timed out|no route to host)",
              "a Go client could not connect"),
    Signature("go-dns", "dependency-unreachable",
              r"dial tcp: lookup (?P<host>[\w.-]+)(?: on [\d.:\[\]a-f]+)?: (?P<why>no such host|i/o timeout|server misbehaving)",
              "a Go client could not resolve the host"),
    Signature("node-refused", "dependency-unreachable", r"connect (?P<why>ECONNREFUSED|ETIMEDOUT|EHOSTUNREACH) (?P<host>[\w.:-]+?):(?P<port>\d+)",
              "a Node.js client could not connect"),
    Signature("node-dns", "dependency-unreachable", r"getaddrinfo (?P<why>ENOTFOUND|EAI_AGAIN) (?P<host>[\w.-]+)",
              "a Node.js client could not resolve the host"),
    Signature("curl", "dependency-unreachable",
              r"curl: \(\d+\) (?:Failed to connect to (?P<host>[\w.-]+) port (?P<port>\d+)[^:]*: (?P<why>.+)"
               r"|(?P<why2>Could not resolve host): (?P<host2>[\w.-]+))",
              "curl could not connect"),
    Signature("java-connect", "dependency-unreachable",
              r"java\.net\.(?:(?P<why>UnknownHostException): (?P<host>[\w.-]+)|ConnectException: Connection refused)",
              "a Java client could not connect"),
    Signature("mongo-pymongo", "dependency-unreachable",
              r"ServerSelectionTimeoutError: (?P<host>[\w.-]+):(?P<port>\d+): (?P<why>[^,(]+)", "pymongo could not reach the server"),
    Signature("grpc-remote", "dependency-unreachable",
              r"ipv[46]:(?P<host>[\d.]+|\[[0-9a-f:]+\]):(?P<port>\d+): Failed to connect to remote host: (?P<why>Connection refused|[^;\n\"]+)",
              "a gRPC client could not connect"),
    Signature("aiohttp-connect", "dependency-unreachable",
              r"Cannot connect to host (?P<host>[\w.-]+):(?P<port>\d+) ssl:\S+ \[(?P<why>[^\]]+)\]", "an aiohttp client could not connect"),
    Signature("mysql-connect", "dependency-unreachable",
              r"(?:Can't connect to MySQL server on|Unknown MySQL server host) '(?P<host>[^']+)'(?: \((?P<why>[^)]+)\))?",
              "a MySQL client could not connect"),
    Signature("milvus-connect", "dependency-unreachable",
              r"Fail connecting to server on (?P<host>[\w.-]+):(?P<port>\d+)", "a Milvus client could not connect"),
    Signature("kafka-brokers", "dependency-unreachable", r"(?P<why>NoBrokersAvailable)", "no Kafka broker reachable"),
    Signature("grpc-unavailable", "dependency-unreachable",
              r"(?P<why>failed to connect to all addresses|DNS resolution failed)(?: for (?P<host>[\w.-]+)(?::(?P<port>\d+))?)?",
              "a gRPC client could not connect"),
    # The server answered, with a 5xx: `requests.exceptions.HTTPError: 504 Server Error: Gateway Time-out for url:
    # https://huggingface.co/api/models/…` / `HfHubHTTPError: 504 Server Error` (runpod-workers/worker-vllm#46,
    # huggingface/huggingface_hub#1516), `503 Server Error: Service Unavailable for url:` (read timeouts are
    # urllib3-pool's `Read timed out`).
    Signature("http-5xx", "dependency-unreachable",
              r"(?P<why>5\d\d Server Error:?[\w .-]{0,40}?) for url: https?://(?P<host>[\w.-]+)(?::(?P<port>\d+))?",
              "the server the program calls at start answered with a 5xx (it is down or overloaded)"),
    Signature("socket-generic", "dependency-unreachable",
              r"(?P<why>\[Errno 111\] Connection refused|\[Errno -2\] Name or service not known|\[Errno -3\] Temporary failure "
              r"in name resolution|\[Errno -5\] No address associated with hostname|getaddrinfo failed|ConnectionRefusedError)",
              "a socket connection failed"),
)
