//! What a user sees of a `host` command, as one text for a snapshot (insta), with what
//! changes from run to run or machine to machine replaced by placeholders: durations, sizes,
//! hashes, the repository and temporary paths. Modelled on uv's `uv_snapshot!`.

use std::path::Path;

use regex::Regex;

use crate::cli::HostOutput;

/// The exit status, stdout and stderr of `output`, filtered.
pub fn render(output: &HostOutput, extra_paths: &[(&Path, &str)]) -> String {
    let text = format!(
        "success: {}\nexit_code: {}\n----- stdout -----\n{}\n----- stderr -----\n{}",
        output.success(),
        output
            .code()
            .map_or_else(|| "none".to_owned(), |c| c.to_string()),
        output.stdout,
        output.stderr,
    );
    filter(&text, extra_paths)
}

/// Replaces what varies in `text`.
pub fn filter(text: &str, extra_paths: &[(&Path, &str)]) -> String {
    let mut text = text.to_owned();
    let mut paths: Vec<(String, &str)> = extra_paths
        .iter()
        .map(|(path, name)| (path.display().to_string(), *name))
        .collect();
    paths.push((crate::target_dir().display().to_string(), "[TARGET]"));
    paths.push((crate::repo_root().display().to_string(), "[REPO]"));
    // Longer paths first, so a path inside another is replaced as itself.
    paths.sort_by_key(|(path, _)| std::cmp::Reverse(path.len()));
    for (path, name) in paths {
        text = text.replace(&path, name);
    }
    for (pattern, replacement) in [
        // Component sizes next to their path, as `host tools` and `host inspect` show them.
        (r"\(\d+(\.\d+)? (B|KiB|MiB|GiB), ", "([SIZE], "),
        (r"[0-9a-f]{64}", "[SHA256]"),
        (r"\d+(\.\d+)? (ms|s|µs|us)\b", "[TIME]"),
        (
            r"(from the compile cache|compiled in \[TIME\])",
            "[COMPILE]",
        ),
        (
            r#""(duration_ms|load_ms|took_ms)": [0-9.e-]+"#,
            "\"$1\": \"[TIME]\"",
        ),
        (r#""size": \d+"#, "\"size\": \"[SIZE]\""),
        (r#""compile": \{[^}]*\}"#, "\"compile\": \"[COMPILE]\""),
        (r"/tmp/\.tmp[A-Za-z0-9]+", "[TEMP]"),
    ] {
        let regex = Regex::new(pattern).expect("the filters are valid");
        text = regex.replace_all(&text, replacement).into_owned();
    }
    text
}
