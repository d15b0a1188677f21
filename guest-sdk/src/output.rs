//! What a tool returns beyond one value: text, images, audio, resources, and structured
//! content (tool contract 0.2), and what it reports while it runs.

/// One part of a tool's result.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Content {
    /// Text for the model.
    Text(String),
    /// An image: its bytes and media type (`image/png`, `image/jpeg`, ...).
    Image {
        /// The raw bytes (the host encodes them where a protocol needs text).
        data: Vec<u8>,
        /// The media type.
        mime_type: String,
    },
    /// A sound: its bytes and media type (`audio/wav`, `audio/mpeg`, ...).
    Audio {
        /// The raw bytes.
        data: Vec<u8>,
        /// The media type.
        mime_type: String,
    },
    /// A link to a resource the client can read or fetch itself.
    ResourceLink {
        /// Its URI, such as `file:///notes/todo.md`.
        uri: String,
        /// Its name.
        name: String,
        /// What it is.
        description: Option<String>,
        /// Its media type, when known.
        mime_type: Option<String>,
    },
    /// A resource with its contents.
    Resource {
        /// Its URI.
        uri: String,
        /// Its media type, when known.
        mime_type: Option<String>,
        /// What it contains.
        contents: ResourceContents,
    },
}

/// The contents of an embedded resource.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ResourceContents {
    /// Text.
    Text(String),
    /// Bytes.
    Blob(Vec<u8>),
}

/// A tool's result: parts in order, and structured content (JSON) when the tool has it.
///
/// ```
/// use toolhost_sdk::{Content, Output};
///
/// let chart = Output::text("Sales by month:").with(Content::Image {
///     data: vec![0x89, b'P', b'N', b'G'],
///     mime_type: "image/png".into(),
/// });
/// assert_eq!(chart.content.len(), 2);
/// assert_eq!(chart.text_parts(), "Sales by month:");
/// ```
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Output {
    /// The parts, in order. Empty: the tool did its job and has nothing to say (the host
    /// tells the model `Success`).
    pub content: Vec<Content>,
    /// The result as JSON; the host checks it against the tool's output schema.
    pub structured: Option<serde_json::Value>,
}

impl Output {
    /// A result of one text.
    pub fn text(text: impl Into<String>) -> Self {
        Self {
            content: vec![Content::Text(text.into())],
            structured: None,
        }
    }

    /// This result with `part` added at the end.
    pub fn with(mut self, part: Content) -> Self {
        self.content.push(part);
        self
    }

    /// Its text parts, one per line: what a model reads of it (besides images).
    pub fn text_parts(&self) -> String {
        self.content
            .iter()
            .filter_map(|part| match part {
                Content::Text(text) => Some(text.as_str()),
                _ => None,
            })
            .collect::<Vec<_>>()
            .join("\n")
    }
}

/// Reports to whoever waits for the call: progress, and log lines (not for the model). The
/// host passes them on at a bounded rate, so reporting often is cheap for everyone; off wasm
/// (a tool crate's own tests) they go nowhere.
pub mod report {
    /// How serious a log line is.
    #[derive(Debug, Clone, Copy, PartialEq, Eq)]
    pub enum Level {
        /// Detail for debugging.
        Debug,
        /// Normal operation.
        Info,
        /// Normal but worth noticing.
        Notice,
        /// Something may be wrong.
        Warning,
        /// Something went wrong.
        Error,
    }

    /// The call has come `done` of `total` units of work (`None`: unknown), with what it
    /// does now. Cheap to call in a tight loop: a report is passed to the host only when it
    /// says something new (the first, a new message or total, another 1% of a known total,
    /// every 64th of an unknown one, the last); the others stay in the component.
    pub fn progress(done: f64, total: Option<f64>, message: Option<&str>) {
        if !Throttle::passes(done, total, message) {
            return;
        }
        #[cfg(target_family = "wasm")]
        crate::__private::bindings::toolhost::tool::report::progress(done, total, message);
        #[cfg(not(target_family = "wasm"))]
        let _ = (done, total, message);
    }

    /// What the last progress report passed to the host said, to pass only news.
    #[derive(Default)]
    pub(crate) struct Throttle {
        done: f64,
        total: Option<f64>,
        message: Option<String>,
        held: u32,
        started: bool,
    }

    thread_local! {
        static LAST: std::cell::RefCell<Throttle> = std::cell::RefCell::default();
    }

    impl Throttle {
        /// Whether this report is news (and records it if so).
        fn passes(done: f64, total: Option<f64>, message: Option<&str>) -> bool {
            LAST.with_borrow_mut(|last| last.news(done, total, message))
        }

        pub(crate) fn news(
            &mut self,
            done: f64,
            total: Option<f64>,
            message: Option<&str>,
        ) -> bool {
            let news = !self.started
                || total != self.total
                || message != self.message.as_deref()
                || total.is_some_and(|total| done >= total || done - self.done >= total / 100.0)
                || (total.is_none() && self.held >= 63);
            if news {
                *self = Throttle {
                    done,
                    total,
                    message: message.map(str::to_owned),
                    held: 0,
                    started: true,
                };
            } else {
                self.held += 1;
            }
            news
        }
    }

    /// A log line for whoever watches the call.
    pub fn log(level: Level, message: &str) {
        #[cfg(target_family = "wasm")]
        {
            use crate::__private::bindings::toolhost::tool::report::{Level as Wit, log};
            let level = match level {
                Level::Debug => Wit::Debug,
                Level::Info => Wit::Info,
                Level::Notice => Wit::Notice,
                Level::Warning => Wit::Warning,
                Level::Error => Wit::Error,
            };
            log(level, message);
        }
        #[cfg(not(target_family = "wasm"))]
        let _ = (level, message);
    }
}

#[cfg(test)]
mod tests {
    use super::report::Throttle;

    #[test]
    fn a_thousand_reports_reach_the_host_as_a_hundred_and_one() {
        let mut throttle = Throttle::default();
        let passed = (0..=1000)
            .filter(|&done| throttle.news(f64::from(done), Some(1000.0), None))
            .count();
        assert_eq!(passed, 101, "the first, every 1%, and the last");
        let mut unknown = Throttle::default();
        let passed = (0..640)
            .filter(|&done| unknown.news(f64::from(done), None, None))
            .count();
        assert_eq!(passed, 10);
        let mut messages = Throttle::default();
        assert!(messages.news(1.0, Some(10.0), Some("reading")));
        assert!(!messages.news(1.01, Some(10.0), Some("reading")));
        assert!(
            messages.news(1.02, Some(10.0), Some("writing")),
            "a new message is news"
        );
    }
}
