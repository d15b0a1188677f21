//! What is typed on stdin: the chat's messages, the answers to approval prompts and to the
//! forms of tools that ask for input.

use std::io::IsTerminal;

use anyhow::Context as _;
use tokio::io::{AsyncBufReadExt, BufReader, Lines, Stdin};

/// Lines typed on stdin: the chat's messages and the answers to approval prompts.
pub struct Input {
    lines: Lines<BufReader<Stdin>>,
    terminal: bool,
}

impl Input {
    pub fn new() -> Self {
        Self {
            lines: BufReader::new(tokio::io::stdin()).lines(),
            terminal: std::io::stdin().is_terminal(),
        }
    }

    /// Whether a person is typing (stdin is a terminal).
    pub fn is_terminal(&self) -> bool {
        self.terminal
    }

    /// The next line, or `None` at the end of input.
    pub async fn line(&mut self) -> anyhow::Result<Option<String>> {
        self.lines.next_line().await.context("cannot read stdin")
    }
}
