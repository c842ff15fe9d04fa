//! `replay serve --chunking`: how a streamed answer is cut into writes, so that a team can show
//! its client's stream parser does not depend on how a provider happens to chunk. The bytes
//! served are the same in every mode; only where the writes fall differs.

use std::convert::Infallible;
use std::str::FromStr;

use axum::body::{Body, Bytes};

/// Where the writes of a streamed answer fall.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Chunking {
    /// One write per event, as providers send them (the default).
    #[default]
    Recorded,
    /// One write per line: an event's `event:` and `data:` lines and the blank line that ends
    /// it each arrive alone.
    Whole,
    /// Writes of N bytes, cutting through lines, JSON and UTF-8 sequences alike.
    Bytes(usize),
    /// The whole stream in one write.
    Coalesce,
}

impl FromStr for Chunking {
    type Err = String;

    fn from_str(s: &str) -> Result<Chunking, String> {
        match s {
            "recorded" => Ok(Chunking::Recorded),
            "whole" => Ok(Chunking::Whole),
            "coalesce" => Ok(Chunking::Coalesce),
            _ => match s.strip_prefix("bytes:").map(str::parse::<usize>) {
                Some(Ok(n)) if n > 0 => Ok(Chunking::Bytes(n)),
                _ => Err(format!(
                    "`{s}` is not a chunking: use recorded, whole, bytes:N (N at least 1) or coalesce"
                )),
            },
        }
    }
}

impl Chunking {
    /// The writes of `stream`, a server-sent-event body whose events end with a blank line.
    pub fn cut(self, stream: &str) -> Vec<Bytes> {
        let bytes = stream.as_bytes();
        let pieces: Vec<&[u8]> = match self {
            Chunking::Coalesce => vec![bytes],
            Chunking::Bytes(n) => bytes.chunks(n).collect(),
            Chunking::Recorded => split_after(bytes, b"\n\n"),
            Chunking::Whole => split_after(bytes, b"\n"),
        };
        pieces
            .into_iter()
            .filter(|p| !p.is_empty())
            .map(Bytes::copy_from_slice)
            .collect()
    }

    /// A response body that sends each piece as a write of its own: the stream yields to the
    /// server between pieces, so each is flushed before the next is taken.
    pub fn body(self, stream: &str) -> Body {
        let pieces = self.cut(stream).into_iter();
        Body::from_stream(futures::stream::unfold(
            (pieces, false),
            |(mut pieces, started)| async move {
                if started {
                    tokio::task::yield_now().await;
                }
                let next = pieces.next()?;
                Some((Ok::<Bytes, Infallible>(next), (pieces, true)))
            },
        ))
    }
}

/// `bytes` cut after each occurrence of `end`.
fn split_after<'b>(bytes: &'b [u8], end: &[u8]) -> Vec<&'b [u8]> {
    let mut out = Vec::new();
    let mut start = 0;
    for at in memchr::memmem::find_iter(bytes, end) {
        if at + end.len() > start {
            out.push(&bytes[start..at + end.len()]);
            start = at + end.len();
        }
    }
    out.push(&bytes[start..]);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_mode_serves_the_same_bytes_cut_where_it_says() {
        let stream = "event: a\ndata: {\"t\":\"é\"}\n\nevent: b\ndata: {}\n\n";
        for mode in ["recorded", "whole", "bytes:1", "bytes:7", "coalesce"] {
            let pieces = mode.parse::<Chunking>().unwrap().cut(stream);
            assert_eq!(pieces.concat(), stream.as_bytes(), "{mode}");
        }
        assert_eq!(Chunking::Recorded.cut(stream).len(), 2);
        assert_eq!(Chunking::Whole.cut(stream).len(), 6);
        assert_eq!(Chunking::Coalesce.cut(stream).len(), 1);
        let ones = Chunking::Bytes(1).cut(stream);
        assert_eq!(ones.len(), stream.len());
        // `é` is two bytes: one-byte writes cut through it.
        assert!(ones.iter().any(|p| std::str::from_utf8(p).is_err()));
        assert!("bytes:0".parse::<Chunking>().is_err());
        assert!("lines".parse::<Chunking>().is_err());
    }
}
