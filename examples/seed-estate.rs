//! Seed an emulator (AWS_ENDPOINT_URL) with an estate described in a JSON file; `scripts/demo` uses
//! it with fixtures/sample-estate.json. The same seeder builds the integration tests' estates.

#[path = "../tests/common/estate.rs"]
mod estate;

#[tokio::main]
async fn main() {
    let path = std::env::args()
        .nth(1)
        .unwrap_or_else(|| "fixtures/sample-estate.json".into());
    if std::env::var_os("AWS_ENDPOINT_URL").is_none() {
        eprintln!("seed-estate: AWS_ENDPOINT_URL is not set; this seeds an emulator, never a real account");
        std::process::exit(2);
    }
    let spec = estate::read_spec(std::path::Path::new(&path));
    let sdk = aws_config::load_defaults(aws_config::BehaviorVersion::latest()).await;
    let seeded = estate::seed(&sdk, &spec).await;
    eprintln!(
        "seeded {} VPCs, {} subnets, {} Auto Scaling groups, {} ECS services, {} Lambda functions from {path}",
        seeded.vpcs.len(),
        seeded.subnets.len(),
        spec.auto_scaling_groups.len(),
        spec.ecs_services.len(),
        spec.lambda_functions.len()
    );
}
