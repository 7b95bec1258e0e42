//! Every API request bounded in time and memory: a whole-request deadline
//! (kubectl's `--request-timeout`), an idle timeout between the bytes of an
//! answer, and a cap on the size of an answer's body. The connect timeout
//! is the connector's ([`crate::connect`]).
//!
//! A layer of the client's tower stack ([`BoundedLayer`]) wraps each call:
//! the wait for the answer's head counts against the deadline, and the body
//! ([`BoundedBody`]) fails as soon as the deadline passes, no byte came for
//! the idle timeout, or more than the cap was read. The failures are
//! [`Exceeded`] errors, which kube-rs passes through as the source of its
//! own; [`crate::Error::from_kube`] turns them into
//! [`Error::Timeout`](crate::Error::Timeout) and
//! [`Error::TooLarge`](crate::Error::TooLarge).
//!
//! Watches (the coming `serve`) must not get the whole-request deadline: a
//! healthy watch lasts minutes. They will ask the server to end the watch
//! with `timeoutSeconds` and keep only the idle timeout (a watch with
//! bookmarks hears from the server at least once a minute): give them a
//! client built with `ApiLimits { request_timeout: None, .. }` and an idle
//! timeout above the bookmark period (see [`ApiLimits`]).

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::Bytes;
use http_body::{Body, Frame, SizeHint};
use podplace_model::load::limits;
use tokio::time::{Instant, Sleep};
use tower::{BoxError, Layer, Service};

/// The bounds of every API request, with the defaults of
/// [`podplace_model::load::limits`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ApiLimits {
    /// The whole request, from sending it to the last byte of the answer;
    /// `None` waits forever (kubectl's `--request-timeout 0`; the connect
    /// and idle timeouts still hold).
    pub request_timeout: Option<Duration>,
    /// Opening the connection (TCP and TLS); at most the request timeout.
    pub connect_timeout: Duration,
    /// The longest an answer may go without a byte once it started; at
    /// most the request timeout.
    pub idle_timeout: Duration,
    /// The largest answer body read.
    pub max_response_bytes: u64,
}

impl Default for ApiLimits {
    fn default() -> Self {
        ApiLimits::with_request_timeout(Some(limits::REQUEST_TIMEOUT))
    }
}

impl ApiLimits {
    /// The default limits with `request_timeout` (`None`: no whole-request
    /// deadline): the connect and idle timeouts are the defaults, shortened
    /// to the request timeout when it is shorter.
    pub fn with_request_timeout(request_timeout: Option<Duration>) -> ApiLimits {
        let at_most = |d: Duration| request_timeout.map_or(d, |t| d.min(t));
        ApiLimits {
            request_timeout,
            connect_timeout: at_most(limits::CONNECT_TIMEOUT),
            idle_timeout: at_most(limits::READ_IDLE_TIMEOUT),
            max_response_bytes: limits::MAX_RESPONSE_BYTES,
        }
    }
}

/// Which bound a request exceeded.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Bound {
    /// The whole-request deadline.
    Request,
    /// No byte for the idle timeout.
    Idle,
    /// Opening the connection.
    Connect,
    /// The answer was larger than the cap.
    Size,
}

/// A request exceeded one of its bounds: the server it was sent to, the
/// bound and its value.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{server}: {}", self.describe())]
pub struct Exceeded {
    /// `https://host:port` of the API server.
    pub server: String,
    /// Which bound.
    pub bound: Bound,
    /// The bound's value: a duration, or for [`Bound::Size`] the byte cap.
    pub timeout: Duration,
    /// The byte cap, for [`Bound::Size`].
    pub max_bytes: u64,
}

impl Exceeded {
    fn describe(&self) -> String {
        let secs = humanize(self.timeout);
        match self.bound {
            Bound::Request => format!("no complete answer within the request timeout of {secs}"),
            Bound::Idle => format!("the answer stalled: no byte for {secs}"),
            Bound::Connect => format!("could not connect within {secs}"),
            Bound::Size => format!(
                "the answer is larger than the response limit of {}",
                limits::Bytes(self.max_bytes)
            ),
        }
    }
}

/// `60s`, `1.5s`, `250ms`.
pub(crate) fn humanize(d: Duration) -> String {
    if d.subsec_nanos() == 0 {
        format!("{}s", d.as_secs())
    } else if d < Duration::from_secs(1) {
        format!("{}ms", d.as_millis())
    } else {
        format!("{}s", d.as_secs_f64())
    }
}

/// The tower layer bounding each request.
#[derive(Debug, Clone, Copy)]
pub(crate) struct BoundedLayer(pub(crate) ApiLimits);

impl<S> Layer<S> for BoundedLayer {
    type Service = BoundedService<S>;

    fn layer(&self, inner: S) -> BoundedService<S> {
        BoundedService {
            inner,
            limits: self.0,
        }
    }
}

/// [`BoundedLayer`]'s service.
#[derive(Debug, Clone)]
pub(crate) struct BoundedService<S> {
    inner: S,
    limits: ApiLimits,
}

type BoxFuture<T> = Pin<Box<dyn Future<Output = T> + Send>>;

impl<S, ReqB, ResB> Service<http::Request<ReqB>> for BoundedService<S>
where
    S: Service<http::Request<ReqB>, Response = http::Response<ResB>>,
    S::Error: Into<BoxError>,
    S::Future: Send + 'static,
    ResB: Body<Data = Bytes> + Unpin + Send + 'static,
    ResB::Error: Into<BoxError>,
{
    type Response = http::Response<BoundedBody<ResB>>;
    type Error = BoxError;
    type Future = BoxFuture<Result<Self::Response, BoxError>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), BoxError>> {
        self.inner.poll_ready(cx).map_err(Into::into)
    }

    fn call(&mut self, request: http::Request<ReqB>) -> Self::Future {
        let limits = self.limits;
        let uri = request.uri();
        let server = match (uri.scheme_str(), uri.authority()) {
            (Some(scheme), Some(authority)) => format!("{scheme}://{authority}"),
            _ => "the API server".to_string(),
        };
        let deadline = limits.request_timeout.map(|t| Instant::now() + t);
        let call = self.inner.call(request);
        Box::pin(async move {
            let exceeded = |bound: Bound, timeout: Duration| Exceeded {
                server: server.clone(),
                bound,
                timeout,
                max_bytes: limits.max_response_bytes,
            };
            let answered = match deadline {
                Some(deadline) => match tokio::time::timeout_at(deadline, call).await {
                    Ok(answered) => answered,
                    Err(_) => {
                        return Err(exceeded(
                            Bound::Request,
                            limits.request_timeout.unwrap_or_default(),
                        )
                        .into())
                    }
                },
                None => call.await,
            };
            let response = answered.map_err(|e| {
                let e: BoxError = e.into();
                if connect_timed_out(&*e) {
                    BoxError::from(exceeded(Bound::Connect, limits.connect_timeout))
                } else {
                    e
                }
            })?;
            let declared = response
                .headers()
                .get(http::header::CONTENT_LENGTH)
                .and_then(|v| v.to_str().ok())
                .and_then(|v| v.parse::<u64>().ok());
            if declared.is_some_and(|n| n > limits.max_response_bytes) {
                return Err(exceeded(Bound::Size, Duration::ZERO).into());
            }
            Ok(response.map(|inner| BoundedBody {
                inner,
                deadline: deadline.map(|d| Box::pin(tokio::time::sleep_until(d))),
                idle: Box::pin(tokio::time::sleep(limits.idle_timeout)),
                read: 0,
                limits,
                server,
            }))
        })
    }
}

/// Whether an error of the connector is its connect timeout (an I/O error
/// of kind `TimedOut` anywhere in its chain).
fn connect_timed_out(e: &(dyn std::error::Error + 'static)) -> bool {
    let mut current = Some(e);
    while let Some(e) = current {
        if let Some(io) = e.downcast_ref::<std::io::Error>() {
            if io.kind() == std::io::ErrorKind::TimedOut {
                return true;
            }
        }
        current = e.source();
    }
    false
}

/// An answer's body that fails once the request's deadline passes, no byte
/// came for the idle timeout, or it grew past the cap.
pub(crate) struct BoundedBody<B> {
    inner: B,
    deadline: Option<Pin<Box<Sleep>>>,
    idle: Pin<Box<Sleep>>,
    read: u64,
    limits: ApiLimits,
    server: String,
}

impl<B> BoundedBody<B> {
    fn fail(&self, bound: Bound, timeout: Duration) -> BoxError {
        Exceeded {
            server: self.server.clone(),
            bound,
            timeout,
            max_bytes: self.limits.max_response_bytes,
        }
        .into()
    }
}

impl<B> Body for BoundedBody<B>
where
    B: Body<Data = Bytes> + Unpin,
    B::Error: Into<BoxError>,
{
    type Data = Bytes;
    type Error = BoxError;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, BoxError>>> {
        let this = &mut *self;
        if let Poll::Ready(frame) = Pin::new(&mut this.inner).poll_frame(cx) {
            return Poll::Ready(match frame {
                Some(Ok(frame)) => {
                    if let Some(data) = frame.data_ref() {
                        this.read = this.read.saturating_add(data.len() as u64);
                        if this.read > this.limits.max_response_bytes {
                            return Poll::Ready(Some(Err(this.fail(Bound::Size, Duration::ZERO))));
                        }
                    }
                    let next = Instant::now() + this.limits.idle_timeout;
                    this.idle.as_mut().reset(next);
                    Some(Ok(frame))
                }
                Some(Err(e)) => Some(Err(e.into())),
                None => None,
            });
        }
        if let Some(deadline) = this.deadline.as_mut() {
            if deadline.as_mut().poll(cx).is_ready() {
                let timeout = this.limits.request_timeout.unwrap_or_default();
                return Poll::Ready(Some(Err(this.fail(Bound::Request, timeout))));
            }
        }
        if this.idle.as_mut().poll(cx).is_ready() {
            let idle = this.limits.idle_timeout;
            return Poll::Ready(Some(Err(this.fail(Bound::Idle, idle))));
        }
        Poll::Pending
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.inner.size_hint()
    }
}
