//! Every API request is bounded in time and memory, against a test API
//! server that misbehaves ([`Misbehavior`]): one that never answers,
//! trickles a byte at a time, streams an endless body, or hands out
//! continue tokens that repeat or never end. Each case ends with an error
//! naming the server and the bound, within a few seconds and a known number
//! of requests.

use std::time::{Duration, Instant};

use podplace_kube::testserver::{Misbehavior, TestServer};
use podplace_kube::{fetch_inventory, list_pods, ApiLimits, Error, FetchOptions};

/// How long any case may take, whatever happens.
const CEILING: Duration = Duration::from_secs(30);

async fn client(server: &TestServer, limits: ApiLimits) -> podplace_kube::Client {
    server.client(None, &limits).await.unwrap()
}

fn limits(request: u64, idle: u64, max_bytes: u64) -> ApiLimits {
    ApiLimits {
        request_timeout: Some(Duration::from_millis(request)),
        connect_timeout: Duration::from_secs(5),
        idle_timeout: Duration::from_millis(idle),
        max_response_bytes: max_bytes,
    }
}

/// Lists pods with `opts` under [`CEILING`]: the error and how long it took.
async fn list_fails(client: &podplace_kube::Client, opts: &FetchOptions) -> (Error, Duration) {
    let start = Instant::now();
    let got = tokio::time::timeout(CEILING, list_pods(client, None, None, opts))
        .await
        .expect("bounded: the list ended within the ceiling");
    (got.expect_err("the list fails"), start.elapsed())
}

#[tokio::test]
async fn a_misbehaving_server_ends_each_request_at_its_bound() {
    struct Case {
        how: Misbehavior,
        limits: ApiLimits,
        /// Text the error must hold (the server's URL is checked too).
        expect: &'static str,
        /// Bounds on how long it took.
        between: (Duration, Duration),
    }
    let ms = Duration::from_millis;
    let cases = [
        Case {
            how: Misbehavior::Hang,
            limits: limits(800, 10_000, 1 << 20),
            expect: "did not answer in time: no complete answer within the request timeout of 800ms; raise it with --request-timeout",
            between: (ms(700), ms(5_000)),
        },
        Case {
            // A byte every 100 ms never lets the idle timeout fire: the
            // whole-request deadline ends it.
            how: Misbehavior::Trickle(ms(100)),
            limits: limits(1_500, 1_000, 1 << 20),
            expect: "no complete answer within the request timeout of 1.5s",
            between: (ms(1_400), ms(6_000)),
        },
        Case {
            // A byte every 5 s: the idle timeout ends it first.
            how: Misbehavior::Trickle(Duration::from_secs(5)),
            limits: limits(20_000, 700, 1 << 20),
            expect: "the answer stalled, no byte for 700ms",
            between: (ms(600), ms(5_000)),
        },
        Case {
            how: Misbehavior::EndlessBody,
            limits: limits(20_000, 5_000, 4 << 20),
            expect: "the answer is larger than the response limit of 4 MiB (raise it with --max-response-size",
            between: (Duration::ZERO, ms(15_000)),
        },
    ];
    for case in cases {
        let server = TestServer::start().unwrap();
        server.misbehave("GET", "/api/v1/pods", case.how);
        let client = client(&server, case.limits).await;
        let (err, took) = list_fails(&client, &FetchOptions::default()).await;
        let text = err.to_string();
        assert!(
            text.starts_with(&format!("list pods: {}", server.url())) && text.contains(case.expect),
            "{:?}: {text}",
            case.how
        );
        assert_eq!(err.exit_code(), 3, "{:?}", case.how);
        assert!(
            took >= case.between.0 && took <= case.between.1,
            "{:?} took {took:?}",
            case.how
        );
        assert_eq!(server.requests().len(), 1, "{:?}: one request", case.how);
    }
}

#[tokio::test]
async fn an_answer_declared_larger_than_the_cap_is_refused_before_its_body() {
    let server = TestServer::start().unwrap();
    let client = client(&server, limits(20_000, 5_000, 1_000)).await;
    let err = tokio::time::timeout(CEILING, fetch_inventory(&client, &FetchOptions::default()))
        .await
        .unwrap()
        .expect_err("the recorded node list is over 1000 bytes");
    assert!(matches!(err, Error::TooLarge { .. }), "{err:?}");
    assert!(
        err.to_string().starts_with("list nodes: http://127.0.0.1:"),
        "{err}"
    );
}

#[tokio::test]
async fn a_repeated_continue_token_stops_the_list_at_once() {
    let server = TestServer::start().unwrap();
    server.misbehave("GET", "/api/v1/pods", Misbehavior::RepeatContinue);
    let client = client(&server, ApiLimits::default()).await;
    let (err, _) = list_fails(&client, &FetchOptions::default()).await;
    assert!(matches!(err, Error::EndlessList { .. }), "{err:?}");
    assert_eq!(
        err.to_string(),
        "list pods: the API server handed out the same continue token again after 2 pages: the list would never end; stopping"
    );
    assert_eq!(err.exit_code(), 3);
    let requests = server.requests();
    assert_eq!(requests.len(), 2);
    assert_eq!(requests[0].query_value("continue"), None);
    assert_eq!(
        requests[1].query_value("continue"),
        Some("podplace-testserver-again")
    );
}

#[tokio::test]
async fn a_list_whose_tokens_never_end_stops_at_the_page_limit() {
    let server = TestServer::start().unwrap();
    server.misbehave("GET", "/api/v1/pods", Misbehavior::EndlessContinue);
    let client = client(&server, ApiLimits::default()).await;
    // A page size at which no supported cluster needs more than the
    // minimum page limit.
    let opts = FetchOptions {
        page_size: 1_000_000,
        ..FetchOptions::default()
    };
    let max = podplace_model::load::limits::max_list_pages(opts.page_size);
    assert_eq!(max, podplace_model::load::limits::MIN_LIST_PAGES);
    let (err, _) = list_fails(&client, &opts).await;
    assert_eq!(
        err.to_string(),
        format!("list pods: the API server returned {max} pages ({max} objects) and the list goes on; stopping (at --page-size 1000000 no supported cluster needs more than {max})")
    );
    assert_eq!(server.requests().len() as u64, max);
}

#[tokio::test]
async fn the_default_limits_follow_the_request_timeout() {
    let d = ApiLimits::default();
    assert_eq!(d.request_timeout, Some(Duration::from_secs(60)));
    assert_eq!(
        (d.connect_timeout, d.idle_timeout),
        (Duration::from_secs(10), Duration::from_secs(30))
    );
    let short = ApiLimits::with_request_timeout(Some(Duration::from_secs(2)));
    assert_eq!(
        (short.connect_timeout, short.idle_timeout),
        (Duration::from_secs(2), Duration::from_secs(2))
    );
    let none = ApiLimits::with_request_timeout(None);
    assert_eq!(
        (none.request_timeout, none.idle_timeout),
        (None, Duration::from_secs(30))
    );
}
