//! The soak's calls: every kind of call the example components answer deterministically,
//! each with the exact answer it must get, worked out here (by arithmetic, a CRC-32 written
//! out below, published SHA-256 test vectors, or the test data files read directly).

use std::path::Path;
use std::time::{SystemTime, UNIX_EPOCH};

use serde_json::{Value, json};

/// One call: the tool, its arguments and the answer it must get.
pub struct Call {
    pub tool: &'static str,
    pub arguments: Value,
    pub expect: Expect,
}

/// What a call's text must be.
pub enum Expect {
    /// Exactly this text.
    Text(String),
    /// JSON whose keys listed here have these values (other keys are not checked).
    Fields(Value),
    /// The clock's answer for UTC: the zone, the offset, and a time within a minute of now.
    UtcNow,
}

/// SHA-256 test vectors (FIPS 180-2 examples and the empty string).
const SHA256: [(&str, &str); 3] = [
    (
        "abc",
        "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad",
    ),
    (
        "",
        "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",
    ),
    (
        "abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq",
        "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1",
    ),
];

/// How many kinds of call [`Workload::call`] cycles through.
pub const KINDS: u64 = 13;

/// The calls, for the example manifest whose test data is in `testdata`.
pub struct Workload {
    report: String,
    report_crc: u32,
    /// `list_files` of the directory: name, kind and size of each file, sorted by name.
    listing: Vec<Value>,
}

impl Workload {
    /// Reads the test data the answers are checked against.
    pub fn new(testdata: &Path) -> anyhow::Result<Self> {
        let report = std::fs::read_to_string(testdata.join("report.txt"))?;
        let mut listing = Vec::new();
        for entry in std::fs::read_dir(testdata)? {
            let entry = entry?;
            let name = entry.file_name().to_string_lossy().into_owned();
            let size = entry.metadata()?.len();
            listing.push(json!({ "kind": "file", "name": name, "size": size }));
        }
        listing.sort_by(|a, b| a["name"].as_str().cmp(&b["name"].as_str()));
        Ok(Self {
            report_crc: crc32(report.as_bytes()),
            report,
            listing,
        })
    }

    /// Call number `n`: the kinds in turn, each with inputs that change with `n`.
    pub fn call(&self, n: u64) -> Call {
        let k = n / KINDS;
        let x = (k % 1000) as f64;
        match n % KINDS {
            0 => calculator("add", x, 0.5, x + 0.5),
            1 => calculator("multiply", x, 7.0, x * 7.0),
            2 => Call {
                tool: "square_root",
                arguments: json!({ "x": x * x }),
                expect: Expect::Fields(json!({ "result": x })),
            },
            3 => {
                let text = format!("soak call {n}");
                Call {
                    tool: "crc32",
                    arguments: json!({ "text": text }),
                    expect: Expect::Fields(json!({
                        "algorithm": "crc32",
                        "checksum": format!("{:08x}", crc32(text.as_bytes())),
                        "bytes": text.len(),
                    })),
                }
            }
            4 => {
                let (text, digest) = SHA256[(k % 3) as usize];
                Call {
                    tool: "sha256",
                    arguments: json!({ "text": text }),
                    expect: Expect::Fields(json!({ "checksum": digest, "bytes": text.len() })),
                }
            }
            5 => Call {
                tool: "read_file",
                arguments: json!({ "path": "report.txt" }),
                expect: Expect::Text(self.report.clone()),
            },
            6 => Call {
                tool: "regex_find_all",
                arguments: json!({ "pattern": "[0-9]+", "text": format!("a{k} b{}", k * 3) }),
                expect: Expect::Fields(json!({
                    "count": 2,
                    "matches": [{ "match": k.to_string() }, { "match": (k * 3).to_string() }],
                })),
            },
            7 => {
                let words = 1 + k % 20;
                let text = vec!["word"; words as usize].join(" ");
                Call {
                    tool: "text_stats",
                    arguments: json!({ "text": text }),
                    expect: Expect::Fields(json!({
                        "words": words, "unique_words": 1, "characters": text.len(),
                    })),
                }
            }
            8 => Call {
                tool: "json_query",
                arguments: json!({ "json": { "items": [k, k + 1, k + 2] }, "path": "items[1]" }),
                expect: Expect::Text((k + 1).to_string()),
            },
            9 => Call {
                tool: "count_words",
                arguments: json!({ "path": "report.txt" }),
                expect: Expect::Fields(json!({
                    "bytes": self.report.len(),
                    "lines": self.report.lines().count(),
                    "words": self.report.split_whitespace().count(),
                })),
            },
            10 => Call {
                tool: "current_time",
                arguments: json!({ "time_zone": "UTC" }),
                expect: Expect::UtcNow,
            },
            11 => Call {
                tool: "list_files",
                arguments: json!({ "path": "/data" }),
                expect: Expect::Fields(json!({ "result": self.listing })),
            },
            _ => Call {
                tool: "checksum_file",
                arguments: json!({ "algorithm": "crc32", "path": "report.txt" }),
                expect: Expect::Fields(json!({
                    "checksum": format!("{:08x}", self.report_crc),
                    "bytes": self.report.len(),
                })),
            },
        }
    }
}

fn calculator(tool: &'static str, a: f64, b: f64, result: f64) -> Call {
    Call {
        tool,
        arguments: json!({ "a": a, "b": b }),
        expect: Expect::Fields(json!({ "result": result })),
    }
}

impl Expect {
    /// Whether `text`, a call's answer, is the one expected; if not, why.
    pub fn check(&self, text: &str) -> Result<(), String> {
        match self {
            Self::Text(expected) => {
                // A tool returning a string may send it as is or as a JSON string.
                let decoded = serde_json::from_str::<String>(text).ok();
                if text == expected || decoded.as_deref() == Some(expected) {
                    Ok(())
                } else {
                    Err(format!("expected {expected:?}, got {text:?}"))
                }
            }
            Self::Fields(expected) => {
                let got: Value =
                    serde_json::from_str(text).map_err(|e| format!("not JSON ({e}): {text:?}"))?;
                if contains(&got, expected) {
                    Ok(())
                } else {
                    Err(format!("expected {expected} within {got}"))
                }
            }
            Self::UtcNow => {
                let got: Value =
                    serde_json::from_str(text).map_err(|e| format!("not JSON ({e}): {text:?}"))?;
                let rfc3339 = got["rfc3339"].as_str().unwrap_or_default();
                let drift = unix_seconds(rfc3339).map(|at| at - now_seconds());
                let fine = got["time_zone"] == "UTC"
                    && got["utc_offset"] == "+00:00"
                    && drift.is_some_and(|d| d.abs() <= 60);
                if fine {
                    Ok(())
                } else {
                    Err(format!("not the time now in UTC: {got}"))
                }
            }
        }
    }
}

/// Whether `got` has everything of `expected`: equal scalars (numbers by value), objects with
/// at least the expected keys, arrays of the same length whose items contain the expected ones.
fn contains(got: &Value, expected: &Value) -> bool {
    match (got, expected) {
        (Value::Object(got), Value::Object(expected)) => expected
            .iter()
            .all(|(key, value)| got.get(key).is_some_and(|g| contains(g, value))),
        (Value::Array(got), Value::Array(expected)) => {
            got.len() == expected.len() && got.iter().zip(expected).all(|(g, e)| contains(g, e))
        }
        (Value::Number(got), Value::Number(expected)) => got.as_f64() == expected.as_f64(),
        _ => got == expected,
    }
}

/// CRC-32 (IEEE 802.3, as zlib computes it), bit by bit.
fn crc32(bytes: &[u8]) -> u32 {
    let mut crc = !0u32;
    for &byte in bytes {
        crc ^= u32::from(byte);
        for _ in 0..8 {
            crc = if crc & 1 == 1 {
                (crc >> 1) ^ 0xEDB8_8320
            } else {
                crc >> 1
            };
        }
    }
    !crc
}

fn now_seconds() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs() as i64)
}

/// Seconds since the epoch of `YYYY-MM-DDTHH:MM:SS+00:00`.
fn unix_seconds(rfc3339: &str) -> Option<i64> {
    let (date, time) = rfc3339.strip_suffix("+00:00")?.split_once('T')?;
    let mut date = date.split('-').map(str::parse::<i64>);
    let (y, m, d) = (date.next()?.ok()?, date.next()?.ok()?, date.next()?.ok()?);
    let mut time = time.split(':').map(str::parse::<i64>);
    let (hh, mm, ss) = (time.next()?.ok()?, time.next()?.ok()?, time.next()?.ok()?);
    // Days from the civil date (Howard Hinnant's algorithm).
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let doy = (153 * (m + if m > 2 { -3 } else { 9 }) + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    let days = era * 146_097 + doe - 719_468;
    Some(days * 86_400 + hh * 3600 + mm * 60 + ss)
}

/// Refuses to soak with checks that cannot fail: each check must pass its right answer and
/// refuse a wrong one. Run before the load (the soak is a binary, not a test).
pub fn check_the_checks() -> anyhow::Result<()> {
    let fields = Expect::Fields(json!({ "result": 3.0 }));
    let sound = crc32(b"abc") == 0x3524_41c2
        && unix_seconds("1970-01-02T00:00:01+00:00") == Some(86_401)
        && unix_seconds("2026-11-25T01:06:17+00:00") == Some(1_795_568_777)
        && fields.check(r#"{"result":3}"#).is_ok()
        && fields.check(r#"{"result":3.5}"#).is_err()
        && fields.check(r#"{"other":3}"#).is_err()
        && Expect::Text("a\n".into()).check("\"a\\n\"").is_ok()
        && Expect::Text("a\n".into()).check("a").is_err()
        && Expect::UtcNow
            .check(r#"{"time_zone":"UTC","utc_offset":"+00:00","rfc3339":"2001-01-01T00:00:00+00:00"}"#)
            .is_err();
    anyhow::ensure!(sound, "the soak's own answer checks are broken");
    Ok(())
}
