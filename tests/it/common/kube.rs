//! An in-process fake Kubernetes API server: real HTTP and JSON, spoken to by the real `kube`
//! client, serving exactly the calls azevac makes. It keeps itself honest by rejecting what a real API
//! server rejects for those calls: a stale `resourceVersion` (409 Conflict), an unsupported patch
//! content type (415), invalid or duplicate taints (422), an unsupported field selector (400), an
//! unknown object (404), and an eviction a PodDisruptionBudget does not allow yet (429).
//! Karpenter NodePools are served as the API server serves a custom resource
//! (`/apis/karpenter.sh/v1/nodepools`, cluster-scoped): merge and JSON patch only (a strategic merge
//! patch is 415 for custom resources), and requirements validated as the CRD does (422); a cluster
//! without the CRD answers 404 there.
//! Like the AWS proxy (tests/it/common/proxy.rs), it counts and names every request and can SIGKILL a
//! watched azevac process at the Nth one, before or after applying it.

use std::collections::{BTreeMap, BTreeSet};
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::Child;
use std::sync::{Arc, Mutex};

use axum::body::{Body, Bytes};
use axum::extract::{Path as UrlPath, Query, Request, State};
use axum::http::{HeaderMap, StatusCode};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use serde_json::{json, Value};

pub use super::proxy::{KillOn, KillWhen};
use super::{azevac_at, Moto, Run};

/// A fixture of `fixtures/`, as JSON.
pub fn fixture(name: &str) -> Value {
    let path = format!("{}/fixtures/{name}", env!("CARGO_MANIFEST_DIR"));
    serde_json::from_str(&std::fs::read_to_string(path).expect("fixture")).expect("json")
}

/// The `items` of a `kubectl get -o json`-shaped fixture.
pub fn fixture_items(name: &str) -> Vec<Value> {
    fixture(name)["items"].as_array().expect("items").clone()
}

/// What a Kubernetes test runs the binary against: its own moto server, a fake API server, and a
/// kubeconfig whose context `prod` names the cluster.
pub struct Harness {
    /// The emulator (zones, journal).
    pub moto: Moto,
    /// The fake API server.
    pub kube: FakeKube,
    /// Where the kubeconfig (and whatever the test writes) lives.
    pub dir: tempfile::TempDir,
    /// The kubeconfig's path.
    pub kubeconfig: String,
    resource_type: &'static str,
}

impl Harness {
    /// Serve `cluster` as the cluster `name`, for runs of `--type resource_type`.
    pub fn new(name: &str, resource_type: &'static str, cluster: Cluster) -> Harness {
        let moto = Moto::start();
        let kube = FakeKube::start(cluster);
        let dir = tempfile::tempdir().expect("tempdir");
        let kubeconfig = kube.kubeconfig(dir.path(), &[("prod", name)]).display().to_string();
        Harness {
            moto,
            kube,
            dir,
            kubeconfig,
            resource_type,
        }
    }

    /// `args`, then the type, the context and the kubeconfig.
    fn args<'a>(&'a self, args: &[&'a str]) -> Vec<&'a str> {
        let mut all: Vec<&str> = args.to_vec();
        all.extend([
            "--type",
            self.resource_type,
            "--kube-context",
            "prod",
            "--kubeconfig",
            &self.kubeconfig,
        ]);
        all
    }

    /// Run azevac with `args`, the type, the context and the kubeconfig.
    pub fn run(&self, args: &[&str]) -> Run {
        azevac_at(&self.moto.endpoint, &self.args(args), &[])
    }

    /// [`Harness::run`] with the fake API server watching the process (to kill it at its kill
    /// point); the exit code (`None`: killed).
    pub fn run_watched(&self, args: &[&str]) -> Option<i32> {
        let child = super::command(&self.moto.endpoint, &self.args(args), &[])
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .expect("spawn azevac");
        let child = Arc::new(Mutex::new(child));
        self.kube.watch(child.clone());
        loop {
            if let Some(status) = child.lock().expect("child").try_wait().expect("wait") {
                return status.code();
            }
            std::thread::sleep(std::time::Duration::from_millis(5));
        }
    }

    /// A node as the fake holds it now.
    pub fn node(&self, name: &str) -> Value {
        self.kube.state.lock().expect("state").nodes[name].clone()
    }
}

/// A concurrent edit of an object, as another client would make it.
pub type Edit = Box<dyn FnOnce(&mut Value) + Send>;

/// The API server's objects and the behaviours a test asks for.
#[derive(Default)]
pub struct Cluster {
    /// Nodes by name.
    pub nodes: BTreeMap<String, Value>,
    /// Karpenter NodePools by name (`None`: the cluster has no NodePool CRD).
    pub nodepools: Option<BTreeMap<String, Value>>,
    /// The caller may not read NodePools (RBAC without them): 403 Forbidden.
    pub nodepools_forbidden: bool,
    /// Pods (each with metadata.namespace and spec.nodeName).
    pub pods: Vec<Value>,
    /// Evictions of these pods (`ns/name`) are refused with 429 this many more times (u32::MAX: always).
    pub pdb_refusals: BTreeMap<String, u32>,
    /// The next PATCH of these nodes (or NodePools) meets a concurrent edit first (so its resourceVersion is stale).
    pub conflict_once: BTreeSet<String>,
    /// The next PATCH of these objects meets this concurrent edit first (its resourceVersion is stale).
    pub edit_before_patch: BTreeMap<String, Edit>,
    /// The next PATCH of these objects that would be applied fails with 500 instead, changing nothing.
    pub fail_patch_once: BTreeSet<String>,
    /// Counts, for assertions: 409s and 429s answered, evictions done.
    pub conflicts: usize,
    /// 429s answered.
    pub throttled_evictions: usize,
    /// Pods evicted, as `ns/name`.
    pub evicted: Vec<String>,
    version: u64,
}

impl Cluster {
    fn bump(&mut self) -> String {
        self.version += 1;
        self.version.to_string()
    }

    /// Add a node, giving it a resourceVersion.
    pub fn add_node(&mut self, mut node: Value) {
        node["metadata"]["resourceVersion"] = json!(self.bump());
        let name = node["metadata"]["name"].as_str().expect("node name").to_owned();
        self.nodes.insert(name, node);
    }

    /// Change a node as another client would (bumps its resourceVersion).
    pub fn edit_node(&mut self, name: &str, edit: impl FnOnce(&mut Value)) {
        self.edit(Kind::Node, name, edit);
    }

    /// Add a NodePool (installing the CRD if there was none), giving it a resourceVersion.
    pub fn add_nodepool(&mut self, mut pool: Value) {
        pool["metadata"]["resourceVersion"] = json!(self.bump());
        let name = pool["metadata"]["name"].as_str().expect("nodepool name").to_owned();
        self.nodepools.get_or_insert_with(BTreeMap::new).insert(name, pool);
    }

    /// Change a NodePool as another client would (bumps its resourceVersion).
    pub fn edit_nodepool(&mut self, name: &str, edit: impl FnOnce(&mut Value)) {
        self.edit(Kind::NodePool, name, edit);
    }

    fn edit(&mut self, kind: Kind, name: &str, edit: impl FnOnce(&mut Value)) {
        let version = self.bump();
        let object = self.objects(kind).and_then(|o| o.get_mut(name)).expect("object");
        edit(object);
        object["metadata"]["resourceVersion"] = json!(version);
    }

    fn objects(&mut self, kind: Kind) -> Option<&mut BTreeMap<String, Value>> {
        match kind {
            Kind::Node => Some(&mut self.nodes),
            Kind::NodePool => self.nodepools.as_mut(),
        }
    }
}

/// The two kinds of object the fake patches.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Kind {
    Node,
    NodePool,
}

impl Kind {
    fn plural(self) -> &'static str {
        match self {
            Kind::Node => "nodes",
            Kind::NodePool => "nodepools.karpenter.sh",
        }
    }

    fn name(self) -> &'static str {
        match self {
            Kind::Node => "Node",
            Kind::NodePool => "NodePool",
        }
    }
}

/// The request log and the kill point, kept apart from [`Cluster`] so that a test can replace the
/// objects without losing them.
#[derive(Default)]
struct Killer {
    /// Kill the watched process at this request number (1-based).
    kill_at: Option<(usize, KillWhen)>,
    /// Kill the watched process at this request, named by `METHOD /path`.
    kill_on: Option<KillOn>,
    /// Every request since the last [`FakeKube::set_kill_at`], as `METHOD /path`.
    requests: Vec<String>,
    child: Option<Arc<Mutex<Child>>>,
    killed: bool,
}

impl Killer {
    fn kill(&mut self) {
        if let Some(child) = &self.child {
            let _ = child.lock().expect("child").kill();
            self.killed = true;
        }
    }
}

/// A running fake API server.
pub struct FakeKube {
    /// `http://127.0.0.1:PORT`.
    pub url: String,
    /// The shared state, to seed and to inspect.
    pub state: Arc<Mutex<Cluster>>,
    killer: Arc<Mutex<Killer>>,
}

impl FakeKube {
    /// Start serving `cluster` on a free loopback port, on a thread of its own.
    pub fn start(cluster: Cluster) -> FakeKube {
        let state = Arc::new(Mutex::new(cluster));
        let shared = state.clone();
        let killer = Arc::new(Mutex::new(Killer::default()));
        let counter = killer.clone();
        let (tx, rx) = std::sync::mpsc::channel::<SocketAddr>();
        std::thread::spawn(move || {
            let runtime = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .expect("runtime");
            runtime.block_on(async move {
                let app = Router::new()
                    .route("/api/v1/nodes", get(list_nodes))
                    .route("/api/v1/nodes/{name}", get(get_node).patch(patch_node))
                    .route("/api/v1/pods", get(list_pods))
                    .route("/apis/karpenter.sh/v1/nodepools", get(list_nodepools))
                    .route(
                        "/apis/karpenter.sh/v1/nodepools/{name}",
                        get(get_nodepool).patch(patch_nodepool),
                    )
                    .route("/api/v1/namespaces/{ns}/pods/{name}/eviction", post(evict))
                    .fallback(|| async {
                        status(
                            StatusCode::NOT_FOUND,
                            "NotFound",
                            "the server could not find the requested resource",
                        )
                    })
                    .with_state(shared)
                    .layer(middleware::from_fn_with_state(counter, count_and_kill));
                let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind");
                tx.send(listener.local_addr().expect("addr")).expect("send");
                axum::serve(listener, app).await.expect("serve");
            });
        });
        let addr = rx.recv().expect("address");
        FakeKube {
            url: format!("http://{addr}"),
            state,
            killer,
        }
    }

    /// Kill the watched process at this request (1-based; `None`: never), and forget the requests
    /// seen so far.
    pub fn set_kill_at(&self, kill_at: Option<(usize, KillWhen)>) {
        let mut killer = self.killer.lock().expect("killer");
        killer.kill_at = kill_at;
        killer.kill_on = None;
        killer.requests.clear();
        killer.killed = false;
    }

    /// Kill the watched process at the request `kill_on` names (`None`: never), and forget the
    /// requests seen so far.
    pub fn set_kill_on(&self, kill_on: Option<KillOn>) {
        self.set_kill_at(None);
        self.killer.lock().expect("killer").kill_on = kill_on;
    }

    /// The process to SIGKILL at the kill point.
    pub fn watch(&self, child: Arc<Mutex<Child>>) {
        self.killer.lock().expect("killer").child = Some(child);
    }

    /// The requests seen since the last `set_kill_at`, as `METHOD /path`.
    pub fn requests(&self) -> Vec<String> {
        self.killer.lock().expect("killer").requests.clone()
    }

    /// Whether the watched process was killed since the last `set_kill_at`.
    pub fn killed(&self) -> bool {
        self.killer.lock().expect("killer").killed
    }

    /// Write a kubeconfig with one context per `(context, cluster name)`, all pointing here.
    pub fn kubeconfig(&self, dir: &Path, contexts: &[(&str, &str)]) -> PathBuf {
        let clusters: Vec<Value> = contexts
            .iter()
            .map(|(_, cluster)| json!({ "name": cluster, "cluster": { "server": self.url } }))
            .collect();
        let named: Vec<Value> = contexts
            .iter()
            .map(|(context, cluster)| json!({ "name": context, "context": { "cluster": cluster, "user": "operator" } }))
            .collect();
        let config = json!({
            "apiVersion": "v1",
            "kind": "Config",
            "clusters": clusters,
            "contexts": named,
            "users": [{ "name": "operator", "user": { "token": "not-checked" } }],
            "current-context": contexts[0].0,
        });
        let path = dir.join("kubeconfig");
        std::fs::write(&path, serde_json::to_string_pretty(&config).expect("json")).expect("write kubeconfig");
        path
    }
}

type Shared = State<Arc<Mutex<Cluster>>>;

/// Count every request; at the kill point, SIGKILL the watched process before the request is
/// served (it never happens) or after (it happened, and the process never hears back).
async fn count_and_kill(State(killer): State<Arc<Mutex<Killer>>>, request: Request, next: Next) -> Response {
    let when = {
        let mut k = killer.lock().expect("killer");
        k.requests
            .push(format!("{} {}", request.method(), request.uri().path()));
        let n = k.requests.len();
        match k.kill_at {
            Some((at, when)) if at == n => Some(when),
            _ => k.kill_on.as_ref().and_then(|on| on.hits(&k.requests)),
        }
    };
    let dropped = || {
        Response::builder()
            .status(StatusCode::BAD_GATEWAY)
            .header("connection", "close")
            .body(Body::empty())
            .expect("response")
    };
    match when {
        Some(KillWhen::BeforeForward) => {
            killer.lock().expect("killer").kill();
            dropped()
        }
        Some(KillWhen::AfterForward) => {
            let _served = next.run(request).await;
            killer.lock().expect("killer").kill();
            dropped()
        }
        None => next.run(request).await,
    }
}

fn status(code: StatusCode, reason: &str, message: &str) -> Response {
    let body = json!({
        "kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
        "message": message, "reason": reason, "code": code.as_u16(),
    });
    (code, Json(body)).into_response()
}

/// `key=value`, `key!=value`, `key` terms, comma-separated.
fn matches_selector(labels: &Value, selector: &str) -> bool {
    selector.split(',').filter(|t| !t.is_empty()).all(|term| {
        if let Some((k, v)) = term.split_once("!=") {
            labels[k].as_str() != Some(v)
        } else if let Some((k, v)) = term.split_once('=') {
            labels[k.trim_end_matches('=')].as_str() == Some(v)
        } else {
            labels.get(term).is_some()
        }
    })
}

async fn list_nodes(State(state): Shared, Query(query): Query<BTreeMap<String, String>>) -> Response {
    let mut st = state.lock().expect("state");
    let selector = query.get("labelSelector").cloned().unwrap_or_default();
    let items: Vec<Value> = st
        .nodes
        .values()
        .filter(|n| matches_selector(&n["metadata"]["labels"], &selector))
        .cloned()
        .collect();
    let version = st.bump();
    Json(json!({ "apiVersion": "v1", "kind": "NodeList", "metadata": { "resourceVersion": version }, "items": items }))
        .into_response()
}

async fn get_node(State(state): Shared, UrlPath(name): UrlPath<String>) -> Response {
    let st = state.lock().expect("state");
    match st.nodes.get(&name) {
        Some(node) => Json(node.clone()).into_response(),
        None => not_found(Kind::Node, &name),
    }
}

async fn patch_node(State(state): Shared, UrlPath(name): UrlPath<String>, headers: HeaderMap, body: Bytes) -> Response {
    patch(&state, Kind::Node, &name, &headers, &body)
}

async fn patch_nodepool(
    State(state): Shared,
    UrlPath(name): UrlPath<String>,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    patch(&state, Kind::NodePool, &name, &headers, &body)
}

fn not_found(kind: Kind, name: &str) -> Response {
    status(
        StatusCode::NOT_FOUND,
        "NotFound",
        &format!("{} \"{name}\" not found", kind.plural()),
    )
}

fn patch(state: &Mutex<Cluster>, kind: Kind, name: &str, headers: &HeaderMap, body: &Bytes) -> Response {
    let mut st = state.lock().expect("state");
    if st.objects(kind).is_none() {
        return no_crd();
    }
    let exists = st.objects(kind).is_some_and(|o| o.contains_key(name));
    if st.conflict_once.remove(name) && exists {
        st.edit(kind, name, |n| {
            n["metadata"]["labels"]["example.com/touched-by"] = json!("someone-else")
        });
    }
    if let Some(edit) = st.edit_before_patch.remove(name).filter(|_| exists) {
        st.edit(kind, name, edit);
    }
    let Some(current) = st.objects(kind).and_then(|o| o.get(name)).cloned() else {
        return not_found(kind, name);
    };
    let Ok(patch) = serde_json::from_slice::<Value>(body) else {
        return status(
            StatusCode::BAD_REQUEST,
            "BadRequest",
            "the body of the request was in an unknown format",
        );
    };
    let content_type = headers
        .get("content-type")
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default();
    let mut patched = current.clone();
    let applied = match content_type {
        "application/merge-patch+json" => {
            json_patch::merge(&mut patched, &patch);
            Ok(())
        }
        // Custom resources have no strategic-merge schema: the API server refuses it for them.
        "application/strategic-merge-patch+json" if kind == Kind::Node => {
            json_patch::merge(&mut patched, &patch);
            Ok(())
        }
        "application/json-patch+json" => serde_json::from_value::<json_patch::Patch>(patch.clone())
            .map_err(|e| e.to_string())
            .and_then(|p| json_patch::patch(&mut patched, &p).map_err(|e| e.to_string())),
        other => {
            return status(
                StatusCode::UNSUPPORTED_MEDIA_TYPE,
                "UnsupportedMediaType",
                &format!("the body of the request was in an unknown format - accepted media types include: application/json-patch+json, application/merge-patch+json, application/apply-patch+yaml (got {other:?})"),
            );
        }
    };
    if let Err(e) = applied {
        return status(StatusCode::UNPROCESSABLE_ENTITY, "Invalid", &e);
    }
    // Optimistic concurrency: a resourceVersion in the patch must be the current one.
    let sent = patched["metadata"]["resourceVersion"].clone();
    let sent_any = patch["metadata"].get("resourceVersion").is_some()
        || (content_type == "application/json-patch+json" && sent != current["metadata"]["resourceVersion"]);
    if sent != current["metadata"]["resourceVersion"] && sent_any {
        st.conflicts += 1;
        return status(
            StatusCode::CONFLICT,
            "Conflict",
            &format!("Operation cannot be fulfilled on {} \"{name}\": the object has been modified; please apply your changes to the latest version and try again", kind.plural()),
        );
    }
    let valid = match kind {
        Kind::Node => validate_taints(&patched),
        Kind::NodePool => validate_requirements(&patched),
    };
    if let Err(why) = valid {
        return status(
            StatusCode::UNPROCESSABLE_ENTITY,
            "Invalid",
            &format!("{} \"{name}\" is invalid: {why}", kind.name()),
        );
    }
    if st.fail_patch_once.remove(name) {
        return status(
            StatusCode::INTERNAL_SERVER_ERROR,
            "InternalError",
            "etcdserver: request timed out",
        );
    }
    if kind == Kind::Node {
        // The API server stores and serves a Node's `taints` and `unschedulable` as `omitempty`:
        // an emptied list and a false flag read back absent, as on a node nobody touched.
        if let Some(spec) = patched["spec"].as_object_mut() {
            spec.retain(|field, value| match field.as_str() {
                "taints" => value.as_array().is_none_or(|t| !t.is_empty()),
                "unschedulable" => value.as_bool() != Some(false),
                _ => true,
            });
        }
    }
    patched["metadata"]["resourceVersion"] = json!(st.bump());
    if let Some(objects) = st.objects(kind) {
        objects.insert(name.to_owned(), patched.clone());
    }
    Json(patched).into_response()
}

/// What the API server answers for a resource whose CRD is not installed.
fn no_crd() -> Response {
    status(
        StatusCode::NOT_FOUND,
        "NotFound",
        "the server could not find the requested resource",
    )
}

async fn list_nodepools(State(state): Shared) -> Response {
    let mut st = state.lock().expect("state");
    if st.nodepools_forbidden {
        return status(
            StatusCode::FORBIDDEN,
            "Forbidden",
            "nodepools.karpenter.sh is forbidden: User \"operator\" cannot list resource \"nodepools\" in API group \"karpenter.sh\" at the cluster scope",
        );
    }
    let Some(pools) = st.nodepools.as_ref() else {
        return no_crd();
    };
    let items: Vec<Value> = pools.values().cloned().collect();
    let version = st.bump();
    Json(json!({ "apiVersion": "karpenter.sh/v1", "kind": "NodePoolList", "metadata": { "resourceVersion": version }, "items": items }))
        .into_response()
}

async fn get_nodepool(State(state): Shared, UrlPath(name): UrlPath<String>) -> Response {
    let st = state.lock().expect("state");
    match st.nodepools.as_ref().map(|p| p.get(&name)) {
        None => no_crd(),
        Some(Some(pool)) => Json(pool.clone()).into_response(),
        Some(None) => not_found(Kind::NodePool, &name),
    }
}

/// The NodePool CRD's checks of `spec.template.spec.requirements`, plus the API's node-selector
/// rules for each operator.
fn validate_requirements(pool: &Value) -> Result<(), String> {
    let Some(requirements) = pool["spec"]["template"]["spec"]["requirements"].as_array() else {
        return Err("spec.template.spec.requirements: Required value".into());
    };
    for (i, r) in requirements.iter().enumerate() {
        let at = format!("spec.template.spec.requirements[{i}]");
        let key = r["key"].as_str().unwrap_or_default();
        if key.is_empty() {
            return Err(format!("{at}.key: Required value"));
        }
        let values = match &r["values"] {
            Value::Null => Vec::new(),
            Value::Array(v) if v.iter().all(Value::is_string) => v.iter().filter_map(Value::as_str).collect(),
            other => {
                return Err(format!(
                    "{at}.values: Invalid value: {other}: must be a list of strings"
                ))
            }
        };
        let operator = r["operator"].as_str().unwrap_or_default();
        match operator {
            "In" | "NotIn" if values.is_empty() => {
                return Err(format!("{at}.values: Required value: values must be non-empty for operator {operator}"))
            }
            "Exists" | "DoesNotExist" if !values.is_empty() => {
                return Err(format!("{at}.values: Forbidden: values must be empty for operator {operator}"))
            }
            "Gt" | "Lt" if values.len() != 1 || values[0].parse::<u64>().is_err() => {
                return Err(format!("{at}.values: Invalid value: requirements operator 'Gt' or 'Lt' must have a single positive integer value"))
            }
            "In" | "NotIn" | "Exists" | "DoesNotExist" | "Gt" | "Lt" => {}
            other => {
                return Err(format!("{at}.operator: Unsupported value: {other:?}: supported values: \"In\", \"NotIn\", \"Exists\", \"DoesNotExist\", \"Gt\", \"Lt\""))
            }
        }
        if let Some(min) = r["minValues"].as_u64() {
            if operator == "In" && (values.len() as u64) < min {
                return Err(format!("{at}: Invalid value: requirements with 'minValues' must have at least that many values specified in the 'values' field"));
            }
        }
    }
    Ok(())
}

fn validate_taints(node: &Value) -> Result<(), String> {
    let Some(taints) = node["spec"]["taints"].as_array() else {
        return Ok(());
    };
    let mut seen = BTreeSet::new();
    for taint in taints {
        let key = taint["key"].as_str().unwrap_or_default();
        let effect = taint["effect"].as_str().unwrap_or_default();
        if key.is_empty() {
            return Err("spec.taints[].key: Required value".into());
        }
        if !["NoSchedule", "PreferNoSchedule", "NoExecute"].contains(&effect) {
            return Err(format!("spec.taints[].effect: Unsupported value: {effect:?}"));
        }
        if !seen.insert((key.to_owned(), effect.to_owned())) {
            return Err(format!("spec.taints: Duplicate value: {key}:{effect}"));
        }
    }
    Ok(())
}

async fn list_pods(State(state): Shared, Query(query): Query<BTreeMap<String, String>>) -> Response {
    let st = state.lock().expect("state");
    let field = query.get("fieldSelector").cloned().unwrap_or_default();
    let node = match field.split_once('=') {
        None if field.is_empty() => None,
        Some(("spec.nodeName", node)) => Some(node.to_owned()),
        _ => {
            return status(
                StatusCode::BAD_REQUEST,
                "BadRequest",
                &format!("\"{field}\" is not a known field selector: only \"spec.nodeName\" is served here"),
            )
        }
    };
    let items: Vec<Value> = st
        .pods
        .iter()
        .filter(|p| {
            node.as_deref()
                .is_none_or(|n| p["spec"]["nodeName"].as_str() == Some(n))
        })
        .cloned()
        .collect();
    Json(json!({ "apiVersion": "v1", "kind": "PodList", "metadata": {}, "items": items })).into_response()
}

async fn evict(State(state): Shared, UrlPath((ns, name)): UrlPath<(String, String)>, body: Bytes) -> Response {
    let mut st = state.lock().expect("state");
    let eviction: Value = serde_json::from_slice(&body).unwrap_or_default();
    // The API server defaults a missing kind (kube-rs sends none), but refuses another kind or name.
    let kind_ok = eviction.get("kind").is_none_or(|k| k == "Eviction");
    if !kind_ok || eviction["metadata"]["name"] != json!(name) {
        return status(
            StatusCode::BAD_REQUEST,
            "BadRequest",
            "name in URL does not match name in Eviction object",
        );
    }
    let key = format!("{ns}/{name}");
    let Some(index) = st.pods.iter().position(|p| {
        p["metadata"]["namespace"].as_str() == Some(&ns) && p["metadata"]["name"].as_str() == Some(&name)
    }) else {
        return status(StatusCode::NOT_FOUND, "NotFound", &format!("pods \"{name}\" not found"));
    };
    if let Some(left) = st.pdb_refusals.get_mut(&key) {
        if *left > 0 {
            if *left != u32::MAX {
                *left -= 1;
            }
            st.throttled_evictions += 1;
            return status(
                StatusCode::TOO_MANY_REQUESTS,
                "TooManyRequests",
                "Cannot evict pod as it would violate the pod's disruption budget.",
            );
        }
    }
    st.pods.remove(index);
    st.evicted.push(key);
    (
        StatusCode::CREATED,
        Json(json!({ "kind": "Status", "apiVersion": "v1", "status": "Success", "code": 201 })),
    )
        .into_response()
}
