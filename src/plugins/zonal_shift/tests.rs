//! The `zonal-shift` kind's decisions, its journal actions old and new, and its ARC calls.

use std::collections::BTreeMap;

use super::decide::COMMENT_LIMIT;
use super::*;
use crate::journal::State;
use crate::model::action::{encode, Action as _};
use crate::model::plan::ALREADY_EVACUATED;
use crate::model::topology::Zones;

const LB: &str = "arn:aws:elasticloadbalancing:us-east-1:123456789012:loadbalancer/net/edge/0123";
const GROUP: &str = "arn:aws:autoscaling:us-east-1:123456789012:autoScalingGroup:u:autoScalingGroupName/web";

/// Renewal as an evacuation asks for it, far from the test shifts' end.
const RENEW: Renewal = Renewal {
    now: 1_900_000_000,
    expires_in: 3 * 3600,
    within: Some(RENEW_WITHIN),
    only: false,
};

fn managed(arn: &str, active: Vec<Active>) -> Managed {
    Managed {
        arn: arn.into(),
        name: "edge".into(),
        az_ids: vec!["use1-az1".into(), "use1-az2".into()],
        active,
    }
}

fn shift(id: &str, away: &str, kind: &str, comment: &str) -> Active {
    Active {
        id: Some(id.into()),
        away_from: away.into(),
        shift_type: kind.into(),
        comment: comment.into(),
        expires_at: Some(2_000_000_000),
    }
}

fn record(actions: &[&str], run: &str) -> Record {
    Record {
        az_id: "use1-az2".into(),
        resource: key(LB),
        resource_type: TYPE.into(),
        removed_subnets: vec![],
        state: State::Done,
        version: 2,
        resource_name: Some("edge".into()),
        original_subnets: vec![],
        actions: actions.iter().map(|a| a.to_string()).collect(),
        run_id: Some(run.into()),
        evacuated_by: None,
        reason: None,
        azevac_version: None,
        created_at: None,
        updated_at: None,
        account_id: None,
        identity: None,
    }
}

#[test]
fn kinds_come_from_the_arn() {
    assert_eq!(kind_of(LB), Kind::LoadBalancer);
    assert_eq!(kind_of(GROUP), Kind::AutoScaling);
    assert_eq!(kind_of("arn:aws:eks:us-east-1:1:cluster/prod"), Kind::Eks);
    assert_eq!(arn_of(&key(GROUP)), GROUP);
}

#[test]
fn plans_a_shift_for_resources_in_the_zone_only() {
    let mut elsewhere = managed(GROUP, vec![]);
    elsewhere.az_ids = vec!["use1-az1".into(), "use1-az4".into()];
    let items = evacuation(
        &[managed(LB, vec![]), elsewhere],
        "use1-az2",
        "3h",
        &BTreeMap::new(),
        &RENEW,
    );
    assert_eq!(items.len(), 1);
    assert_eq!(items[0].status, Status::Planned);
    assert_eq!(items[0].resource, key(LB));
    assert_eq!(
        items[0].actions.as_deref(),
        Some(&["start zonal shift away from use1-az2, expires in 3h".to_string()][..])
    );
    assert_eq!(
        items[0].steps,
        [r#"{"start":{"away_from":"use1-az2","expires_in":"3h"}}"#]
    );
}

#[test]
fn a_clusters_shift_says_what_karpenter_and_node_groups_do() {
    let cluster = "arn:aws:eks:us-east-1:123456789012:cluster/prod";
    let items = evacuation(
        &[managed(LB, vec![]), managed(cluster, vec![])],
        "use1-az2",
        "3h",
        &BTreeMap::new(),
        &RENEW,
    );
    assert!(items[0].notes.is_empty());
    let notes = items[1].notes.join(" ");
    assert!(notes.contains("Karpenter honours the shift only when") && notes.contains("managed node groups"));
}

#[test]
fn leaves_someone_elses_shift_autoshift_or_practice_run_alone() {
    for (kind, words) in [
        ("ZONAL_SHIFT", "zonal shift s-1 away from use1-az1"),
        ("PRACTICE_RUN", "practice run s-1"),
        ("ZONAL_AUTOSHIFT", "zonal autoshift s-1"),
    ] {
        let items = evacuation(
            &[managed(LB, vec![shift("s-1", "use1-az1", kind, "by hand")])],
            "use1-az2",
            "3h",
            &BTreeMap::new(),
            &RENEW,
        );
        assert_eq!(items[0].status, Status::Skipped);
        let reason = items[0].reason.clone().unwrap_or_default();
        assert!(reason.starts_with(words) && reason.ends_with("left alone"), "{reason}");
    }
}

#[test]
fn our_own_active_shift_is_already_evacuated() {
    let started = encode(&[Action::Started { id: "s-9".into() }]);
    let records = BTreeMap::from([(key(LB), record(&[started[0].as_str()], "run-1"))]);
    let items = evacuation(
        &[managed(
            LB,
            vec![shift("s-9", "use1-az2", "ZONAL_SHIFT", "azevac run run-1")],
        )],
        "use1-az2",
        "3h",
        &records,
        &RENEW,
    );
    assert_eq!(items[0].status, Status::Skipped);
    assert!(items[0]
        .reason
        .as_deref()
        .unwrap_or_default()
        .starts_with(ALREADY_EVACUATED));
}

/// What an evacuation run again and `shift extend` do with azevac's shift in force (issue 33).
#[test]
fn issue_33_our_shift_near_its_end_is_extended_never_shortened_and_never_someone_elses() {
    let started = encode(&[Action::Started { id: "s-9".into() }]);
    let records = BTreeMap::from([(key(LB), record(&[started[0].as_str()], "run-1"))]);
    let ours = shift("s-9", "use1-az2", "ZONAL_SHIFT", "azevac run run-1");
    let ends = 2_000_000_000;
    let plan = |renewal: &Renewal, active: Vec<Active>| {
        evacuation(&[managed(LB, active)], "use1-az2", "3h", &records, renewal)
    };
    // 40 minutes left: an evacuation run again extends it, written ahead with the expiry it had.
    let near = Renewal {
        now: ends - 40 * 60,
        ..RENEW
    };
    let items = plan(&near, vec![ours.clone()]);
    assert_eq!(items[0].status, Status::Planned, "{:?}", items[0].reason);
    assert_eq!(
        items[0].steps,
        [r#"{"extend":{"id":"s-9","was":"2033-05-18T03:33:20Z","expires_in":"3h"}}"#]
    );
    let detail: super::actions::Extension = items[0].target.as_ref().expect("target").detail_as().expect("detail");
    assert_eq!(detail.id, "s-9");
    // Two hours left: left as it is.
    let items = plan(
        &Renewal {
            now: ends - 7200,
            ..RENEW
        },
        vec![ours.clone()],
    );
    assert_eq!(items[0].status, Status::Skipped);
    assert!(items[0]
        .reason
        .as_deref()
        .unwrap_or_default()
        .contains("ends 2033-05-18T03:33:20Z"));
    // `shift extend`: extended whatever is left, unless that would not end it later.
    let extend = Renewal {
        within: None,
        only: true,
        now: ends - 7200,
        ..RENEW
    };
    assert_eq!(plan(&extend, vec![ours.clone()])[0].status, Status::Planned);
    let at_once = Renewal {
        now: ends - 3 * 3600 + 30,
        ..extend
    };
    let items = plan(&at_once, vec![ours.clone()]);
    assert_eq!(items[0].status, Status::Skipped);
    assert!(items[0]
        .reason
        .as_deref()
        .unwrap_or_default()
        .contains("nothing to extend"));
    // Expired (no longer listed as active): `shift extend` says so; evacuate starts a new one.
    let items = plan(&extend, vec![]);
    assert!(items[0]
        .reason
        .as_deref()
        .unwrap_or_default()
        .contains("no longer active"));
    let items = plan(&near, vec![]);
    assert_eq!(items[0].status, Status::Planned);
    assert!(items[0].steps[0].starts_with(r#"{"start""#), "{:?}", items[0].steps);
    assert!(items[0].notes.join(" ").contains("a new one is started"));
    // Someone else's shift on a resource azevac has no record of: not even listed by `shift extend`.
    let theirs = managed(GROUP, vec![shift("s-1", "use1-az2", "ZONAL_SHIFT", "by hand")]);
    let items = evacuation(std::slice::from_ref(&theirs), "use1-az2", "3h", &records, &extend);
    assert!(items.is_empty());
    let items = evacuation(&[theirs], "use1-az2", "3h", &records, &near);
    assert_eq!(items[0].status, Status::Skipped);
}

fn cancels(item: &Item) -> Option<String> {
    to_cancel(item).expect("the line's own detail")
}

#[test]
fn recovery_cancels_only_our_shift_and_finds_it_after_a_crash() {
    let ours = shift("s-9", "use1-az2", "ZONAL_SHIFT", "azevac run run-1: INC-1");
    let theirs = shift("s-3", "use1-az2", "ZONAL_SHIFT", "by hand");
    let started = encode(&[Action::Started { id: "s-9".into() }]);
    let started = [started[0].as_str()];
    let item = recovery(&record(&started, "run-1"), &[theirs.clone(), ours.clone()]);
    assert_eq!(cancels(&item).as_deref(), Some("s-9"));
    assert_eq!(
        item.actions.as_deref(),
        Some(&["cancel zonal shift s-9".to_string()][..])
    );
    // Killed between StartZonalShift and the journal's "done": found by the run ID in the comment.
    let ahead = encode(&[Action::Start {
        away_from: "use1-az2".into(),
        expires_in: "3h".into(),
    }]);
    let item = recovery(&record(&[ahead[0].as_str()], "run-1"), &[theirs.clone(), ours]);
    assert_eq!(cancels(&item).as_deref(), Some("s-9"));
    // Expired, or never started: only the record goes.
    let item = recovery(&record(&started, "run-1"), std::slice::from_ref(&theirs));
    assert_eq!(cancels(&item), None);
    assert!(item.reason.as_deref().unwrap_or_default().contains("already ended"));
    let item = recovery(&record(&[], "run-2"), std::slice::from_ref(&theirs));
    assert_eq!(cancels(&item), None);
    // An action this version cannot read fails the line: nothing is cancelled on a guess.
    let item = recovery(&record(&[r#"{"started":{"arn":"x"}}"#], "run-1"), &[theirs]);
    assert_eq!(item.status, Status::Failed);
    assert_eq!(cancels(&item), None);
    assert!(item.reason.unwrap_or_default().contains("not one this azevac knows"));
}

/// Issue 32: both strings a record held before journal format 2 read as their typed actions, and
/// recover still finds the shift they name.
#[test]
fn issue_32_old_action_strings_read_as_typed_actions() {
    assert_eq!(
        Action::legacy("zonal-shift:s-9"),
        Some(Action::Started { id: "s-9".into() })
    );
    assert_eq!(
        Action::legacy("start zonal shift away from use1-az2, expires in 3h"),
        Some(Action::Start {
            away_from: "use1-az2".into(),
            expires_in: "3h".into()
        })
    );
    for not_ours in [
        "zonal-shift:",
        "cancel zonal shift s-9",
        "start zonal shift away from use1-az2",
        "",
    ] {
        assert_eq!(Action::legacy(not_ours), None, "{not_ours}");
    }
    let ours = shift("s-9", "use1-az2", "ZONAL_SHIFT", "azevac run run-1: INC-1");
    let item = recovery(&record(&["zonal-shift:s-9"], "run-1"), std::slice::from_ref(&ours));
    assert_eq!(cancels(&item).as_deref(), Some("s-9"));
    let item = recovery(
        &record(&["start zonal shift away from use1-az2, expires in 3h"], "run-1"),
        &[ours],
    );
    assert_eq!(cancels(&item).as_deref(), Some("s-9"));
}

#[test]
fn comments_fit_arcs_limit_and_carry_the_run_id() {
    assert_eq!(comment("r1", None), "azevac run r1");
    assert_eq!(comment("r1", Some(&"x".repeat(300))).chars().count(), COMMENT_LIMIT);
    assert!(comment("r1", Some("INC-7")).contains("r1"));
}

#[test]
fn expires_in_is_checked_against_arcs_range() {
    for good in ["1m", "4320m", "3h", "72h"] {
        assert_eq!(parse_expires_in(good).as_deref(), Ok(good));
    }
    for bad in ["0h", "73h", "4321m", "3d", "h", "", "03h", "-1h"] {
        assert!(parse_expires_in(bad).is_err(), "{bad}");
    }
}

mod sdk {
    //! Request shapes, paging and error handling against aws-smithy-mocks (the emulator has no ARC).
    use super::*;
    use aws_sdk_arczonalshift::operation::cancel_zonal_shift::CancelZonalShiftError;
    use aws_sdk_arczonalshift::operation::list_managed_resources::ListManagedResourcesOutput;
    use aws_sdk_arczonalshift::operation::start_zonal_shift::{StartZonalShiftError, StartZonalShiftOutput};
    use aws_sdk_arczonalshift::types::error::{ConflictException, ValidationException};
    use aws_sdk_arczonalshift::types::{AppliedStatus, ValidationExceptionReason};
    use aws_sdk_arczonalshift::types::{ConflictExceptionReason, ShiftType, ZonalShiftInResource};
    use aws_sdk_arczonalshift::types::{ManagedResourceSummary, ZonalShiftStatus};
    use aws_smithy_mocks::{mock, mock_client, RuleMode};
    use aws_smithy_types::DateTime;

    fn zones() -> Zones {
        Zones::new(
            "us-east-1",
            vec![crate::model::topology::Zone {
                id: "use1-az2".into(),
                name: "us-east-1c".into(),
            }],
        )
    }

    fn summary(arn: &str, zones: &[&str]) -> ManagedResourceSummary {
        ManagedResourceSummary::builder()
            .arn(arn)
            .name(arn.rsplit('/').next().unwrap_or(arn))
            .set_availability_zones(Some(zones.iter().map(|z| z.to_string()).collect()))
            .build()
            .expect("summary")
    }

    #[tokio::test]
    async fn managed_resources_are_read_across_pages_with_their_shifts() {
        let in_progress = ZonalShiftInResource::builder()
            .applied_status(AppliedStatus::Applied)
            .zonal_shift_id("s-1")
            .resource_identifier(LB)
            .away_from("use1-az1")
            .expiry_time(DateTime::from_secs(2_000_000_000))
            .start_time(DateTime::from_secs(1_900_000_000))
            .comment("by hand")
            .shift_type(ShiftType::ZonalShift)
            .build()
            .expect("shift");
        let page1 = mock!(aws_sdk_arczonalshift::Client::list_managed_resources)
            .match_requests(|r| r.next_token().is_none())
            .then_output(move || {
                let mut lb = summary(LB, &["use1-az1", "use1-az2"]);
                lb.zonal_shifts = Some(vec![in_progress.clone()]);
                ListManagedResourcesOutput::builder()
                    .items(lb)
                    .next_token("page-2")
                    .build()
                    .expect("page")
            });
        let page2 = mock!(aws_sdk_arczonalshift::Client::list_managed_resources)
            .match_requests(|r| r.next_token() == Some("page-2"))
            .then_output(|| {
                ListManagedResourcesOutput::builder()
                    // A zone name, should ARC answer one, is mapped to its ID through EC2's list.
                    .items(summary(GROUP, &["us-east-1c"]))
                    .build()
                    .expect("page")
            });
        let client = mock_client!(aws_sdk_arczonalshift, RuleMode::MatchAny, [&page1, &page2]);
        let found = Shifts::from_client(client).managed(&zones()).await.expect("managed");
        assert_eq!(found.len(), 2);
        assert_eq!(found[0].active, [shift("s-1", "use1-az1", "ZONAL_SHIFT", "by hand")]);
        assert_eq!(found[1].az_ids, ["use1-az2"]);
        assert_eq!((page1.num_calls(), page2.num_calls()), (1, 1));
    }

    #[tokio::test]
    async fn a_shift_is_started_away_from_the_az_id_with_expiry_and_comment() {
        let start = mock!(aws_sdk_arczonalshift::Client::start_zonal_shift)
            .match_requests(|r| {
                r.resource_identifier() == Some(LB)
                    && r.away_from() == Some("use1-az2")
                    && r.expires_in() == Some("3h")
                    && r.comment() == Some("azevac run r1: INC-7")
            })
            .then_output(|| {
                StartZonalShiftOutput::builder()
                    .zonal_shift_id("s-42")
                    .resource_identifier(LB)
                    .away_from("use1-az2")
                    .expiry_time(DateTime::from_secs(0))
                    .start_time(DateTime::from_secs(0))
                    .status(ZonalShiftStatus::Active)
                    .comment("azevac run r1: INC-7")
                    .build()
                    .expect("output")
            });
        let refused = mock!(aws_sdk_arczonalshift::Client::start_zonal_shift)
            .match_requests(|r| r.resource_identifier() == Some(GROUP))
            .then_error(|| {
                StartZonalShiftError::ConflictException(
                    ConflictException::builder()
                        .message("a zonal shift already exists")
                        .reason(ConflictExceptionReason::ZonalShiftAlreadyExists)
                        .build()
                        .expect("error"),
                )
            });
        let client = mock_client!(aws_sdk_arczonalshift, RuleMode::MatchAny, [&start, &refused]);
        let shifts = Shifts::from_client(client);
        let id = shifts
            .start(LB, "use1-az2", "3h", &comment("r1", Some("INC-7")))
            .await
            .expect("started");
        assert_eq!(id, "s-42");
        let err = shifts.start(GROUP, "use1-az2", "3h", "c").await.expect_err("conflict");
        let text = crate::error::describe(&err);
        assert!(
            text.contains("StartZonalShift") && text.contains("already exists"),
            "{text}"
        );
    }

    /// Issue 33: an extension sends the new `expiresIn` and the comment with the run ID (ARC
    /// overwrites the comment); a shift no longer active is a failure, never a silent success.
    #[tokio::test]
    async fn issue_33_a_shift_is_extended_with_its_comment_and_an_ended_one_is_not() {
        use aws_sdk_arczonalshift::operation::update_zonal_shift::{UpdateZonalShiftError, UpdateZonalShiftOutput};
        let update = mock!(aws_sdk_arczonalshift::Client::update_zonal_shift)
            .match_requests(|r| {
                r.zonal_shift_id() == Some("s-42")
                    && r.expires_in() == Some("4h")
                    && r.comment() == Some("azevac run r2: INC-7")
            })
            .then_output(|| {
                UpdateZonalShiftOutput::builder()
                    .zonal_shift_id("s-42")
                    .resource_identifier(LB)
                    .away_from("use1-az2")
                    .expiry_time(DateTime::from_secs(2_000_000_000))
                    .start_time(DateTime::from_secs(0))
                    .status(ZonalShiftStatus::Active)
                    .comment("azevac run r2: INC-7")
                    .build()
                    .expect("output")
            });
        let ended = mock!(aws_sdk_arczonalshift::Client::update_zonal_shift)
            .match_requests(|r| r.zonal_shift_id() == Some("s-old"))
            .then_error(|| {
                UpdateZonalShiftError::ConflictException(
                    ConflictException::builder()
                        .message("not active")
                        .reason(ConflictExceptionReason::ZonalShiftStatusNotActive)
                        .build()
                        .expect("error"),
                )
            });
        let client = mock_client!(aws_sdk_arczonalshift, RuleMode::MatchAny, [&update, &ended]);
        let shifts = Shifts::from_client(client);
        let until = shifts
            .extend("s-42", "4h", &comment("r2", Some("INC-7")))
            .await
            .expect("extended");
        assert_eq!(until, 2_000_000_000);
        let err = shifts.extend("s-old", "4h", "c").await.expect_err("not active");
        assert!(crate::error::describe(&err).contains("UpdateZonalShift"), "{err}");
    }

    #[tokio::test]
    async fn cancelling_an_ended_shift_is_done_but_other_errors_are_not() {
        let ended = mock!(aws_sdk_arczonalshift::Client::cancel_zonal_shift)
            .match_requests(|r| r.zonal_shift_id() == Some("s-old"))
            .then_error(|| {
                CancelZonalShiftError::ConflictException(
                    ConflictException::builder()
                        .message("not active")
                        .reason(ConflictExceptionReason::ZonalShiftStatusNotActive)
                        .build()
                        .expect("error"),
                )
            });
        let invalid = mock!(aws_sdk_arczonalshift::Client::cancel_zonal_shift)
            .match_requests(|r| r.zonal_shift_id() == Some("bad"))
            .then_error(|| {
                CancelZonalShiftError::ValidationException(
                    ValidationException::builder()
                        .message("invalid id")
                        .reason(ValidationExceptionReason::MissingValue)
                        .build()
                        .expect("error"),
                )
            });
        // Issue 13: a conflict for any other reason (here: zonal autoshift in the way) is no
        // proof that the shift ended, so it must fail and keep the record.
        let autoshift = mock!(aws_sdk_arczonalshift::Client::cancel_zonal_shift)
            .match_requests(|r| r.zonal_shift_id() == Some("s-autoshift"))
            .then_error(|| {
                CancelZonalShiftError::ConflictException(
                    ConflictException::builder()
                        .message("zonal autoshift active")
                        .reason(ConflictExceptionReason::ZonalAutoshiftActive)
                        .build()
                        .expect("error"),
                )
            });
        let client = mock_client!(
            aws_sdk_arczonalshift,
            RuleMode::MatchAny,
            [&ended, &invalid, &autoshift]
        );
        let shifts = Shifts::from_client(client);
        shifts
            .cancel("s-old")
            .await
            .expect("an ended shift needs no cancelling");
        assert!(shifts.cancel("bad").await.is_err());
        let err = shifts
            .cancel("s-autoshift")
            .await
            .expect_err("another conflict is a failure");
        assert!(crate::error::describe(&err).contains("CancelZonalShift"), "{err}");
    }
}

/// Issue 33: what `status` and `doctor` say of the shift a record names, from what ARC lists.
#[test]
fn issue_33_a_shift_is_active_until_it_ends_and_reported_once_it_has() {
    use super::client::Known;
    use super::expiry::{standing, Standing};
    let started = encode(&[Action::Started { id: "s-9".into() }]);
    let ours = record(&[started[0].as_str()], "run-1");
    let now = 1_900_000_000;
    let known = |status: &str, expires_at: i64| {
        BTreeMap::from([(
            "s-9".to_owned(),
            Known {
                status: status.into(),
                expires_at,
            },
        )])
    };
    let far = standing(&ours, &known("ACTIVE", now + 7200), now, 3600).expect("readable");
    assert_eq!((far.standing, far.seconds_left), (Standing::Active, Some(7200)));
    assert!(far.warning.is_none() && !far.expiring(3600) && far.expiring(7200));
    let soon = standing(&ours, &known("ACTIVE", now + 1800), now, 3600).expect("readable");
    assert!(soon.warning.unwrap_or_default().contains("ends in 30m"));
    for (status, at, was) in [
        ("EXPIRED", now - 60, Standing::Expired),
        // Past its end but not yet swept by ARC: over all the same.
        ("ACTIVE", now - 1, Standing::Expired),
        ("CANCELED", now + 60, Standing::Cancelled),
    ] {
        let over = standing(&ours, &known(status, at), now, 3600).expect("readable");
        assert_eq!(over.standing, was, "{status}");
        assert!(over.expiring(0));
        assert!(over.warning.unwrap_or_default().contains("journal says evacuated"));
    }
    let gone = standing(&ours, &BTreeMap::new(), now, 3600).expect("readable");
    assert_eq!(gone.standing, Standing::Gone);
    // Written ahead only: the shift is found by the run ID when recovered; nothing to say yet.
    let ahead = record(&[], "run-2");
    assert_eq!(
        standing(&ahead, &BTreeMap::new(), now, 3600)
            .expect("readable")
            .standing,
        Standing::Unconfirmed
    );
    // Another account's record is judged by what ARC says in that account; one whose account
    // could not be reached is not known, and says why.
    let mut elsewhere = ours.clone();
    elsewhere.account_id = Some("210987654321".into());
    let not_checked = super::expiry::not_checked(&elsewhere, "AccessDenied").expect("readable");
    assert!(not_checked.standing == Standing::NotChecked && !not_checked.expiring(i64::MAX));
    assert!(not_checked
        .warning
        .as_deref()
        .is_some_and(|w| w.starts_with("not checked in account 210987654321: AccessDenied;")));
    // An action this version cannot read is an error, never a guess.
    assert!(standing(
        &record(&[r#"{"started":{"arn":"x"}}"#], "run-1"),
        &BTreeMap::new(),
        now,
        3600
    )
    .is_err());
}
