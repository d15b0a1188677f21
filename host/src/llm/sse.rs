//! A parser for server-sent events (the `text/event-stream` format both wire formats stream
//! in), fed with bytes as they arrive.
//!
//! Why not a crate: `eventsource-stream` 0.2.3 (last released 2022, on nom 7) and
//! `sse-stream` 0.3 both pass the chunking test below, but both drop an unfinished last event
//! without a word when the stream ends (this parser reports it: [`Parser::has_partial`]), and
//! `eventsource-stream` holds back every event after an invalid UTF-8 byte until the stream
//! ends. What they would replace is the 60 lines below.

use super::error::WireError;

/// One event: its type (`event:` field, empty when absent) and its data (`data:` lines joined
/// with newlines).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Event {
    pub event: String,
    pub data: String,
}

/// Turns a byte stream into events. Lines may end in `\n`, `\r\n` or `\r`, and may be split
/// anywhere across chunks, even inside a UTF-8 character.
#[derive(Debug, Default)]
pub(crate) struct Parser {
    buffer: Vec<u8>,
    event: String,
    data: Vec<String>,
    /// The bytes of `data`, so that [`Parser::pending`] need not add them up.
    data_size: usize,
    /// The last byte was a `\r`, so a `\n` right after it ends nothing.
    after_cr: bool,
}

impl Parser {
    /// Adds `bytes` and returns the events they complete.
    pub(crate) fn feed(&mut self, bytes: &[u8]) -> Result<Vec<Event>, WireError> {
        let mut events = Vec::new();
        for &byte in bytes {
            if self.after_cr {
                self.after_cr = false;
                if byte == b'\n' {
                    continue;
                }
            }
            match byte {
                b'\n' | b'\r' => {
                    self.after_cr = byte == b'\r';
                    let line = std::mem::take(&mut self.buffer);
                    let line = String::from_utf8(line).map_err(|e| {
                        WireError::with_source(
                            "an event-stream line is not UTF-8".to_owned(),
                            e.utf8_error(),
                        )
                    })?;
                    if let Some(event) = self.line(&line) {
                        events.push(event);
                    }
                }
                _ => self.buffer.push(byte),
            }
        }
        Ok(events)
    }

    /// Whether bytes of an unfinished event are pending (the stream ended mid-event).
    pub(crate) fn has_partial(&self) -> bool {
        !self.buffer.is_empty() || !self.data.is_empty()
    }

    /// How many bytes of the unfinished line and event are held: what a reader bounds, so
    /// that a line or an event that never ends cannot fill the memory.
    pub(crate) fn pending(&self) -> usize {
        self.buffer.len() + self.data_size + self.event.len()
    }

    fn line(&mut self, line: &str) -> Option<Event> {
        if line.is_empty() {
            if self.data.is_empty() {
                self.event.clear();
                return None;
            }
            self.data_size = 0;
            return Some(Event {
                event: std::mem::take(&mut self.event),
                data: std::mem::take(&mut self.data).join("\n"),
            });
        }
        if line.starts_with(':') {
            return None;
        }
        let (field, value) = match line.split_once(':') {
            Some((field, value)) => (field, value.strip_prefix(' ').unwrap_or(value)),
            None => (line, ""),
        };
        match field {
            "event" => self.event = value.to_owned(),
            "data" => {
                self.data_size += value.len() + 1;
                self.data.push(value.to_owned());
            }
            _ => {}
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse_in_pieces(input: &str, piece: usize) -> Vec<Event> {
        let mut parser = Parser::default();
        let mut events = Vec::new();
        for chunk in input.as_bytes().chunks(piece) {
            events.extend(parser.feed(chunk).unwrap());
        }
        events
    }

    #[test]
    fn events_survive_any_chunking() {
        let input = "event: message_start\ndata: {\"a\":1}\n\n: keep-alive\n\ndata: x\r\ndata: y\r\n\r\ndata: é\r\rdata: [DONE]\n\n";
        let expected = vec![
            Event {
                event: "message_start".into(),
                data: "{\"a\":1}".into(),
            },
            Event {
                event: String::new(),
                data: "x\ny".into(),
            },
            Event {
                event: String::new(),
                data: "é".into(),
            },
            Event {
                event: String::new(),
                data: "[DONE]".into(),
            },
        ];
        for piece in [1, 2, 3, 7, 1000] {
            assert_eq!(parse_in_pieces(input, piece), expected, "pieces of {piece}");
        }
    }

    #[test]
    fn what_is_held_of_an_unfinished_event_is_counted() {
        let mut parser = Parser::default();
        assert!(parser.feed(b"data: abc\ndata: de").unwrap().is_empty());
        assert_eq!(parser.pending(), "abc\n".len() + "data: de".len());
        assert_eq!(parser.feed(b"\n\n").unwrap().len(), 1);
        assert_eq!(parser.pending(), 0, "a finished event is not held");
    }

    #[test]
    fn an_unfinished_event_is_reported() {
        let mut parser = Parser::default();
        assert!(parser.feed(b"data: {\"partial\"").unwrap().is_empty());
        assert!(parser.has_partial());
    }
}
