//! Reading a stdio server's output line by line with a bound: a line longer than the bound is
//! read to its end and thrown away, and what is kept of it is its size and its JSON-RPC `id`,
//! so the request it answered can be failed at once instead of waiting for a timeout.

use tokio::io::{AsyncBufRead, AsyncBufReadExt};

/// One line of output.
#[derive(Debug, PartialEq, Eq)]
pub(super) enum Line {
    /// A whole line (without its `\n`) within the bound.
    Whole(Vec<u8>),
    /// A line over the bound: its size, and the top-level `"id"` of the JSON object it held
    /// (raw JSON text), when it had one.
    Oversized { size: usize, id: Option<Vec<u8>> },
}

/// Reads the next line of `reader`, keeping at most `max` bytes of it. `None` at the end.
pub(super) async fn next_line<R: AsyncBufRead + Unpin>(
    reader: &mut R,
    buffer: &mut Vec<u8>,
    max: usize,
) -> std::io::Result<Option<Line>> {
    buffer.clear();
    let mut scan: Option<IdScanner> = None;
    let mut size = 0usize;
    loop {
        let chunk = reader.fill_buf().await?;
        if chunk.is_empty() {
            // The end: a last line without `\n` still counts.
            return Ok(match scan {
                Some(scan) => Some(Line::Oversized {
                    size,
                    id: scan.into_id(),
                }),
                None if buffer.is_empty() => None,
                None => Some(Line::Whole(std::mem::take(buffer))),
            });
        }
        let (part, done) = match memchr::memchr(b'\n', chunk) {
            Some(at) => (&chunk[..at], true),
            None => (chunk, false),
        };
        size += part.len();
        match &mut scan {
            Some(scan) => scan.feed(part),
            None if buffer.len() + part.len() <= max => buffer.extend_from_slice(part),
            None => {
                let mut scanner = IdScanner::default();
                scanner.feed(buffer);
                scanner.feed(part);
                buffer.clear();
                scan = Some(scanner);
            }
        }
        let used = part.len() + usize::from(done);
        reader.consume(used);
        if done {
            return Ok(Some(match scan {
                Some(scan) => Line::Oversized {
                    size,
                    id: scan.into_id(),
                },
                None => Line::Whole(std::mem::take(buffer)),
            }));
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

    #[tokio::test]
    async fn long_lines_are_measured_not_kept() {
        let text = format!(
            "{{\"id\":1,\"result\":\"{}\"}}\nshort\n{{\"result\":\"{}\",\"id\":2}}",
            "x".repeat(100),
            "y".repeat(50)
        );
        let mut reader = tokio::io::BufReader::with_capacity(16, text.as_bytes());
        let mut buffer = Vec::new();
        let mut lines = Vec::new();
        while let Some(line) = next_line(&mut reader, &mut buffer, 20)
            .await
            .unwrap_or(None)
        {
            lines.push(line);
        }
        assert_eq!(
            lines,
            vec![
                Line::Oversized {
                    size: 120,
                    id: Some(b"1".to_vec())
                },
                Line::Whole(b"short".to_vec()),
                Line::Oversized {
                    size: 70,
                    id: Some(b"2".to_vec())
                },
            ]
        );
        assert!(buffer.capacity() < 64, "never grew past the bound");
    }
}
