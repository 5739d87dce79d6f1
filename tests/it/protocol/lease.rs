//! The lease heartbeat against a real (emulated) table, through the proxy: a renewal that crosses
//! the release of the lock it renews is the run being done with the lock, not another run taking it.
//! And who may take a lock over before its lease runs out: only a run whose holder is proven gone.

use std::collections::{BTreeMap, HashMap};
use std::io::Write;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use aws_config::{BehaviorVersion, Region};
use aws_sdk_dynamodb::types::AttributeValue;
use azevac::journal::{Ahead, Audit, Held, Journal, Lease};
use azevac::model::{Record, Resource};
use azevac::process::interrupt::Interrupt;

use crate::common;
use crate::common::proxy::{Hold, Proxy};
use crate::common::{Moto, REGION, TABLE, ZONE};

/// What the run logs, at debug level, for the assertions.
#[derive(Clone, Default)]
struct Captured(Arc<Mutex<Vec<u8>>>);

impl Captured {
    fn text(&self) -> String {
        String::from_utf8_lossy(&self.0.lock().expect("log")).into_owned()
    }
}

impl Write for Captured {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().expect("log").extend_from_slice(buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// The renewal is parked at the proxy with the lock still held; the run then releases the lock
/// (done mark and unlock, through the same proxy); then the renewal goes on, and DynamoDB refuses it
/// (the lock is gone). Before, that refusal was reported as "lost the lock to another run", on a
/// run that lost nothing (seen on 26 lines of a 1,000-resource recover). The heartbeat task runs on
/// this test's single thread, so the captured log is the run's.
#[tokio::test(flavor = "current_thread")]
async fn a_renewal_that_crosses_the_release_is_not_a_lost_lock() {
    let moto = Moto::start();
    let proxy = Proxy::start(&moto.endpoint);
    let sdk = aws_config::defaults(BehaviorVersion::latest())
        .region(Region::new(REGION))
        .endpoint_url(&proxy.endpoint)
        .credentials_provider(aws_sdk_ec2::config::Credentials::new(
            "testing", "testing", None, None, "tests",
        ))
        .load()
        .await;
    let journal = Journal::new(&sdk, TABLE);
    journal.create().await.expect("the journal table");
    let log = Captured::default();
    let writer = log.clone();
    let subscriber = tracing_subscriber::fmt()
        .with_max_level(tracing::Level::DEBUG)
        .with_ansi(false)
        .with_writer(move || writer.clone())
        .finish();
    let _logging = tracing::subscriber::set_default(subscriber);

    let audit = Audit {
        run_id: "run-a".into(),
        caller: "arn:aws:iam::123456789012:user/a".into(),
        reason: None,
        account_id: None,
    };
    let lease = Lease::new(&audit, Duration::from_secs(2), Duration::from_secs(2));
    let resource = Resource {
        resource_type: "asg",
        id: "arn:aws:autoscaling:us-east-1:123456789012:autoScalingGroup:1:autoScalingGroupName/web".into(),
        name: "web".into(),
        subnets: vec!["subnet-a".into(), "subnet-b".into()],
        tags: BTreeMap::new(),
        unsupported: None,
        notes: vec![],
        detail: serde_json::Value::Null,
        identity: None,
    };
    let removed = vec!["subnet-b".to_owned()];
    let held = journal
        .acquire(
            &[evacuation(&resource, &removed, None)],
            &lease,
            &audit,
            &Interrupt::default(),
        )
        .await
        .pop()
        .expect("one line")
        .expect("the lock, first try");
    proxy.hold(Hold {
        label: None,
        body_contains: "SET #lease = :until".into(),
        nth: 1,
    });
    let _heartbeat = journal.heartbeat(lease.clone());
    let deadline = Instant::now() + Duration::from_secs(20);
    // Polled, not waited for: a blocking wait would stop this thread's runtime, the heartbeat too.
    while proxy.wait_held(None, Duration::ZERO).is_none() {
        assert!(Instant::now() < deadline, "the heartbeat never renewed the lock");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let Held::Evacuation(held) = held else {
        panic!("an evacuation's hold");
    };
    let released = journal
        .release(vec![held.evacuated(removed.clone(), vec![], false)], &lease)
        .await;
    assert!(released[0].is_ok(), "the release: {:?}", released[0]);
    assert!(!lease.is_live(&resource.id), "released: no longer held");
    proxy.release();
    while !log.text().contains("renewal crossed the release") {
        let text = log.text();
        assert!(
            !text.contains("lost the lock"),
            "a lock this run released is reported lost:\n{text}"
        );
        assert!(Instant::now() < deadline, "the renewal never came back:\n{text}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert!(
        !lease.is_live(&resource.id),
        "a late renewal does not put the lock back"
    );
    let records = common::journal_items(&common::sdk(&moto).await).await;
    assert_eq!(records.len(), 1, "the done record: {records:?}");
    assert_eq!(common::attr_s(&records[0], "state"), "done");
    assert!(
        common::lock_items(&common::sdk(&moto).await).await.is_empty(),
        "the lock is released"
    );
}

/// Take `removed` from `resource` in the zone, on top of its `existing` record.
fn evacuation<'a>(resource: &'a Resource, removed: &'a [String], existing: Option<&'a Record>) -> Ahead<'a> {
    Ahead::Evacuate {
        az_id: ZONE,
        resource,
        removed,
        actions: &[],
        existing,
    }
}

/// The lock item of `resource`.
async fn lock_of(sdk: &aws_config::SdkConfig, resource: &str) -> Option<HashMap<String, AttributeValue>> {
    common::lock_items(sdk)
        .await
        .into_iter()
        .find(|l| common::attr_s(l, "resource") == resource)
}

/// When process `pid` of this host started (`/proc/PID/stat` field 22, counted after the command's
/// last `)`), as azevac stores it in its locks.
fn started(pid: u32) -> u64 {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).expect("/proc/PID/stat");
    let (_, after) = stat.rsplit_once(')').expect("stat line");
    after
        .split_whitespace()
        .nth(19)
        .expect("field 22")
        .parse()
        .expect("a number")
}

/// Issue 31, case 9: a missing `/proc/<pid>` was taken as proof that a lock's holder had died, and
/// a present one as proof that it lived, even when the PID had been given to another process since.
/// Now `kill(pid, 0)` and the holder's start time decide: a lock naming a live process of this host
/// that started at another time (its PID reused) is taken over at once; one naming the process as it
/// started, or written before start times were kept, waits for its lease.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn issue_31_a_reused_pid_is_taken_over_and_a_live_holder_is_not() {
    let moto = Moto::start();
    let sdk = common::sdk(&moto).await;
    let journal = Journal::new(&sdk, TABLE);
    journal.create().await.expect("the journal table");
    let dynamodb = aws_sdk_dynamodb::Client::new(&sdk);
    let mut holder = std::process::Command::new("sleep").arg("300").spawn().expect("sleep");
    let (pid, since) = (holder.id(), started(holder.id()));

    let run = |name: &str| Audit {
        run_id: name.into(),
        caller: format!("arn:aws:iam::123456789012:user/{name}"),
        reason: None,
        account_id: None,
    };
    let group = |name: &str| Resource {
        resource_type: "asg",
        id: format!("arn:aws:autoscaling:us-east-1:123456789012:autoScalingGroup:1:autoScalingGroupName/{name}"),
        name: name.into(),
        subnets: vec!["subnet-a".into(), "subnet-b".into()],
        ..Resource::default()
    };
    let removed = vec!["subnet-b".to_owned()];
    let (a, b) = (run("run-a"), run("run-b"));
    let (lease_a, lease_b) = (
        // A's calls are bounded at 1 s: the reused PID's lock is taken over once that has passed.
        Lease::new(&a, Duration::from_secs(300), Duration::from_secs(1)),
        Lease::new(&b, Duration::from_secs(300), Duration::from_secs(30)),
    );
    // Run A takes the locks of three groups, and its locks are made to name the sleeping process:
    // with another start time, with its own, and with none (a lock of an older azevac).
    let cases = [("reused", Some(since + 1)), ("alive", Some(since)), ("older", None)];
    let mut records = BTreeMap::new();
    for (name, pid_started) in cases {
        let resource = group(name);
        let held = journal
            .acquire(
                &[evacuation(&resource, &removed, None)],
                &lease_a,
                &a,
                &Interrupt::default(),
            )
            .await
            .pop()
            .expect("one line")
            .expect("A's lock");
        records.insert(name, held.record().clone());
        let mut lock = lock_of(&sdk, &resource.id).await.expect("A's lock item");
        assert!(
            lock.contains_key("pid_started"),
            "a lock keeps its holder's start time: {lock:?}"
        );
        lock.insert("pid".into(), AttributeValue::N(pid.to_string()));
        lock.remove("pid_started");
        if let Some(at) = pid_started {
            lock.insert("pid_started".into(), AttributeValue::N(at.to_string()));
        }
        dynamodb
            .put_item()
            .table_name(TABLE)
            .set_item(Some(lock))
            .send()
            .await
            .expect("PutItem");
    }

    for (name, _) in cases {
        let resource = group(name);
        let ahead = evacuation(&resource, &removed, Some(&records[name]));
        let outcome = journal
            .acquire(&[ahead], &lease_b, &b, &Interrupt::default())
            .await
            .pop()
            .expect("one line");
        let holder_now = lock_of(&sdk, &resource.id).await.map(|l| common::attr_s(&l, "run_id"));
        match name {
            "reused" => {
                assert!(outcome.is_ok(), "{name}: taken over at once: {outcome:?}");
                assert_eq!(holder_now.as_deref(), Some("run-b"), "{name}");
            }
            _ => {
                assert!(
                    matches!(&outcome, Err(azevac::Error::Locked { run_id, .. }) if run_id == "run-a"),
                    "{name}: the live holder keeps its lock: {outcome:?}"
                );
                assert_eq!(holder_now.as_deref(), Some("run-a"), "{name}");
            }
        }
    }
    holder.kill().expect("kill sleep");
    holder.wait().expect("reap sleep");
}
