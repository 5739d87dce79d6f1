//! `azevac watch` (issue 33, part 2): the real binary reads ARC's events from a moto SQS queue,
//! follows the autoshift state the project's ARC fake reports (moto has no zonal shift), evacuates
//! the zone, and recovers it in waves once the autoshift ends; one watcher acts per region, chosen
//! by a lease in the journal table.

use crate::common;

use std::collections::{BTreeMap, BTreeSet};
use std::sync::mpsc::Receiver;
use std::time::Duration;

use aws_sdk_cloudwatch::types::StateValue;
use common::estate::{self, Spec};
use common::proxy::{FailRule, Fault, Faults, Hold, Proxy};
use common::{azevac_at, journal_items, live_groups, table_items, ZONE};

use crate::app::waves::{alarm, spawn, until};

/// Three Auto Scaling groups in use1-az1 and use1-az2.
fn estate() -> Spec {
    estate::groups_in_two_zones("10.34.0.0/16", &["web-1", "web-2", "web-3"])
}

/// ARC's event, as EventBridge delivers it to the queue.
fn event(id: &str, detail_type: &str, away_from: &str) -> String {
    serde_json::json!({
        "version": "0", "id": id, "detail-type": detail_type, "source": "aws.arc-zonal-shift",
        "account": "123456789012", "time": "2026-12-05T10:00:00Z", "region": "us-east-1", "resources": [],
        "detail": {"version": "0.0.1", "data": "", "metadata": {"awayFrom": away_from, "notes": "AWS has started an autoshift"}},
    })
    .to_string()
}

/// A queue in moto; its URL.
pub(crate) async fn queue(sdk: &aws_config::SdkConfig) -> String {
    aws_sdk_sqs::Client::new(sdk)
        .create_queue()
        .queue_name("azevac-autoshift")
        .send()
        .await
        .expect("create queue")
        .queue_url()
        .expect("url")
        .to_owned()
}

async fn send(sdk: &aws_config::SdkConfig, url: &str, body: &str) {
    aws_sdk_sqs::Client::new(sdk)
        .send_message()
        .queue_url(url)
        .message_body(body)
        .send()
        .await
        .expect("send message");
}

/// Messages in the queue, visible or in flight.
async fn left_in(sdk: &aws_config::SdkConfig, url: &str) -> usize {
    use aws_sdk_sqs::types::QueueAttributeName as A;
    let out = aws_sdk_sqs::Client::new(sdk)
        .get_queue_attributes()
        .queue_url(url)
        .attribute_names(A::ApproximateNumberOfMessages)
        .attribute_names(A::ApproximateNumberOfMessagesNotVisible)
        .send()
        .await
        .expect("queue attributes");
    let attributes = out.attributes().cloned().unwrap_or_default();
    [A::ApproximateNumberOfMessages, A::ApproximateNumberOfMessagesNotVisible]
        .iter()
        .map(|a| {
            attributes
                .get(a)
                .and_then(|n| n.parse::<usize>().ok())
                .unwrap_or_default()
        })
        .sum()
}

/// The watcher's lease item, if any.
async fn lease(sdk: &aws_config::SdkConfig) -> Option<BTreeMap<String, String>> {
    table_items(sdk)
        .await
        .into_iter()
        .find(|item| common::attr_s(item, "az_id") == azevac::journal::WATCHER_PARTITION)
        .map(|item| {
            item.iter()
                .map(|(k, v)| {
                    let text = v.as_s().or_else(|_| v.as_n()).cloned().unwrap_or_default();
                    (k.clone(), text)
                })
                .collect()
        })
}

/// Wait until `check` holds (polling the emulator), or fail saying `what`.
pub(crate) async fn eventually<F, Fut>(what: &str, mut check: F)
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = bool>,
{
    for _ in 0..240 {
        if check().await {
            return;
        }
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
    panic!("timed out waiting until {what}");
}

pub(crate) fn terminate(child: &std::process::Child) {
    let sent = std::process::Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status()
        .expect("kill");
    assert!(sent.success());
}

/// The estate seeded in moto behind the proxy, the journal created, the queue: what a watcher
/// test starts from (with the groups as they were).
pub(crate) async fn watched_estate() -> (
    common::Moto,
    Proxy,
    aws_config::SdkConfig,
    BTreeMap<String, Vec<String>>,
    String,
) {
    let moto = common::Moto::start();
    let proxy = Proxy::start(&moto.endpoint);
    let sdk = common::sdk_at(&proxy.endpoint).await;
    estate::seed(&sdk, &estate()).await;
    let before = live_groups(&sdk).await;
    azevac_at(&proxy.endpoint, &["init"], &[]).expect_code(0);
    let url = queue(&sdk).await;
    (moto, proxy, sdk, before, url)
}

/// `watch` of this queue for the groups, with a lease long enough that no slow call of the
/// emulator costs the lease in a test that is not about it.
fn watch_args<'a>(url: &'a str, extra: &[&'a str]) -> Vec<&'a str> {
    watch_args_leased(url, "10s", extra)
}

/// [`watch_args`] with this lease: a short one where a test waits for it to run out.
pub(crate) fn watch_args_leased<'a>(url: &'a str, lease: &'a str, extra: &[&'a str]) -> Vec<&'a str> {
    let mut args = vec![
        "watch",
        "--queue",
        url,
        "--type",
        "asg",
        "--poll-wait",
        "1s",
        "--lease",
        lease,
    ];
    args.extend_from_slice(extra);
    args
}

/// Wait until the watcher has taken its first look at ARC and gone on to its queue: an autoshift
/// set after this is found through its event.
pub(crate) async fn first_look_done(proxy: &Proxy) {
    eventually("the watcher's first look at ARC is over", || async {
        let calls = proxy.calls();
        calls
            .iter()
            .position(|c| c.ends_with(":ListAutoshifts"))
            .is_some_and(|at| calls[at..].iter().any(|c| c == "sqs:ReceiveMessage"))
    })
    .await;
}

/// A watcher with `args`, once it holds the lease and has had its first look at ARC.
async fn watching(proxy: &Proxy, args: &[&str]) -> (std::process::Child, Receiver<String>) {
    let (watcher, lines) = spawn(&proxy.endpoint, args);
    said(&lines, "holds the lease");
    first_look_done(proxy).await;
    (watcher, lines)
}

/// AWS autoshifts traffic away from the zone, and says so with event `id`.
async fn autoshift(proxy: &Proxy, sdk: &aws_config::SdkConfig, url: &str, id: &str) {
    proxy.arc.lock().expect("arc").autoshift(ZONE);
    send(sdk, url, &event(id, "Autoshift In Progress", ZONE)).await;
}

/// AWS's autoshift away from the zone ends, and the event `id` says so.
async fn autoshift_ends(proxy: &Proxy, sdk: &aws_config::SdkConfig, url: &str, id: &str) {
    proxy.arc.lock().expect("arc").end_autoshift(ZONE);
    send(sdk, url, &event(id, "Autoshift Completed", ZONE)).await;
}

/// Lines until `text`, joined, for the assertions on what was said.
pub(crate) fn said(lines: &Receiver<String>, text: &str) -> String {
    until(lines, text).join("\n")
}

#[tokio::test]
async fn issue_33_the_watcher_follows_an_autoshift_out_and_back_in_waves_judging_every_message_once() {
    let (_moto, proxy, sdk, before, url) = watched_estate().await;
    alarm(&sdk, "checkout-5xx", StateValue::Ok).await;
    let args = watch_args(&url, &["--waves", "1,50%", "--bake", "1s", "--alarm", "checkout-5xx"]);
    let (mut watcher, lines) = watching(&proxy, &args).await;

    // AWS autoshifts traffic away from the zone: the event wakes the watcher, ARC's state decides.
    autoshift(&proxy, &sdk, &url, "e-1").await;
    let following = said(&lines, "evacuating use1-az2");
    assert!(following.contains("autoshift away from use1-az2"), "{following}");
    eventually("the three groups are journalled", || async {
        journal_items(&sdk).await.len() == 3
    })
    .await;
    let reasons: Vec<String> = journal_items(&sdk)
        .await
        .iter()
        .map(|i| common::attr_s(i, "reason"))
        .collect();
    assert!(reasons.iter().all(|r| r == "autoshift e-1"), "{reasons:?}");
    eventually("the groups are out of the zone", || async {
        live_groups(&sdk).await.values().all(|subnets| subnets.len() == 1)
    })
    .await;

    // A duplicate, a practice run, a message that is no event and one from another source: each
    // judged once, none followed, none even a reason to read ARC again; the manual shift's event
    // after them marks the end of the batch.
    let looked = || proxy.calls().iter().filter(|c| c.ends_with(":ListAutoshifts")).count();
    let looked_before = looked();
    assert!(looked_before > 0, "the autoshift was read from ARC");
    send(&sdk, &url, &event("e-1", "Autoshift In Progress", ZONE)).await;
    send(&sdk, &url, &event("p-1", "Practice Run Started", "use1-az1")).await;
    send(&sdk, &url, "not json at all").await;
    send(
        &sdk,
        &url,
        &event("h-1", "Autoshift In Progress", ZONE).replace("aws.arc-zonal-shift", "aws.health"),
    )
    .await;
    send(&sdk, &url, &event("m-1", "Manual Shift Started", ZONE)).await;
    let judged = said(&lines, "m-1 (Manual Shift Started) is not an autoshift");
    assert!(
        judged.contains("practice run p-1 away from use1-az1 ignored"),
        "{judged}"
    );
    assert_eq!(judged.matches("deleted unread").count(), 2, "{judged}");
    assert!(judged.contains("not an EventBridge event"), "{judged}");
    assert!(
        judged.contains("not for this watcher: an event from aws.health"),
        "{judged}"
    );
    assert_eq!(
        judged.matches("evacuating").count(),
        0,
        "the duplicate does nothing: {judged}"
    );
    assert_eq!(looked(), looked_before, "no message of the batch woke the watcher");
    eventually("every message is deleted", || async { left_in(&sdk, &url).await == 0 }).await;
    assert_eq!(journal_items(&sdk).await.len(), 3);

    // status shows the watcher acting, following the zone.
    let status = azevac_at(&proxy.endpoint, &["status"], &[]).expect_code(0);
    assert!(status.stdout.contains("watcher: run "), "{}", status.stdout);
    assert!(status.stdout.contains("acting, lease until"), "{}", status.stdout);
    assert!(status.stdout.contains("following use1-az2"), "{}", status.stdout);
    let json = azevac_at(&proxy.endpoint, &["status", "--output", "json"], &[])
        .expect_code(0)
        .json();
    assert_eq!(json["watcher"]["active"], true, "{json:#}");
    assert!(json["watcher"]["heard_at"].is_string(), "{json:#}");
    let doctor = azevac_at(&proxy.endpoint, &["doctor"], &[]);
    assert!(
        doctor
            .stdout
            .contains("acts, following use1-az2, and hears from its queue"),
        "{}",
        doctor.stdout
    );

    // The autoshift ends: the recovery runs in waves, behind the alarm.
    autoshift_ends(&proxy, &sdk, &url, "e-2").await;
    let back = said(&lines, "use1-az2 recovered: following no zone");
    assert!(back.contains("has ended: recovering use1-az2"), "{back}");
    assert!(back.contains("wave 1/"), "the recovery went in waves: {back}");
    assert!(journal_items(&sdk).await.is_empty(), "every record cleared");
    let sorted = |groups: BTreeMap<String, Vec<String>>| common::sorted(&groups);
    assert_eq!(sorted(live_groups(&sdk).await), sorted(before));
    assert!(
        proxy.calls().iter().any(|c| c.ends_with(":ListAutoshifts")),
        "{:?}",
        proxy.calls()
    );
    assert!(proxy.calls().iter().any(|c| c == "monitoring:DescribeAlarms"));

    // SIGTERM: the watcher stops cleanly, its lease released.
    terminate(&watcher);
    said(&lines, "lease released");
    assert_eq!(watcher.wait().expect("wait").code(), Some(0));
    let item = lease(&sdk).await.expect("the lease item stays, released");
    assert_eq!(item["expires_at"], "0", "{item:?}");
    let status = azevac_at(&proxy.endpoint, &["status"], &[]).expect_code(0);
    assert!(
        status.stdout.contains("not acting: stopped, lease released"),
        "{}",
        status.stdout
    );
}

#[tokio::test]
async fn issue_33_a_standby_watcher_takes_over_only_once_the_first_ones_lease_lapses_and_recovers_what_it_followed() {
    let (_moto, proxy, sdk, before, url) = watched_estate().await;
    let (mut first, first_lines) = watching(&proxy, &watch_args_leased(&url, "3s", &[])).await;
    let (mut second, second_lines) = spawn(&proxy.endpoint, &watch_args_leased(&url, "3s", &[]));
    said(&second_lines, "standing by: watcher");

    // The first follows an autoshift, then dies without a word (SIGKILL).
    autoshift(&proxy, &sdk, &url, "e-1").await;
    said(&first_lines, "evacuating use1-az2");
    eventually("the three groups are journalled", || async {
        journal_items(&sdk).await.len() == 3
    })
    .await;
    eventually("the evacuation is done", || async {
        common::lock_items(&sdk).await.is_empty()
    })
    .await;
    let held = lease(&sdk).await.expect("lease");
    assert_eq!(held["following"], ZONE);
    first.kill().expect("kill");
    first.wait().expect("wait");
    let killed_at = lease(&sdk).await.expect("lease")["expires_at"]
        .parse::<u64>()
        .expect("expiry");

    // The autoshift ends while nobody acts, and its event is lost: the standby takes over after the
    // lease has run out, inherits the zone, and recovers it from ARC's state alone.
    proxy.arc.lock().expect("arc").end_autoshift(ZONE);
    let took = said(&second_lines, "took the lease over from watcher");
    assert!(took.contains("following use1-az2"), "{took}");
    // By the item's own clock: taken over only once the lease had run out, and a second past it
    // (the standby's margin).
    let taken = lease(&sdk).await.expect("lease");
    let since = taken["since"].parse::<u64>().expect("since");
    assert_ne!(taken["holder"], held["holder"]);
    assert!(
        since >= killed_at + 2,
        "taken over at {since}, the killed holder's lease running out at {killed_at}"
    );
    said(&second_lines, "use1-az2 recovered: following no zone");
    assert!(journal_items(&sdk).await.is_empty());
    let sorted = |groups: BTreeMap<String, Vec<String>>| common::sorted(&groups);
    assert_eq!(sorted(live_groups(&sdk).await), sorted(before));
    terminate(&second);
    assert_eq!(second.wait().expect("wait").code(), Some(0));
}

/// Issue 51: the watcher runs as two ECS tasks in two zones (fixtures/watcher-service.*), its cluster
/// and service tagged `azevac:skip`. When AWS autoshifts away from the zone of one of them, the one
/// holding the lease evacuates the zone but leaves its own service alone (skipped with the tag: no
/// UpdateService, no record); when that task is stopped (AWS stops it, or the zone takes it down:
/// SIGKILL, no word), the other takes the lease over, inherits the zone, and recovers it once the
/// autoshift ends. The watcher's service is never changed.
#[tokio::test]
async fn issue_51_the_watcher_leaves_its_own_service_alone_when_its_zone_is_impaired() {
    use common::estate::EcsSpec;
    let moto = common::Moto::start();
    let proxy = Proxy::start(&moto.endpoint);
    let sdk = common::sdk_at(&proxy.endpoint).await;
    let service = |cluster: &str, name: &str| EcsSpec {
        cluster: cluster.into(),
        name: name.into(),
        vpc: "main".into(),
        zones: vec!["use1-az1".into(), "use1-az2".into()],
        network_mode: "awsvpc".into(),
        controller: "ECS".into(),
        assign_public_ip: "DISABLED".into(),
        desired: 0,
        tags: BTreeMap::new(),
    };
    let spec = Spec {
        ecs_services: vec![service("prod", "web"), service("azevac-watcher", "watch")],
        ..estate::groups_in_two_zones("10.35.0.0/16", &[])
    };
    estate::seed(&sdk, &spec).await;
    common::tag_cluster(
        &sdk,
        "azevac-watcher",
        azevac::model::plan::SKIP_TAG,
        "azevac watcher cluster",
    )
    .await;
    let before = common::live_services(&sdk).await;
    azevac_at(&proxy.endpoint, &["init"], &[]).expect_code(0);
    let url = queue(&sdk).await;
    let args = [
        "watch",
        "--queue",
        &url,
        "--type",
        "ecs",
        "--poll-wait",
        "1s",
        "--lease",
        "3s",
    ];
    let (mut first, first_lines) = watching(&proxy, &args).await;
    let (mut second, second_lines) = spawn(&proxy.endpoint, &args);
    said(&second_lines, "standing by: watcher");

    autoshift(&proxy, &sdk, &url, "e-1").await;
    said(&first_lines, "evacuating use1-az2");
    eventually("web is journalled and its evacuation done", || async {
        journal_items(&sdk).await.len() == 1 && common::lock_items(&sdk).await.is_empty()
    })
    .await;
    let live = common::live_services(&sdk).await;
    assert_eq!(live["prod/web"].0.len(), 1, "web evacuated: {live:?}");
    assert_eq!(live["azevac-watcher/watch"], before["azevac-watcher/watch"]);
    let journalled: Vec<String> = journal_items(&sdk)
        .await
        .iter()
        .map(|i| common::attr_s(i, "resource"))
        .collect();
    assert_eq!(journalled, ["arn:aws:ecs:us-east-1:123456789012:service/prod/web"]);

    // The task in the impaired zone is stopped without a word; the other one takes over.
    first.kill().expect("kill");
    first.wait().expect("wait");
    let took = said(&second_lines, "took the lease over from watcher");
    assert!(took.contains("following use1-az2"), "{took}");
    autoshift_ends(&proxy, &sdk, &url, "e-2").await;
    said(&second_lines, "use1-az2 recovered: following no zone");
    assert_eq!(common::live_services(&sdk).await, before);
    let updates_of_the_watcher = proxy
        .requests()
        .iter()
        .filter(|(label, body)| label == "ecs:UpdateService" && body.contains("azevac-watcher"))
        .count();
    assert_eq!(updates_of_the_watcher, 0, "the watcher's own service is never updated");
    terminate(&second);
    assert_eq!(second.wait().expect("wait").code(), Some(0));
}

#[tokio::test]
async fn issue_33_watch_refuses_a_queue_it_cannot_read_and_init_turns_the_observer_on() {
    let moto = common::Moto::start();
    let proxy = Proxy::start(&moto.endpoint);
    azevac_at(&proxy.endpoint, &["init"], &[]).expect_code(0);
    let missing = format!("{}/123456789012/no-such-queue", proxy.endpoint);
    let run = azevac_at(&proxy.endpoint, &["watch", "--queue", &missing, "--type", "asg"], &[]).expect_code(2);
    assert_eq!(run.stderr.trim().lines().count(), 1, "{}", run.stderr);
    assert!(run.stderr.contains("cannot read the queue"), "{}", run.stderr);

    // The evacuation it would run is planned at start: an alarm --pace-alarm names that is not
    // there is said now, not when AWS moves traffic away.
    let url = queue(&common::sdk_at(&proxy.endpoint).await).await;
    let run = azevac_at(
        &proxy.endpoint,
        &[
            "watch",
            "--queue",
            &url,
            "--type",
            "asg",
            "--pace",
            "1",
            "--pace-alarm",
            "no-such-alarm",
        ],
        &[],
    )
    .expect_code(2);
    assert_eq!(run.stderr.trim().lines().count(), 1, "{}", run.stderr);
    assert!(run.stderr.contains("check --pace-alarm"), "{}", run.stderr);

    let init = azevac_at(&proxy.endpoint, &["init", "--autoshift-observer"], &[]).expect_code(0);
    assert!(
        init.stdout.contains("autoshift observer notification"),
        "{}",
        init.stdout
    );
    assert!(proxy.arc.lock().expect("arc").observer);
    let again = azevac_at(&proxy.endpoint, &["init", "--autoshift-observer"], &[]).expect_code(0);
    assert!(again.stdout.contains("nothing to do"), "{}", again.stdout);
}

/// An update of an Auto Scaling group parked in the proxy: a change in flight.
fn hold_an_update(proxy: &Proxy) {
    proxy.hold(Hold {
        label: Some("autoscaling:UpdateAutoScalingGroup".into()),
        body_contains: String::new(),
        nth: 1,
    });
}

/// The groups out of the zone (one subnet left), by name.
async fn evacuated_groups(sdk: &aws_config::SdkConfig) -> BTreeSet<String> {
    live_groups(sdk)
        .await
        .into_iter()
        .filter(|(_, subnets)| subnets.len() == 1)
        .map(|(name, _)| name)
        .collect()
}

/// The groups the journal holds records of, by name.
async fn journalled_groups(sdk: &aws_config::SdkConfig) -> BTreeSet<String> {
    journal_items(sdk)
        .await
        .iter()
        .map(|item| common::attr_s(item, "resource"))
        .map(|arn| arn.rsplit('/').next().unwrap_or_default().to_owned())
        .collect()
}

#[tokio::test]
async fn issue_33_sigterm_mid_evacuation_forgets_nothing_and_the_next_watcher_finishes_the_zone() {
    let (_moto, proxy, sdk, before, url) = watched_estate().await;
    // One group at a time: the two after the one in flight are not started.
    let (mut first, lines) = watching(&proxy, &watch_args(&url, &["--concurrency", "1"])).await;

    // SIGTERM while the evacuation has a change in flight.
    hold_an_update(&proxy);
    autoshift(&proxy, &sdk, &url, "e-1").await;
    proxy
        .wait_held(Some(&mut first), Duration::from_secs(60))
        .expect("an update in flight");
    // Busy, not deaf: status and doctor say what keeps the watcher from its queue.
    eventually("status says the watcher is evacuating", || async {
        let status = azevac_at(&proxy.endpoint, &["status"], &[]).expect_code(0);
        status.stdout.contains("; evacuating use1-az2")
    })
    .await;
    let doctor = azevac_at(&proxy.endpoint, &["doctor"], &[]);
    assert!(
        doctor.stdout.contains("acts, following use1-az2: evacuating use1-az2"),
        "{}",
        doctor.stdout
    );
    terminate(&first);
    said(&lines, "interrupted: starting no more changes");
    proxy.release();
    said(&lines, "lease released");
    assert_eq!(
        first.wait().expect("wait").code(),
        Some(143),
        "the evacuation was interrupted"
    );
    let item = lease(&sdk).await.expect("lease");
    assert_eq!(item["expires_at"], "0", "{item:?}");
    assert_eq!(
        item["following"], ZONE,
        "the zone followed outlives the watcher: {item:?}"
    );
    let changed = evacuated_groups(&sdk).await;
    assert_eq!(
        changed.len(),
        1,
        "the change in flight landed, and no other: {changed:?}"
    );
    assert!(
        changed.is_subset(&journalled_groups(&sdk).await),
        "every group changed is journalled: {changed:?}"
    );
    assert!(common::lock_items(&sdk).await.is_empty(), "every lock released");

    // The next watcher inherits the zone, evacuates it whole, and recovers it once AWS is done.
    let (second, lines) = spawn(&proxy.endpoint, &watch_args(&url, &[]));
    said(&lines, "holds the lease, following use1-az2");
    eventually("every group is out of the zone", || async {
        evacuated_groups(&sdk).await.len() == 3
    })
    .await;
    autoshift_ends(&proxy, &sdk, &url, "e-2").await;
    said(&lines, "use1-az2 recovered: following no zone");
    assert!(journal_items(&sdk).await.is_empty());
    let sorted = |groups: BTreeMap<String, Vec<String>>| common::sorted(&groups);
    assert_eq!(sorted(live_groups(&sdk).await), sorted(before));
    terminate(&second);
}

#[tokio::test]
async fn issue_33_a_watcher_that_loses_its_lease_mid_recovery_stops_it_and_keeps_the_zone_followed() {
    let (_moto, proxy, sdk, before, url) = watched_estate().await;
    alarm(&sdk, "checkout-5xx", StateValue::Ok).await;
    let args = watch_args_leased(
        &url,
        "3s",
        &["--waves", "1,50%", "--bake", "1s", "--alarm", "checkout-5xx"],
    );
    let (mut watcher, lines) = watching(&proxy, &args).await;
    autoshift(&proxy, &sdk, &url, "e-1").await;
    eventually("the zone is evacuated", || async {
        evacuated_groups(&sdk).await.len() == 3 && common::lock_items(&sdk).await.is_empty()
    })
    .await;

    // The first wave's change is in flight when the journal stops taking the lease's renewals.
    hold_an_update(&proxy);
    autoshift_ends(&proxy, &sdk, &url, "e-2").await;
    proxy
        .wait_held(Some(&mut watcher), Duration::from_secs(60))
        .expect("the first wave's update in flight");
    proxy.fail_too(
        vec![FailRule {
            label: "dynamodb:PutItem".into(),
            body_contains: azevac::journal::WATCHER_PARTITION.into(),
            fault: Fault::ServerError,
        }],
        Duration::ZERO,
    );
    said(&lines, "the run in flight starts nothing more");
    proxy.release();
    let stopped = said(&lines, "did not finish");
    assert!(
        stopped.contains("the watcher that holds the lease recovers use1-az2"),
        "{}",
        stopped
    );
    assert_eq!(
        journalled_groups(&sdk).await.len(),
        2,
        "the later waves were not started"
    );
    assert_eq!(
        lease(&sdk).await.expect("lease")["following"],
        ZONE,
        "a recovery stopped short leaves the zone followed"
    );

    // The journal answers again: the watcher takes the lease back and finishes the recovery.
    proxy.set(Faults::default());
    said(&lines, "holds the lease, following use1-az2");
    said(&lines, "use1-az2 recovered: following no zone");
    assert!(journal_items(&sdk).await.is_empty());
    let sorted = |groups: BTreeMap<String, Vec<String>>| common::sorted(&groups);
    assert_eq!(sorted(live_groups(&sdk).await), sorted(before));
    terminate(&watcher);
    assert_eq!(watcher.wait().expect("wait").code(), Some(0));
}

#[tokio::test]
async fn issue_33_a_dry_run_watcher_changes_nothing_and_leaves_the_queue_to_the_one_that_acts() {
    let (_moto, proxy, sdk, before, url) = watched_estate().await;
    let (mut watcher, lines) = spawn(&proxy.endpoint, &watch_args(&url, &["--dry-run"]));
    said(&lines, "changing nothing (--dry-run)");
    autoshift(&proxy, &sdk, &url, "e-1").await;
    said(&lines, "evacuating use1-az2");
    // The manual shift's event is judged once the planned evacuation is over.
    send(&sdk, &url, &event("m-1", "Manual Shift Started", ZONE)).await;
    said(&lines, "m-1 (Manual Shift Started) is not an autoshift");
    assert!(journal_items(&sdk).await.is_empty(), "nothing journalled");
    assert_eq!(lease(&sdk).await, None, "a dry run takes no lease");
    let sorted = |groups: BTreeMap<String, Vec<String>>| common::sorted(&groups);
    assert_eq!(sorted(live_groups(&sdk).await), sorted(before));
    assert_eq!(
        left_in(&sdk, &url).await,
        2,
        "both messages left for the watcher that acts"
    );
    terminate(&watcher);
    assert_eq!(watcher.wait().expect("wait").code(), Some(0));
}

#[tokio::test]
async fn issue_33_the_watcher_follows_one_zone_twice_each_recovery_reading_the_journal_afresh() {
    let (_moto, proxy, sdk, before, url) = watched_estate().await;
    let (mut watcher, lines) = watching(&proxy, &watch_args(&url, &[])).await;
    for (round, groups) in [(1, 3), (2, 4)] {
        if round == 2 {
            // A group made between the two autoshifts: the second recovery must see its record.
            estate::add_group_like(&sdk, "web-1", "web-4").await;
        }
        autoshift(&proxy, &sdk, &url, &format!("s-{round}")).await;
        said(&lines, "evacuating use1-az2");
        eventually("the zone is evacuated", || async {
            journalled_groups(&sdk).await.len() == groups && common::lock_items(&sdk).await.is_empty()
        })
        .await;
        autoshift_ends(&proxy, &sdk, &url, &format!("c-{round}")).await;
        said(&lines, "use1-az2 recovered: following no zone");
        assert!(
            journal_items(&sdk).await.is_empty(),
            "round {round}: every record cleared"
        );
        assert!(evacuated_groups(&sdk).await.is_empty(), "round {round}");
    }
    assert_eq!(live_groups(&sdk).await.len(), before.len() + 1);
    terminate(&watcher);
    assert_eq!(watcher.wait().expect("wait").code(), Some(0));
}
