//! `fixtures/output.schema.json` (issue 19): the JSON Schema of `--output json`, generated from the
//! Rust types that print it (schemars). One test fails when the committed file is not what the types
//! give (`UPDATE_SCHEMA=1 cargo test --test it schema::` rewrites it); another validates the documents
//! real runs print — plans, results, with and without `--stats`, and status — against it.

use crate::common;

use std::path::PathBuf;

use common::estate;
use common::{azevac, Moto, ZONE};

fn schema_path() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("fixtures/output.schema.json")
}

#[test]
fn the_committed_schema_is_the_one_the_types_give() {
    let generated = format!(
        "{}\n",
        serde_json::to_string_pretty(&azevac::report::output_schema()).expect("schema")
    );
    if std::env::var_os("UPDATE_SCHEMA").is_some() {
        std::fs::write(schema_path(), &generated).expect("write the schema");
        return;
    }
    let committed = std::fs::read_to_string(schema_path()).unwrap_or_default();
    assert!(
        committed == generated,
        "fixtures/output.schema.json is not what the types give: run `UPDATE_SCHEMA=1 cargo test --test it schema::` \
         and commit the file"
    );
}

/// Validate documents against the committed schema with the Python `jsonschema` package (Draft
/// 2020-12) from the emulator's venv: a full validator at no build cost (the Rust `jsonschema` crate
/// rebuilt much of the dependency graph here). Returns one error list per document.
fn validate(documents: &[&serde_json::Value]) -> Vec<Vec<String>> {
    const SCRIPT: &str = r#"
import json, sys
from jsonschema import Draft202012Validator
schema = json.load(open(sys.argv[1]))
Draft202012Validator.check_schema(schema)
validator = Draft202012Validator(schema)
documents = json.load(sys.stdin)
print(json.dumps([[f"{list(e.absolute_path)}: {e.message}" for e in validator.iter_errors(d)] for d in documents]))
"#;
    let python = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join(".venv-moto/bin/python");
    let mut child = std::process::Command::new(python)
        .args(["-c", SCRIPT])
        .arg(schema_path())
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("the venv's python (scripts/test installs it)");
    let input = serde_json::to_vec(documents).expect("documents");
    std::io::Write::write_all(&mut child.stdin.take().expect("stdin"), &input).expect("write");
    let out = child.wait_with_output().expect("validate");
    assert!(
        out.status.success(),
        "validator: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("errors")
}

#[tokio::test]
async fn every_json_document_matches_the_schema() {
    let moto = Moto::start();
    let sdk = common::sdk(&moto).await;
    let spec = estate::read_spec(&PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("fixtures/sample-estate.json"));
    estate::seed(&sdk, &spec).await;
    let json = |args: &[&str], code: i32| azevac(&moto, args).expect_code(code).json();

    let plan = json(&["evacuate", "--az-id", ZONE, "--dry-run", "--output", "json"], 0);
    assert!(plan["items"].as_array().is_some_and(|i| !i.is_empty()), "{plan:#}");
    let result = json(
        &[
            "evacuate", "--az-id", ZONE, "--yes", "--reason", "INC-19", "--stats", "--output", "json",
        ],
        0,
    );
    assert!(result["stats"].is_object(), "{result:#}");
    let status = json(&["status", "--output", "json"], 0);
    assert!(
        status["records"].as_array().is_some_and(|r| !r.is_empty()),
        "{status:#}"
    );
    let recover_plan = json(&["recover", "--dry-run", "--output", "json"], 0);
    let recovered = json(&["recover", "--yes", "--output", "json"], 0);
    let empty_status = json(&["status", "--output", "json"], 0);
    // The schema is not vacuous: a line with a status azevac never prints, and a record whose
    // fields have the wrong types, are refused.
    let mut bad_status = plan.clone();
    bad_status["items"][0]["status"] = "maybe".into();
    let mut bad_record = status.clone();
    bad_record["records"] = serde_json::json!([{ "az_id": 1 }]);

    let names = [
        "evacuate --dry-run",
        "evacuate --stats",
        "status",
        "recover --dry-run",
        "recover",
        "status, empty",
    ];
    let errors = validate(&[
        &plan,
        &result,
        &status,
        &recover_plan,
        &recovered,
        &empty_status,
        &bad_status,
        &bad_record,
    ]);
    for (name, errors) in names.iter().zip(&errors) {
        assert!(errors.is_empty(), "{name} does not match the schema: {errors:#?}");
    }
    assert!(!errors[6].is_empty(), "the schema accepts any status");
    assert!(!errors[7].is_empty(), "the schema accepts any record");
}
