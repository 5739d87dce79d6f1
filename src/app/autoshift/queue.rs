//! The SQS queue an EventBridge rule feeds with ARC's events: checked once at start (a queue that
//! cannot be read is bad input), long-polled, and each message deleted once it has been judged.

use aws_sdk_sqs::types::QueueAttributeName;

use crate::{Error, Result};

/// Messages asked for per receive (SQS's most).
const BATCH: i32 = 10;

/// One message as received.
#[derive(Debug, Clone)]
pub struct Message {
    /// SQS's message ID.
    pub id: String,
    /// Its body (untrusted).
    pub body: String,
    /// What deletes it.
    pub receipt: String,
}

/// The watcher's queue.
#[derive(Debug, Clone)]
pub struct Queue {
    client: aws_sdk_sqs::Client,
    url: String,
}

impl Queue {
    /// The queue at `url`, reached with `sdk`.
    pub fn new(sdk: &aws_config::SdkConfig, url: &str) -> Self {
        Queue {
            client: crate::client!(aws_sdk_sqs, sdk),
            url: url.to_owned(),
        }
    }

    /// The queue's URL.
    pub fn url(&self) -> &str {
        &self.url
    }

    /// Check that the queue exists and can be read; its ARN. A queue that is not there, or that
    /// this identity may not read, is bad input: one line, before anything else.
    pub async fn check(&self) -> Result<String> {
        let out = self
            .client
            .get_queue_attributes()
            .queue_url(&self.url)
            .attribute_names(QueueAttributeName::QueueArn)
            .send()
            .await
            .map_err(|e| {
                let error = Error::from_sdk("sqs:GetQueueAttributes", e);
                match error {
                    Error::Throttled { .. } | Error::Unreachable { .. } => error,
                    other => Error::BadInput(format!(
                        "cannot read the queue {}: {}; give --queue the URL of the queue the EventBridge rule \
                         feeds (fixtures/autoshift-queue.cfn.yaml creates both), readable with sqs:ReceiveMessage",
                        crate::model::text::clean(&self.url),
                        crate::error::describe(&other)
                    )),
                }
            })?;
        Ok(out
            .attributes()
            .and_then(|a| a.get(&QueueAttributeName::QueueArn))
            .cloned()
            .unwrap_or_default())
    }

    /// Wait up to `wait` for messages (long polling: an empty queue answers when one arrives or
    /// the wait is over).
    pub async fn receive(&self, wait: std::time::Duration) -> Result<Vec<Message>> {
        let seconds = i32::try_from(wait.as_secs().min(20)).unwrap_or(20);
        let out = self
            .client
            .receive_message()
            .queue_url(&self.url)
            .max_number_of_messages(BATCH)
            .wait_time_seconds(seconds)
            .send()
            .await
            .map_err(|e| Error::from_sdk("sqs:ReceiveMessage", e))?;
        Ok(out
            .messages()
            .iter()
            .filter_map(|m| {
                Some(Message {
                    id: m.message_id()?.to_owned(),
                    body: m.body().unwrap_or_default().to_owned(),
                    receipt: m.receipt_handle()?.to_owned(),
                })
            })
            .collect())
    }

    /// Delete a message that has been judged.
    pub async fn delete(&self, message: &Message) -> Result<()> {
        self.client
            .delete_message()
            .queue_url(&self.url)
            .receipt_handle(&message.receipt)
            .send()
            .await
            .map_err(|e| Error::from_sdk("sqs:DeleteMessage", e))?;
        Ok(())
    }
}
