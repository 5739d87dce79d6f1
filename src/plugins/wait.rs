//! Waiting for a change to show: read, and read again until the state is reached or the time is
//! up. One loop for every kind (a failover's new writer, a group's capacity back in service,
//! replacements of a paced batch, an environment's update in progress, an endpoint `pending`), so
//! that none of them sleeps past its deadline or forgets to say what it still waits for.
//!
//! The pauses between reads grow as the SDKs' published waiters' do (Smithy's waiter
//! specification, "Waiter retries": exponential backoff from a minimum delay, capped at a maximum
//! one), here from [`FIRST_PAUSE`] doubling to the caller's `poll`: a state that is reached within
//! a second is seen within a second, and a long wait reads no more often than every `poll`.
//!
//! A loop of our own rather than the SDK's waiters: those wait for a status (`available`), and
//! what azevac waits for is often a status reached before as well as after the change (a cluster
//! is `available` again before its writer moved).

use std::future::Future;
use std::time::Duration;

use tokio::time::Instant;

use crate::Result;

/// What one read found.
#[derive(Debug)]
pub enum Poll<T, P> {
    /// The state waited for: done.
    Reached(T),
    /// Not yet: what it is now, for the message when time runs out.
    Pending(P),
}

/// The first pause between two reads of a wait (the next ones double, up to the caller's `poll`).
pub const FIRST_PAUSE: Duration = Duration::from_millis(500);

/// Read with `read`, pausing [`FIRST_PAUSE`] and then twice as long each time up to `poll`, until it
/// returns [`Poll::Reached`] or `timeout` has passed since the first read; `Err(pending)` with the
/// last read's state when time ran out. The last read is made at the deadline at the latest, never
/// after it; a read's error ends the wait.
pub async fn until<T, P, F, Fut>(timeout: Duration, poll: Duration, mut read: F) -> Result<Result<T, P>>
where
    F: FnMut(Duration) -> Fut,
    Fut: Future<Output = Result<Poll<T, P>>>,
{
    use backon::BackoffBuilder;
    let started = Instant::now();
    let mut pauses = backon::ExponentialBuilder::default()
        .with_min_delay(FIRST_PAUSE.min(poll))
        .with_max_delay(poll)
        .with_factor(2.0)
        .without_max_times()
        .build();
    loop {
        let elapsed = started.elapsed();
        let pending = match read(elapsed).await? {
            Poll::Reached(done) => return Ok(Ok(done)),
            Poll::Pending(now) => now,
        };
        let elapsed = started.elapsed();
        if elapsed >= timeout {
            return Ok(Err(pending));
        }
        let pause = pauses.next().unwrap_or(poll);
        tokio::time::sleep(pause.min(timeout - elapsed)).await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_wait_ends_when_reached_or_at_its_deadline_with_the_last_state() {
        let mut reads = 0;
        let reached = until(Duration::from_secs(60), Duration::from_millis(1), |_| {
            reads += 1;
            let now = reads;
            async move {
                Ok(if now == 3 {
                    Poll::Reached(now)
                } else {
                    Poll::Pending(now)
                })
            }
        })
        .await
        .expect("no read error");
        assert_eq!(reached.ok(), Some(3));

        let timeout = Duration::from_millis(120);
        let timed_out: std::result::Result<(), Duration> =
            until(timeout, Duration::from_millis(50), |elapsed| async move {
                Ok(Poll::Pending(elapsed))
            })
            .await
            .expect("no read error");
        let last = timed_out.expect_err("never reached");
        assert!(last >= timeout, "one last read at the deadline, not before: {last:?}");
    }
}
