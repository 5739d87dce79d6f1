//! `azevac doctor`'s lines for the Kubernetes kinds: a cluster that cannot be read is named with
//! what to fix (the caller's credentials, its RBAC, the network path).

use crate::model::check::Check;

/// `doctor`'s line for a Kubernetes type run without `--kube-context`: nothing to check.
pub fn no_context(resource_type: &str, what: &str) -> Check {
    Check::skip(
        resource_type,
        format!("no --kube-context: {what} not checked (and left out of runs without one)"),
        "pass --kube-context CONTEXT (repeatable) for each cluster azevac should act on",
    )
}

/// `doctor`'s line for one Kubernetes read `what` on one cluster: OK, denied (FAIL with the RBAC
/// to grant), or unreachable / anything else (FAIL: the context cannot be used in an incident).
pub fn kube_check(name: &str, what: &str, result: std::result::Result<String, kube::Error>, grant: &str) -> Check {
    match result {
        Ok(found) => Check::ok(name, format!("{what}: {found} (read permission only)")),
        // 401: the API server did not accept who we are (token, EKS access entry, aws-auth); RBAC
        // is not reached yet.
        Err(kube::Error::Api(status)) if status.code == 401 => Check::fail(
            name,
            format!("{what}: {} {}", status.code, status.message),
            "the cluster does not accept the caller: check the kubeconfig's credentials (`aws eks update-kubeconfig`) and the caller's EKS access entry or aws-auth mapping",
        ),
        Err(kube::Error::Api(status)) if status.code == 403 => Check::fail(
            name,
            format!("{what}: {} {}", status.code, status.message),
            format!("{grant}, bound to the caller's IAM principal"),
        ),
        Err(kube::Error::Api(status)) => Check::fail(
            name,
            format!("{what}: {} {}", status.code, status.message),
            "check the kube context's cluster (`kubectl --context CONTEXT get nodes`)",
        ),
        Err(e) => Check::fail(
            name,
            format!("{what}: cannot reach the API server: {}", crate::error::describe(&e)),
            "check the context's server and credentials: `aws eks update-kubeconfig --name CLUSTER`, \
             the network path to the API endpoint, then `kubectl --context CONTEXT get nodes`",
        ),
    }
}
