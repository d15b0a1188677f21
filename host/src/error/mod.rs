//! The errors a caller of the library can match on.
//!
//! A [`CallError`] speaks to two audiences. Its `Display` text is for the operator: it names
//! the grant or setting to change, with the tool's stderr when it crashed.
//! [`CallError::model_message`] is what the model is told: short, with no grant syntax, no host
//! paths and at most a bounded excerpt of the tool's stderr.

mod call;
mod load;
#[cfg(feature = "code-mode")]
mod program;

pub(crate) use call::chain;
pub use call::{CallError, ErrorKind, TimeLimit};
pub use load::LoadError;
#[cfg(feature = "code-mode")]
pub use program::ProgramError;
