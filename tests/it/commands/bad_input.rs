//! Bad input and a bad environment (issue 5, item 6): each case gets one clear line on stderr that
//! says what to do, the right exit code, and no change anywhere (not even the journal table).
//!
//! | case                                   | exit | the line says                                 |
//! |----------------------------------------|------|-----------------------------------------------|
//! | unknown AZ ID (evacuate, recover, status) | 2 | the region's valid AZ IDs with their names     |
//! | an AZ name instead of an ID            | 2    | the name's AZ ID, and the valid IDs           |
//! | unknown `--type`                       | 2    | the possible values                           |
//! | malformed `--tag`                      | 2    | expected KEY=VALUE                            |
//! | no `--yes` and no terminal             | 2    | pass --yes, or --dry-run                      |
//! | recover / status without a table       | 2    | run `azevac init`                             |
//! | wrong region                           | 2    | check --region                                |
//! | no credentials                         | 2    | set AWS_PROFILE or the key variables          |
//! | access denied                          | 2    | the denied action, and the IAM policy         |
//! | endpoint unreachable                   | 2    | check --region / --endpoint-url               |
//! | `--zonal-shift` against an emulator    | 2    | the endpoint does not serve ARC zonal shift   |
//! | `--expires-in` outside ARC's range     | 2    | minutes or hours, 1m to 72h                   |
//! | a table that is not a journal          | 2    | what differs (tests/it/docs/as_code.rs)               |
//! | a journal whose type index projects too little | 2 | what differs (tests/it/docs/as_code.rs)       |
//! | apply: a plan's role other than the command line's, with --yes | 2 | both roles; the flag to pass, or --accept-plan-role (tests/it/commands/apply.rs) |
//! | EC2 failing (500) while resolving zones | 1   | the call failed, not "check --region" (tests/it/protocol/hardening.rs) |
//! | endpoint closes every connection       | 2    | cannot reach, after two attempts (tests/it/protocol/hardening.rs) |
//! | no region anywhere                     | 2    | one line: pass --region (tests/it/protocol/hardening.rs)  |
//! | every call slower than --operation-timeout | 1 | the call and "timeout" (tests/it/protocol/hardening.rs)   |
//! | empty estate                           | 0    | nothing to do                                 |
//! | an AZ with nothing in it               | 0    | nothing to do                                 |

use crate::common;

use std::collections::BTreeMap;

use common::estate::{self, AsgSpec, Spec, VpcSpec};
use common::proxy::{FailRule, Fault, Faults, Proxy};
use common::{azevac, azevac_at, live_groups, table_exists, Moto, Run, ZONE};

fn estate() -> Spec {
    Spec {
        vpcs: vec![VpcSpec {
            name: "main".into(),
            cidr: "10.70.0.0/16".into(),
            zones: ["use1-az1", "use1-az2"].iter().map(|z| z.to_string()).collect(),
        }],
        auto_scaling_groups: vec![AsgSpec {
            name: "web".into(),
            vpc: "main".into(),
            zones: vec!["use1-az1".into(), "use1-az2".into()],
            desired: 0,
            tags: BTreeMap::new(),
        }],
        ..Spec::default()
    }
}

/// Exit 2 and exactly one `azevac: error:` line on stderr that contains `says`.
fn refused(run: Run, says: &str) {
    let run = run.expect_code(2);
    let errors: Vec<&str> = run
        .stderr
        .lines()
        .filter(|l| l.starts_with("azevac: error:") || l.starts_with("error:"))
        .collect();
    assert_eq!(errors.len(), 1, "one error line: {}", run.stderr);
    assert!(run.stderr.contains(says), "expected {says:?} in: {}", run.stderr);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_bad_input_is_refused_with_one_line_and_changes_nothing() {
    let moto = Moto::start();
    let sdk = common::sdk(&moto).await;
    estate::seed(&sdk, &estate()).await;
    let before = live_groups(&sdk).await;
    let valid = "valid AZ IDs: use1-az1 (us-east-1b), use1-az2 (us-east-1c), use1-az3 (us-east-1e)";

    refused(azevac(&moto, &["evacuate", "--az-id", "use1-az9", "--yes"]), valid);
    refused(azevac(&moto, &["recover", "--az-id", "use1-az9", "--yes"]), valid);
    refused(azevac(&moto, &["status", "--az-id", "use1-az9"]), valid);
    refused(
        azevac(&moto, &["evacuate", "--az-id", "us-east-1c", "--yes"]),
        "its AZ ID is use1-az2",
    );
    refused(
        azevac(&moto, &["evacuate", "--az-id", ZONE, "--type", "rds", "--yes"]),
        "possible values: asg, ecs, lambda",
    );
    refused(
        azevac(&moto, &["evacuate", "--az-id", ZONE, "--tag", "team", "--yes"]),
        "expected KEY=VALUE",
    );
    // moto answers ARC calls with an HTML 500 page, which the SDK retries: two attempts are enough here.
    refused(
        azevac_at(
            &moto.endpoint,
            &["evacuate", "--az-id", ZONE, "--zonal-shift", "--yes"],
            &[("AWS_MAX_ATTEMPTS", Some("2"))],
        ),
        "does not serve this API (moto and LocalStack have no ARC zonal shift",
    );
    refused(
        azevac(
            &moto,
            &["shift", "start", "--az-id", ZONE, "--expires-in", "4d", "--yes"],
        ),
        "expected minutes (1m to 4320m) or hours (1h to 72h)",
    );
    refused(
        azevac(&moto, &["evacuate", "--az-id", ZONE]),
        "pass --yes to go ahead, or --dry-run",
    );
    refused(azevac(&moto, &["recover", "--yes"]), "azevac init");
    refused(azevac(&moto, &["status"]), "azevac init");
    // These two are retried as transient by the SDK (8 attempts by default, ~30 s): fewer here.
    let few_tries = [("AWS_MAX_ATTEMPTS", Some("2"))];
    let wrong_region = ["--region", "xx-nowhere-1", "evacuate", "--az-id", ZONE, "--yes"];
    refused(azevac_at(&moto.endpoint, &wrong_region, &few_tries), "check --region");
    refused(
        azevac_at(
            &moto.endpoint,
            &["evacuate", "--az-id", ZONE, "--yes"],
            &[
                ("AWS_ACCESS_KEY_ID", None),
                ("AWS_SECRET_ACCESS_KEY", None),
                ("AWS_CONFIG_FILE", Some("/nonexistent")),
                ("AWS_SHARED_CREDENTIALS_FILE", Some("/nonexistent")),
                ("AWS_EC2_METADATA_DISABLED", Some("true")),
            ],
        ),
        "no usable AWS credentials",
    );
    refused(
        azevac_at("http://127.0.0.1:1", &["status"], &few_tries),
        "cannot reach the AWS endpoint",
    );

    let proxy = Proxy::start(&moto.endpoint);
    proxy.set(Faults {
        rules: vec![FailRule {
            label: "ec2:DescribeAvailabilityZones".into(),
            body_contains: String::new(),
            fault: Fault::AccessDenied,
        }],
        ..Faults::default()
    });
    refused(
        azevac_at(&proxy.endpoint, &["evacuate", "--az-id", ZONE, "--yes"], &[]),
        "access denied for ec2:DescribeAvailabilityZones",
    );

    assert_eq!(live_groups(&sdk).await, before, "nothing changed");
    assert!(!table_exists(&sdk).await, "nothing written");
}

#[tokio::test]
async fn an_empty_estate_or_an_empty_zone_has_nothing_to_do() {
    let moto = Moto::start();
    let empty = azevac(&moto, &["evacuate", "--az-id", ZONE, "--yes"]).expect_code(0);
    assert!(empty.stdout.contains("nothing to do"), "{}", empty.stdout);

    let sdk = common::sdk(&moto).await;
    estate::seed(&sdk, &estate()).await;
    let quiet_zone = azevac(&moto, &["evacuate", "--az-id", "use1-az5", "--yes"]).expect_code(0);
    assert!(quiet_zone.stdout.contains("nothing to do"), "{}", quiet_zone.stdout);
    assert!(!table_exists(&sdk).await, "nothing to do writes nothing");
}

/// Issue 31, case 8: a `--reason` too large for a journal record (400 KB an item, 4 MB a batch of
/// 50) failed every line at the write, exit 1. It is bad input: one line, exit 2, before anything
/// is planned or written, from the flags and from a saved plan alike.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn issue_31_a_reason_too_large_for_a_record_is_refused() {
    let moto = Moto::start();
    let sdk = common::sdk(&moto).await;
    estate::seed(&sdk, &estate()).await;
    let before = live_groups(&sdk).await;
    let says = "at most 1000 (it is stored in every journal record)";

    let long = "x".repeat(1001);
    refused(
        azevac(&moto, &["evacuate", "--az-id", ZONE, "--reason", &long, "--yes"]),
        "--reason is 1001 characters",
    );
    refused(
        azevac(&moto, &["shift", "start", "--az-id", ZONE, "--reason", &long, "--yes"]),
        says,
    );
    // Characters, not bytes: 1,000 of them pass, whatever their encoding.
    let plan = azevac(
        &moto,
        &[
            "evacuate",
            "--az-id",
            ZONE,
            "--reason",
            &"é".repeat(1000),
            "--dry-run",
            "--output",
            "json",
        ],
    )
    .expect_code(0);
    // A saved plan carries its reason past the flags: 500 KB of it, as in the report.
    let mut saved = plan.json();
    saved["request"]["reason"] = serde_json::json!("x".repeat(500_000));
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("plan.json");
    std::fs::write(&path, saved.to_string()).expect("write the plan");
    refused(
        azevac(&moto, &["apply", path.to_str().expect("utf-8"), "--yes"]),
        "--reason is 500000 characters",
    );

    assert_eq!(live_groups(&sdk).await, before, "nothing changed");
    assert!(!table_exists(&sdk).await, "nothing written");
}
