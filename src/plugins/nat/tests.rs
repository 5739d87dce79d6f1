//! The `nat` kind's pure decisions and its journal actions, old and new.

use std::collections::BTreeMap;

use super::*;
use crate::journal::State;
use crate::model::action::{encode, Action as _};
use crate::model::plan::Filters;

const ZONE: &str = "use1-az2";

fn nat(id: &str, vpc: &str, az: &str, connectivity: &str) -> NatGateway {
    NatGateway {
        id: id.into(),
        vpc_id: vpc.into(),
        subnet_id: format!("subnet-{id}"),
        az_id: Some(az.into()),
        state: "available".into(),
        connectivity: connectivity.into(),
    }
}

fn route(destination: &str, nat: &str) -> Route {
    Route {
        destination: Destination::parse(destination).expect("destination"),
        nat: Some(nat.into()),
        target: nat.into(),
    }
}

fn table(id: &str, main: bool, subnets: &[&str], routes: Vec<Route>) -> RouteTable {
    RouteTable {
        id: id.into(),
        arn: format!("arn:aws:ec2:us-east-1:123456789012:route-table/{id}"),
        name: id.into(),
        vpc_id: "vpc-1".into(),
        main,
        subnets: subnets.iter().map(|s| s.to_string()).collect(),
        routes,
        tags: BTreeMap::new(),
    }
}

/// vpc-1: subnets a1 (use1-az1), a2 (zone), a4 (use1-az4); NATs in each zone, a private one in
/// the zone and one in use1-az4.
fn estate(tables: Vec<RouteTable>) -> Estate {
    Estate {
        nats: vec![
            nat("nat-zone", "vpc-1", ZONE, "public"),
            nat("nat-a1", "vpc-1", "use1-az1", "public"),
            nat("nat-a4", "vpc-1", "use1-az4", "public"),
            nat("nat-pzone", "vpc-1", ZONE, "private"),
            nat("nat-p4", "vpc-1", "use1-az4", "private"),
            nat("nat-other-vpc", "vpc-2", "use1-az1", "public"),
        ],
        subnets: [("a1", "use1-az1"), ("a2", ZONE), ("a4", "use1-az4")]
            .into_iter()
            .map(|(s, z)| (s.to_owned(), ("vpc-1".to_owned(), z.to_owned())))
            .collect(),
        tables,
    }
}

fn record(actions: &[String]) -> Record {
    Record {
        az_id: ZONE.into(),
        resource: "arn:aws:ec2:us-east-1:123456789012:route-table/rtb-1".into(),
        resource_type: TYPE.into(),
        removed_subnets: vec![],
        state: State::Done,
        version: 2,
        resource_name: Some("rtb-1".into()),
        original_subnets: vec![],
        actions: actions.to_vec(),
        run_id: Some("run-1".into()),
        evacuated_by: None,
        reason: None,
        azevac_version: None,
        created_at: None,
        updated_at: None,
        account_id: None,
        identity: None,
    }
}

fn original(destination: &Destination, nat: &str) -> Action {
    Action::Original {
        destination: destination.clone(),
        nat: nat.into(),
    }
}

fn set(destination: &Destination, nat: &str) -> Action {
    Action::Set {
        destination: destination.clone(),
        nat: nat.into(),
    }
}

/// Issue 32: every string form the journal held before format 2 reads as its typed action, and
/// anything else is no action of this kind.
#[test]
fn issue_32_old_action_strings_read_as_typed_actions() {
    for (text, kind) in [
        ("0.0.0.0/0", Destination::Ipv4("0.0.0.0/0".into())),
        ("::/0", Destination::Ipv6("::/0".into())),
        ("64:ff9b::/96", Destination::Ipv6("64:ff9b::/96".into())),
        ("pl-0123abcd", Destination::PrefixList("pl-0123abcd".into())),
    ] {
        assert_eq!(Destination::parse(text), Some(kind.clone()));
        assert_eq!(
            Action::legacy(&format!("route:{text}:nat-0abc")),
            Some(original(&kind, "nat-0abc")),
            "{text}"
        );
        assert_eq!(Action::legacy(&format!("set:{text}:nat-9")), Some(set(&kind, "nat-9")));
    }
    for not_ours in ["route:0.0.0.0/0", "set:0.0.0.0/0:igw-1", "route::nat-1", "cordon", ""] {
        assert_eq!(Action::legacy(not_ours), None, "{not_ours}");
    }
    assert_eq!(Destination::parse(""), None);
}

#[test]
fn actions_are_journalled_as_json_and_read_back() {
    let v6 = Destination::parse("64:ff9b::/96").expect("v6");
    let typed = vec![original(&v6, "nat-zone"), set(&v6, "nat-a1")];
    let encoded = encode(&typed);
    assert_eq!(
        encoded[0],
        r#"{"original":{"destination":{"ipv6":"64:ff9b::/96"},"nat":"nat-zone"}}"#
    );
    assert_eq!(record(&encoded).actions_as::<Action>().expect("read"), typed);
    assert_eq!(typed[1].describe(), "point 64:ff9b::/96 at nat-a1");
}

#[test]
fn a_table_serving_a_subnet_of_unknown_zone_is_left_alone() {
    let t = table("rtb-1", false, &["a4", "a9"], vec![route("0.0.0.0/0", "nat-zone")]);
    let estate = estate(vec![t.clone()]);
    match decide(&estate, &t, ZONE) {
        Decision::Skip(why) => assert!(why.contains("a9 whose zone could not be read"), "{why}"),
        other => panic!("{other:?}"),
    }
}

#[test]
fn the_main_table_serves_every_subnet_without_an_explicit_association() {
    let estate = estate(vec![
        table("rtb-main", true, &[], vec![]),
        table("rtb-a2", false, &["a2"], vec![]),
    ]);
    let served = estate.served(&estate.tables[0]);
    assert_eq!(served.keys().collect::<Vec<_>>(), ["a1", "a4"]);
    assert_eq!(served["a4"], "use1-az4");
}

#[test]
fn routes_move_to_the_subnets_zone_same_vpc_same_connectivity() {
    let t = table(
        "rtb-1",
        false,
        &["a4"],
        vec![route("0.0.0.0/0", "nat-zone"), route("10.9.0.0/16", "nat-pzone")],
    );
    let estate = estate(vec![t.clone()]);
    match decide(&estate, &t, ZONE) {
        Decision::Move(changes, unmoved) => {
            let to: Vec<&str> = changes.iter().map(|c| c.to.as_str()).collect();
            assert_eq!(to, ["nat-a4", "nat-p4"]);
            assert!(unmoved.is_empty());
        }
        other => panic!("{other:?}"),
    }
    // Subnets in use1-az1: its own zone's NAT, and a private NAT only ever for a private one.
    let t1 = table(
        "rtb-1",
        false,
        &["a1"],
        vec![route("0.0.0.0/0", "nat-zone"), route("10.9.0.0/16", "nat-pzone")],
    );
    match decide(&estate, &t1, ZONE) {
        Decision::Move(changes, _) => {
            assert_eq!(changes[0].to, "nat-a1");
            assert_eq!(changes[1].to, "nat-p4");
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn no_replacement_or_a_subnet_in_the_zone_leaves_the_table_alone() {
    let mut e = estate(vec![]);
    e.nats.retain(|n| n.connectivity == "public" || n.id == "nat-pzone");
    let t = table("rtb-1", false, &["a1"], vec![route("10.9.0.0/16", "nat-pzone")]);
    assert!(
        matches!(decide(&e, &t, ZONE), Decision::Skip(why) if why.contains("no available private NAT gateway in vpc-1 outside use1-az2; left on nat-pzone"))
    );
    let inside = table("rtb-2", false, &["a1", "a2"], vec![route("0.0.0.0/0", "nat-zone")]);
    assert!(matches!(decide(&e, &inside, ZONE), Decision::Skip(why) if why.starts_with("serves a2 in use1-az2")));
    let unused = table("rtb-3", false, &[], vec![route("0.0.0.0/0", "nat-zone")]);
    assert!(matches!(decide(&e, &unused, ZONE), Decision::Skip(why) if why.starts_with("serves no subnet")));
    let elsewhere = table("rtb-4", false, &["a4"], vec![route("0.0.0.0/0", "nat-a1")]);
    assert_eq!(decide(&e, &elsewhere, ZONE), Decision::Elsewhere);
    // A stopped (unavailable) NAT is no replacement.
    e.nats
        .iter_mut()
        .filter(|n| n.id == "nat-a1" || n.id == "nat-a4")
        .for_each(|n| n.state = "pending".into());
    let t = table("rtb-5", false, &["a1"], vec![route("0.0.0.0/0", "nat-zone")]);
    assert!(matches!(decide(&e, &t, ZONE), Decision::Skip(_)));
}

#[test]
fn dependencies_list_the_zones_nats_and_the_tables_outside_it_that_use_them() {
    let e = estate(vec![
        table("rtb-out", false, &["a1", "a4"], vec![route("0.0.0.0/0", "nat-zone")]),
        table("rtb-in", false, &["a2"], vec![route("0.0.0.0/0", "nat-zone")]),
        table("rtb-calm", false, &[], vec![route("0.0.0.0/0", "nat-a1")]),
    ]);
    let deps = Dependencies::of(&e, ZONE);
    let nats: Vec<&str> = deps.nat_gateways.iter().map(|n| n.id.as_str()).collect();
    assert_eq!(nats, ["nat-zone", "nat-pzone"]);
    assert_eq!(deps.route_tables.len(), 1);
    assert_eq!(deps.route_tables[0].id, "rtb-out");
    assert_eq!(
        deps.route_tables[0].routes,
        [ZonalRoute {
            destination: Destination::Ipv4("0.0.0.0/0".into()),
            nat_gateway_id: "nat-zone".into()
        }]
    );
    assert_eq!(deps.route_tables[0].subnets["a4"], "use1-az4");
}

#[test]
fn recovery_puts_back_only_what_azevac_set_and_keeps_what_it_cannot() {
    let v4 = Destination::parse("0.0.0.0/0").expect("v4");
    let v6 = Destination::parse("::/0").expect("v6");
    let pl = Destination::parse("pl-1").expect("pl");
    let gone = Destination::parse("10.1.0.0/16").expect("gone");
    let actions = encode(&[
        original(&v4, "nat-zone"),
        set(&v4, "nat-a1"),
        original(&v6, "nat-zone"),
        set(&v6, "nat-a1"),
        original(&pl, "nat-zone"),
        set(&pl, "nat-a1"),
        original(&gone, "nat-zone"),
        set(&gone, "nat-a1"),
    ]);
    let live = table(
        "rtb-1",
        false,
        &["a1"],
        vec![
            route("0.0.0.0/0", "nat-a1"),
            route("::/0", "nat-a4"),
            route("pl-1", "nat-zone"),
        ],
    );
    let e = estate(vec![]);
    let item = recovery(&record(&actions), Some(&live), &e, false);
    assert_eq!(item.status, Status::Planned);
    assert_eq!(
        item.actions.as_deref(),
        Some(&["point 0.0.0.0/0 back to nat-zone".to_string()][..])
    );
    let reason = item.reason.clone().unwrap_or_default();
    assert!(
        reason.contains("::/0: now targets nat-a4, not what azevac set (nat-a1): left alone (was nat-zone)"),
        "{reason}"
    );
    assert!(reason.contains("pl-1: already on nat-zone"), "{reason}");
    assert!(reason.contains("10.1.0.0/16: route no longer exists"), "{reason}");
    // The original NAT gone: the record stays and the line fails.
    let mut e = e;
    e.nats.retain(|n| n.id != "nat-zone");
    let item = recovery(&record(&actions[..2]), Some(&live), &e, false);
    assert_eq!(item.status, Status::Failed);
    assert!(item
        .reason
        .unwrap_or_default()
        .contains("nat-zone is not found, so the route stays on nat-a1; journal record kept"));
    // The table gone: kept unless --forget-missing.
    assert_eq!(recovery(&record(&actions), None, &e, false).status, Status::Skipped);
    let forgotten = recovery(&record(&actions), None, &e, true);
    assert_eq!(forgotten.status, Status::Planned);
    assert!(!forgotten.changes_resource());
}

/// Issue 31: a record whose route went "back" to a NAT gateway outside its zone (or the
/// table's VPC) is odd, whatever the live route says; the honest record is not.
#[test]
fn a_record_naming_a_nat_gateway_outside_its_zone_or_vpc_is_odd() {
    let v4 = Destination::parse("0.0.0.0/0").expect("v4");
    let live = table("rtb-1", false, &["a1"], vec![route("0.0.0.0/0", "nat-a4")]);
    let e = estate(vec![]);
    let honest = encode(&[original(&v4, "nat-zone"), set(&v4, "nat-a4")]);
    assert_eq!(
        crate::model::plan::odd_record(&recovery(&record(&honest), Some(&live), &e, false)),
        None
    );
    for (first, why) in [
        (
            "nat-a1",
            "nat-a1, which lies in use1-az1, not in the record's zone use1-az2",
        ),
        ("nat-other-vpc", "nat-other-vpc, which lies in use1-az1"),
    ] {
        let odd = encode(&[original(&v4, first), set(&v4, "nat-a4")]);
        let item = recovery(&record(&odd), Some(&live), &e, false);
        let found = crate::model::plan::odd_record(&item).expect(first);
        assert!(found.contains(why), "{found}");
    }
    let mut elsewhere = e.clone();
    elsewhere.nats.push(nat("nat-zone-vpc-2", "vpc-2", ZONE, "public"));
    let odd = encode(&[original(&v4, "nat-zone-vpc-2"), set(&v4, "nat-a4")]);
    let item = recovery(&record(&odd), Some(&live), &elsewhere, false);
    let found = crate::model::plan::odd_record(&item).expect("another VPC");
    assert!(found.contains("lies in vpc-2, not in vpc-1"), "{found}");
}

#[test]
fn evacuation_journals_both_targets_and_filters_apply() {
    let t = table("rtb-1", false, &["a1"], vec![route("0.0.0.0/0", "nat-zone")]);
    let e = estate(vec![t]);
    let items = evacuation(&e, ZONE, &BTreeMap::new(), &Filters::default());
    assert_eq!(
        items[0].actions.as_deref(),
        Some(
            &[
                "0.0.0.0/0 was on nat-zone".to_string(),
                "point 0.0.0.0/0 at nat-a1".to_string()
            ][..]
        )
    );
    let v4 = Destination::parse("0.0.0.0/0").expect("v4");
    assert_eq!(items[0].steps, encode(&[original(&v4, "nat-zone"), set(&v4, "nat-a1")]));
    assert_eq!(
        items[0].reason.as_deref(),
        Some("0.0.0.0/0: nat-zone (use1-az2) -> nat-a1 (use1-az1)")
    );
    let detail: Repoint = items[0].target.as_ref().expect("target").detail_as().expect("detail");
    assert_eq!(detail.table_id, "rtb-1");
    let filters = Filters {
        tags: vec![],
        name_prefix: Some("private-".into()),
    };
    let items = evacuation(&e, ZONE, &BTreeMap::new(), &filters);
    assert_eq!(items[0].status, Status::Skipped);
    assert!(items[0].reason.as_deref().unwrap_or_default().starts_with("filtered"));
}

/// Issue 32: an action this version cannot read fails the recovery line, and nothing is put back.
#[test]
fn an_unreadable_action_fails_its_line_and_changes_nothing() {
    let live = table("rtb-1", false, &["a1"], vec![route("0.0.0.0/0", "nat-a1")]);
    let e = estate(vec![]);
    let item = recovery(
        &record(&[r#"{"reroute":{"to":"nat-a1"}}"#.to_string()]),
        Some(&live),
        &e,
        false,
    );
    assert_eq!(item.status, Status::Failed);
    assert!(item.target.is_none());
    assert!(
        item.reason.unwrap_or_default().contains("not one this azevac knows"),
        "the reason says why"
    );
}
