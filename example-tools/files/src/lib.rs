//! Files: list and read what is under a granted directory, write notes into another (asking
//! the user before one overwrites a note that exists), and serve the notes as resources.

use std::fs;
use std::io::Read as _;
use std::path::Path;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::json;
use toolhost_sdk::{
    Ask, CallContext, Capability, Content, Contents, Offers, Output, ReadError, Reply,
    ResourceContents, ResourceTemplate, Tool, ToolError, Toolbox,
};

/// Where notes go; the host must grant this directory read-write.
const NOTES_DIR: &str = "/notes";
/// The most of a file `read_file` returns.
const MAX_READ: u64 = 64 * 1024;

/// A directory to list.
#[derive(Deserialize, JsonSchema)]
struct ListFiles {
    /// The directory, such as "/data" or "/data/reports".
    path: String,
}

/// One entry of a directory.
#[derive(Serialize, JsonSchema)]
struct Entry {
    /// The file or directory name.
    name: String,
    /// "file", "directory" or "other".
    kind: &'static str,
    /// The size in bytes (files only).
    #[serde(skip_serializing_if = "Option::is_none")]
    size: Option<u64>,
}

/// A file to read.
#[derive(Deserialize, JsonSchema)]
struct ReadFile {
    /// The file, such as "/data/report.txt".
    path: String,
}

/// A note to write.
#[derive(Deserialize, JsonSchema)]
struct WriteNote {
    /// A short title; it becomes the file name.
    #[schemars(length(min = 1, max = 80))]
    title: String,
    /// The text of the note.
    text: String,
}

/// Where a note was written.
#[derive(Serialize, JsonSchema)]
struct Written {
    /// The note's path.
    path: String,
    /// How many bytes were written.
    bytes: usize,
}

fn not_available(path: &str, error: std::io::Error) -> ToolError {
    ToolError::failed(format!(
        "cannot use `{path}`: {error} (only directories granted to this tool exist for it)"
    ))
}

fn list_files(args: ListFiles) -> Result<Vec<Entry>, ToolError> {
    let entries = fs::read_dir(&args.path).map_err(|e| not_available(&args.path, e))?;
    let mut listed = Vec::new();
    for entry in entries {
        let entry = entry.map_err(|e| not_available(&args.path, e))?;
        let meta = entry.metadata().map_err(|e| not_available(&args.path, e))?;
        let kind = if meta.is_file() {
            "file"
        } else if meta.is_dir() {
            "directory"
        } else {
            "other"
        };
        listed.push(Entry {
            name: entry.file_name().to_string_lossy().into_owned(),
            kind,
            size: meta.is_file().then(|| meta.len()),
        });
    }
    listed.sort_by(|a, b| a.name.cmp(&b.name));
    Ok(listed)
}

fn read_file(args: ReadFile) -> Result<String, ToolError> {
    let file = fs::File::open(&args.path).map_err(|e| not_available(&args.path, e))?;
    let mut bytes = Vec::new();
    file.take(MAX_READ + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| not_available(&args.path, e))?;
    if bytes.len() as u64 > MAX_READ {
        return Err(ToolError::failed(format!(
            "`{}` is larger than {MAX_READ} bytes; this tool reads small text files only",
            args.path
        )));
    }
    String::from_utf8(bytes)
        .map_err(|_| ToolError::failed(format!("`{}` is not UTF-8 text", args.path)))
}

/// The file name a note's title gives: its letters and digits, lowercase, words joined by `-`.
fn slug(title: &str) -> String {
    title
        .trim()
        .chars()
        .map(|c| {
            if c.is_alphanumeric() {
                c.to_ascii_lowercase()
            } else {
                '-'
            }
        })
        .collect::<String>()
        .split('-')
        .filter(|part| !part.is_empty())
        .collect::<Vec<_>>()
        .join("-")
}

/// Writes the note; a note that exists already is overwritten only once the user says so
/// (the tool asks, and the host calls it again with the answer).
fn write_note(args: WriteNote, context: &CallContext) -> Result<Reply, ToolError> {
    let slug = slug(&args.title);
    if slug.is_empty() {
        return Err(ToolError::invalid_arguments(format!(
            "the title {:?} needs at least one letter or digit (it names the file); send a \
             short title such as {{\"title\": \"groceries\", \"text\": ...}}",
            args.title
        )));
    }
    let path = Path::new(NOTES_DIR).join(format!("{slug}.md"));
    let shown = path.display().to_string();
    if path.exists() {
        match context.answer("overwrite") {
            None => {
                let question = Ask::user(
                    &format!("The note {shown} exists already. Overwrite it?"),
                    json!({
                        "type": "object",
                        "properties": {
                            "overwrite": {
                                "type": "boolean",
                                "title": "Overwrite",
                                "description": format!("replace what {shown} says"),
                            }
                        },
                        "required": ["overwrite"],
                    }),
                );
                return Ok(Reply::Ask {
                    requests: vec![("overwrite".into(), question)],
                    state: None,
                });
            }
            Some(answer)
                if answer["action"] == "accept" && answer["content"]["overwrite"] == true => {}
            Some(_) => {
                return Ok(Reply::Done(Output::text(format!(
                    "Not saved: the user kept the note that was at {shown}."
                ))));
            }
        }
    }
    let text = format!("# {}\n\n{}\n", args.title.trim(), args.text);
    fs::write(&path, &text).map_err(|e| not_available(NOTES_DIR, e))?;
    let written = Written {
        path: shown,
        bytes: text.len(),
    };
    let json = serde_json::to_value(&written).map_err(|e| ToolError::failed(e.to_string()))?;
    Ok(Reply::Done(Output {
        content: vec![Content::Text(json.to_string())],
        structured: Some(json),
    }))
}

struct Files;

impl Toolbox for Files {
    fn tools() -> Vec<Tool> {
        vec![
            Tool::new(
                "list_files",
                "Lists the files and directories in a directory (for example /data), with their \
                 sizes: what is in it.",
                list_files,
            )
            .read_only()
            .open_world(false)
            .requests(
                Capability::ReadDir("/data".into()),
                "the files to list and read",
            ),
            Tool::new(
                "read_file",
                "Reads a small text file (for example /data/report.txt) and returns its text: \
                 what it says, its contents.",
                read_file,
            )
            .read_only()
            .open_world(false)
            .requests(
                Capability::ReadDir("/data".into()),
                "the files to list and read",
            ),
            Tool::with_reply(
                "write_note",
                "Saves a note with a title and text, as a Markdown file in /notes.",
                write_note,
            )
            .destructive(true)
            .open_world(false)
            .requests(
                Capability::WriteDir(NOTES_DIR.into()),
                "where notes are saved",
            ),
        ]
    }
}

/// The notes as resources (`note://{title}`), for MCP clients to read; a note's title makes
/// its URI as it makes its file name.
impl Offers for Files {
    fn templates() -> Vec<ResourceTemplate> {
        vec![ResourceTemplate {
            uri_template: "note://{title}".into(),
            name: "note".into(),
            title: Some("A note".into()),
            description: Some("A note saved by write_note, by its title".into()),
            mime_type: Some("text/markdown".into()),
        }]
    }

    fn read(uri: &str) -> Result<Vec<Contents>, ReadError> {
        let Some(title) = uri.strip_prefix("note://") else {
            return Err(ReadError::NotFound(format!(
                "{uri} is not a note; notes are note://TITLE"
            )));
        };
        let path = Path::new(NOTES_DIR).join(format!("{}.md", slug(title)));
        match fs::read_to_string(&path) {
            Ok(text) => Ok(vec![Contents {
                uri: uri.to_owned(),
                mime_type: Some("text/markdown".into()),
                body: ResourceContents::Text(text),
            }]),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Err(ReadError::NotFound(
                format!("there is no note titled {title:?}"),
            )),
            Err(e) => Err(ReadError::Failed(format!(
                "cannot read {}: {e}",
                path.display()
            ))),
        }
    }
}

toolhost_sdk::export!(Files, offers = Files);
