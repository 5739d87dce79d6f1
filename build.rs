//! Stamp the binary with the commit it was built from, so that `azevac --version` (and a bug
//! report, or an incident review) says exactly which code ran. Outside a git checkout (a crate
//! tarball) the commit is "unknown".

use std::process::Command;

fn git(args: &[&str]) -> Option<String> {
    let out = Command::new("git").args(args).output().ok()?;
    out.status
        .success()
        .then(|| String::from_utf8_lossy(&out.stdout).trim().to_owned())
}

fn main() {
    let commit = git(&["rev-parse", "--short=12", "HEAD"]).unwrap_or_else(|| "unknown".into());
    println!("cargo:rustc-env=AZEVAC_COMMIT={commit}");
    // Run again when HEAD moves: HEAD itself (a checkout) and the refs a commit updates. Only paths
    // that exist, since a missing one would make every build run this again.
    let paths = [
        git(&["rev-parse", "--git-path", "HEAD"]),
        git(&["rev-parse", "--git-path", "refs/heads"]),
        git(&["rev-parse", "--git-path", "packed-refs"]),
    ];
    for path in paths.into_iter().flatten() {
        if std::path::Path::new(&path).exists() {
            println!("cargo:rerun-if-changed={path}");
        }
    }
    println!("cargo:rerun-if-changed=build.rs");
}
