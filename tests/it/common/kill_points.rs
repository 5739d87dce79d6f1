//! Where the kill-point sweeps kill azevac (the conformance suite's and the mixed-kind sweeps of
//! tests/it/protocol/reliability.rs): at every journal write and every change a run makes, named by label
//! and count so that calls made side by side are found whatever order they arrive in, and at a
//! sample of its reads, each of which only ends the run earlier.

use super::kube::FakeKube;
use super::proxy::{Faults, KillOn, KillWhen, Proxy};

/// Where a sweep kills azevac.
#[derive(Debug, Clone)]
pub enum Target {
    /// At the proxy: the call named (a journal write, or a change through AWS or ARC).
    Aws(KillOn),
    /// At the fake API server: the request named (a change).
    Kube(KillOn),
    /// At the proxy, before the call with this number (a sampled read).
    AwsCall(usize),
    /// At the fake API server, before the request with this number (a sampled read).
    KubeCall(usize),
}

impl Target {
    /// A kill at a journal write that only a run without the journal table makes (its creation).
    pub fn needs_no_table(&self) -> bool {
        matches!(self, Target::Aws(on) if journal_write(&on.label) && !item_write(&on.label))
    }
}

/// A DynamoDB call that writes the journal (its items, or the table itself).
pub fn journal_write(label: &str) -> bool {
    label.strip_prefix("dynamodb:").is_some_and(|action| {
        !["Describe", "Get", "Query", "Scan", "BatchGet", "TransactGet", "List"]
            .iter()
            .any(|read| action.starts_with(read))
    })
}

/// A DynamoDB call that writes journal items (records and locks).
pub fn item_write(label: &str) -> bool {
    [
        "TransactWriteItems",
        "PutItem",
        "UpdateItem",
        "DeleteItem",
        "BatchWriteItem",
    ]
    .iter()
    .any(|write| label == format!("dynamodb:{write}"))
}

/// An AWS or ARC call that changes the live state: not a read by its name, and for the REST
/// services (Lambda) one with a body.
pub fn changes(label: &str, body: &str) -> bool {
    let Some((service, action)) = label.split_once(':') else {
        return false;
    };
    if service == "dynamodb" || service == "sts" {
        return false;
    }
    if action.starts_with('/') {
        // A REST path that is the operation's name (Batch: /v1/describecomputeenvironments) says
        // whether it reads; other REST reads (Lambda) send no body.
        let last = action.rsplit('/').next().unwrap_or_default();
        if ["describe", "list", "get"].iter().any(|read| last.starts_with(read)) {
            return false;
        }
        return !body.is_empty();
    }
    !["Describe", "List", "Get"].iter().any(|read| action.starts_with(read))
}

/// How many batches a run journalled: its transactions that write records in state `intent`.
pub fn intent_batches(aws: &[(String, String)]) -> usize {
    aws.iter()
        .filter(|(label, body)| label == "dynamodb:TransactWriteItems" && body.contains(r#"{"S":"intent"}"#))
        .count()
}

/// The call at `at` of `log` as a named kill point: its label and which call of that label it
/// is; the odd ones of a label are killed before they land, the even ones after (the change made,
/// its answer never heard).
pub fn named(log: &[String], at: usize) -> KillOn {
    let label = log[at].clone();
    let nth = log[..=at].iter().filter(|c| c.starts_with(&label)).count();
    let when = if nth % 2 == 1 {
        KillWhen::BeforeForward
    } else {
        KillWhen::AfterForward
    };
    KillOn { label, nth, when }
}

/// Every journal write and every change of a run, as named kill points, in the order they came.
pub fn named_points(aws: &[(String, String)], kube: &[String]) -> Vec<Target> {
    let labels: Vec<String> = aws.iter().map(|(l, _)| l.clone()).collect();
    let aws_points = aws
        .iter()
        .enumerate()
        .filter(|(_, (label, body))| journal_write(label) || changes(label, body))
        .map(|(at, _)| Target::Aws(named(&labels, at)));
    let kube_points = kube
        .iter()
        .enumerate()
        .filter(|(_, request)| !request.starts_with("GET "))
        .map(|(at, _)| Target::Kube(named(kube, at)));
    aws_points.chain(kube_points).collect()
}

/// Reads sampled for the sweep: the first call and every [`READ_SAMPLE`]th after it, where that
/// is a read.
pub const READ_SAMPLE: usize = 10;

/// The sampled reads of a call log (`true`: a named kill point already) as call numbers.
pub fn sampled_reads(named: &[bool]) -> Vec<usize> {
    (1..=named.len())
        .filter(|n| n % READ_SAMPLE == 1 && !named[n - 1])
        .collect()
}

/// Kill the next run at `target` (the proxy and the fake API server otherwise disarmed by the
/// caller); a named target is killed `when` it says. A Kubernetes target needs the fake API server.
pub fn arm(target: &Target, proxy: &Proxy, kube: Option<&FakeKube>) {
    let kube = || kube.expect("a Kubernetes kill point needs the fake API server");
    match target {
        Target::Aws(on) => proxy.set(Faults {
            kill_on: Some(on.clone()),
            ..Faults::default()
        }),
        Target::Kube(on) => kube().set_kill_on(Some(on.clone())),
        Target::AwsCall(n) => proxy.set(Faults {
            kill_at: Some((*n, KillWhen::BeforeForward)),
            ..Faults::default()
        }),
        Target::KubeCall(n) => kube().set_kill_at(Some((*n, KillWhen::BeforeForward))),
    }
}

/// Every kill point of a run that made `aws` calls (label, body) and `kube` requests: each journal
/// write and change by name, then the sampled reads of each by number.
pub fn every_point(aws: &[(String, String)], kube: &[String]) -> Vec<Target> {
    let mut targets = named_points(aws, kube);
    let named_aws: Vec<bool> = aws.iter().map(|(l, b)| journal_write(l) || changes(l, b)).collect();
    targets.extend(sampled_reads(&named_aws).into_iter().map(Target::AwsCall));
    let named_kube: Vec<bool> = kube.iter().map(|r| !r.starts_with("GET ")).collect();
    targets.extend(sampled_reads(&named_kube).into_iter().map(Target::KubeCall));
    targets
}
