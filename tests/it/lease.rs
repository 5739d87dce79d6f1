//! The lease heartbeat against a real (emulated) table, through the proxy: a renewal that crosses
//! the release of the lock it renews is the run being done with the lock, not another run taking it.

use std::collections::BTreeMap;
use std::io::Write;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use aws_config::{BehaviorVersion, Region};
use azevac::journal::{Ahead, Audit, Held, Journal, Lease};
use azevac::model::Resource;

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
    };
    let removed = vec!["subnet-b".to_owned()];
    let ahead = Ahead::Evacuate {
        az_id: ZONE,
        resource: &resource,
        removed: &removed,
        actions: &[],
        existing: None,
    };
    let held = journal
        .acquire(&[ahead], &lease, &audit)
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
