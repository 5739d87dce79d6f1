//! Data plane first (issue 8): ARC zonal shifts around the control-plane evacuation, the cross-zone
//! check, and the order of recovery. The real binary runs against moto through the test proxy, which
//! answers the ARC zonal shift API itself (tests/it/common/zonal.rs) and logs every call in order.

use crate::common;

use std::collections::BTreeMap;

use aws_sdk_elasticloadbalancingv2::types::{Action, ActionTypeEnum, LoadBalancerTypeEnum, ProtocolEnum};

use common::estate::{self, AsgSpec, Seeded, Spec, VpcSpec};
use common::proxy::{FailRule, Fault, Faults, KillWhen, Proxy};
use common::{
    attr_list, attr_s, azevac_at, journal_items, live_groups, lock_items, run_watched, table_items, Moto, ZONE,
};

const ZONES: [&str; 3] = ["use1-az1", "use1-az2", "use1-az4"];

/// Someone else's load balancer, with a shift they started by hand.
const OTHER_LB: &str = "arn:aws:elasticloadbalancing:us-east-1:123456789012:loadbalancer/net/other/42";
/// A load balancer that is not in the zone at all.
const FAR_LB: &str = "arn:aws:elasticloadbalancing:us-east-1:123456789012:loadbalancer/net/far/43";

/// Evacuate the zone's zonal shifts alone.
const SHIFT_AWAY: &[&str] = &[
    "evacuate",
    "--az-id",
    ZONE,
    "--zonal-shift",
    "--type",
    "zonal-shift",
    "--yes",
];

struct Setup {
    _moto: Moto,
    proxy: Proxy,
    sdk: aws_config::SdkConfig,
    _seeded: Seeded,
    /// The network load balancer in front of `web` (cross-zone load balancing off, the NLB default).
    nlb: String,
    /// `web`'s ARN: an Auto Scaling group registered for zonal shift.
    web: String,
}

impl Setup {
    /// Groups `web` (behind the NLB) and `api`, in three zones; the NLB, `web`, and two other load
    /// balancers registered with ARC.
    async fn new() -> Setup {
        Setup::with_web_instances(0).await
    }

    /// The same, with `web` running this many instances (moto starts them all in its first zone).
    async fn with_web_instances(desired: i32) -> Setup {
        let moto = Moto::start();
        let proxy = Proxy::start(&moto.endpoint);
        let sdk = common::sdk(&moto).await;
        let group = |name: &str| AsgSpec {
            name: name.into(),
            vpc: "main".into(),
            zones: ZONES.iter().map(|z| z.to_string()).collect(),
            desired: if name == "web" { desired } else { 0 },
            tags: BTreeMap::new(),
        };
        let spec = Spec {
            vpcs: vec![VpcSpec {
                name: "main".into(),
                cidr: "10.60.0.0/16".into(),
                zones: ZONES.iter().map(|z| z.to_string()).collect(),
            }],
            auto_scaling_groups: vec![group("web"), group("api")],
            ..Spec::default()
        };
        let seeded = estate::seed(&sdk, &spec).await;
        let subnets: Vec<String> = ZONES.iter().map(|z| seeded.subnet("main", z)).collect();
        let elb = aws_sdk_elasticloadbalancingv2::Client::new(&sdk);
        let nlb = elb
            .create_load_balancer()
            .name("edge")
            .r#type(LoadBalancerTypeEnum::Network)
            .set_subnets(Some(subnets))
            .send()
            .await
            .expect("CreateLoadBalancer");
        let nlb = nlb.load_balancers()[0].load_balancer_arn().expect("arn").to_owned();
        let tg = elb
            .create_target_group()
            .name("web")
            .protocol(ProtocolEnum::Tcp)
            .port(80)
            .vpc_id(&seeded.vpcs["main"])
            .send()
            .await
            .expect("CreateTargetGroup");
        let tg = tg.target_groups()[0].target_group_arn().expect("arn").to_owned();
        elb.create_listener()
            .load_balancer_arn(&nlb)
            .protocol(ProtocolEnum::Tcp)
            .port(80)
            .default_actions(
                Action::builder()
                    .r#type(ActionTypeEnum::Forward)
                    .target_group_arn(&tg)
                    .build(),
            )
            .send()
            .await
            .expect("CreateListener");
        let autoscaling = aws_sdk_autoscaling::Client::new(&sdk);
        autoscaling
            .attach_load_balancer_target_groups()
            .auto_scaling_group_name("web")
            .target_group_arns(&tg)
            .send()
            .await
            .expect("AttachLoadBalancerTargetGroups");
        let web = autoscaling
            .describe_auto_scaling_groups()
            .auto_scaling_group_names("web")
            .send()
            .await
            .expect("describe")
            .auto_scaling_groups()[0]
            .auto_scaling_group_arn()
            .expect("arn")
            .to_owned();
        {
            let mut arc = proxy.arc.lock().expect("arc");
            arc.manage(&nlb, "edge", &ZONES);
            arc.manage(&web, "web", &ZONES);
            arc.manage(OTHER_LB, "other", &ZONES);
            arc.manage(FAR_LB, "far", &["use1-az1", "use1-az4"]);
            arc.start_by_hand(OTHER_LB, "use1-az1", "ZONAL_SHIFT");
        }
        Setup {
            _moto: moto,
            proxy,
            sdk,
            _seeded: seeded,
            nlb,
            web,
        }
    }

    fn run(&self, args: &[&str]) -> common::Run {
        azevac_at(&self.proxy.endpoint, args, &[])
    }

    /// [`SHIFT_AWAY`]: azevac's shifts started.
    fn shift_away(&self) {
        self.run(SHIFT_AWAY).expect_code(0);
    }

    /// Where `label` first and last appears in the proxy's call log since the last `set`.
    fn positions(&self, label: &str) -> Vec<usize> {
        let calls = self.proxy.calls();
        calls
            .iter()
            .enumerate()
            .filter(|(_, c)| *c == label)
            .map(|(i, _)| i)
            .collect()
    }
}

/// The Auto Scaling group's own line (its zonal shift line has the same name).
fn group_line<'a>(doc: &'a serde_json::Value, name: &str) -> &'a serde_json::Value {
    doc["items"]
        .as_array()
        .expect("items")
        .iter()
        .find(|i| i["type"] == "asg" && i["name"] == name)
        .unwrap_or_else(|| panic!("no group line for {name} in {doc}"))
}

/// A line's reason.
fn reason(item: &serde_json::Value) -> &str {
    item["reason"].as_str().unwrap_or_default()
}

fn line<'a>(doc: &'a serde_json::Value, name: &str) -> &'a serde_json::Value {
    doc["items"]
        .as_array()
        .expect("items")
        .iter()
        .find(|i| i["name"] == name)
        .unwrap_or_else(|| panic!("no line for {name} in {doc}"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn shifts_traffic_first_and_undoes_it_in_the_safe_order() {
    let setup = Setup::new().await;
    let original = live_groups(&setup.sdk).await;

    let plan = setup
        .run(&[
            "evacuate",
            "--az-id",
            ZONE,
            "--zonal-shift",
            "--dry-run",
            "--output",
            "json",
        ])
        .expect_code(0)
        .json();
    assert_eq!(plan["items"][0]["type"], "zonal-shift", "shifts lead the plan: {plan}");
    assert_eq!(line(&plan, "edge")["status"], "planned");
    assert_eq!(line(&plan, "web")["type"], "zonal-shift");
    let other = line(&plan, "other");
    assert_eq!(other["status"], "skipped");
    assert!(reason(other).contains("shift-1 away from use1-az1 already in progress"));
    assert!(!plan.to_string().contains("\"far\""), "not in the zone: not listed");
    assert!(
        setup.proxy.arc.lock().expect("arc").active().len() == 1,
        "a dry run starts nothing"
    );

    setup.proxy.set(Faults::default());
    let run = setup.run(&[
        "evacuate",
        "--az-id",
        ZONE,
        "--zonal-shift",
        "--reason",
        "INC-8",
        "--yes",
        "--output",
        "json",
    ]);
    let result = run.expect_code(0).json();
    assert_eq!(result["summary"]["failed"], 0, "{result}");
    // Data plane first: every shift started before any group lost a subnet.
    let starts = setup.positions("arc-zonal-shift:StartZonalShift");
    let updates = setup.positions("autoscaling:UpdateAutoScalingGroup");
    assert_eq!((starts.len(), updates.len()), (2, 2));
    assert!(starts.iter().max() < updates.iter().min(), "{:?}", setup.proxy.calls());
    let active = setup.proxy.arc.lock().expect("arc").active();
    let ours: Vec<_> = active.iter().filter(|s| s.comment.starts_with("azevac run ")).collect();
    assert_eq!(ours.len(), 2);
    for shift in &ours {
        assert_eq!((shift.away_from.as_str(), shift.expires_in.as_str()), (ZONE, "3h"));
        assert!(shift.comment.ends_with(": INC-8"), "{}", shift.comment);
    }
    let records: Vec<_> = journal_items(&setup.sdk)
        .await
        .into_iter()
        .filter(|r| attr_s(r, "resource_type") == "zonal-shift")
        .collect();
    assert_eq!(records.len(), 2);
    for record in &records {
        assert!(attr_s(record, "resource").starts_with("zonal-shift/arn:aws:"));
        let actions = attr_list(record, "actions");
        assert!(
            ours.iter()
                .any(|s| actions == [format!(r#"{{"started":{{"id":"{}"}}}}"#, s.id)]),
            "{actions:?}"
        );
        assert_eq!(attr_s(record, "state"), "done");
    }
    // The group behind the NLB went, because its balancer's shift started first.
    let web = &live_groups(&setup.sdk).await["web"];
    assert_eq!(web.len(), 2);

    // `shift list` marks azevac's; running evacuate again has nothing to do.
    let listed = setup.run(&["shift", "list", "--output", "json"]).expect_code(0).json();
    let flags: Vec<bool> = listed["shifts"]
        .as_array()
        .expect("shifts")
        .iter()
        .map(|s| s["started_by_azevac"].as_bool().unwrap_or(false))
        .collect();
    assert_eq!(flags.iter().filter(|f| **f).count(), 2, "{listed}");
    let again = setup
        .run(&["evacuate", "--az-id", ZONE, "--zonal-shift", "--yes"])
        .expect_code(0);
    assert!(again.stdout.contains("nothing to do"), "{}", again.stdout);

    // Recover: the group's shift first, then the subnets, then the load balancer's shift.
    setup.proxy.set(Faults::default());
    setup.run(&["recover", "--yes"]).expect_code(0);
    let cancels = setup.positions("arc-zonal-shift:CancelZonalShift");
    let updates = setup.positions("autoscaling:UpdateAutoScalingGroup");
    assert_eq!(cancels.len(), 2);
    let calls = setup.proxy.calls();
    let cancelled: Vec<String> = {
        let arc = setup.proxy.arc.lock().expect("arc");
        arc.shifts
            .iter()
            .filter(|s| s.status == "CANCELED")
            .map(|s| s.resource.clone())
            .collect()
    };
    assert_eq!(cancelled.len(), 2);
    assert!(cancels[0] < *updates.iter().min().expect("updates"), "{calls:?}");
    assert!(cancels[1] > *updates.iter().max().expect("updates"), "{calls:?}");
    let (first, last, active) = {
        let arc = setup.proxy.arc.lock().expect("arc");
        let find = |arn: &str| arc.shifts.iter().find(|s| s.resource == arn).map(|s| s.status.clone());
        (find(&setup.web), find(&setup.nlb), arc.active().len())
    };
    assert_eq!(
        (first.as_deref(), last.as_deref()),
        (Some("CANCELED"), Some("CANCELED"))
    );
    assert_eq!(active, 1, "someone else's shift is left alone");
    assert_eq!(live_groups(&setup.sdk).await, original);
    assert!(journal_items(&setup.sdk).await.is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_group_behind_a_zonal_load_balancer_waits_for_a_shift_or_force() {
    let setup = Setup::new().await;
    let dry = |extra: &[&str]| {
        let mut args = vec![
            "evacuate",
            "--az-id",
            ZONE,
            "--type",
            "asg",
            "--dry-run",
            "--output",
            "json",
        ];
        args.extend_from_slice(extra);
        setup.run(&args).expect_code(0).json()
    };
    let plan = dry(&[]);
    let web = line(&plan, "web");
    assert_eq!(web["status"], "skipped", "{plan}");
    let why = reason(web);
    assert!(
        why.contains("load balancer edge has cross-zone load balancing off") && why.contains("--zonal-shift"),
        "{why}"
    );
    assert_eq!(line(&plan, "api")["status"], "planned", "no load balancer: no check");

    let forced = dry(&["--force"]);
    assert_eq!(line(&forced, "web")["status"], "planned");
    assert!(line(&forced, "web")["notes"]
        .to_string()
        .contains("--force: load balancer edge"));

    // A shift someone started by hand away from the zone is as good as ours.
    setup
        .proxy
        .arc
        .lock()
        .expect("arc")
        .start_by_hand(&setup.nlb, ZONE, "ZONAL_SHIFT");
    assert_eq!(line(&dry(&[]), "web")["status"], "planned");

    // Turning cross-zone load balancing on for the target group also satisfies the check.
    setup.proxy.arc.lock().expect("arc").shifts.clear();
    let elb = aws_sdk_elasticloadbalancingv2::Client::new(&setup.sdk);
    let tg = elb
        .describe_target_groups()
        .names("web")
        .send()
        .await
        .expect("describe");
    elb.modify_target_group_attributes()
        .target_group_arn(tg.target_groups()[0].target_group_arn().expect("arn"))
        .attributes(
            aws_sdk_elasticloadbalancingv2::types::TargetGroupAttribute::builder()
                .key("load_balancing.cross_zone.enabled")
                .value("true")
                .build(),
        )
        .send()
        .await
        .expect("ModifyTargetGroupAttributes");
    assert_eq!(line(&dry(&[]), "web")["status"], "planned");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_shift_that_does_not_start_holds_its_group_back() {
    let setup = Setup::new().await;
    let original = live_groups(&setup.sdk).await;
    setup.proxy.set(Faults {
        rules: vec![FailRule {
            label: "arc-zonal-shift:StartZonalShift".into(),
            body_contains: setup.nlb.clone(),
            fault: Fault::AccessDenied,
        }],
        ..Faults::default()
    });
    let run = setup.run(&[
        "evacuate",
        "--az-id",
        ZONE,
        "--zonal-shift",
        "--yes",
        "--output",
        "json",
    ]);
    let result = run.expect_code(1).json();
    assert_eq!(line(&result, "edge")["status"], "failed");
    let web = group_line(&result, "web");
    assert_eq!(web["status"], "failed");
    assert!(reason(web).contains("waits for zonal-shift/"), "{web}");
    assert_eq!(
        live_groups(&setup.sdk).await["web"],
        original["web"],
        "web kept its subnets"
    );
    assert_eq!(
        live_groups(&setup.sdk).await["api"].len(),
        2,
        "api went: it has no load balancer"
    );

    // Recover clears the record of the shift that never started, and puts api back.
    setup.proxy.set(Faults::default());
    setup.run(&["recover", "--yes"]).expect_code(0);
    assert_eq!(live_groups(&setup.sdk).await, original);
    assert!(journal_items(&setup.sdk).await.is_empty());
    assert_eq!(
        setup.proxy.arc.lock().expect("arc").active().len(),
        1,
        "only someone else's"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_crash_right_after_starting_a_shift_loses_nothing() {
    // One resource at a time, so the calls come in the same order every run.
    let args = [
        "evacuate",
        "--az-id",
        ZONE,
        "--zonal-shift",
        "--type",
        "zonal-shift",
        "--concurrency",
        "1",
        "--yes",
    ];
    let rehearsal = Setup::new().await;
    rehearsal.proxy.set(Faults::default());
    rehearsal.run(&args).expect_code(0);
    let first_start = rehearsal.positions("arc-zonal-shift:StartZonalShift")[0];

    // The same run, killed right after ARC started the first shift and before azevac heard back.
    let setup = Setup::new().await;
    setup.proxy.set(Faults {
        kill_at: Some((first_start + 1, KillWhen::AfterForward)),
        ..Faults::default()
    });
    assert_eq!(run_watched(&setup.proxy, &args), None, "killed");
    assert_eq!(setup.proxy.calls()[first_start], "arc-zonal-shift:StartZonalShift");
    let active = setup.proxy.arc.lock().expect("arc").active();
    assert_eq!(
        active.len(),
        2,
        "someone else's and the one azevac never heard about: {active:?}"
    );
    // The write-ahead of the batch came first: every planned shift has its intent record (and its
    // lock, held by the dead run), whether its shift was started or not.
    let records = journal_items(&setup.sdk).await;
    let planned = rehearsal.positions("arc-zonal-shift:StartZonalShift").len();
    assert_eq!(records.len(), planned);
    assert!(records.iter().all(|r| attr_s(r, "state") == "intent"), "{records:?}");
    assert_eq!(lock_items(&setup.sdk).await.len(), planned, "the dead run's locks");

    // The operator's next run on this host sees the holder is gone and takes the locks over.
    setup.proxy.set(Faults::default());
    let recovered = setup
        .run(&["recover", "--yes", "--output", "json"])
        .expect_code(0)
        .json();
    assert_eq!(recovered["summary"]["done"], planned, "{recovered}");
    let active = setup.proxy.arc.lock().expect("arc").active();
    assert_eq!(
        active.len(),
        1,
        "ours was found by its run ID and cancelled: {active:?}"
    );
    assert!(table_items(&setup.sdk).await.is_empty(), "no record and no lock left");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn traffic_stays_away_until_capacity_is_back_in_the_zone() {
    // moto starts web's three instances in use1-az1 and never rebalances them: after recovery the
    // zone has no capacity, which is what `--wait` must notice before traffic is sent back.
    let setup = Setup::with_web_instances(3).await;
    setup
        .run(&["evacuate", "--az-id", ZONE, "--zonal-shift", "--yes"])
        .expect_code(0);
    let result = setup
        .run(&["recover", "--yes", "--wait", "--wait-timeout", "2s", "--output", "json"])
        .expect_code(1)
        .json();
    let web = group_line(&result, "web");
    assert_eq!(web["status"], "failed");
    assert!(reason(web).contains("no instance InService in us-east-1c"), "{web}");
    let edge = line(&result, "edge");
    assert_eq!(edge["status"], "failed");
    assert!(reason(edge).contains("capacity did not come back"), "{edge}");
    let active: Vec<String> = setup
        .proxy
        .arc
        .lock()
        .expect("arc")
        .active()
        .iter()
        .map(|s| s.resource.clone())
        .collect();
    assert!(active.contains(&setup.nlb), "the load balancer's traffic stays away");
    assert!(
        !active.contains(&setup.web),
        "the group's own shift was cancelled first"
    );

    // Once the operator accepts the capacity as it is, a recover without --wait finishes the job.
    setup.run(&["recover", "--yes"]).expect_code(0);
    assert_eq!(
        setup.proxy.arc.lock().expect("arc").active().len(),
        1,
        "only someone else's"
    );
    assert!(journal_items(&setup.sdk).await.is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn shift_start_and_cancel_touch_only_the_shifts() {
    let setup = Setup::new().await;
    let original = live_groups(&setup.sdk).await;
    let dry = setup
        .run(&["shift", "start", "--az-id", ZONE, "--dry-run", "--output", "json"])
        .expect_code(0)
        .json();
    assert!(
        dry["items"]
            .as_array()
            .expect("items")
            .iter()
            .all(|i| i["type"] == "zonal-shift"),
        "{dry}"
    );
    assert_eq!(dry["summary"]["planned"], 2);
    setup
        .run(&[
            "shift",
            "start",
            "--az-id",
            ZONE,
            "--expires-in",
            "90m",
            "--reason",
            "INC-9",
            "--yes",
        ])
        .expect_code(0);
    let ours: Vec<_> = setup
        .proxy
        .arc
        .lock()
        .expect("arc")
        .active()
        .into_iter()
        .filter(|s| s.comment.contains("INC-9"))
        .collect();
    assert_eq!(ours.len(), 2);
    assert!(ours.iter().all(|s| s.expires_in == "90m"));
    assert_eq!(live_groups(&setup.sdk).await, original, "no control-plane change");
    let listed = setup.run(&["shift", "list", "--az-id", ZONE]).expect_code(0);
    assert!(listed.stdout.contains("2 active"), "{}", listed.stdout);

    setup.run(&["shift", "cancel", "--az-id", ZONE, "--yes"]).expect_code(0);
    assert_eq!(
        setup.proxy.arc.lock().expect("arc").active().len(),
        1,
        "only someone else's"
    );
    assert!(journal_items(&setup.sdk).await.is_empty());
    let again = setup.run(&["shift", "cancel", "--yes"]).expect_code(0);
    assert!(again.stdout.contains("nothing to do"), "{}", again.stdout);
}

/// Issue 32: shift records as azevac wrote them before journal format 2 (no `format` attribute,
/// the hand-made action strings: `zonal-shift:<id>` once started, the plan's words written ahead
/// before) are still recovered: the new version cancels exactly the shifts they name and deletes
/// the records.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn issue_32_shift_records_of_the_old_format_are_recovered() {
    use aws_sdk_dynamodb::types::AttributeValue as V;
    let setup = Setup::new().await;
    setup.shift_away();
    let ours: Vec<(String, String)> = {
        let arc = setup.proxy.arc.lock().expect("arc");
        arc.active()
            .iter()
            .filter(|s| s.comment.starts_with("azevac run "))
            .map(|s| (s.resource.clone(), s.id.clone()))
            .collect()
    };
    assert_eq!(ours.len(), 2, "the NLB's and web's");
    let records = journal_items(&setup.sdk).await;
    assert_eq!(records.len(), 2);
    let dynamodb = aws_sdk_dynamodb::Client::new(&setup.sdk);
    for (n, mut record) in records.into_iter().enumerate() {
        let resource = attr_s(&record, "resource");
        let (_, id) = ours
            .iter()
            .find(|(arn, _)| resource.ends_with(arn.as_str()))
            .expect("a shift of ours");
        // One record as a finished run left it, one as a run killed before ARC answered.
        let old = if n == 0 {
            format!("zonal-shift:{id}")
        } else {
            format!("start zonal shift away from {ZONE}, expires in 3h")
        };
        record.remove("format");
        record.insert("actions".into(), V::L(vec![V::S(old)]));
        dynamodb
            .put_item()
            .table_name(common::TABLE)
            .set_item(Some(record))
            .send()
            .await
            .expect("PutItem");
    }

    setup.proxy.set(Faults::default());
    let recovered = setup
        .run(&["recover", "--yes", "--output", "json"])
        .expect_code(0)
        .json();
    assert_eq!(recovered["summary"]["done"], 2, "{recovered}");
    {
        let arc = setup.proxy.arc.lock().expect("arc");
        for (arn, id) in &ours {
            let shift = arc.shifts.iter().find(|s| &s.id == id).expect("shift");
            assert_eq!(
                (shift.resource.as_str(), shift.status.as_str()),
                (arn.as_str(), "CANCELED")
            );
        }
        assert_eq!(arc.active().len(), 1, "someone else's is left alone");
    }
    assert!(journal_items(&setup.sdk).await.is_empty());
}

/// The zonal shift azevac started for `arn`, as the fake ARC holds it.
fn ours_on(setup: &Setup, arn: &str) -> common::zonal::Shift {
    let arc = setup.proxy.arc.lock().expect("arc");
    arc.shifts
        .iter()
        .rev()
        .find(|s| s.resource == arn && s.comment.starts_with("azevac run "))
        .cloned()
        .unwrap_or_else(|| panic!("no shift of azevac's on {arn}"))
}

/// The status document's entry for one resource's shift.
fn shift_status<'a>(doc: &'a serde_json::Value, arn: &str) -> &'a serde_json::Value {
    doc["zonal_shifts"]
        .as_array()
        .expect("zonal_shifts")
        .iter()
        .find(|s| s["resource"] == arn)
        .unwrap_or_else(|| panic!("no shift of {arn} in {doc}"))
}

/// Issue 33, part 1: a zonal shift azevac started never lapses silently. `status` shows when each
/// ends and warns (and `--fail-if-expiring` exits 3) within the hour; `shift extend` extends only
/// azevac's own active shifts, journalling the expiry each had; asking again at once does nothing;
/// an evacuation run again extends the shifts that end within the hour and says so; a shift that
/// expired while its record says evacuated is reported by status and doctor.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn issue_33_azevacs_shifts_are_extended_and_never_lapse_silently() {
    let setup = Setup::new().await;
    let evacuate = SHIFT_AWAY;
    setup.shift_away();
    let (nlb, web) = (ours_on(&setup, &setup.nlb), ours_on(&setup, &setup.web));
    let theirs = setup.proxy.arc.lock().expect("arc").shifts[0].clone();

    // Three hours left: shown, no warning, nothing expiring.
    let status = setup
        .run(&["status", "--output", "json", "--fail-if-expiring", "1h"])
        .expect_code(0)
        .json();
    let entry = shift_status(&status, &setup.nlb);
    assert_eq!(entry["zonal_shift_id"], nlb.id.as_str(), "{status}");
    assert_eq!(entry["standing"], "active");
    assert!(
        entry["expires_at"].as_str().is_some_and(|t| t.ends_with('Z')),
        "{entry}"
    );
    assert!(entry["seconds_left"].as_i64().is_some_and(|s| s > 2 * 3600), "{entry}");
    assert!(entry["warning"].is_null(), "{entry}");

    // Thirty minutes left: a warning in the table, and exit 3 for a monitor.
    setup.proxy.arc.lock().expect("arc").set_expiry(&nlb.id, 30 * 60);
    let table = setup.run(&["status"]).expect_code(0);
    assert!(
        table
            .stdout
            .contains(&format!("warning: zonal shift {} of edge ends in", nlb.id))
            && table.stdout.contains("azevac shift extend --az-id"),
        "{}",
        table.stdout
    );
    setup.run(&["status", "--fail-if-expiring", "1h"]).expect_code(3);
    setup.run(&["status", "--fail-if-expiring", "10m"]).expect_code(0);
    setup.run(&["status", "--fail-if-expiring", "2d"]).expect_code(2);
    // A monitor's `status --notify` tells the channel of that shift, and of nothing when all is well.
    let topic = crate::app::notify::topic_with_queue(&setup._moto, &setup.sdk, "oncall").await;
    setup
        .run(&["status", "--fail-if-expiring", "10m", "--notify", &topic])
        .expect_code(0);
    assert!(crate::app::notify::received(&setup._moto, "oncall").is_empty());
    setup
        .run(&["status", "--fail-if-expiring", "1h", "--notify", &topic])
        .expect_code(3);
    let told = crate::app::notify::received(&setup._moto, "oncall");
    assert_eq!(told.len(), 1, "{told:?}");
    let (subject, chatbot) = &told[0];
    assert!(
        subject.contains("zonal shift(s) away from use1-az2 end soon"),
        "{subject}"
    );
    let description = chatbot["content"]["description"].as_str().unwrap_or_default();
    // Written for Markdown: the shift's ID as text (`shift\-3`), never formatting.
    let id = nlb.id.replace('-', "\\-");
    assert!(
        description.contains(&id) && description.contains("ends in"),
        "{description}"
    );
    assert_eq!(chatbot["metadata"]["eventType"], "azevac.shifts_ending");

    // `shift extend` extends azevac's two shifts as asked, and nobody else's.
    setup.proxy.set(Faults::default());
    let extended = setup
        .run(&["shift", "extend", "--expires-in", "4h", "--yes", "--output", "json"])
        .expect_code(0)
        .json();
    assert_eq!(extended["summary"]["done"], 2, "{extended}");
    assert_eq!(setup.positions("arc-zonal-shift:UpdateZonalShift").len(), 2);
    let after = ours_on(&setup, &setup.nlb);
    assert_eq!((after.id.as_str(), after.expires_in.as_str()), (nlb.id.as_str(), "4h"));
    assert!(
        after.expires_at > nlb.expires_at + 3600 - 120,
        "4h from now, not 3h: {after:?}"
    );
    assert!(
        after.comment.starts_with("azevac run "),
        "the run ID stays in the comment"
    );
    assert_eq!(ours_on(&setup, &setup.web).expires_in, "4h");
    let untouched = setup.proxy.arc.lock().expect("arc").shifts[0].clone();
    assert_eq!(untouched, theirs, "someone else's shift is left alone");
    let record = journal_items(&setup.sdk)
        .await
        .into_iter()
        .find(|r| attr_s(r, "resource").ends_with(setup.nlb.as_str()))
        .expect("the NLB's record");
    let actions = attr_list(&record, "actions");
    assert_eq!(actions.len(), 2, "{actions:?}");
    assert_eq!(actions[0], format!(r#"{{"started":{{"id":"{}"}}}}"#, nlb.id));
    let last: serde_json::Value = serde_json::from_str(&actions[1]).expect("json");
    assert!(
        last["extended"]["was"].as_str().is_some_and(|t| t.ends_with('Z')),
        "{last}"
    );
    assert!(last["extended"]["until"].as_str().is_some(), "{last}");
    assert_eq!(attr_s(&record, "state"), "done");

    // Asked again at once: nothing would end later, so nothing to do.
    setup.proxy.set(Faults::default());
    let again = setup
        .run(&["shift", "extend", "--expires-in", "4h", "--yes"])
        .expect_code(0);
    assert!(again.stdout.contains("nothing to do"), "{}", again.stdout);
    assert!(setup.positions("arc-zonal-shift:UpdateZonalShift").is_empty());

    // An evacuation run again extends the shift that ends within the hour, and only that one.
    setup.proxy.arc.lock().expect("arc").set_expiry(&web.id, 20 * 60);
    setup.proxy.set(Faults::default());
    let rerun = setup.run(evacuate).expect_code(0);
    assert!(
        rerun.stdout.contains(&format!("extended zonal shift {} until", web.id)),
        "{}",
        rerun.stdout
    );
    assert_eq!(setup.positions("arc-zonal-shift:UpdateZonalShift").len(), 1);
    assert!(setup.positions("arc-zonal-shift:StartZonalShift").is_empty());
    assert_eq!(ours_on(&setup, &setup.web).expires_in, "3h");

    // The NLB's shift runs out while its record says evacuated: status and doctor say so.
    setup.proxy.arc.lock().expect("arc").set_expiry(&nlb.id, -60);
    let status = setup.run(&["status", "--output", "json"]).expect_code(0).json();
    let entry = shift_status(&status, &setup.nlb);
    assert_eq!(entry["standing"], "expired", "{entry}");
    assert!(
        entry["warning"]
            .as_str()
            .is_some_and(|w| w.contains("traffic flows into") && w.contains("journal says evacuated")),
        "{entry}"
    );
    setup.run(&["status", "--fail-if-expiring", "1m"]).expect_code(3);
    let doctor = setup.run(&["doctor"]);
    let line = doctor
        .stdout
        .lines()
        .find(|l| l.contains("zonal shifts"))
        .unwrap_or_else(|| panic!("no zonal shifts line:\n{}", doctor.stdout));
    assert!(
        line.starts_with("FAIL") && line.contains(&nlb.id) && line.contains("expired at"),
        "{}",
        doctor.stdout
    );

    // Recover: the expired shift's record goes, web's shift is cancelled.
    setup.run(&["recover", "--yes"]).expect_code(0);
    assert!(journal_items(&setup.sdk).await.is_empty());
    assert_eq!(setup.proxy.arc.lock().expect("arc").active(), vec![theirs]);
}

/// Issue 33, part 1: a reviewed `shift extend` plan, saved with `--dry-run --output json`, is
/// carried out by `apply` as it was planned: azevac's shifts extended to the plan's expiry, the
/// expiry each had journalled, and nothing started.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn issue_33_apply_carries_a_saved_shift_extend_plan_out() {
    let setup = Setup::new().await;
    setup.shift_away();
    let before = ours_on(&setup, &setup.nlb);
    // The plan says what the operator asked for: no "evacuate" in an extension's heading.
    let shown = setup
        .run(&["shift", "extend", "--expires-in", "5h", "--dry-run"])
        .expect_code(0);
    assert!(
        shown
            .stdout
            .starts_with("azevac shift extend use1-az2 (us-east-1c) in us-east-1: plan (dry run"),
        "{}",
        shown.stdout
    );
    let plan = setup
        .run(&["shift", "extend", "--expires-in", "5h", "--dry-run", "--output", "json"])
        .expect_code(0);
    let scratch = tempfile::tempdir().expect("tempdir");
    let path = scratch.path().join("extend.json");
    std::fs::write(&path, &plan.stdout).expect("write the plan");
    setup.proxy.set(Faults::default());
    let applied = setup
        .run(&["apply", path.to_str().expect("utf-8"), "--yes", "--output", "json"])
        .expect_code(0)
        .json();
    assert_eq!(applied["summary"]["done"], 2, "{applied}");
    assert_eq!(setup.positions("arc-zonal-shift:UpdateZonalShift").len(), 2);
    assert!(setup.positions("arc-zonal-shift:StartZonalShift").is_empty());
    let after = ours_on(&setup, &setup.nlb);
    assert_eq!(
        (after.id.as_str(), after.expires_in.as_str()),
        (before.id.as_str(), "5h")
    );
    assert_eq!(ours_on(&setup, &setup.web).expires_in, "5h");
}

/// Issue 33, part 1: across accounts, `status` reads each account's shifts from ARC in that account
/// (through its role), so a shift journalled there is judged by its own account's list; an account
/// that cannot be reached leaves its shifts "not checked", with why, and a problem line.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn issue_33_status_reads_each_accounts_shifts_in_that_account() {
    const MEMBER: &str = "111111111111";
    let setup = Setup::new().await;
    setup
        .run(&[
            "evacuate",
            "--az-id",
            ZONE,
            "--zonal-shift",
            "--type",
            "zonal-shift",
            "--accounts",
            MEMBER,
            "--yes",
        ])
        .expect_code(0);
    let status = setup.run(&["status", "--output", "json"]).expect_code(0).json();
    let entry = shift_status(&status, &setup.nlb);
    assert_eq!(entry["account_id"], MEMBER, "{entry}");
    assert_eq!(entry["standing"], "active", "read in the member account: {entry}");
    assert!(entry["seconds_left"].as_i64().is_some_and(|s| s > 2 * 3600), "{entry}");

    setup.proxy.set(Faults {
        rules: vec![FailRule {
            label: "sts:AssumeRole".into(),
            body_contains: MEMBER.into(),
            fault: Fault::AccessDenied,
        }],
        ..Faults::default()
    });
    let unreached = setup.run(&["status", "--output", "json"]);
    let doc = unreached.json();
    let entry = shift_status(&doc, &setup.nlb);
    assert_eq!(entry["standing"], "not_checked", "{entry}");
    assert!(
        entry["warning"]
            .as_str()
            .is_some_and(|w| w.contains(&format!("account {MEMBER}: its role could not be assumed"))),
        "{entry}"
    );
    assert!(
        doc["problems"].as_array().is_some_and(|p| p.iter().any(|p| p
            .as_str()
            .is_some_and(|p| p.starts_with(&format!("account {MEMBER}: "))))),
        "{doc}"
    );
    setup.run(&["status", "--fail-if-expiring", "1h"]).expect_code(1);
}

/// Issue 33, part 3: traffic comes back last, in a wave of its own; an alarm while that wave bakes
/// (with `--on-alarm evacuate`) shifts the load balancer's traffic away from the zone again, with
/// a new shift journalled under the alarm's name, and keeps the capacity that came back before.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn issue_33_an_alarm_after_the_traffic_wave_shifts_the_traffic_away_again() {
    use aws_sdk_cloudwatch::types::StateValue;
    let setup = Setup::new().await;
    setup.shift_away();
    let before = ours_on(&setup, &setup.nlb);
    let alarms = common::sdk_at(&setup.proxy.endpoint).await;
    crate::app::waves::alarm(&alarms, "checkout-5xx", StateValue::Ok).await;
    setup.proxy.set(Faults::default());
    let (code, seen) = crate::app::waves::recover_until(
        &setup.proxy.endpoint,
        "1",
        "3s",
        "evacuate",
        "wave 2/2 (traffic) done",
        crate::app::waves::Then::Alarm(&alarms),
    )
    .await;
    let stderr = seen.join("\n");
    assert_eq!(code, Some(1), "{stderr}");
    assert!(
        stderr.contains("wave 1/2: 1 resource(s) (zonal-shift 1): web"),
        "{stderr}"
    );
    assert!(
        stderr.contains("wave 2/2 (traffic): 1 resource(s) (zonal-shift 1): edge"),
        "{stderr}"
    );
    assert!(
        stderr.contains("the last wave is out of use1-az2 again: 1 resource(s) evacuated"),
        "{stderr}"
    );
    let again = ours_on(&setup, &setup.nlb);
    assert_ne!(again.id, before.id, "a new shift of the load balancer");
    assert_eq!(
        setup
            .proxy
            .arc
            .lock()
            .expect("arc")
            .active()
            .iter()
            .filter(|s| s.resource == setup.nlb)
            .count(),
        1,
        "in force"
    );
    let record = journal_items(&setup.sdk)
        .await
        .into_iter()
        .find(|r| attr_s(r, "resource").ends_with(setup.nlb.as_str()))
        .expect("the load balancer's record again");
    assert!(
        attr_s(&record, "reason").starts_with("recovery in waves stopped by alarm checkout-5xx"),
        "{record:?}"
    );
    assert!(
        !journal_items(&setup.sdk)
            .await
            .iter()
            .any(|r| attr_s(r, "resource").ends_with(setup.web.as_str())),
        "web's shift stays cancelled: its wave baked without an alarm"
    );
}

/// Issue 33, part 2: the renewal of azevac's shifts runs inside the watcher too. A watcher that
/// follows nothing (no autoshift) still extends azevac's shifts that end within the hour, once, and
/// leaves the others (and another party's) alone.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn issue_33_the_watcher_extends_azevacs_shifts_that_end_within_the_hour() {
    let setup = Setup::new().await;
    setup.shift_away();
    let (nlb, web) = (ours_on(&setup, &setup.nlb), ours_on(&setup, &setup.web));
    setup.proxy.arc.lock().expect("arc").set_expiry(&nlb.id, 30 * 60);
    let theirs = setup.proxy.arc.lock().expect("arc").shifts[0].clone();
    let url = crate::app::watch::queue(&setup.sdk).await;
    let args = ["watch", "--queue", &url, "--type", "asg", "--poll-wait", "1s"];
    let (mut watcher, lines) = crate::app::waves::spawn(&setup.proxy.endpoint, &args);
    let said = crate::app::waves::until(&lines, "extending them").join("\n");
    assert!(
        said.contains("zonal shifts away from use1-az2 end within the hour"),
        "{said}"
    );
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .expect("clock")
        .as_secs() as i64;
    for _ in 0..120 {
        if ours_on(&setup, &setup.nlb).expires_at > now + 2 * 3600 {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(250)).await;
    }
    assert!(ours_on(&setup, &setup.nlb).expires_at > now + 2 * 3600, "extended");
    assert_eq!(ours_on(&setup, &setup.nlb).id, nlb.id, "the same shift, extended");
    assert!(ours_on(&setup, &setup.web).expires_at >= web.expires_at);
    let still = setup.proxy.arc.lock().expect("arc").shifts[0].clone();
    assert_eq!(still, theirs, "another party's shift is left alone");
    crate::app::watch::terminate(&watcher);
    assert_eq!(watcher.wait().expect("wait").code(), Some(0));
}
