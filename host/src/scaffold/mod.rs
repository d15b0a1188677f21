//! `host new`: a tool project to start from, in Rust, Python, JavaScript, C or Go.
//!
//! A project is one tool (`count_words`), its build script (`./build.sh`, which writes
//! `dist/NAME.wasm`), a test (`./test.sh`: the language's unit tests, then `host check` and one
//! call), a README of its own, and the WIT of tool contract 0.2 (`wit/tool.wit`). It needs
//! nothing of toolhost's repository: only the language's toolchain, as `just setup` installs
//! it (and, for C and Go, cargo, which builds the project's `helper/` once per machine).
//!
//! The templates are files under `host/templates/`, one directory per language plus
//! `common/`; `{{name}}` and the other placeholders are filled in here.

use std::fmt;
use std::path::{Path, PathBuf};
use std::str::FromStr;

/// The languages `host new` writes projects in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Language {
    /// Rust with wit-bindgen, built by cargo for `wasm32-wasip2`.
    Rust,
    /// Python, built by componentize-py.
    Python,
    /// JavaScript, built by componentize-js.
    Js,
    /// C, built by zig cc and the project's helper.
    C,
    /// Go, built by Go for `wasip1` and the project's helper.
    Go,
}

impl Language {
    /// Every language, in the order of `--help`.
    pub const ALL: [Language; 5] = [
        Language::Rust,
        Language::Python,
        Language::Js,
        Language::C,
        Language::Go,
    ];

    /// Its name on the command line.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Rust => "rust",
            Self::Python => "python",
            Self::Js => "js",
            Self::C => "c",
            Self::Go => "go",
        }
    }
}

impl fmt::Display for Language {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for Language {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        Language::ALL
            .into_iter()
            .find(|language| language.as_str() == text)
            .ok_or_else(|| format!("no language `{text}`; use rust, python, js, c or go"))
    }
}

/// Why a project could not be written.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ScaffoldError {
    /// The directory's name cannot name a project.
    #[error(
        "`{name}` cannot name a tool project: use letters, digits, `-` and `_`, starting with \
         a letter (at most 64)"
    )]
    BadName {
        /// The name given.
        name: String,
    },
    /// The directory exists and is not empty.
    #[error("{} already exists and is not empty; choose a new name", path.display())]
    Exists {
        /// The directory.
        path: PathBuf,
    },
    /// A file could not be written.
    #[error("cannot write {}", path.display())]
    Write {
        /// The file.
        path: PathBuf,
        /// Why.
        #[source]
        source: std::io::Error,
    },
}

/// One file of a template: where it goes in the project, its text, whether it is a script.
struct File {
    path: &'static str,
    text: &'static str,
    executable: bool,
}

const fn file(path: &'static str, text: &'static str) -> File {
    File {
        path,
        text,
        executable: false,
    }
}

const fn script(path: &'static str, text: &'static str) -> File {
    File {
        path,
        text,
        executable: true,
    }
}

/// The WIT of tool contract 0.2, as the host speaks it.
const WIT_FILE: File = file("wit/tool.wit", include_str!("../../../wit/tool.wit"));

/// What `./test.sh` runs last, in every language: `host check` and one call.
const CHECK: &str = include_str!("../../templates/common/check.sh");

/// The build helper of C and Go projects: WIT bindings and component encoding, from the
/// crates of `wit-bindgen` and `wasm-tools` (the repository's `xtask`, whose source it is).
const HELPER: [File; 3] = [
    file(
        "helper/Cargo.toml",
        include_str!("../../templates/common/helper/Cargo.toml"),
    ),
    file("helper/build.rs", include_str!("../../../xtask/build.rs")),
    file(
        "helper/src/main.rs",
        include_str!("../../../xtask/src/main.rs"),
    ),
];

/// How C and Go build scripts run the helper.
const HELPER_SH: &str = include_str!("../../templates/common/helper.sh");

// The files of each language's template.
const RUST: &[File] = &[
    file(
        "Cargo.toml",
        include_str!("../../templates/rust/Cargo.toml"),
    ),
    file(
        "src/lib.rs",
        include_str!("../../templates/rust/src/lib.rs"),
    ),
    script("build.sh", include_str!("../../templates/rust/build.sh")),
    script("test.sh", include_str!("../../templates/rust/test.sh")),
    file("README.md", include_str!("../../templates/rust/README.md")),
    file(".gitignore", include_str!("../../templates/rust/gitignore")),
];

const PYTHON: &[File] = &[
    file("app.py", include_str!("../../templates/python/app.py")),
    file("words.py", include_str!("../../templates/python/words.py")),
    file(
        "test_words.py",
        include_str!("../../templates/python/test_words.py"),
    ),
    script("build.sh", include_str!("../../templates/python/build.sh")),
    script("test.sh", include_str!("../../templates/python/test.sh")),
    file(
        "README.md",
        include_str!("../../templates/python/README.md"),
    ),
    file(
        ".gitignore",
        include_str!("../../templates/python/gitignore"),
    ),
];

const JS: &[File] = &[
    file("tool.js", include_str!("../../templates/js/tool.js")),
    file("words.js", include_str!("../../templates/js/words.js")),
    file(
        "words.test.js",
        include_str!("../../templates/js/words.test.js"),
    ),
    file(
        "package.json",
        include_str!("../../templates/js/package.json"),
    ),
    script("build.sh", include_str!("../../templates/js/build.sh")),
    script("test.sh", include_str!("../../templates/js/test.sh")),
    file("README.md", include_str!("../../templates/js/README.md")),
    file(".gitignore", include_str!("../../templates/js/gitignore")),
];

const C: &[File] = &[
    file("tool.c", include_str!("../../templates/c/tool.c")),
    file("words.c", include_str!("../../templates/c/words.c")),
    file("words.h", include_str!("../../templates/c/words.h")),
    file(
        "words_test.c",
        include_str!("../../templates/c/words_test.c"),
    ),
    // The JSON reader of the C example tool (example-tools/checksum-c).
    file(
        "json.c",
        include_str!("../../../example-tools/checksum-c/json.c"),
    ),
    file(
        "json.h",
        include_str!("../../../example-tools/checksum-c/json.h"),
    ),
    script("build.sh", include_str!("../../templates/c/build.sh")),
    script("test.sh", include_str!("../../templates/c/test.sh")),
    file("README.md", include_str!("../../templates/c/README.md")),
    file(".gitignore", include_str!("../../templates/c/gitignore")),
];

const GO: &[File] = &[
    file("tool.go", include_str!("../../templates/go/tool.go")),
    file("words.go", include_str!("../../templates/go/words.go")),
    file(
        "words_test.go",
        include_str!("../../templates/go/words_test.go"),
    ),
    script("build.sh", include_str!("../../templates/go/build.sh")),
    script("test.sh", include_str!("../../templates/go/test.sh")),
    file("README.md", include_str!("../../templates/go/README.md")),
    file(".gitignore", include_str!("../../templates/go/gitignore")),
];

fn template(language: Language) -> &'static [File] {
    match language {
        Language::Rust => RUST,
        Language::Python => PYTHON,
        Language::Js => JS,
        Language::C => C,
        Language::Go => GO,
    }
}

/// Whether `name` can name a project (and a cargo package, an npm package, a file).
fn is_valid_name(name: &str) -> bool {
    name.len() <= 64
        && name.starts_with(|c: char| c.is_ascii_alphabetic())
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
}

/// Writes a new tool project in `language` into the directory `dir` (created; it may exist
/// if empty), named after the directory. Returns the files written, relative to `dir`.
pub fn new_project(dir: &Path, language: Language) -> Result<Vec<PathBuf>, ScaffoldError> {
    let name = dir
        .file_name()
        .map(|name| name.to_string_lossy().into_owned())
        .unwrap_or_default();
    if !is_valid_name(&name) {
        return Err(ScaffoldError::BadName { name });
    }
    if std::fs::read_dir(dir).is_ok_and(|mut entries| entries.next().is_some()) {
        return Err(ScaffoldError::Exists {
            path: dir.to_owned(),
        });
    }
    let fill = |text: &str| {
        text.replace("{{check}}", CHECK.trim_end())
            .replace("{{helper}}", HELPER_SH.trim_end())
            .replace("{{crate}}", &name.replace('-', "_"))
            .replace("{{name}}", &name)
    };
    let mut files: Vec<&File> = template(language).iter().collect();
    files.push(&WIT_FILE);
    if matches!(language, Language::C | Language::Go) {
        files.extend(&HELPER);
    }
    let mut written = Vec::with_capacity(files.len());
    for file in files {
        let path = dir.join(file.path);
        write(&path, &fill(file.text), file.executable)?;
        written.push(PathBuf::from(file.path));
    }
    Ok(written)
}

fn write(path: &Path, text: &str, executable: bool) -> Result<(), ScaffoldError> {
    use std::os::unix::fs::PermissionsExt as _;
    let failed = |source| ScaffoldError::Write {
        path: path.to_owned(),
        source,
    };
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent).map_err(failed)?;
    }
    std::fs::write(path, text).map_err(failed)?;
    if executable {
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755)).map_err(failed)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_language_gets_a_whole_project() {
        for language in Language::ALL {
            let temp = tempfile::tempdir().unwrap();
            let dir = temp.path().join("my-tool");
            let files = new_project(&dir, language).unwrap();
            for expected in ["build.sh", "test.sh", "README.md", "wit/tool.wit"] {
                assert!(
                    files.contains(&PathBuf::from(expected)),
                    "{language}: {files:?}"
                );
            }
            for file in &files {
                let text = std::fs::read_to_string(dir.join(file)).unwrap();
                for placeholder in ["{{name}}", "{{crate}}", "{{check}}", "{{helper}}"] {
                    assert!(
                        !text.contains(placeholder),
                        "{language}: {} keeps {placeholder}",
                        file.display()
                    );
                }
            }
            let build = std::fs::read_to_string(dir.join("build.sh")).unwrap();
            assert!(build.contains("dist/my-tool.wasm"), "{language}: {build}");
        }
    }

    #[test]
    fn names_and_directories_are_checked() {
        let temp = tempfile::tempdir().unwrap();
        let error = new_project(&temp.path().join("1 tool"), Language::Rust).unwrap_err();
        assert!(
            error.to_string().contains("starting with a letter"),
            "{error}"
        );
        let busy = temp.path().join("busy");
        std::fs::create_dir(&busy).unwrap();
        std::fs::write(busy.join("file"), "x").unwrap();
        let error = new_project(&busy, Language::Rust).unwrap_err();
        assert!(matches!(error, ScaffoldError::Exists { .. }), "{error}");
    }
}
