//! NAT routes out of the zone: the real binary points the routes of route tables in healthy zones
//! away from a NAT gateway in use1-az2 (to one in the subnets' own zone, same VPC, same
//! connectivity type), leaves alone what it must, and on recover points back exactly what it set.
//! moto implements `ReplaceRoute` (IPv4, IPv6 and prefix-list destinations), the route-table and
//! NAT-gateway filters used here, and NAT gateway connectivity types; a NAT gateway there is
//! `available` at once, and `deleted` once deleted.

use crate::common;

use std::collections::BTreeMap;

use aws_sdk_ec2::types::{Filter, Tag};
use aws_sdk_ec2::Client;

use common::estate::{self, routes, NatSpec, RouteTableSpec, Routes, Spec, VpcSpec};
use common::proxy::{Faults, KillWhen, Proxy};
use common::{attr_list, attr_s, azevac, call_number, journal_items, plan_line as line, run_watched, Moto};

const DRY_RUN: &[&str] = &[
    "evacuate",
    "--az-id",
    "use1-az2",
    "--type",
    "nat",
    "--dry-run",
    "--output",
    "json",
];
const EVACUATE: &[&str] = &[
    "evacuate", "--az-id", "use1-az2", "--type", "nat", "--yes", "--output", "json",
];
const RECOVER: &[&str] = &["recover", "--type", "nat", "--yes", "--output", "json"];

fn vpc(name: &str, cidr: &str, zones: &[&str]) -> VpcSpec {
    VpcSpec {
        name: name.into(),
        cidr: cidr.into(),
        zones: zones.iter().map(|z| z.to_string()).collect(),
    }
}

fn nat(name: &str, vpc: &str, zone: &str, private: bool) -> NatSpec {
    NatSpec {
        name: name.into(),
        vpc: vpc.into(),
        zone: zone.into(),
        private,
    }
}

fn table(name: &str, vpc: &str, zones: &[&str], routes: &[(&str, &str)]) -> RouteTableSpec {
    RouteTableSpec {
        name: name.into(),
        vpc: vpc.into(),
        zones: zones.iter().map(|z| z.to_string()).collect(),
        routes: routes.iter().map(|(d, n)| (d.to_string(), n.to_string())).collect(),
    }
}

/// The seeded estate and a client to read it with.
struct Seeder {
    ec2: Client,
    /// NAT gateway name → ID.
    nats: BTreeMap<String, String>,
    /// Route table name → ID.
    tables: BTreeMap<String, String>,
}

/// - `shop`: NAT `shop-zone` in use1-az2, `shop-az1` in use1-az1, `shop-az4` in use1-az4. Private
///   tables `shop-priv-az1` (0.0.0.0/0 and NAT64 64:ff9b::/96) and `shop-priv-az4` (0.0.0.0/0 and a
///   prefix list) route through `shop-zone`: each moves to the NAT in its own zone.
///   `shop-priv-az2` serves the zone's subnet: left alone.
/// - `edge`: main table through `edge-zone`; its only subnet without an explicit association is in
///   use1-az1 (the others have their own table): it moves to `edge-az1`.
/// - `calm`: its NAT is in use1-az1: nothing to do.
/// - `lone`: its only NAT is in the zone: skipped, no replacement.
/// - `core`: two private NATs in the zone; the only other NATs are a public one in use1-az1 (the
///   table's own zone, never a substitute) and a private one in use1-az4 (the replacement).
async fn seed(moto: &Moto) -> Seeder {
    let sdk = common::sdk(moto).await;
    let three = ["use1-az1", "use1-az2", "use1-az4"];
    let spec = Spec {
        vpcs: vec![
            vpc("shop", "10.1.0.0/16", &three),
            vpc("edge", "10.2.0.0/16", &three),
            vpc("calm", "10.3.0.0/16", &["use1-az1", "use1-az4"]),
            vpc("lone", "10.4.0.0/16", &["use1-az1", "use1-az2"]),
            vpc("core", "10.5.0.0/16", &three),
        ],
        nat_gateways: vec![
            nat("shop-zone", "shop", "use1-az2", false),
            nat("shop-az1", "shop", "use1-az1", false),
            nat("shop-az4", "shop", "use1-az4", false),
            nat("edge-zone", "edge", "use1-az2", false),
            nat("edge-az1", "edge", "use1-az1", false),
            nat("calm-az1", "calm", "use1-az1", false),
            nat("lone-zone", "lone", "use1-az2", false),
            nat("core-zone", "core", "use1-az2", true),
            nat("core-zone-2", "core", "use1-az2", true),
            nat("core-public-az1", "core", "use1-az1", false),
            nat("core-private-az4", "core", "use1-az4", true),
        ],
        route_tables: vec![
            table(
                "shop-priv-az1",
                "shop",
                &["use1-az1"],
                &[("0.0.0.0/0", "shop-zone"), ("64:ff9b::/96", "shop-zone")],
            ),
            table("shop-priv-az4", "shop", &["use1-az4"], &[("0.0.0.0/0", "shop-zone")]),
            table("shop-priv-az2", "shop", &["use1-az2"], &[("0.0.0.0/0", "shop-zone")]),
            table("edge-public", "edge", &["use1-az2", "use1-az4"], &[]),
            table("calm-priv", "calm", &["use1-az4"], &[("0.0.0.0/0", "calm-az1")]),
            table("lone-priv", "lone", &["use1-az1"], &[("0.0.0.0/0", "lone-zone")]),
            table(
                "core-priv",
                "core",
                &["use1-az1"],
                &[("10.99.0.0/16", "core-zone"), ("10.98.0.0/16", "core-zone-2")],
            ),
        ],
        ..Spec::default()
    };
    let seeded = estate::seed(&sdk, &spec).await;
    let ec2 = Client::new(&sdk);
    let (nats, mut tables) = (seeded.nat_gateways, seeded.route_tables);
    let list = ec2
        .create_managed_prefix_list()
        .prefix_list_name("partners")
        .max_entries(5)
        .address_family("IPv4")
        .send()
        .await
        .expect("CreateManagedPrefixList")
        .prefix_list()
        .and_then(|l| l.prefix_list_id())
        .expect("prefix list ID")
        .to_owned();
    estate::create_routes(&ec2, &tables["shop-priv-az4"], &[(list, nats["shop-zone"].clone())]).await;
    let main = ec2
        .describe_route_tables()
        .filters(Filter::builder().name("vpc-id").values(&seeded.vpcs["edge"]).build())
        .filters(Filter::builder().name("association.main").values("true").build())
        .send()
        .await
        .expect("DescribeRouteTables")
        .route_tables()[0]
        .route_table_id()
        .expect("main")
        .to_owned();
    ec2.create_tags()
        .resources(&main)
        .tags(Tag::builder().key("Name").value("edge-main").build())
        .send()
        .await
        .expect("CreateTags");
    estate::create_routes(&ec2, &main, &[("0.0.0.0/0".into(), nats["edge-zone"].clone())]).await;
    tables.insert("edge-main".into(), main);
    Seeder { ec2, nats, tables }
}

/// `routes` with the named tables' destinations `dest` (`*`: all but `local`) now on `nat`.
fn moved(before: &Routes, seeded: &Seeder, changes: &[(&str, &str, &str)]) -> Routes {
    let mut after = before.clone();
    for (table, destination, nat) in changes {
        let routes = after.get_mut(*table).expect("table");
        let keys: Vec<String> = routes
            .keys()
            .filter(|d| *destination == "*" || d.as_str() == *destination)
            .cloned()
            .collect();
        for key in keys {
            routes.insert(key, seeded.nats[*nat].clone());
        }
    }
    after
}

fn text(value: &serde_json::Value) -> &str {
    value.as_str().unwrap_or_default()
}

/// The repointing every test expects of an evacuation of the seeded estate.
const EXPECTED: &[(&str, &str, &str)] = &[
    ("shop-priv-az1", "*", "shop-az1"),
    ("shop-priv-az4", "*", "shop-az4"),
    ("edge-main", "*", "edge-az1"),
    ("core-priv", "*", "core-private-az4"),
];

#[tokio::test]
async fn issue_nat_routes_leave_the_zone_and_come_back_exactly() {
    let moto = Moto::start();
    let seeded = seed(&moto).await;
    let ec2 = &seeded.ec2;
    let before = routes(ec2).await;
    assert_eq!(before["shop-priv-az1"]["0.0.0.0/0"], seeded.nats["shop-zone"]);

    let dry = azevac(&moto, DRY_RUN).expect_code(0).json();
    let az1 = line(&dry, "shop-priv-az1");
    assert_eq!(az1["status"], "planned");
    let (zone, near) = (&seeded.nats["shop-zone"], &seeded.nats["shop-az1"]);
    assert_eq!(
        az1["reason"],
        format!(
            "0.0.0.0/0: {zone} (use1-az2) -> {near} (use1-az1); 64:ff9b::/96: {zone} (use1-az2) -> {near} (use1-az1)"
        )
    );
    assert_eq!(
        az1["actions"],
        serde_json::json!([
            format!("0.0.0.0/0 was on {zone}"),
            format!("point 0.0.0.0/0 at {near}"),
            format!("64:ff9b::/96 was on {zone}"),
            format!("point 64:ff9b::/96 at {near}"),
        ])
    );
    assert!(text(&az1["notes"][0]).contains("cross-zone data transfer"), "{az1}");
    assert_eq!(line(&dry, "edge-main")["status"], "planned");
    let core = line(&dry, "core-priv");
    assert!(
        text(&core["reason"]).ends_with(&format!("-> {} (use1-az4)", seeded.nats["core-private-az4"])),
        "a private NAT is replaced by a private one only: {core}"
    );
    let inside = line(&dry, "shop-priv-az2");
    assert_eq!(inside["status"], "skipped");
    assert!(
        text(&inside["reason"]).contains("in use1-az2: that traffic stays in the zone"),
        "{inside}"
    );
    let lone = line(&dry, "lone-priv");
    assert_eq!(lone["status"], "skipped");
    assert!(
        text(&lone["reason"]).starts_with("0.0.0.0/0: no available public NAT gateway in vpc-"),
        "{lone}"
    );
    let names: Vec<&str> = dry["items"]
        .as_array()
        .expect("items")
        .iter()
        .map(|i| text(&i["name"]))
        .collect();
    assert!(
        !names.contains(&"calm-priv") && !names.contains(&"edge-public"),
        "{names:?}"
    );
    // `--name-prefix` applies to the route table's Name tag.
    let mut filtered_args = DRY_RUN.to_vec();
    filtered_args.extend(["--name-prefix", "shop-"]);
    let filtered = azevac(&moto, &filtered_args).expect_code(0).json();
    assert!(
        text(&line(&filtered, "edge-main")["reason"]).starts_with("filtered"),
        "{filtered:#}"
    );
    assert_eq!(line(&filtered, "shop-priv-az1")["status"], "planned");
    assert_eq!(routes(ec2).await, before, "a dry run changes nothing");

    let run = azevac(&moto, EVACUATE).expect_code(0).json();
    for (table, _, _) in EXPECTED {
        assert_eq!(line(&run, table)["status"], "done", "{run:#}");
    }
    let after = moved(&before, &seeded, EXPECTED);
    assert_eq!(routes(ec2).await, after, "exactly the tables outside the zone moved");

    let sdk = common::sdk(&moto).await;
    let journal = journal_items(&sdk).await;
    assert_eq!(journal.len(), EXPECTED.len(), "{journal:?}");
    let record = journal
        .iter()
        .find(|r| attr_s(r, "resource").ends_with(&seeded.tables["shop-priv-az4"]))
        .expect("shop-priv-az4's record");
    assert_eq!(attr_s(record, "resource_type"), "nat");
    assert_eq!(attr_s(record, "state"), "done");
    assert!(attr_s(record, "resource").starts_with("arn:aws:ec2:us-east-1:"));
    assert!(attr_s(record, "resource").contains(":route-table/rtb-"));
    let actions = attr_list(record, "actions");
    let far = &seeded.nats["shop-az4"];
    let action = |kind: &str, destination: &str, nat: &str| {
        format!(r#"{{"{kind}":{{"destination":{{"ipv4":"{destination}"}},"nat":"{nat}"}}}}"#)
    };
    assert!(
        actions.contains(&action("original", "0.0.0.0/0", zone)) && actions.contains(&action("set", "0.0.0.0/0", far)),
        "{actions:?}"
    );
    assert!(
        actions
            .iter()
            .any(|a| a.starts_with(r#"{"original":{"destination":{"prefix_list":"pl-"#)),
        "{actions:?}"
    );
    assert_eq!(
        record.get("format").and_then(|f| f.as_n().ok()).map(String::as_str),
        Some("2")
    );

    // Nothing left to do.
    let again = azevac(&moto, EVACUATE).expect_code(0).json();
    assert!(again["items"]
        .as_array()
        .expect("items")
        .iter()
        .all(|i| i["status"] == "skipped"));
    assert!(text(&line(&again, "shop-priv-az1")["reason"]).starts_with("already evacuated: 0.0.0.0/0 via "));
    assert_eq!(routes(ec2).await, after);

    let back = azevac(&moto, RECOVER).expect_code(0).json();
    assert_eq!(line(&back, "shop-priv-az1")["status"], "done", "{back:#}");
    assert_eq!(routes(ec2).await, before, "recover points every route back");
    assert!(journal_items(&sdk).await.is_empty());
    let nothing = azevac(&moto, RECOVER).expect_code(0).json();
    assert!(nothing["items"].as_array().expect("items").is_empty(), "{nothing:#}");
}

/// A route the operator repointed after the evacuation is theirs: recover leaves it and drops the
/// record (there is nothing azevac set left to undo, and keeping it would fail every later
/// recover), and says on the line what the route was before. A route whose original NAT gateway is
/// gone keeps its record (and fails the line): that record is the only note of where it went.
#[tokio::test]
async fn issue_nat_recover_never_clobbers_and_keeps_what_it_cannot_put_back() {
    let moto = Moto::start();
    let seeded = seed(&moto).await;
    let ec2 = &seeded.ec2;
    let before = routes(ec2).await;
    azevac(&moto, EVACUATE).expect_code(0);
    // The operator moves shop-priv-az4's default route to the use1-az1 NAT themselves.
    ec2.replace_route()
        .route_table_id(&seeded.tables["shop-priv-az4"])
        .destination_cidr_block("0.0.0.0/0")
        .nat_gateway_id(&seeded.nats["shop-az1"])
        .send()
        .await
        .expect("ReplaceRoute");
    // core's private NAT in the zone is deleted meanwhile.
    ec2.delete_nat_gateway()
        .nat_gateway_id(&seeded.nats["core-zone"])
        .send()
        .await
        .expect("DeleteNatGateway");

    let back = azevac(&moto, RECOVER).expect_code(1).json();
    let az4 = line(&back, "shop-priv-az4");
    assert_eq!(az4["status"], "done", "{az4}");
    let reason = text(&az4["reason"]);
    assert!(
        reason.contains(&format!(
            "0.0.0.0/0: now targets {}, not what azevac set ({}): left alone (was {})",
            seeded.nats["shop-az1"], seeded.nats["shop-az4"], seeded.nats["shop-zone"]
        )),
        "{reason}"
    );
    // core-priv: 10.98.0.0/16 goes back to core-zone-2; 10.99.0.0/16 cannot (core-zone is gone).
    let core = line(&back, "core-priv");
    assert_eq!(core["status"], "failed");
    let reason = text(&core["reason"]);
    assert!(reason.contains("1 route(s) put back; 10.99.0.0/16: "), "{core}");
    assert!(reason.contains("is deleted, so the route stays on"), "{core}");
    let stays = format!("stays on {}; journal record kept", seeded.nats["core-private-az4"]);
    assert!(reason.ends_with(&stays), "said once: {core}");

    let mut expected = moved(&before, &seeded, &[("core-priv", "10.99.0.0/16", "core-private-az4")]);
    expected
        .get_mut("shop-priv-az4")
        .expect("table")
        .insert("0.0.0.0/0".into(), seeded.nats["shop-az1"].clone());
    assert_eq!(
        routes(ec2).await,
        expected,
        "the prefix-list route went back; the operator's stayed"
    );
    let sdk = common::sdk(&moto).await;
    let journal = journal_items(&sdk).await;
    assert_eq!(journal.len(), 1, "only core's record stays: {journal:?}");
    assert!(attr_s(&journal[0], "resource").ends_with(&seeded.tables["core-priv"]));

    // Again: what went back is back, what cannot stays journalled and fails the line.
    let again = azevac(&moto, RECOVER).expect_code(1).json();
    let core = line(&again, "core-priv");
    assert_eq!(core["status"], "failed");
    assert!(text(&core["reason"]).contains("10.98.0.0/16: already on "), "{core}");
    assert_eq!(routes(ec2).await, expected);
    assert_eq!(journal_items(&sdk).await.len(), 1);
}

/// A kill just before and just after the first `ReplaceRoute`: the intent (with what azevac is
/// about to set) is journalled first, so evacuating again and recovering ends exact, and so does
/// recovering straight after the kill (the half-done table goes back).
#[tokio::test]
async fn issue_nat_a_kill_around_replace_route_loses_nothing() {
    let moto = Moto::start();
    let proxy = Proxy::start(&moto.endpoint);
    let sdk = common::sdk(&moto).await;
    // One table at a time: with several ReplaceRoutes in flight, the others may land before a kill
    // "before" the Nth.
    let evacuate = [
        "evacuate",
        "--az-id",
        "use1-az2",
        "--type",
        "nat",
        "--concurrency",
        "1",
        "--yes",
    ];
    seed(&moto).await;
    let at = call_number(&proxy, &evacuate, "ec2:ReplaceRoute");
    for (when, evacuate_again) in [
        (KillWhen::BeforeForward, true),
        (KillWhen::AfterForward, true),
        (KillWhen::AfterForward, false),
    ] {
        moto.reset();
        let seeded = seed(&moto).await;
        let ec2 = &seeded.ec2;
        let before = routes(ec2).await;
        proxy.set(Faults {
            kill_at: Some((at, when)),
            ..Faults::default()
        });
        assert_eq!(run_watched(&proxy, &evacuate), None, "killed at {when:?}");
        assert!(proxy.killed());
        let changed = routes(ec2).await != before;
        assert_eq!(changed, when == KillWhen::AfterForward, "killed {when:?}");
        let journal = journal_items(&sdk).await;
        assert!(
            journal.iter().any(|r| attr_s(r, "state") == "intent"),
            "the intent is journalled before ReplaceRoute: {journal:?}"
        );
        proxy.set(Faults::default());
        if evacuate_again {
            azevac(&moto, EVACUATE).expect_code(0);
            assert_eq!(routes(ec2).await, moved(&before, &seeded, EXPECTED), "{when:?}");
        }
        azevac(&moto, RECOVER).expect_code(0);
        assert_eq!(routes(ec2).await, before, "{when:?}, evacuated again: {evacuate_again}");
        assert!(journal_items(&sdk).await.is_empty());
    }
}

/// Issue 32: NAT records as azevac wrote them before journal format 2 (no `format` attribute,
/// `route:<destination>:<nat-id>` and `set:<destination>:<nat-id>` strings, IPv6 and prefix-list
/// destinations among them) are still recovered: every route goes back and the records go.
#[tokio::test]
async fn issue_32_nat_records_of_the_old_format_are_recovered() {
    use aws_sdk_dynamodb::types::AttributeValue as V;
    let moto = Moto::start();
    let seeded = seed(&moto).await;
    let ec2 = &seeded.ec2;
    let before = routes(ec2).await;
    azevac(&moto, EVACUATE).expect_code(0);
    let after = moved(&before, &seeded, EXPECTED);
    assert_eq!(routes(ec2).await, after);

    // Each record as the version before wrote it: the same attributes, but the actions as strings
    // (from the live state: the route tables' original and current NAT gateways) and no format.
    let sdk = common::sdk(&moto).await;
    let dynamodb = aws_sdk_dynamodb::Client::new(&sdk);
    let records = journal_items(&sdk).await;
    assert_eq!(records.len(), EXPECTED.len());
    let mut old_strings = Vec::new();
    for mut record in records {
        let resource = attr_s(&record, "resource");
        let (name, _) = seeded
            .tables
            .iter()
            .find(|(_, id)| resource.ends_with(id.as_str()))
            .expect("a seeded table");
        let mut actions = Vec::new();
        for (destination, original) in &before[name] {
            let now = &after[name][destination];
            if now != original {
                actions.push(format!("route:{destination}:{original}"));
                actions.push(format!("set:{destination}:{now}"));
            }
        }
        assert!(!actions.is_empty(), "{name}");
        old_strings.extend(actions.clone());
        record.remove("format");
        record.insert("actions".into(), V::L(actions.into_iter().map(V::S).collect()));
        dynamodb
            .put_item()
            .table_name(common::TABLE)
            .set_item(Some(record))
            .send()
            .await
            .expect("PutItem");
    }
    assert!(
        old_strings.iter().any(|a| a.starts_with("route:64:ff9b::/96:nat-")),
        "{old_strings:?}"
    );
    assert!(
        old_strings.iter().any(|a| a.starts_with("route:pl-")),
        "{old_strings:?}"
    );

    let back = azevac(&moto, RECOVER).expect_code(0).json();
    for (table, _, _) in EXPECTED {
        assert_eq!(line(&back, table)["status"], "done", "{back:#}");
    }
    assert_eq!(routes(ec2).await, before, "every route is back");
    assert!(journal_items(&sdk).await.is_empty());
}
