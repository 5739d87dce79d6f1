//! Shared by the integration tests: a moto server per test, SDK clients pointed at it, the real
//! `azevac` binary run against it, and readers of the live estate and the journal table.

pub mod cbor;
pub mod elasticache;
pub mod estate;
pub mod events;
pub mod kill_points;
pub mod kube;
pub mod moto;
pub mod proxy;
pub mod query;
pub mod rds;
pub mod strict;
pub mod tasks;
pub mod volumes;
pub mod zonal;

use std::collections::{BTreeMap, HashMap};
use std::process::{Command, Stdio};

use aws_config::{BehaviorVersion, Region, SdkConfig};
use aws_sdk_dynamodb::types::AttributeValue;

pub use moto::Moto;

/// The region every test runs in (moto's AZ ID mapping is fixed there).
pub const REGION: &str = "us-east-1";
/// The zone the tests evacuate: use1-az2, which moto names us-east-1c.
pub const ZONE: &str = "use1-az2";
/// The journal table the binary uses by default.
pub const TABLE: &str = "azevac-journal";

/// An SDK configuration for the test's own moto server.
pub async fn sdk(moto: &Moto) -> SdkConfig {
    sdk_at(&moto.endpoint).await
}

/// An SDK configuration for `endpoint` (moto, or the proxy in front of it).
pub async fn sdk_at(endpoint: &str) -> SdkConfig {
    aws_config::defaults(BehaviorVersion::latest())
        .region(Region::new(REGION))
        .endpoint_url(endpoint)
        .credentials_provider(aws_sdk_ec2::config::Credentials::new(
            "testing", "testing", None, None, "tests",
        ))
        .load()
        .await
}

/// The SDK configuration of `account` in moto, reached the way azevac reaches it: AssumeRole into
/// its azevac role (moto serves every account on one server, in the account the role's ARN names).
pub async fn in_account(operator: &SdkConfig, account: &str) -> SdkConfig {
    in_account_as(operator, account, "azevac", "seed").await
}

/// The SDK configuration of a session named `session` of `role` in `account`.
pub async fn in_account_as(operator: &SdkConfig, account: &str, role: &str, session: &str) -> SdkConfig {
    use aws_sdk_sts::config::{Credentials, SharedCredentialsProvider};
    let out = aws_sdk_sts::Client::new(operator)
        .assume_role()
        .role_arn(format!("arn:aws:iam::{account}:role/{role}"))
        .role_session_name(session)
        .send()
        .await
        .expect("AssumeRole");
    let c = out.credentials().expect("credentials");
    let credentials = Credentials::new(
        c.access_key_id(),
        c.secret_access_key(),
        Some(c.session_token().to_owned()),
        None,
        "seed",
    );
    operator
        .to_builder()
        .credentials_provider(SharedCredentialsProvider::new(credentials))
        .build()
}

/// What a run of the binary did.
#[derive(Debug)]
pub struct Run {
    /// The exit code.
    pub code: i32,
    /// Everything printed on stdout.
    pub stdout: String,
    /// Everything printed on stderr.
    pub stderr: String,
}

impl Run {
    /// stdout parsed as the one JSON document `--output json` promises.
    pub fn json(&self) -> serde_json::Value {
        serde_json::from_str(&self.stdout).unwrap_or_else(|e| {
            panic!(
                "stdout is not one JSON document ({e}):\n{}\nstderr:\n{}",
                self.stdout, self.stderr
            )
        })
    }

    /// Panic with both streams unless the exit code is `code`.
    pub fn expect_code(self, code: i32) -> Self {
        assert_eq!(
            self.code, code,
            "exit code\nstdout:\n{}\nstderr:\n{}",
            self.stdout, self.stderr
        );
        self
    }
}

/// Run the real `azevac` binary against this moto server, with no terminal on stdin.
pub fn azevac(moto: &Moto, args: &[&str]) -> Run {
    azevac_at(&moto.endpoint, args, &[])
}

/// The `azevac` command, pointed at `endpoint` (moto, or a proxy in front of it), with `env` on top
/// (a value of `None` removes the variable).
pub fn command(endpoint: &str, args: &[&str], env: &[(&str, Option<&str>)]) -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_azevac"));
    cmd.args(args)
        .env("AWS_ENDPOINT_URL", endpoint)
        .env("AWS_ACCESS_KEY_ID", "testing")
        .env("AWS_SECRET_ACCESS_KEY", "testing")
        .env("AWS_REGION", REGION)
        .env_remove("AWS_PROFILE")
        .env_remove("AZEVAC_TABLE")
        .env_remove("RUST_LOG")
        .env_remove("AWS_MAX_ATTEMPTS")
        .env_remove("AWS_RETRY_MODE")
        // The watcher's health file and systemd's socket are a test's to give (issue 51).
        .env_remove("AZEVAC_HEALTH_FILE")
        .env_remove("NOTIFY_SOCKET")
        .env_remove("WATCHDOG_USEC")
        .env_remove("WATCHDOG_PID")
        // Tables fit COLUMNS when it is set: the tests read them whole, as a pipe gets them.
        .env_remove("COLUMNS")
        // A run that finds a killed run's locks takes them over at once: the tests that kill a run
        // wait until the proxy has answered every call it sent (`Proxy::wait_quiet`), which is what
        // the wait is for. The test of that wait removes this.
        .env(azevac::journal::TAKEOVER_WAIT_ENV, "0")
        .stdin(Stdio::null());
    for (key, value) in env {
        match value {
            Some(value) => cmd.env(key, value),
            None => cmd.env_remove(key),
        };
    }
    cmd
}

/// Run `azevac` against `endpoint` with extra environment, and wait for it.
pub fn azevac_at(endpoint: &str, args: &[&str], env: &[(&str, Option<&str>)]) -> Run {
    let out = command(endpoint, args, env).output().expect("run azevac");
    Run {
        code: out.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

/// Run azevac through the proxy, registered with it so that it can be SIGKILLed at a chosen call;
/// returns the exit code (`None`: killed).
pub fn run_watched(proxy: &proxy::Proxy, args: &[&str]) -> Option<i32> {
    let child = spawn_quiet(&proxy.endpoint, args, &[]);
    proxy.watch(child.clone());
    wait_watched(&child)
}

/// Start azevac against `endpoint` (output dropped), shared with whatever watches it to kill it
/// (the proxy, the fake API server).
pub fn spawn_quiet(
    endpoint: &str,
    args: &[&str],
    env: &[(&str, Option<&str>)],
) -> std::sync::Arc<std::sync::Mutex<std::process::Child>> {
    let child = command(endpoint, args, env)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn azevac");
    std::sync::Arc::new(std::sync::Mutex::new(child))
}

/// Wait for a process started by [`spawn_quiet`]: its exit code (`None`: killed).
pub fn wait_watched(child: &std::sync::Mutex<std::process::Child>) -> Option<i32> {
    loop {
        if let Some(status) = child.lock().expect("child").try_wait().expect("wait") {
            return status.code();
        }
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
}

/// The 1-based number of the first `label` call of a run of `args` through the proxy that is not
/// killed (runs of one estate call alike, so a kill at that number hits that call).
pub fn call_number(proxy: &proxy::Proxy, args: &[&str], label: &str) -> usize {
    proxy.set(proxy::Faults::default());
    assert_eq!(run_watched(proxy, args), Some(0), "the unkilled run");
    proxy
        .calls()
        .iter()
        .position(|c| c == label)
        .unwrap_or_else(|| panic!("no {label} call"))
        + 1
}

/// `--type db` runs of use1-az2 with JSON output: the dry run, and the real one.
pub const DB_DRY_RUN: &[&str] = &[
    "evacuate",
    "--az-id",
    "use1-az2",
    "--type",
    "db",
    "--dry-run",
    "--output",
    "json",
];
pub const DB_EVACUATE: &[&str] = &[
    "evacuate", "--az-id", "use1-az2", "--type", "db", "--yes", "--output", "json",
];

/// The line of the resource named `name` in a JSON plan or report.
pub fn plan_line<'a>(plan: &'a serde_json::Value, name: &str) -> &'a serde_json::Value {
    plan["items"]
        .as_array()
        .expect("items")
        .iter()
        .find(|i| i["name"] == name)
        .unwrap_or_else(|| panic!("no line for {name} in {plan:#}"))
}

/// The whole live estate: groups, services, functions.
pub type Snapshot = (
    BTreeMap<String, Vec<String>>,
    BTreeMap<String, (Vec<String>, Vec<String>, String)>,
    BTreeMap<String, (Vec<String>, Vec<String>)>,
);

/// The estate with every subnet list sorted: for comparisons where only membership matters.
pub fn unordered(snapshot: &Snapshot) -> Snapshot {
    let mut s = snapshot.clone();
    s.0.values_mut().for_each(|v| v.sort());
    s.1.values_mut().for_each(|v| v.0.sort());
    s.2.values_mut().for_each(|v| v.0.sort());
    s
}

/// Read the whole live estate.
pub async fn snapshot(sdk: &SdkConfig) -> Snapshot {
    (
        live_groups(sdk).await,
        live_services(sdk).await,
        live_functions(sdk).await,
    )
}

/// Every Auto Scaling group's subnets, by name, as the service reports them now.
pub async fn live_groups(sdk: &SdkConfig) -> BTreeMap<String, Vec<String>> {
    let groups = aws_sdk_autoscaling::Client::new(sdk)
        .describe_auto_scaling_groups()
        .into_paginator()
        .items()
        .send()
        .try_collect()
        .await
        .expect("DescribeAutoScalingGroups");
    groups
        .into_iter()
        .map(|g| {
            let subnets = g
                .vpc_zone_identifier()
                .unwrap_or_default()
                .split(',')
                .filter(|s| !s.is_empty())
                .map(str::to_owned)
                .collect();
            (g.auto_scaling_group_name().unwrap_or_default().to_owned(), subnets)
        })
        .collect()
}

/// Tag ECS cluster `cluster` `key=value` (the estate's seeder tags services only).
pub async fn tag_cluster(sdk: &SdkConfig, cluster: &str, key: &str, value: &str) {
    aws_sdk_ecs::Client::new(sdk)
        .tag_resource()
        .resource_arn(format!("arn:aws:ecs:{REGION}:123456789012:cluster/{cluster}"))
        .tags(aws_sdk_ecs::types::Tag::builder().key(key).value(value).build())
        .send()
        .await
        .expect("TagResource");
}

/// Every ECS service's awsvpc subnets, security groups and public-IP setting, by `cluster/service`.
pub async fn live_services(sdk: &SdkConfig) -> BTreeMap<String, (Vec<String>, Vec<String>, String)> {
    let ecs = aws_sdk_ecs::Client::new(sdk);
    let clusters = ecs
        .list_clusters()
        .send()
        .await
        .expect("ListClusters")
        .cluster_arns()
        .to_vec();
    let mut live = BTreeMap::new();
    for cluster in clusters {
        let arns = ecs
            .list_services()
            .cluster(&cluster)
            .send()
            .await
            .expect("ListServices")
            .service_arns()
            .to_vec();
        if arns.is_empty() {
            continue;
        }
        let out = ecs
            .describe_services()
            .cluster(&cluster)
            .set_services(Some(arns))
            .send()
            .await
            .expect("Describe");
        // A deleted service is INACTIVE: ECS stops listing it, moto does not.
        for service in out.services().iter().filter(|s| s.status() != Some("INACTIVE")) {
            let awsvpc = service.network_configuration().and_then(|n| n.awsvpc_configuration());
            let name = format!(
                "{}/{}",
                cluster.rsplit('/').next().unwrap_or_default(),
                service.service_name().unwrap_or_default()
            );
            live.insert(
                name,
                (
                    awsvpc.map(|a| a.subnets().to_vec()).unwrap_or_default(),
                    awsvpc.map(|a| a.security_groups().to_vec()).unwrap_or_default(),
                    awsvpc
                        .and_then(|a| a.assign_public_ip())
                        .map(|p| p.as_str().to_owned())
                        .unwrap_or_default(),
                ),
            );
        }
    }
    live
}

/// Every Lambda function's VPC subnets and security groups, by name.
pub async fn live_functions(sdk: &SdkConfig) -> BTreeMap<String, (Vec<String>, Vec<String>)> {
    let functions = aws_sdk_lambda::Client::new(sdk)
        .list_functions()
        .into_paginator()
        .items()
        .send()
        .try_collect()
        .await
        .expect("ListFunctions");
    functions
        .into_iter()
        .map(|f| {
            let vpc = f.vpc_config();
            (
                f.function_name().unwrap_or_default().to_owned(),
                (
                    vpc.map(|v| v.subnet_ids().to_vec()).unwrap_or_default(),
                    vpc.map(|v| v.security_group_ids().to_vec()).unwrap_or_default(),
                ),
            )
        })
        .collect()
}

/// The same groups with their subnets sorted, for comparisons that do not care about order.
pub fn sorted(groups: &BTreeMap<String, Vec<String>>) -> BTreeMap<String, Vec<String>> {
    groups
        .iter()
        .map(|(name, subnets)| {
            let mut subnets = subnets.clone();
            subnets.sort();
            (name.clone(), subnets)
        })
        .collect()
}

/// The journal records (lock items left out; empty when the table does not exist).
pub async fn journal_items(sdk: &SdkConfig) -> Vec<HashMap<String, AttributeValue>> {
    table_items(sdk)
        .await
        .into_iter()
        .filter(|item| attr_s(item, "az_id") != azevac::journal::LOCK_PARTITION)
        .filter(|item| attr_s(item, "az_id") != azevac::journal::WATCHER_PARTITION)
        .collect()
}

/// The per-resource lock items in the journal table.
pub async fn lock_items(sdk: &SdkConfig) -> Vec<HashMap<String, AttributeValue>> {
    table_items(sdk)
        .await
        .into_iter()
        .filter(|item| attr_s(item, "az_id") == azevac::journal::LOCK_PARTITION)
        .collect()
}

/// Every item of the journal table, records and locks (empty when the table does not exist).
pub async fn table_items(sdk: &SdkConfig) -> Vec<HashMap<String, AttributeValue>> {
    let scanned = aws_sdk_dynamodb::Client::new(sdk)
        .scan()
        .table_name(TABLE)
        .into_paginator()
        .items()
        .send()
        .try_collect()
        .await;
    match scanned {
        Ok(items) => items,
        Err(e) if aws_sdk_dynamodb::error::ProvideErrorMetadata::code(&e) == Some("ResourceNotFoundException") => {
            Vec::new()
        }
        Err(e) => panic!("Scan: {e:?}"),
    }
}

/// Whether the journal table exists.
pub async fn table_exists(sdk: &SdkConfig) -> bool {
    aws_sdk_dynamodb::Client::new(sdk)
        .describe_table()
        .table_name(TABLE)
        .send()
        .await
        .is_ok()
}

/// A string attribute of a journal item.
pub fn attr_s(item: &HashMap<String, AttributeValue>, name: &str) -> String {
    item.get(name).and_then(|v| v.as_s().ok()).cloned().unwrap_or_default()
}

/// A list-of-strings attribute of a journal item.
pub fn attr_list(item: &HashMap<String, AttributeValue>, name: &str) -> Vec<String> {
    item.get(name)
        .and_then(|v| v.as_l().ok())
        .map(|l| l.iter().filter_map(|v| v.as_s().ok().cloned()).collect())
        .unwrap_or_default()
}

/// Run `run(part)` for every part at once, each on a thread of its own with its own Tokio runtime,
/// and return the results in order; a part's panic is the caller's. For the long sweeps: their
/// parts share nothing (each starts its own moto server), and one part at a time leaves a core
/// idle while the other process of each step (azevac, or moto) works.
pub fn on_threads<P, T, Fut>(parts: Vec<P>, run: impl Fn(P) -> Fut + Sync) -> Vec<T>
where
    P: Send,
    T: Send,
    Fut: std::future::Future<Output = T>,
{
    std::thread::scope(|scope| {
        let run = &run;
        let handles: Vec<_> = parts
            .into_iter()
            .map(|part| {
                scope.spawn(move || {
                    tokio::runtime::Builder::new_multi_thread()
                        .worker_threads(2)
                        .enable_all()
                        .build()
                        .expect("a Tokio runtime")
                        .block_on(run(part))
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().unwrap_or_else(|panic| std::panic::resume_unwind(panic)))
            .collect()
    })
}

/// Write a journal record exactly as azevac wrote it before journal format 2 (issue 32): the
/// attributes of `src/journal/record.rs`'s `to_item` without `format`, the actions as that
/// version's strings, in state `done`, named `name`. `identity`: the object's uid and, for a node,
/// its instance.
pub async fn put_format_1_record(
    sdk: &SdkConfig,
    resource: &str,
    resource_type: &str,
    name: &str,
    actions: &[&str],
    identity: Option<(&str, Option<&str>)>,
) {
    let list = |values: &[&str]| AttributeValue::L(values.iter().map(|v| AttributeValue::S((*v).to_owned())).collect());
    let s = |value: &str| AttributeValue::S(value.to_owned());
    let mut put = aws_sdk_dynamodb::Client::new(sdk)
        .put_item()
        .table_name(TABLE)
        .item("az_id", s(ZONE))
        .item("resource", s(resource))
        .item("resource_type", s(resource_type))
        .item("removed_subnets", list(&[]))
        .item("state", s("done"))
        .item("version", AttributeValue::N("2".into()))
        .item("original_subnets", list(&[]))
        .item("actions", list(actions))
        .item("resource_name", s(name))
        .item("run_id", s("run-20261101-0900"))
        .item("evacuated_by", s("arn:aws:iam::123456789012:user/operator"))
        .item("azevac_version", s("0.31.0"))
        .item("created_at", s("2026-11-01T09:00:00Z"))
        .item("updated_at", s("2026-11-01T09:00:01Z"));
    if let Some((uid, instance)) = identity {
        let mut map = HashMap::from([("uid".to_owned(), s(uid))]);
        if let Some(instance) = instance {
            map.insert("instance_id".to_owned(), s(instance));
        }
        put = put.item("identity", AttributeValue::M(map));
    }
    put.send().await.expect("PutItem of a format 1 record");
}
