//! A fault-injecting HTTP proxy between azevac and moto: it counts and names every AWS call, and on
//! request adds latency, answers throttling / 5xx / access-denied errors in each protocol's own
//! format, drops connections, fails chosen calls, SIGKILLs the azevac process at the Nth call, or
//! holds one chosen call back until the test releases it (to interleave two processes exactly).
//! It runs on its own thread and runtime, so tests can block on the binary while it serves.

use std::net::SocketAddr;
use std::process::Child;
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

use axum::body::Body;
use axum::http::{HeaderMap, Request, Response, StatusCode};
use http_body_util::BodyExt;
use hyper_util::client::legacy::Client;
use hyper_util::rt::TokioExecutor;

use super::zonal::{self, FakeArc};

/// When, relative to forwarding the Nth call, the process is killed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KillWhen {
    /// Before the call reaches AWS: it never happens.
    BeforeForward,
    /// After AWS did it, before the process hears back.
    AfterForward,
}

/// A kill point named by the call rather than its number: the `nth` (1-based) call whose label
/// starts with `label` (`service:Action` here, `METHOD /path` at the fake API server). Calls that
/// run side by side arrive in an order that varies from run to run; their labels do not.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KillOn {
    /// The label's beginning: `dynamodb:TransactWriteItems`, `PATCH /api/v1/nodes/`...
    pub label: String,
    /// Which of the matching calls (1-based).
    pub nth: usize,
    /// Before or after it takes effect.
    pub when: KillWhen,
}

impl KillOn {
    /// When to kill, if the last call of `log` (the one arriving) is the kill point.
    pub fn hits(&self, log: &[String]) -> Option<KillWhen> {
        let last = log.last()?;
        let seen = log.iter().filter(|c| c.starts_with(&self.label)).count();
        (last.starts_with(&self.label) && seen == self.nth).then_some(self.when)
    }
}

/// An error to answer instead of forwarding.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fault {
    /// The service's throttling error (ThrottlingException, RequestLimitExceeded, Throttling...).
    Throttle,
    /// HTTP 500 InternalFailure.
    ServerError,
    /// HTTP 503 ServiceUnavailable.
    Unavailable,
    /// Access denied, in the service's words.
    AccessDenied,
    /// Close the connection without an answer.
    Drop,
    /// Close the connection before any answer, not even a status line: what the SDK sees of an
    /// endpoint that drops its connections (a dispatch failure, where [`Fault::Drop`]'s empty 502
    /// is an answer).
    Close,
    /// DynamoDB's `TransactionCanceledException` with every write's reason `ThrottlingError`: a
    /// partition's write rate exceeded, as a transaction is told (the SDK does not retry it).
    TransactionThrottled,
    /// A gateway's own HTML error page (HTTP 502 Bad Gateway, as nginx words it), in place of
    /// the service's answer: no AWS error at all, in no format the SDK parses.
    BadGatewayPage,
    /// A refusal (HTTP 400) in the service's words, with this code and message: the text AWS
    /// echoes back from a request (a name, a value) is text azevac did not write.
    Refuse {
        /// The error code, e.g. `ValidationError`.
        code: &'static str,
        /// The message, as AWS would word it.
        message: &'static str,
    },
}

/// A call that always fails: matched by its label (`service:Action`) and a substring of its body.
#[derive(Debug, Clone)]
pub struct FailRule {
    /// `autoscaling:UpdateAutoScalingGroup`, `dynamodb:PutItem`...; `ecs:*`: every call of a service.
    pub label: String,
    /// Only calls whose body contains this (empty: all).
    pub body_contains: String,
    /// What to answer.
    pub fault: Fault,
}

impl FailRule {
    /// Whether the rule names this call's label (`service:*` names every call of the service).
    fn matches(&self, label: &str) -> bool {
        match self.label.strip_suffix('*') {
            Some(service) => label.starts_with(service),
            None => self.label == label,
        }
    }
}

/// What the proxy does to the calls it sees.
#[derive(Debug, Clone, Default)]
pub struct Faults {
    /// Share of calls (0.0 to 1.0) answered with a random one of `random_faults`.
    pub share: f64,
    /// The faults drawn from for `share`.
    pub random_faults: Vec<Fault>,
    /// Calls that always fail.
    pub rules: Vec<FailRule>,
    /// Added to every call.
    pub latency: Duration,
    /// Kill the registered process at this call number (1-based).
    pub kill_at: Option<(usize, KillWhen)>,
    /// Kill the registered process at this call, named by its label.
    pub kill_on: Option<KillOn>,
}

/// One call to park before it is forwarded, until [`Proxy::release`]; every other call (of the same
/// process too) keeps flowing.
#[derive(Debug, Clone, Default)]
pub struct Hold {
    /// Only calls with this label (`service:Action`) are counted; `None`: every call.
    pub label: Option<String>,
    /// Only calls whose body contains this are counted (empty: all).
    pub body_contains: String,
    /// Park the nth counted call (1-based) since the hold was set.
    pub nth: usize,
}

/// Where the hold stands.
#[derive(Default)]
struct Holding {
    rule: Option<Hold>,
    /// Calls counted against the rule so far.
    seen: usize,
    /// The label of the parked call, once parked.
    parked: Option<String>,
    /// Wakes the parked call; taken by `release`.
    wake: Option<futures::channel::oneshot::Sender<()>>,
}

#[derive(Default)]
struct State {
    faults: Faults,
    calls: Vec<String>,
    /// The body of each call in `calls`.
    bodies: Vec<String>,
    /// The SDK's user agent of each call in `calls`.
    user_agents: Vec<String>,
    /// When each call in `calls` arrived.
    arrivals: Vec<std::time::Instant>,
    /// Calls being handled now (a parked one included).
    in_flight: usize,
    injected: usize,
    rng: u64,
    child: Option<Arc<Mutex<Child>>>,
    killed: bool,
    hold: Holding,
    /// ElastiCache primary promotion, which moto lacks.
    cache: super::elasticache::FakeCache,
    /// RDS forced failovers and standby zones, which moto lacks.
    rds: super::rds::FakeRds,
    /// ECS tasks, which moto cannot start in awsvpc mode, and services being deleted.
    tasks: super::tasks::FakeTasks,
    /// Rules that fail only their next so many matching calls (see [`Proxy::fail_next`]).
    fail_next: Vec<(FailRule, usize)>,
    /// What AWS does that the emulator does not (issue 50), once [`Proxy::strict`] is on; kept
    /// across [`Proxy::set`].
    strict: super::strict::Strict,
}

/// A running proxy.
pub struct Proxy {
    /// `http://127.0.0.1:PORT`: point AWS_ENDPOINT_URL here.
    pub endpoint: String,
    /// The ARC zonal shift API the proxy answers itself (the emulator has none).
    pub arc: Arc<Mutex<FakeArc>>,
    state: Arc<Mutex<State>>,
    /// Signalled when the hold parks a call, and when a call ends.
    parked: Arc<Condvar>,
}

impl Proxy {
    /// Start a proxy in front of `upstream` (a moto endpoint).
    pub fn start(upstream: &str) -> Proxy {
        let state = Arc::new(Mutex::new(State {
            rng: 0x2545_F491_4F6C_DD1D,
            ..State::default()
        }));
        let (tx, rx) = std::sync::mpsc::channel();
        let upstream = upstream.to_owned();
        let shared = state.clone();
        let arc = Arc::new(Mutex::new(FakeArc::default()));
        let fake = arc.clone();
        let parked = Arc::new(Condvar::new());
        let signal = parked.clone();
        std::thread::spawn(move || {
            let runtime = tokio::runtime::Builder::new_multi_thread()
                .worker_threads(2)
                .enable_all()
                .build()
                .expect("proxy runtime");
            runtime.block_on(async move {
                let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind");
                tx.send(listener.local_addr().expect("addr")).expect("send addr");
                let client: Client<_, Body> = Client::builder(TokioExecutor::new()).build_http();
                let app = axum::Router::new().fallback(move |req: Request<Body>| {
                    let (state, client, upstream) = (shared.clone(), client.clone(), upstream.clone());
                    let (fake, signal) = (fake.clone(), signal.clone());
                    // Carried out to the end whether or not the caller still listens, as AWS
                    // does: a call its sender gave up on (a timeout, a process that went away)
                    // still lands, later.
                    async move {
                        match tokio::spawn(async move { handle(state, signal, fake, client, &upstream, req).await })
                            .await
                        {
                            Ok(response) => response,
                            // `Fault::Close` unwinds out of the handler: on out of this one too,
                            // so that the connection is dropped unanswered.
                            Err(e) if e.is_panic() => std::panic::resume_unwind(e.into_panic()),
                            Err(_) => error_response("", Fault::ServerError),
                        }
                    }
                });
                axum::serve(listener, app).await.expect("serve");
            });
        });
        let addr: SocketAddr = rx.recv().expect("proxy address");
        Proxy {
            endpoint: format!("http://{addr}"),
            arc,
            state,
            parked,
        }
    }

    /// Replace the faults, and forget the calls seen so far (and any hold: a parked call is released).
    pub fn set(&self, faults: Faults) {
        let mut state = self.state.lock().expect("state");
        state.faults = faults;
        state.calls.clear();
        state.bodies.clear();
        state.user_agents.clear();
        state.arrivals.clear();
        state.injected = 0;
        state.killed = false;
        release_parked(&mut state);
        state.hold = Holding::default();
    }

    /// From now on also fail these calls and add `latency` to every call, keeping the calls seen and
    /// any parked call as they are (unlike [`Proxy::set`]).
    pub fn fail_too(&self, rules: Vec<FailRule>, latency: Duration) {
        let mut state = self.state.lock().expect("state");
        state.faults.rules.extend(rules);
        state.faults.latency = latency;
    }

    /// Fail the next `times` calls `rule` matches, then let them through.
    pub fn fail_next(&self, rule: FailRule, times: usize) {
        self.state.lock().expect("state").fail_next.push((rule, times));
    }

    /// Park the call `hold` picks before it is forwarded, until [`Proxy::release`]. Replaces an
    /// earlier hold (releasing its parked call, if any) and starts counting from zero.
    pub fn hold(&self, hold: Hold) {
        assert!(hold.nth >= 1, "Hold::nth is 1-based");
        let mut state = self.state.lock().expect("state");
        release_parked(&mut state);
        state.hold = Holding {
            rule: Some(hold),
            ..Holding::default()
        };
    }

    /// Block until the hold has parked a call, and return its label; `None` after `timeout`, or as
    /// soon as `child` (the process whose call is awaited, if given) has exited without it.
    pub fn wait_held(&self, mut child: Option<&mut Child>, timeout: Duration) -> Option<String> {
        let deadline = Instant::now() + timeout;
        let mut state = self.state.lock().expect("state");
        loop {
            if let Some(label) = &state.hold.parked {
                return Some(label.clone());
            }
            if let Some(child) = child.as_deref_mut() {
                if child.try_wait().expect("try_wait").is_some() {
                    return None;
                }
            }
            let now = Instant::now();
            if now >= deadline {
                return None;
            }
            // Wakes on the park at once; the short bound only serves to notice an exited child.
            let step = (deadline - now).min(Duration::from_millis(20));
            state = self.parked.wait_timeout(state, step).expect("state").0;
        }
    }

    /// Block until no call but the parked one is in flight, so that the calls the process sent
    /// concurrently with the parked one have all been answered before the test goes on (their
    /// order varies from run to run; this makes the pause the same point every time); `false`
    /// after `timeout`.
    pub fn wait_quiet(&self, timeout: Duration) -> bool {
        let deadline = Instant::now() + timeout;
        let mut state = self.state.lock().expect("state");
        loop {
            let parked = usize::from(state.hold.parked.is_some() && state.hold.wake.is_some());
            if state.in_flight <= parked {
                return true;
            }
            let now = Instant::now();
            if now >= deadline {
                return false;
            }
            state = self.parked.wait_timeout(state, deadline - now).expect("state").0;
        }
    }

    /// Forward the parked call exactly as it came, and let every later call through; the hold is
    /// spent (a call not parked yet never will be).
    pub fn release(&self) {
        let mut state = self.state.lock().expect("state");
        release_parked(&mut state);
        state.hold.rule = None;
    }

    /// The process to SIGKILL at `kill_at`.
    pub fn watch(&self, child: Arc<Mutex<Child>>) {
        self.state.lock().expect("state").child = Some(child);
    }

    /// The calls seen since the last `set`, as `service:Action`.
    pub fn calls(&self) -> Vec<String> {
        self.state.lock().expect("state").calls.clone()
    }

    /// The calls seen since the last `set`, as (`service:Action`, request body).
    pub fn requests(&self) -> Vec<(String, String)> {
        let state = self.state.lock().expect("state");
        state.calls.iter().cloned().zip(state.bodies.iter().cloned()).collect()
    }

    /// Each call's label with the SDK user agent it was sent with.
    pub fn user_agents(&self) -> Vec<(String, String)> {
        let st = self.state.lock().expect("state");
        st.calls.iter().cloned().zip(st.user_agents.iter().cloned()).collect()
    }

    /// The calls seen since the last `set`, as (`service:Action`, when it arrived).
    pub fn arrivals(&self) -> Vec<(String, std::time::Instant)> {
        let st = self.state.lock().expect("state");
        st.calls.iter().cloned().zip(st.arrivals.iter().copied()).collect()
    }

    /// How many faults were injected since the last `set`.
    pub fn injected(&self) -> usize {
        self.state.lock().expect("state").injected
    }

    /// The ElastiCache promotion fake, to read or to set refusals on.
    pub fn cache<R>(&self, f: impl FnOnce(&mut super::elasticache::FakeCache) -> R) -> R {
        f(&mut self.state.lock().expect("state").cache)
    }

    /// The RDS failover fake, to read or to set refusals on.
    pub fn rds<R>(&self, f: impl FnOnce(&mut super::rds::FakeRds) -> R) -> R {
        f(&mut self.state.lock().expect("state").rds)
    }

    /// The ECS fake, to add tasks to and to mark services as being deleted.
    pub fn tasks<R>(&self, f: impl FnOnce(&mut super::tasks::FakeTasks) -> R) -> R {
        f(&mut self.state.lock().expect("state").tasks)
    }

    /// From now on, answer as AWS does where the emulator is lenient (tests/it/common/strict.rs):
    /// reads that lag writes, Lambda's revisions and update lifecycle, the subnet limits.
    pub fn strict(&self) {
        self.state.lock().expect("state").strict.on = true;
    }

    /// Time passes: every read answers with the newest state again (a consistency window is
    /// seconds; an operator's next command comes later than that).
    pub fn settle_reads(&self) {
        self.state.lock().expect("state").strict.time_passes();
    }

    /// How many reads a Batch environment or VPC endpoint shows its update in progress, from now on.
    pub fn updates_take(&self, reads: usize) {
        self.state.lock().expect("state").strict.update_reads = reads;
    }

    /// How many answers the strict layer gave from before a write, and the refusals it made
    /// (`service:code`), since the proxy started.
    pub fn strictness(&self) -> (usize, Vec<String>) {
        let state = self.state.lock().expect("state");
        (state.strict.stale_answers, state.strict.refusals.clone())
    }

    /// Whether the watched process was killed since the last `set`.
    pub fn killed(&self) -> bool {
        self.state.lock().expect("state").killed
    }
}

/// What one call gets.
enum Decision {
    Forward { kill_after: bool },
    Answer(Fault),
}

async fn handle(
    state: Arc<Mutex<State>>,
    parked: Arc<Condvar>,
    fake: Arc<Mutex<FakeArc>>,
    client: Client<hyper_util::client::legacy::connect::HttpConnector, Body>,
    upstream: &str,
    req: Request<Body>,
) -> Response<Body> {
    let _in_flight = InFlight::enter(&state, &parked);
    let (parts, body) = req.into_parts();
    let mut bytes = body.collect().await.map(|b| b.to_bytes()).unwrap_or_default();
    let service = service_of(&parts.headers);
    // CloudWatch's CBOR, as the JSON moto reads (and the test reads in the proxy's log).
    let cbor = (service == "monitoring")
        .then(|| super::cbor::operation(parts.uri.path()))
        .flatten()
        .map(str::to_owned);
    if cbor.is_some() {
        bytes = super::cbor::to_json(&bytes).to_string().into();
    }
    let text = String::from_utf8_lossy(&bytes).into_owned();
    let arc = service == "arc-zonal-shift";
    let action = if arc {
        zonal::operation(parts.method.as_str(), parts.uri.path()).to_owned()
    } else if let Some(operation) = &cbor {
        operation.clone()
    } else {
        action_of(&parts.headers, parts.uri.path(), &text)
    };
    let label = format!("{service}:{action}");

    let (decision, latency, held) = {
        let mut st = state.lock().expect("state");
        st.calls.push(label.clone());
        st.arrivals.push(std::time::Instant::now());
        st.bodies.push(text.clone());
        st.user_agents.push(
            parts
                .headers
                .get("x-amz-user-agent")
                .or_else(|| parts.headers.get("user-agent"))
                .and_then(|v| v.to_str().ok())
                .unwrap_or_default()
                .to_owned(),
        );
        let n = st.calls.len();
        let held = park(&mut st, &label, &text);
        let latency = st.faults.latency;
        let kill_point = match st.faults.kill_at {
            Some((at, when)) if at == n => Some(when),
            _ => st.faults.kill_on.as_ref().and_then(|k| k.hits(&st.calls)),
        };
        let decision = match kill_point {
            Some(when) => {
                if when == KillWhen::BeforeForward {
                    kill(&mut st);
                    Decision::Answer(Fault::Drop)
                } else {
                    Decision::Forward { kill_after: true }
                }
            }
            _ => {
                let next = st
                    .fail_next
                    .iter_mut()
                    .find(|(r, left)| *left > 0 && r.matches(&label) && text.contains(&r.body_contains))
                    .map(|(r, left)| {
                        *left -= 1;
                        r.fault
                    });
                let rule = next.or_else(|| {
                    st.faults
                        .rules
                        .iter()
                        .find(|r| r.matches(&label) && text.contains(&r.body_contains))
                        .map(|r| r.fault)
                });
                let draw = next_random(&mut st.rng);
                let random = (draw < st.faults.share && !st.faults.random_faults.is_empty()).then(|| {
                    let pick = (next_random(&mut st.rng) * st.faults.random_faults.len() as f64) as usize;
                    st.faults.random_faults[pick.min(st.faults.random_faults.len() - 1)]
                });
                match rule.or(random) {
                    Some(fault) => {
                        st.injected += 1;
                        Decision::Answer(fault)
                    }
                    None => Decision::Forward { kill_after: false },
                }
            }
        };
        (decision, latency, held)
    };
    if let Some(wake) = held {
        parked.notify_all();
        // Woken by `release` (or a new hold or `set`, which release it too).
        let _ = wake.await;
    }
    if !latency.is_zero() {
        tokio::time::sleep(latency).await;
    }
    match decision {
        Decision::Answer(Fault::Close) => close_unanswered(),
        Decision::Answer(Fault::TransactionThrottled) => transaction_throttled(&text),
        Decision::Answer(fault) => error_response(&service, fault),
        Decision::Forward { kill_after } if arc => {
            let answer = fake.lock().expect("arc").answer(
                parts.method.as_str(),
                parts.uri.path(),
                parts.uri.query().unwrap_or_default(),
                &text,
            );
            if kill_after {
                kill(&mut state.lock().expect("state"));
                return error_response(&service, Fault::Drop);
            }
            let mut response = Response::builder()
                .status(answer.status)
                .header("content-type", "application/json");
            if let Some(shape) = answer.error {
                response = response.header("x-amzn-errortype", shape);
            }
            response.body(Body::from(answer.body.to_string())).expect("response")
        }
        Decision::Forward { kill_after } => {
            let refusal = {
                let st = state.lock().expect("state");
                st.cache
                    .refuse(&service, &action, &text)
                    .or_else(|| st.rds.refuse(&service, &action, &text))
            };
            let tasks = state.lock().expect("state").tasks.answer(&service, &action, &text);
            if let Some(body) = tasks {
                return Response::builder()
                    .status(if body.get("__type").is_some() { 400 } else { 200 })
                    .header("content-type", "application/x-amz-json-1.1")
                    .body(Body::from(body.to_string()))
                    .expect("response");
            }
            if let Some((status, code, message)) = refusal {
                return Response::builder()
                    .status(status)
                    .header("content-type", "text/xml")
                    .body(Body::from(super::query::error_xml(code, &message)))
                    .expect("response");
            }
            let path_and_query = parts.uri.path_and_query().map(|p| p.as_str()).unwrap_or("/").to_owned();
            let strict_on = cbor.is_none() && state.lock().expect("state").strict.on;
            let mut replaced_body = false;
            if strict_on {
                let before = state.lock().expect("state").strict.before(
                    &service,
                    parts.method.as_str(),
                    &path_and_query,
                    &action,
                    &text,
                );
                match before {
                    super::strict::Before::Answer(answer) => return finish(&state, &service, kill_after, answer),
                    super::strict::Before::Forward(Some(body)) => {
                        bytes = body.into();
                        replaced_body = true;
                    }
                    super::strict::Before::Forward(None) => {}
                    super::strict::Before::Freeze(reads) => {
                        let frozen = read_again(&client, upstream, reads).await;
                        state.lock().expect("state").strict.freeze(frozen);
                    }
                }
            }
            let uri = match cbor {
                Some(_) => format!("{upstream}/"),
                None => format!(
                    "{upstream}{}",
                    parts.uri.path_and_query().map(|p| p.as_str()).unwrap_or("/")
                ),
            };
            let mut forward = Request::builder().method(parts.method.clone()).uri(uri);
            for (name, value) in &parts.headers {
                let encoding = ["content-type", "content-length", "smithy-protocol", "accept"];
                if replaced_body && name.as_str() == "content-length" {
                    continue;
                }
                if cbor.is_none() || !encoding.contains(&name.as_str()) {
                    forward = forward.header(name, value);
                }
            }
            if let Some(operation) = &cbor {
                forward = forward
                    .header("content-type", "application/x-amz-json-1.0")
                    .header("x-amz-target", format!("{}.{operation}", super::cbor::TARGET));
            }
            let sent_headers: Vec<(String, String)> = parts
                .headers
                .iter()
                .filter(|(n, _)| n.as_str() != "content-length")
                .map(|(n, v)| (n.as_str().to_owned(), v.to_str().unwrap_or_default().to_owned()))
                .collect();
            let forwarded = client.request(forward.body(Body::from(bytes)).expect("request")).await;
            let response = match forwarded {
                Ok(resp) => {
                    let (mut p, b) = resp.into_parts();
                    let body = b.collect().await.map(|b| b.to_bytes()).unwrap_or_default();
                    let answered = String::from_utf8_lossy(&body);
                    if strict_on {
                        let status = p.status.as_u16();
                        let method = parts.method.as_str();
                        let mut st = state.lock().expect("state");
                        if status == 200 && super::strict::is_read(method, &action) {
                            let sent = super::strict::Sent {
                                method: method.to_owned(),
                                uri: path_and_query.clone(),
                                headers: sent_headers.clone(),
                                body: text.clone(),
                            };
                            st.strict.read_seen(&service, sent);
                        }
                        if let Some(shown) =
                            st.strict
                                .after(&service, (method, &path_and_query, &action, &text), status, &answered)
                        {
                            drop(st);
                            p.headers.remove("content-length");
                            return finish(&state, &service, kill_after, Response::from_parts(p, Body::from(shown)));
                        }
                    }
                    let rewritten = {
                        let mut st = state.lock().expect("state");
                        let status = p.status.as_u16();
                        match st.cache.answered(&service, &action, &text, status, &answered) {
                            Some(body) => Some(body),
                            None => st
                                .rds
                                .answered(&service, &action, &text, status, &answered)
                                .or_else(|| super::volumes::answered(&service, &action, status, &answered))
                                .or_else(|| st.tasks.answered(&service, &action, status, &answered)),
                        }
                    };
                    if cbor.is_some() {
                        p.headers.remove("content-length");
                        p.headers
                            .insert("content-type", "application/cbor".parse().expect("header"));
                        p.headers
                            .insert("smithy-protocol", "rpc-v2-cbor".parse().expect("header"));
                        let body = super::cbor::to_cbor(&body);
                        return finish(&state, &service, kill_after, Response::from_parts(p, Body::from(body)));
                    }
                    if let Some(rewritten) = rewritten {
                        p.headers.remove("content-length");
                        return finish(
                            &state,
                            &service,
                            kill_after,
                            Response::from_parts(p, Body::from(rewritten)),
                        );
                    }
                    Response::from_parts(p, Body::from(body))
                }
                Err(_) => error_response(&service, Fault::Unavailable),
            };
            if kill_after {
                kill(&mut state.lock().expect("state"));
                return error_response(&service, Fault::Drop);
            }
            response
        }
    }
}

/// The strict layer's reads of a service, sent again to the emulator right before one of its
/// writes: how each answers just before it, as `(key, status, content type, body)`.
async fn read_again(
    client: &Client<hyper_util::client::legacy::connect::HttpConnector, Body>,
    upstream: &str,
    reads: Vec<(String, super::strict::Sent)>,
) -> Vec<(String, u16, String, String)> {
    let mut frozen = Vec::new();
    for (key, sent) in reads {
        let mut request = Request::builder()
            .method(sent.method.as_str())
            .uri(format!("{upstream}{}", sent.uri));
        for (name, value) in &sent.headers {
            request = request.header(name, value);
        }
        let Ok(request) = request.body(Body::from(sent.body.clone())) else {
            continue;
        };
        if let Ok(answer) = client.request(request).await {
            let status = answer.status().as_u16();
            let content_type = answer
                .headers()
                .get("content-type")
                .and_then(|v| v.to_str().ok())
                .unwrap_or("application/json")
                .to_owned();
            let body = answer
                .into_body()
                .collect()
                .await
                .map(|b| b.to_bytes())
                .unwrap_or_default();
            frozen.push((key, status, content_type, String::from_utf8_lossy(&body).into_owned()));
        }
    }
    frozen
}

/// Counts a call in flight while it lives (a call whose client went away is dropped, and leaves).
struct InFlight {
    state: Arc<Mutex<State>>,
    changed: Arc<Condvar>,
}

impl InFlight {
    fn enter(state: &Arc<Mutex<State>>, changed: &Arc<Condvar>) -> InFlight {
        state.lock().expect("state").in_flight += 1;
        InFlight {
            state: state.clone(),
            changed: changed.clone(),
        }
    }
}

impl Drop for InFlight {
    fn drop(&mut self) {
        if let Ok(mut state) = self.state.lock() {
            state.in_flight -= 1;
        }
        self.changed.notify_all();
    }
}

/// Count this call against the hold; if it is the one to park, record it and return what wakes it.
fn park(state: &mut State, label: &str, body: &str) -> Option<futures::channel::oneshot::Receiver<()>> {
    let hold = &mut state.hold;
    let rule = hold.rule.as_ref()?;
    if hold.parked.is_some() || rule.label.as_deref().is_some_and(|l| l != label) || !body.contains(&rule.body_contains)
    {
        return None;
    }
    hold.seen += 1;
    if hold.seen != rule.nth {
        return None;
    }
    let (wake, woken) = futures::channel::oneshot::channel();
    hold.parked = Some(label.to_owned());
    hold.wake = Some(wake);
    Some(woken)
}

/// Let the parked call (if any) go on.
fn release_parked(state: &mut State) {
    if let Some(wake) = state.hold.wake.take() {
        let _ = wake.send(());
    }
}

fn kill(state: &mut State) {
    if let Some(child) = &state.child {
        let _ = child.lock().expect("child").kill();
        state.killed = true;
    }
}

/// xorshift64*: deterministic, so a failing run can be replayed.
fn next_random(seed: &mut u64) -> f64 {
    *seed ^= *seed >> 12;
    *seed ^= *seed << 25;
    *seed ^= *seed >> 27;
    (seed.wrapping_mul(0x2545_F491_4F6C_DD1D) >> 11) as f64 / (1u64 << 53) as f64
}

/// The signing name from `Authorization: AWS4-HMAC-SHA256 Credential=KEY/DATE/REGION/SERVICE/aws4_request`.
fn service_of(headers: &HeaderMap) -> String {
    headers
        .get("authorization")
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.split("Credential=").nth(1))
        .and_then(|c| c.split('/').nth(3))
        .unwrap_or("unknown")
        .to_owned()
}

/// The operation: `Action=` of query protocols, `X-Amz-Target` of JSON ones, the path of REST ones.
fn action_of(headers: &HeaderMap, path: &str, body: &str) -> String {
    if let Some(target) = headers.get("x-amz-target").and_then(|v| v.to_str().ok()) {
        return target.rsplit('.').next().unwrap_or(target).to_owned();
    }
    if let Some(action) = body.split('&').find_map(|kv| kv.strip_prefix("Action=")) {
        return action.to_owned();
    }
    path.to_owned()
}

/// Close the call's connection without a byte of answer. A handler has no hold of its connection:
/// unwinding out of it ends the task that serves the connection (axum spawns one per connection),
/// which drops the socket unanswered. `resume_unwind` skips the panic hook, so nothing is printed,
/// and the proxy's other connections go on.
fn close_unanswered() -> ! {
    std::panic::resume_unwind(Box::new("connection closed by the test proxy"))
}

/// DynamoDB's answer to a transaction throttled on a partition: cancelled, one reason per write.
fn transaction_throttled(body: &str) -> Response<Body> {
    let writes = serde_json::from_str::<serde_json::Value>(body)
        .ok()
        .and_then(|b| b["TransactItems"].as_array().map(Vec::len))
        .unwrap_or(1);
    let reason = serde_json::json!({"Code": "ThrottlingError", "Message": "Throughput exceeds the current capacity"});
    let answer = serde_json::json!({
        "__type": "com.amazonaws.dynamodb.v20120810#TransactionCanceledException",
        "message": "Transaction cancelled, please refer cancellation reasons for specific reasons [ThrottlingError]",
        "CancellationReasons": vec![reason; writes],
    });
    Response::builder()
        .status(400)
        .header("content-type", "application/x-amz-json-1.0")
        .header("x-amzn-errortype", "TransactionCanceledException")
        .body(Body::from(answer.to_string()))
        .expect("response")
}

/// nginx's page for an upstream that failed, as a corporate proxy or a load balancer in front of
/// an endpoint answers.
pub const BAD_GATEWAY_PAGE: &str = "<html>\r\n<head><title>502 Bad Gateway</title></head>\r\n<body>\r\n\
    <center><h1>502 Bad Gateway</h1></center>\r\n<hr><center>nginx</center>\r\n</body>\r\n</html>\r\n";

/// An error in the wire format of the service's protocol, so the SDK parses it as AWS would send it.
fn error_response(service: &str, fault: Fault) -> Response<Body> {
    let (status, code) = match (fault, service) {
        (Fault::Close, _) => close_unanswered(),
        (Fault::Drop, _) => {
            // Closing without an answer: an empty 502 is what a dropped upstream looks like to a client.
            return Response::builder()
                .status(StatusCode::BAD_GATEWAY)
                .header("connection", "close")
                .body(Body::empty())
                .expect("response");
        }
        (Fault::BadGatewayPage, _) => {
            return Response::builder()
                .status(StatusCode::BAD_GATEWAY)
                .header("content-type", "text/html")
                .body(Body::from(BAD_GATEWAY_PAGE))
                .expect("response");
        }
        (Fault::Throttle, "ec2") => (503, "RequestLimitExceeded"),
        (Fault::Throttle, "autoscaling" | "sts" | "rds" | "elasticloadbalancing") => (400, "Throttling"),
        (Fault::Throttle, "lambda") => (429, "TooManyRequestsException"),
        (Fault::Throttle, "elasticache") => (400, "Throttling"),
        (Fault::Throttle, _) => (400, "ThrottlingException"),
        // Answered with its reasons by `transaction_throttled`; anywhere else, the bare error.
        (Fault::TransactionThrottled, _) => (400, "TransactionCanceledException"),
        (Fault::ServerError, _) => (500, "InternalFailure"),
        (Fault::Unavailable, _) => (503, "ServiceUnavailable"),
        (Fault::AccessDenied, "ec2") => (403, "UnauthorizedOperation"),
        (Fault::AccessDenied, "dynamodb" | "ecs") => (400, "AccessDeniedException"),
        (Fault::AccessDenied, _) => (403, "AccessDenied"),
        (Fault::Refuse { code, .. }, _) => (400, code),
    };
    let message = match fault {
        Fault::Refuse { message, .. } => message,
        _ => "injected by the azevac test proxy",
    };
    service_error(service, status, code, message)
}

/// `service`'s error `code` with `message`, in its wire format (XML, JSON or CBOR), as AWS answers it.
pub(super) fn service_error(service: &str, status: u16, code: &str, message: &str) -> Response<Body> {
    // As the wire format writes text: the message may hold <, & or a quote.
    let json_message = serde_json::to_string(message).expect("a string");
    let xml_message = message.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;");
    let message = xml_message.as_str();
    if service == "monitoring" {
        let error = serde_json::json!({"__type": code, "message": message}).to_string();
        return Response::builder()
            .status(status)
            .header("content-type", "application/cbor")
            .header("smithy-protocol", "rpc-v2-cbor")
            .body(Body::from(super::cbor::to_cbor(error.as_bytes())))
            .expect("response");
    }
    let (content_type, body) = match service {
        "ec2" => (
            "text/xml",
            format!("<Response><Errors><Error><Code>{code}</Code><Message>{message}</Message></Error></Errors><RequestID>proxy</RequestID></Response>"),
        ),
        // The query-protocol services answer errors in XML, as AWS does.
        "autoscaling" | "sts" | "rds" | "elasticloadbalancing" => (
            "text/xml",
            format!("<ErrorResponse><Error><Type>Sender</Type><Code>{code}</Code><Message>{message}</Message></Error><RequestId>proxy</RequestId></ErrorResponse>"),
        ),
        "elasticache" => ("text/xml", super::query::error_xml(code, message)),
        _ => ("application/x-amz-json-1.0", format!(r#"{{"__type":"{code}","message":{json_message}}}"#)),
    };
    Response::builder()
        .status(status)
        .header("content-type", content_type)
        .header("x-amzn-errortype", code)
        .body(Body::from(body))
        .expect("response")
}

/// The forwarded answer, or a dropped connection when the process is to be killed right after.
fn finish(state: &Arc<Mutex<State>>, service: &str, kill_after: bool, response: Response<Body>) -> Response<Body> {
    if kill_after {
        kill(&mut state.lock().expect("state"));
        return error_response(service, Fault::Drop);
    }
    response
}
