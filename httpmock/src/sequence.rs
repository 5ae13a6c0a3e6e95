//! Answers of one operation in order, counted: what a retry test scripts (`503, 503, then
//! 200`), like aws-smithy-mocks' `.sequence().times(n)`.

use std::fmt;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use httpmock::{Mock, MockServer};

/// Answers of one operation in order, from `server.<operation>_sequence(|when| ..)` (one per
/// operation on [`MockServerExt`](crate::MockServerExt)): each step answers the matching
/// requests that reach it a number of times (once unless [`times`](Sequence::times) says
/// otherwise), then the next step answers.
///
/// ```
/// use pubapi_httpmock::httpmock::MockServer;
/// use pubapi_httpmock::{MockServerExt, base_url};
/// use pubapi_sdk_ext::types::WebhookSummary;
/// use pubapi_sdk_ext::{Client, SecretToken, serde_json};
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
/// let server = MockServer::start_async().await;
/// let client = Client::builder().base_url(&base_url(&server)).token(SecretToken::try_from("t")?).build()?;
/// let enabled: WebhookSummary =
///     serde_json::from_str(r#"{"webhookId": "wh-1", "expires": 1900000000, "status": "enabled"}"#)?;
/// let status = server
///     .get_webhook_status_sequence(|when| {
///         when.webhook_id("wh-1");
///     })
///     .status(503)
///     .times(2)
///     .then(|then| {
///         then.ok(&enabled);
///     })
///     .build();
///
/// // The client's default retries (3 attempts) see 503, 503, then the answer.
/// client.webhooks().status("wh-1").await?;
/// assert_eq!(status.calls(), 3);
/// assert_eq!(status.step_calls(), [2, 1]);
/// # Ok(())
/// # }
/// ```
///
/// A request the steps have all answered is no longer the sequence's: it goes to the
/// server's other mocks, or gets httpmock's own 404 (end with
/// [`repeatedly`](Sequence::repeatedly) to answer it). Each step is one httpmock mock
/// registered on the server (see [`SequenceMock::steps`]); a mock registered before them that
/// matches the same request answers first. Steps advance through one of httpmock's custom
/// matchers, which work on a local `MockServer` (not on a remote one), and which httpmock
/// evaluates after the method, path, query, headers and JSON body: a step counts only the
/// requests its `When` matches.
pub struct Sequence<'a, W, T> {
    server: &'a MockServer,
    when_fn: Box<dyn Fn(W) + 'a>,
    new_when: fn(httpmock::When) -> W,
    new_then: fn(httpmock::Then) -> T,
    steps: Vec<Step<'a, T>>,
}

/// One step: its answer and how many requests it answers (`None`: every one after).
struct Step<'a, T> {
    answer: Answer<'a, T>,
    times: Option<usize>,
}

enum Answer<'a, T> {
    Typed(Box<dyn FnOnce(T) + 'a>),
    Status(u16),
}

impl<W, T> fmt::Debug for Sequence<'_, W, T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let steps: Vec<String> = self
            .steps
            .iter()
            .map(|step| {
                let answer = match step.answer {
                    Answer::Typed(_) => "typed".to_string(),
                    Answer::Status(status) => status.to_string(),
                };
                match step.times {
                    Some(n) => format!("{answer} x{n}"),
                    None => format!("{answer} repeatedly"),
                }
            })
            .collect();
        f.debug_struct("Sequence").field("steps", &steps).finish()
    }
}

impl<'a, W, T> Sequence<'a, W, T> {
    /// A sequence on `server` whose steps match what `when_fn` narrows the operation's `When`
    /// (built by `new_when`) to, and answer through its `Then` (built by `new_then`). The
    /// generated `<operation>_sequence` methods call it with the operation's typed pair.
    pub fn new(
        server: &'a MockServer,
        when_fn: impl Fn(W) + 'a,
        new_when: fn(httpmock::When) -> W,
        new_then: fn(httpmock::Then) -> T,
    ) -> Self {
        Sequence {
            server,
            when_fn: Box::new(when_fn),
            new_when,
            new_then,
            steps: Vec::new(),
        }
    }

    /// A step answering with the operation's typed `Then` (`then.ok(&body)`,
    /// `then.too_many_requests().retry_after(3)`), once unless [`times`](Sequence::times)
    /// follows.
    #[must_use]
    pub fn then(mut self, answer: impl FnOnce(T) + 'a) -> Self {
        self.steps.push(Step {
            answer: Answer::Typed(Box::new(answer)),
            times: Some(1),
        });
        self
    }

    /// A step answering with `status` and no body (`503`, which the reference does not
    /// document but gateways send), once unless [`times`](Sequence::times) follows.
    #[must_use]
    pub fn status(mut self, status: u16) -> Self {
        self.steps.push(Step {
            answer: Answer::Status(status),
            times: Some(1),
        });
        self
    }

    /// The last step answers `n` requests (0: none, the step is skipped). Before any step,
    /// it does nothing.
    #[must_use]
    pub fn times(mut self, n: usize) -> Self {
        if let Some(step) = self.steps.last_mut() {
            step.times = Some(n);
        }
        self
    }

    /// The last step answers every request that reaches it, however many. Before any step,
    /// it does nothing.
    #[must_use]
    pub fn repeatedly(mut self) -> Self {
        if let Some(step) = self.steps.last_mut() {
            step.times = None;
        }
        self
    }

    /// Registers the steps on the server, in order; what answered is counted on the
    /// returned [`SequenceMock`].
    pub fn build(self) -> SequenceMock<'a> {
        let answered = Arc::new(AtomicUsize::new(0));
        let mut steps = Vec::with_capacity(self.steps.len());
        let mut first = 0usize;
        for step in self.steps {
            let last = step.times.map_or(usize::MAX, |n| first.saturating_add(n));
            let (from, to) = (first, last);
            let counter = Arc::clone(&answered);
            let when_fn = &self.when_fn;
            let (new_when, new_then) = (self.new_when, self.new_then);
            let answer = step.answer;
            let mock = self.server.mock(move |when, then| {
                // The server calls this only for a request every other matcher of the step
                // accepts, one request at a time: the position moves once per answer.
                let when = when.is_true(move |_| {
                    let position = counter.load(Ordering::SeqCst);
                    let mine = (from..to).contains(&position);
                    if mine {
                        counter.fetch_add(1, Ordering::SeqCst);
                    }
                    mine
                });
                when_fn(new_when(when));
                match answer {
                    Answer::Typed(answer) => answer(new_then(then)),
                    Answer::Status(status) => {
                        then.status(status);
                    }
                }
            });
            steps.push((mock, step.times));
            first = last;
        }
        SequenceMock { steps, answered }
    }
}

/// A [`Sequence`] registered on its server: how many requests it answered, in all and by
/// step, in httpmock 0.8's words (`calls`, `assert_calls`, not the `hits` it deprecated).
pub struct SequenceMock<'a> {
    steps: Vec<(Mock<'a>, Option<usize>)>,
    answered: Arc<AtomicUsize>,
}

impl fmt::Debug for SequenceMock<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SequenceMock")
            .field("steps", &self.steps.len())
            .field("calls", &self.calls())
            .finish()
    }
}

impl<'a> SequenceMock<'a> {
    /// The requests the sequence answered, all steps together (httpmock's `Mock::calls`
    /// for the whole sequence).
    pub fn calls(&self) -> usize {
        self.answered.load(Ordering::SeqCst)
    }

    /// The requests each step answered, in order (read from the count of the whole, without
    /// asking the server).
    pub fn step_calls(&self) -> Vec<usize> {
        let mut left = self.calls();
        self.steps
            .iter()
            .map(|(_, times)| {
                let here = times.map_or(left, |n| n.min(left));
                left -= here;
                here
            })
            .collect()
    }

    /// Panics unless the sequence answered exactly `count` requests (httpmock's
    /// `Mock::assert_calls` for the whole sequence).
    #[track_caller]
    pub fn assert_calls(&self, count: usize) {
        assert_eq!(
            self.calls(),
            count,
            "the sequence answered {} requests, not {count} (by step: {:?})",
            self.calls(),
            self.step_calls()
        );
    }

    /// Panics unless every step answered as many requests as it was given (a step that
    /// answers [`repeatedly`](Sequence::repeatedly), at least once).
    #[track_caller]
    pub fn assert_exhausted(&self) {
        let calls = self.step_calls();
        for (index, ((_, times), answered)) in self.steps.iter().zip(&calls).enumerate() {
            let done = match times {
                Some(n) => answered == n,
                None => *answered > 0,
            };
            assert!(
                done,
                "step {index} of the sequence answered {answered} of {} requests (by step: {calls:?})",
                times.map_or("its".to_string(), |n| n.to_string())
            );
        }
    }

    /// The httpmock mocks of the steps, in order (each one's `calls()`, `delete()`).
    pub fn steps(&self) -> impl Iterator<Item = &Mock<'a>> {
        self.steps.iter().map(|(mock, _)| mock)
    }

    /// Removes every step from the server.
    pub fn delete(&mut self) {
        for (mock, _) in &mut self.steps {
            mock.delete();
        }
    }
}
