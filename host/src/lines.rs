//! Reading newline-delimited JSON with a bound, as both ends of MCP over stdio do (the client
//! reads a server's stdout, the server its client's stdin): a line longer than the bound is
//! read to its end and thrown away, and what is kept of it is its size and its JSON-RPC `id`,
//! so that the request it was (or answered) is answered at once instead of waiting for a
//! timeout.
//!
//! Written here rather than taken from a crate: `tokio_util`'s `LinesCodec` with a maximum
//! length discards an oversized line without looking into it, and finding the `id` of a line
//! that is not kept needs the small scanner below.

use std::io;

use tokio::io::{AsyncBufRead, AsyncBufReadExt};

/// What [`LineReader::next`] read.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Line {
    /// A whole line within the bound: [`LineReader::line`] holds it (without its `\n`).
    Whole,
    /// A line over the bound: its size, and the top-level `"id"` of the JSON object it held
    /// (raw JSON text), when it had one.
    Oversized { size: usize, id: Option<Vec<u8>> },
}

/// Reads lines of at most a bound, one after the other. Cancel-safe: what was read of a line
/// stays here, and the next call goes on with it (rmcp may drop a read to send something).
#[derive(Debug)]
pub(crate) struct LineReader {
    /// The line read so far, within the bound.
    line: Vec<u8>,
    /// The line being read is over the bound: its size so far, and its `id` looked for.
    oversized: Option<(usize, IdScanner)>,
    /// The last call returned a line: the next one begins another.
    returned: bool,
    max: usize,
}

impl LineReader {
    /// A reader of lines of at most `max` bytes.
    pub(crate) fn new(max: usize) -> Self {
        Self {
            line: Vec::new(),
            oversized: None,
            returned: false,
            max,
        }
    }

    /// The bound (told in `host mcp`'s answer to an oversized line).
    #[cfg(feature = "mcp-server")]
    pub(crate) fn max(&self) -> usize {
        self.max
    }

    /// The whole line [`next`](Self::next) returned last.
    pub(crate) fn line(&self) -> &[u8] {
        &self.line
    }

    /// Reads the next line of `reader`; `None` at the end (a last line without `\n` still
    /// counts).
    pub(crate) async fn next<R: AsyncBufRead + Unpin>(
        &mut self,
        reader: &mut R,
    ) -> io::Result<Option<Line>> {
        if std::mem::take(&mut self.returned) {
            // Keeps the allocation for the next line.
            self.line.clear();
        }
        loop {
            let chunk = reader.fill_buf().await?;
            if chunk.is_empty() {
                if self.oversized.is_none() && self.line.is_empty() {
                    return Ok(None);
                }
                return Ok(Some(self.end()));
            }
            let (part, done) = match memchr::memchr(b'\n', chunk) {
                Some(at) => (&chunk[..at], true),
                None => (chunk, false),
            };
            match &mut self.oversized {
                Some((size, scanner)) => {
                    *size += part.len();
                    scanner.feed(part);
                }
                None if self.line.len() + part.len() <= self.max => {
                    self.line.extend_from_slice(part);
                }
                None => {
                    let mut scanner = IdScanner::default();
                    scanner.feed(&self.line);
                    scanner.feed(part);
                    self.oversized = Some((self.line.len() + part.len(), scanner));
                    // What was kept of it is let go, not only emptied.
                    self.line = Vec::new();
                }
            }
            let used = part.len() + usize::from(done);
            reader.consume(used);
            if done {
                return Ok(Some(self.end()));
            }
        }
    }

    /// The line read is complete.
    fn end(&mut self) -> Line {
        self.returned = true;
        match self.oversized.take() {
            Some((size, scanner)) => Line::Oversized {
                size,
                id: scanner.into_id(),
            },
            None => Line::Whole,
        }
    }
}

/// Finds the top-level `"id"` member of a JSON object streamed through it, keeping nothing
/// else: it tracks only nesting, strings and the keys of the outermost object.
#[derive(Debug, Default)]
struct IdScanner {
    depth: usize,
    in_string: bool,
    escaped: bool,
    /// The outermost object expects a key next (else a value).
    expect_key: bool,
    /// The key just read at the top level is `"id"`.
    id_key: bool,
    /// What is being captured at the top level: a key, or the id's value.
    capture: Option<(Capture, Vec<u8>)>,
    id: Option<Vec<u8>>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Capture {
    Key,
    Id,
}

/// Keys and ids are short; a longer one is not the id.
const MAX_CAPTURE: usize = 256;

impl IdScanner {
    fn feed(&mut self, mut bytes: &[u8]) {
        while let Some((&b, rest)) = bytes.split_first() {
            self.step(b);
            bytes = rest;
            // Inside a string that is not kept (a 200 MB text, say), only a quote or a
            // backslash matters: jump to the next.
            if self.in_string && !self.escaped && self.capture.is_none() {
                match memchr::memchr2(b'"', b'\\', bytes) {
                    Some(at) => bytes = &bytes[at..],
                    None => return,
                }
            }
        }
    }

    fn keep(&mut self, b: u8) {
        if let Some((_, bytes)) = &mut self.capture {
            if bytes.len() < MAX_CAPTURE {
                bytes.push(b);
            } else {
                self.capture = None;
            }
        }
    }

    fn step(&mut self, b: u8) {
        if self.in_string {
            self.keep(b);
            if self.escaped {
                self.escaped = false;
            } else if b == b'\\' {
                self.escaped = true;
            } else if b == b'"' {
                self.in_string = false;
                self.end_string();
            }
            return;
        }
        match b {
            b'"' => {
                self.in_string = true;
                if self.depth == 1 {
                    if self.expect_key {
                        self.capture = Some((Capture::Key, vec![b]));
                    } else if self.id_key {
                        self.capture = Some((Capture::Id, vec![b]));
                    }
                }
            }
            b'{' | b'[' => {
                self.depth += 1;
                if self.depth == 1 {
                    self.expect_key = b == b'{';
                } else if self.depth == 2 {
                    // The id's value is an object or array: not an id.
                    self.id_key = false;
                }
            }
            b'}' | b']' => {
                if self.depth == 1 {
                    self.end_scalar();
                }
                self.depth = self.depth.saturating_sub(1);
            }
            b':' if self.depth == 1 => self.expect_key = false,
            b',' if self.depth == 1 => {
                self.end_scalar();
                self.expect_key = true;
                self.id_key = false;
            }
            b if self.depth == 1 && !self.expect_key && self.id_key && !b.is_ascii_whitespace() => {
                if self.capture.is_none() {
                    self.capture = Some((Capture::Id, Vec::new()));
                }
                self.keep(b);
            }
            _ => {}
        }
    }

    fn end_string(&mut self) {
        match self.capture.take() {
            Some((Capture::Key, key)) => self.id_key = key == b"\"id\"",
            Some((Capture::Id, value)) => {
                self.id = Some(value);
                self.id_key = false;
            }
            None => {}
        }
    }

    fn end_scalar(&mut self) {
        if let Some((Capture::Id, value)) = self.capture.take() {
            self.id = Some(value);
        }
        self.id_key = false;
    }

    fn into_id(self) -> Option<Vec<u8>> {
        self.id
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn id_of(text: &str) -> Option<String> {
        let mut scan = IdScanner::default();
        scan.feed(text.as_bytes());
        scan.into_id()
            .map(|id| String::from_utf8(id).unwrap_or_default())
    }

    #[test]
    fn the_top_level_id_is_found_wherever_it_is() {
        assert_eq!(
            id_of(r#"{"jsonrpc":"2.0","id":7,"result":{}}"#).as_deref(),
            Some("7")
        );
        // The TypeScript SDK writes the result first.
        let late = r#"{"result":{"content":[{"type":"text","text":"x \"id\": 9 }"}],"id":3},"jsonrpc":"2.0","id": "abc" }"#;
        assert_eq!(id_of(late).as_deref(), Some(r#""abc""#));
        assert_eq!(id_of(r#"{"result":{"id":5}}"#), None);
        assert_eq!(id_of(r#"{"id":{"nested":1},"x":2}"#), None);
        assert_eq!(id_of("not json at all"), None);
    }

    /// A reader that gives `text` `step` bytes at a time.
    fn pieces(text: &str, step: usize) -> tokio::io::BufReader<&[u8]> {
        tokio::io::BufReader::with_capacity(step, text.as_bytes())
    }

    #[tokio::test]
    async fn long_lines_are_measured_not_kept() {
        let text = format!(
            "{{\"id\":1,\"result\":\"{}\"}}\nshort\n{{\"result\":\"{}\",\"id\":2}}",
            "x".repeat(100),
            "y".repeat(50)
        );
        let mut reader = pieces(&text, 16);
        let mut lines = LineReader::new(20);
        let mut read = Vec::new();
        while let Some(line) = lines.next(&mut reader).await.unwrap_or(None) {
            let whole = (line == Line::Whole).then(|| lines.line().to_vec());
            read.push((line, whole));
        }
        assert_eq!(
            read,
            vec![
                (
                    Line::Oversized {
                        size: 120,
                        id: Some(b"1".to_vec())
                    },
                    None
                ),
                (Line::Whole, Some(b"short".to_vec())),
                (
                    Line::Oversized {
                        size: 70,
                        id: Some(b"2".to_vec())
                    },
                    None
                ),
            ]
        );
        assert!(lines.line.capacity() < 64, "never grew past the bound");
    }

    #[tokio::test]
    async fn a_read_dropped_halfway_goes_on_where_it_stopped() {
        // A reader that is never ready again after its first bytes: the read is dropped
        // there, and a later read (of the rest) finishes the line.
        let (mut writer, pipe) = tokio::io::duplex(64);
        let mut reader = tokio::io::BufReader::new(pipe);
        let mut lines = LineReader::new(100);
        tokio::io::AsyncWriteExt::write_all(&mut writer, b"{\"id\":")
            .await
            .unwrap();
        let first = tokio::time::timeout(
            std::time::Duration::from_millis(50),
            lines.next(&mut reader),
        );
        assert!(first.await.is_err(), "no whole line yet");
        tokio::io::AsyncWriteExt::write_all(&mut writer, b"3}\nnext\n")
            .await
            .unwrap();
        assert_eq!(lines.next(&mut reader).await.unwrap(), Some(Line::Whole));
        assert_eq!(lines.line(), b"{\"id\":3}");
        assert_eq!(lines.next(&mut reader).await.unwrap(), Some(Line::Whole));
        assert_eq!(lines.line(), b"next");
        drop(writer);
        assert_eq!(lines.next(&mut reader).await.unwrap(), None);
    }
}
