//! `host new`: a tool project to start from.

use std::path::PathBuf;

use clap::Args;
use toolhost::scaffold::{Language, new_project};

use super::ExitStatus;
use super::output::print;

#[derive(Debug, Args)]
pub struct NewArgs {
    /// The language: rust, python, js, c or go
    #[arg(long, value_name = "LANGUAGE", value_parser = |s: &str| s.parse::<Language>())]
    lang: Language,

    /// The project's directory, created; its name names the project and its component
    name: PathBuf,
}

impl NewArgs {
    pub fn run(self) -> anyhow::Result<ExitStatus> {
        let files = new_project(&self.name, self.lang)?;
        let dir = self.name.display();
        let mut out = format!("wrote a {} tool project in {dir}:", self.lang);
        for file in &files {
            out.push_str(&format!(" {}", file.display()));
        }
        out.push_str(&format!(
            "\nnext: cd {dir} && ./test.sh   (builds it, runs its tests and `host check`)\n"
        ));
        print(&out)?;
        Ok(ExitStatus::Success)
    }
}
