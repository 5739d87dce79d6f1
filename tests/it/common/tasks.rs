//! ECS tasks as the test proxy answers them: moto cannot start an awsvpc task (its `RunTask`
//! fails building the network interface's attachment) and does not filter `ListTasks` by service,
//! so the proxy answers `ecs:ListTasks` and `ecs:DescribeTasks` itself once a test has added tasks,
//! in the real service's shapes: a service's tasks are in the group `service:NAME`, carry their
//! `availabilityZone`, and an `ElasticNetworkInterface` attachment naming their subnet.
//!
//! Services being deleted, which moto never shows (its `DeleteService` makes a service `INACTIVE`
//! at once): a service the test names as draining is `DRAINING` in `DescribeServices` answers, and
//! its `UpdateService` is refused with `ServiceNotActiveException`, as AWS does
//! (<https://docs.aws.amazon.com/AmazonECS/latest/APIReference/API_DeleteService.html>).

use serde_json::{json, Value};

/// One running task.
#[derive(Debug, Clone)]
pub struct Task {
    /// Its ARN.
    pub arn: String,
    /// Its cluster's ARN.
    pub cluster: String,
    /// Its service's name.
    pub service: String,
    /// The zone's name.
    pub az: String,
    /// Its interface's subnet.
    pub subnet: String,
}

/// The tasks the proxy knows.
#[derive(Debug, Default)]
pub struct FakeTasks {
    /// Every task, in the order added.
    pub tasks: Vec<Task>,
    /// Services being deleted, by name (`web`): `DRAINING` to every read, refused every update.
    pub draining: Vec<String>,
}

/// Whether `given` (a name or an ARN) names `arn`'s last path segment.
fn names(given: &str, arn: &str) -> bool {
    given == arn || arn.rsplit('/').next() == Some(given)
}

impl FakeTasks {
    /// The answer to `action`, or `None` to let the emulator answer (no tasks added, or another call).
    pub fn answer(&self, service: &str, action: &str, body: &str) -> Option<Value> {
        if service != "ecs" {
            return None;
        }
        let request: Value = serde_json::from_str(body).unwrap_or_default();
        if action == "UpdateService" {
            let named = request["service"].as_str().unwrap_or_default();
            return self
                .draining
                .iter()
                .any(|d| names(d, named))
                .then(|| json!({ "__type": "ServiceNotActiveException", "message": "Service was not ACTIVE." }));
        }
        if self.tasks.is_empty() {
            return None;
        }
        let cluster = request["cluster"].as_str().unwrap_or("default");
        let in_cluster = |t: &&Task| names(cluster, &t.cluster);
        match action {
            "ListTasks" => {
                let service = request["serviceName"].as_str();
                let arns: Vec<&str> = self
                    .tasks
                    .iter()
                    .filter(in_cluster)
                    .filter(|t| service.is_none_or(|s| s == t.service))
                    .map(|t| t.arn.as_str())
                    .collect();
                Some(json!({ "taskArns": arns }))
            }
            "DescribeTasks" => {
                let wanted: Vec<&str> = request["tasks"]
                    .as_array()
                    .map(|a| a.iter().filter_map(Value::as_str).collect())
                    .unwrap_or_default();
                if wanted.len() > 100 {
                    return Some(json!({ "__type": "InvalidParameterException" }));
                }
                let tasks: Vec<Value> = self
                    .tasks
                    .iter()
                    .filter(in_cluster)
                    .filter(|t| wanted.iter().any(|w| names(w, &t.arn)))
                    .map(|t| {
                        json!({
                            "taskArn": t.arn, "clusterArn": t.cluster, "group": format!("service:{}", t.service),
                            "lastStatus": "RUNNING", "desiredStatus": "RUNNING", "launchType": "FARGATE",
                            "availabilityZone": t.az,
                            "attachments": [{
                                "id": "a", "type": "ElasticNetworkInterface", "status": "ATTACHED",
                                "details": [
                                    { "name": "subnetId", "value": t.subnet },
                                    { "name": "networkInterfaceId", "value": format!("eni-{}", t.arn.rsplit('/').next().unwrap_or("x")) }
                                ]
                            }]
                        })
                    })
                    .collect();
                Some(json!({ "tasks": tasks, "failures": [] }))
            }
            _ => None,
        }
    }

    /// The emulator's `DescribeServices` answer with the draining services' status `DRAINING`;
    /// `None` for any other call, or when nothing is draining.
    pub fn answered(&self, service: &str, action: &str, status: u16, body: &str) -> Option<String> {
        if service != "ecs" || action != "DescribeServices" || status != 200 || self.draining.is_empty() {
            return None;
        }
        let mut answer: Value = serde_json::from_str(body).ok()?;
        for found in answer["services"].as_array_mut()?.iter_mut() {
            let name = found["serviceName"].as_str().unwrap_or_default();
            if self.draining.iter().any(|d| d == name) {
                found["status"] = json!("DRAINING");
            }
        }
        Some(answer.to_string())
    }
}
