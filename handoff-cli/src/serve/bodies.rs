//! Request bodies, read whole before they are parsed, within three bounds (issue 45):
//!
//! - a size: [`MAX_BODY_BYTES`], refused as soon as a `Content-Length` announces more (a
//!   client that sent `Expect: 100-continue` is told before it sends anything), or as soon as a
//!   chunked body grows past it;
//! - a time: the body must have arrived within the idle timeout of its head, so that a client
//!   that announces a body and stops sending holds its connection that long and no longer (the
//!   head's own deadline is hyper's, in `connections`);
//! - the bytes buffered at once: [`BUFFERED_AT_ONCE`] across every request, held from before
//!   the body is read until its answer is made (the parsed arguments and what the operation
//!   makes of them grow with it). A request whose announced body does not fit waits its turn,
//!   no longer than the idle timeout, then is answered `503 BUSY`; a chunked body, whose length
//!   is not known before, takes its share as it arrives, within its own deadline.

use std::future::poll_fn;
use std::pin::Pin;
use std::time::Duration;

use axum::body::{Body, HttpBody};
use axum::http::{HeaderMap, StatusCode, header};
use tokio::sync::{Semaphore, SemaphorePermit};

use super::Refusal;

/// The largest request body: a bundle's portable JSON at its largest (64 MiB) and 64 KiB for
/// the arguments around it, 67,174,400 bytes.
pub(super) const MAX_BODY_BYTES: usize = handoff_core::bundle::MAX_BUNDLE_BYTES + 64 * 1024;

/// The most bytes of request bodies held at once: two of the largest. About five times as much
/// memory goes with a body while it is parsed and used, so the server's memory stays under a
/// gigabyte or so however many large bodies arrive together.
pub(super) const BUFFERED_AT_ONCE: usize = 2 * MAX_BODY_BYTES;

static BUFFERED: Semaphore = Semaphore::const_new(BUFFERED_AT_ONCE);

/// A body read whole, and its share of [`BUFFERED_AT_ONCE`], given back when this is dropped.
pub(super) struct Read {
    pub bytes: Vec<u8>,
    _held: Option<SemaphorePermit<'static>>,
}

/// Reads `body` whole, as the module says: its bytes, or why they were refused.
pub(super) async fn read(
    body: Body,
    headers: &HeaderMap,
    deadline: Duration,
) -> Result<Read, Refusal> {
    let announced = headers
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.trim().parse::<u64>().ok());
    if announced.is_some_and(|n| n > MAX_BODY_BYTES as u64) {
        return Err(too_large());
    }
    if announced == Some(0) {
        return Ok(Read {
            bytes: Vec::new(),
            _held: None,
        });
    }
    // With its length announced, the body's share is taken whole before it is read: a request
    // never holds part of the budget while it waits for the rest.
    let mut held = match announced {
        Some(n) => {
            let n = u32::try_from(n).map_err(|_| too_large())?;
            match tokio::time::timeout(deadline, BUFFERED.acquire_many(n)).await {
                Ok(Ok(permit)) => Some(permit),
                _ => return Err(busy()),
            }
        }
        None => None,
    };
    let capacity = announced.map_or(0, |n| n as usize);
    let reading = async {
        let mut bytes = Vec::with_capacity(capacity);
        let mut body = body;
        while let Some(frame) = poll_fn(|cx| Pin::new(&mut body).poll_frame(cx)).await {
            let frame = frame.map_err(|e| {
                Refusal::invalid(
                    StatusCode::BAD_REQUEST,
                    "body",
                    format!("could not be read: {e}"),
                )
            })?;
            let Ok(data) = frame.into_data() else {
                continue;
            };
            if bytes.len() + data.len() > MAX_BODY_BYTES {
                return Err(too_large());
            }
            // A chunked body takes its share as it arrives.
            if announced.is_none() {
                let more = u32::try_from(data.len()).map_err(|_| too_large())?;
                let permit = BUFFERED.acquire_many(more).await.map_err(|_| busy())?;
                match &mut held {
                    Some(held) => held.merge(permit),
                    None => held = Some(permit),
                }
            }
            bytes.extend_from_slice(&data);
        }
        Ok(bytes)
    };
    let outcome = tokio::time::timeout(deadline, reading).await;
    match outcome {
        Ok(Ok(bytes)) => Ok(Read { bytes, _held: held }),
        Ok(Err(refusal)) => Err(refusal),
        Err(_) => Err(Refusal::invalid(
            StatusCode::REQUEST_TIMEOUT,
            "body",
            format!(
                "must arrive whole within {} s of the request's head (--idle-timeout)",
                deadline.as_secs()
            ),
        )),
    }
}

fn too_large() -> Refusal {
    Refusal::invalid(
        StatusCode::PAYLOAD_TOO_LARGE,
        "body",
        format!("must be at most {MAX_BODY_BYTES} bytes"),
    )
}

fn busy() -> Refusal {
    Refusal {
        status: StatusCode::SERVICE_UNAVAILABLE,
        code: "BUSY",
        field: "body",
        rule: format!(
            "waits for room: the server holds {BUFFERED_AT_ONCE} bytes of request bodies at \
             most at once, and others filled them for too long; try again"
        ),
    }
}
