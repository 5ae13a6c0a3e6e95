//! The machinery every request of a [`Client`](crate::Client) goes through, private: callers
//! see only the client, its builder options and [`Error`](crate::Error).
//!
//! Every operation, whether called through an area handle, the generated client behind
//! [`Client::sdk`](crate::Client::sdk) or built by hand (CSV reports), runs through
//! [`policy::Policy::run`], in this order:
//!
//! 1. **validate** ([`validate`]): the reference's rules the spec cannot state (webhook URLs,
//!    event names, questions, audit dates, event counts).
//! 2. **check the operation and its URL** ([`policy`], the URL's in its `url` part): an
//!    operation past its sunset is refused, path-valued query parameters are re-encoded, and
//!    the URL must still have the operation's path shape with every path value one valid
//!    segment.
//! 3. **impersonate** ([`policy`]): exactly one act-as header, the call's own (validated) or
//!    the view's.
//! 4. then each attempt, until the operation's deadline ([`retry::RetryConfig`], or the view's
//!    [`CallOptions`](crate::options::CallOptions), which may also add headers, give the id
//!    and bound each attempt), in the
//!    named phases of [`policy`] (`try_op`, `decide` and `finish` in its `call` part,
//!    `try_attempt` in its own):
//!    1. **token**: from the client's [`TokenSource`](crate::TokenSource);
//!    2. **pace** ([`limiter`]): wait for a slot of the token's pacer (shared by every
//!       client of the token in the process, or through a [fleet](crate::fleet)'s store: the
//!       limiter's `fleet` and `health` parts);
//!    3. **send** through the client's [`Transport`](crate::Transport), with the bearer
//!       token, keeping what the next attempt needs to send it again ([`replay`]), in a
//!       span of the attempt's own ([`attempt`]); the builder's
//!       [interceptors](crate::interceptor) add their headers before (after the replay is
//!       kept, so each attempt has only theirs) and see the answer after, in the attempt's
//!       span; with feature `otel`, the attempt's trace context is the last header set;
//!    4. **judge** ([`crate::verdict`], the one place that reads a status): success,
//!       throttled, daily quota used up, server error, no answer, or final; the gateway's
//!       counters and a used-up quota go to the pacer;
//!    5. **retry or stop** ([`retry`]): a 401 gets one try with a fresh token; otherwise the
//!       verdict decides: done, give up, or wait (the capped `Retry-After`, or a jittered
//!       backoff) and go back to 4.1.
//! 5. **read the failed body** ([`failed`]): a final answer of 400 or more has its body read
//!    (at most 1 MiB) and kept with the operation it answered and the verdict of step 4.4.
//! 6. **typed error** ([`into_error`]): the generated code hands a failed answer back as its
//!    own error, and `?` turns that into [`Error`](crate::Error), built from the verdict the
//!    failed body carries (the answer is judged once): the body is decoded with the spec's
//!    type of the operation's error format.
//!
//! A refusal of steps 1 to 4 ([`rejection`]) never reaches the server and has no status:
//! the generated client's hook can only answer a response or a `reqwest::Error`, so the
//! policy answers an error whose source is the [`rejection::LocalRejection`], which becomes
//! its own variant of [`Error`](crate::Error).
//!
//! The token endpoint's requests, which a [`TokenSource`](crate::TokenSource) sends itself,
//! reuse steps 4.2 to 4.5 through [`token_endpoint`] (re-exported from [`crate::token`]).

pub(crate) mod attempt;
pub(crate) mod failed;
pub(crate) mod into_error;
pub(crate) mod limiter;
pub(crate) mod policy;
#[cfg(test)]
mod proptest_untrusted;
pub(crate) mod rejection;
pub(crate) mod replay;
pub(crate) mod retry;
pub(crate) mod silence;
pub(crate) mod success_body;
pub(crate) mod token_endpoint;
pub(crate) mod validate;
