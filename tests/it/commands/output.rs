//! What the operator reads fits the screen (issue 37): on the sample estate at 80 columns each
//! resource is one row, and the reason every record shares is written once; `-o wide` names every
//! subnet by ID and Name tag; piped output is never cut. (That no line of README's walkthrough and
//! the runbook, `doctor`, `exposure`, `status` and recover among them, is wider than 80 columns is
//! checked where they run as written: tests/it/docs/manual.rs.)

use crate::common;

use std::path::Path;

use common::{azevac, azevac_at, estate, Moto, ZONE};

fn sample_estate() -> estate::Spec {
    estate::read_spec(&Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/sample-estate.json"))
}

/// `azevac args` on an 80-column screen; its stdout.
fn at_80(moto: &Moto, args: &[&str], code: i32) -> String {
    azevac_at(&moto.endpoint, args, &[("COLUMNS", Some("80"))])
        .expect_code(code)
        .stdout
}

/// The lines of `text` wider than `width` characters.
fn wider(text: &str, width: usize) -> Vec<&str> {
    text.lines().filter(|l| l.chars().count() > width).collect()
}

#[tokio::test]
async fn one_row_per_resource_at_80_columns_and_wide_names_every_subnet() {
    let moto = Moto::start();
    let sdk = common::sdk(&moto).await;
    let seeded = estate::seed(&sdk, &sample_estate()).await;
    let plan = at_80(&moto, &["evacuate", "--az-id", ZONE, "--dry-run"], 0);
    assert_eq!(wider(&plan, 80), Vec::<&str>::new(), "{plan}");
    // One row per resource: every resource of the plan's JSON on exactly one line of the table.
    let document = azevac(&moto, &["evacuate", "--az-id", ZONE, "--dry-run", "-o", "json"])
        .expect_code(0)
        .json();
    let items = document["items"].as_array().expect("items");
    assert!(items.len() > 10, "{document}");
    let kinds: Vec<&str> = items.iter().filter_map(|i| i["type"].as_str()).collect();
    let rows = plan
        .lines()
        .filter(|l| l.split_whitespace().next().is_some_and(|w| kinds.contains(&w)))
        .count();
    assert_eq!(rows, items.len(), "{plan}");
    assert!(
        plan.contains("asg: 4 to change, 1 skipped (would leave no subnets)"),
        "{plan}"
    );

    // -o wide: the subnets taken and left, by ID and Name tag.
    let wide = azevac(&moto, &["evacuate", "--az-id", ZONE, "--dry-run", "-o", "wide"])
        .expect_code(0)
        .stdout;
    let taken = seeded.subnet("prod", ZONE);
    assert!(wide.contains(&format!("{taken} (prod-{ZONE})")), "{wide}");
    assert!(wide.contains("arn:aws:autoscaling:"), "{wide}");

    let result = at_80(
        &moto,
        &[
            "evacuate",
            "--az-id",
            ZONE,
            "--yes",
            "--reason",
            "INC-37 use1-az2 impaired: packet loss on the zone's NAT gateways",
        ],
        0,
    );
    assert_eq!(wider(&result, 80), Vec::<&str>::new(), "{result}");
    let status = at_80(&moto, &["status"], 0);
    assert_eq!(wider(&status, 80), Vec::<&str>::new(), "{status}");
    // The reason every record shares is written once, under the table.
    assert_eq!(status.matches("packet loss").count(), 1, "{status}");
    let status_wide = azevac(&moto, &["status", "-o", "wide"]).expect_code(0).stdout;
    assert!(status_wide.contains(&format!("{taken} (prod-{ZONE})")), "{status_wide}");
}

/// Output to a pipe or a file (no COLUMNS, no terminal) is never cut, however long a name is.
#[tokio::test]
async fn piped_output_is_not_cut() {
    let moto = Moto::start();
    let sdk = common::sdk(&moto).await;
    let mut spec = sample_estate();
    let long = "a-very-long-auto-scaling-group-name-that-no-terminal-column-would-hold-whole";
    spec.auto_scaling_groups[0].name = long.to_owned();
    estate::seed(&sdk, &spec).await;
    let piped = azevac(&moto, &["evacuate", "--az-id", ZONE, "--dry-run"])
        .expect_code(0)
        .stdout;
    assert!(piped.contains(long), "{piped}");
    let fitted = at_80(&moto, &["evacuate", "--az-id", ZONE, "--dry-run"], 0);
    assert!(!fitted.contains(long) && fitted.contains('…'), "{fitted}");
}
