//! A request's body as the proxy forwards it. A small body is read whole before the
//! request is dispatched (HAProxy's `option http-buffer-request`, nginx's
//! `proxy_request_buffering`), so a client trickling it holds no backend connection
//! and is answered 408 after `limits.body_timeout`; a larger one streams, its first
//! `limits.buffer_body` bytes already read.

use std::time::Duration;

use bytes::{Bytes, BytesMut};
use http_body::Body;
use http_body_util::BodyExt;
use hyper::body::Incoming;

pub enum ClientBody {
    /// All of it (empty: no body).
    Whole(Bytes),
    /// What was read before the buffer filled, then the rest as it comes.
    Streaming(Bytes, Incoming),
}

/// Why a body could not be read before dispatch.
pub enum Unread {
    /// The client's body broke off (connection closed or framing error).
    BrokeOff,
    /// It did not come within the time allowed.
    TimedOut,
}

impl ClientBody {
    /// Read `body` whole if it ends within `limit` bytes; else stop once more than
    /// `limit` have come (or at once, when its declared length says so). Within
    /// `within`; no timer is set for a request without a body.
    pub async fn read(
        body: Incoming,
        limit: usize,
        within: Duration,
    ) -> Result<ClientBody, Unread> {
        if body.is_end_stream() {
            return Ok(ClientBody::Whole(Bytes::new()));
        }
        if body.size_hint().exact().is_some_and(|n| n > limit as u64) {
            return Ok(ClientBody::Streaming(Bytes::new(), body));
        }
        tokio::time::timeout(within, Self::buffer(body, limit))
            .await
            .unwrap_or(Err(Unread::TimedOut))
    }

    async fn buffer(mut body: Incoming, limit: usize) -> Result<ClientBody, Unread> {
        let mut read = BytesMut::new();
        while let Some(frame) = body.frame().await {
            // Trailers are not forwarded: only data frames count.
            if let Ok(data) = frame.map_err(|_| Unread::BrokeOff)?.into_data() {
                read.extend_from_slice(&data);
                if read.len() > limit {
                    return Ok(ClientBody::Streaming(read.freeze(), body));
                }
            }
        }
        Ok(ClientBody::Whole(read.freeze()))
    }

    /// No body to send.
    pub fn is_empty(&self) -> bool {
        matches!(self, ClientBody::Whole(b) if b.is_empty())
    }

    /// The length to declare toward the backend, when known before sending.
    pub fn length(&self) -> Option<u64> {
        match self {
            ClientBody::Whole(b) => Some(b.len() as u64),
            ClientBody::Streaming(read, rest) => {
                rest.size_hint().exact().map(|n| n + read.len() as u64)
            }
        }
    }
}
