//! The eval's world: a fake wttr.in on 127.0.0.1, a fresh notes directory, and the example
//! manifest pointed at them.

use std::path::{Path, PathBuf};

use serde_json::json;

use crate::repo_root;
use crate::server::{Recorded, Reply, TestServer};

/// The fake weather of the fake wttr.in: city, temperature (°C), sky, humidity, wind (km/h).
pub const CITIES: &[(&str, &str, i32, &str, u32, u32)] = &[
    ("Oslo", "Norway", -4, "Light snow", 86, 14),
    (
        "Seattle",
        "United States of America",
        9,
        "Moderate rain",
        93,
        11,
    ),
    ("Cairo", "Egypt", 34, "Clear", 18, 9),
    ("Lisbon", "Portugal", 19, "Sunny", 55, 17),
    ("Paris", "France", 12, "Partly cloudy", 71, 13),
    ("London", "United Kingdom", 10, "Overcast", 80, 19),
    ("Tokyo", "Japan", 16, "Light rain", 77, 8),
    ("New York", "United States of America", 7, "Cloudy", 60, 22),
];

/// wttr.in's `format=j1` answer for `path` (`/CITY?format=j1`), or 404 for a city it does not
/// know.
fn weather_reply(request: &Recorded) -> Reply {
    let city = request
        .path
        .split('?')
        .next()
        .unwrap_or("")
        .trim_start_matches('/');
    let city = percent_decode(city).replace('+', " ");
    let Some((name, country, temp, sky, humidity, wind)) = CITIES
        .iter()
        .find(|(name, ..)| name.eq_ignore_ascii_case(city.trim()))
    else {
        return Reply::text(404, "Unknown location; please try ~48.8567,2.3508");
    };
    Reply::json(
        200,
        &json!({
            "current_condition": [{
                "temp_C": temp.to_string(),
                "FeelsLikeC": (temp - 2).to_string(),
                "humidity": humidity.to_string(),
                "windspeedKmph": wind.to_string(),
                "weatherDesc": [{ "value": sky }],
            }],
            "nearest_area": [{
                "areaName": [{ "value": name }],
                "country": [{ "value": country }],
            }],
        }),
    )
}

fn percent_decode(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%'
            && let Some(byte) = text
                .get(i + 1..i + 3)
                .and_then(|hex| u8::from_str_radix(hex, 16).ok())
        {
            out.push(byte);
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// What an eval run needs around the model: the fake weather service, the manifest, the
/// notes directory. Dropping it stops the service and removes the files.
pub struct Setup {
    /// The fake wttr.in.
    pub weather: TestServer,
    /// The manifest to load.
    pub manifest: PathBuf,
    /// Where notes are written.
    pub notes: PathBuf,
    _dir: tempfile::TempDir,
}

impl Setup {
    /// Starts the fake weather service and writes the eval's manifest.
    pub async fn start() -> Self {
        let weather = TestServer::start(weather_reply).await;
        let dir = tempfile::tempdir().expect("a temporary directory");
        let notes = dir.path().join("notes");
        std::fs::create_dir(&notes).expect("the notes directory");
        let manifest = dir.path().join("toolhost.toml");
        let text = eval_manifest(&weather, &notes);
        std::fs::write(&manifest, text).expect("the manifest is written");
        Self {
            weather,
            manifest,
            notes,
            _dir: dir,
        }
    }

    /// Empties the notes directory, so that a request is judged on what it wrote itself.
    pub fn clear_notes(&self) {
        for entry in std::fs::read_dir(&self.notes)
            .into_iter()
            .flatten()
            .flatten()
        {
            let _ = std::fs::remove_file(entry.path());
        }
    }
}

/// example-tools/toolhost.toml with absolute paths, `notes` as the notes directory, and the
/// weather tool granted `weather` instead of wttr.in.
fn eval_manifest(weather: &TestServer, notes: &Path) -> String {
    let tools = repo_root().join("example-tools");
    let path = tools.join("toolhost.toml");
    let text = std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()));
    let mut manifest: toml::Table = toml::from_str(&text).expect("the example manifest parses");
    let components = manifest
        .get_mut("components")
        .and_then(toml::Value::as_table_mut)
        .expect("the example manifest has components");
    let absolute = |path: &str| tools.join(path).display().to_string();
    for (name, component) in components.iter_mut() {
        let component = component.as_table_mut().expect("a component is a table");
        if let Some(toml::Value::String(path)) = component.get_mut("path") {
            *path = absolute(path);
        }
        let grants = component
            .entry("grants")
            .or_insert_with(|| toml::Value::Table(toml::Table::new()))
            .as_table_mut()
            .expect("grants is a table");
        if let Some(toml::Value::Array(dirs)) = grants.get_mut("dirs") {
            for dir in dirs.iter_mut().filter_map(toml::Value::as_table_mut) {
                let writable = dir.get("write").and_then(toml::Value::as_bool) == Some(true);
                if let Some(toml::Value::String(host)) = dir.get_mut("host") {
                    *host = if writable {
                        notes.display().to_string()
                    } else {
                        absolute(host)
                    };
                }
            }
        }
        if name == "weather" {
            grants.insert("http".into(), vec![weather.authority()].into());
            grants.insert(
                "env".into(),
                vec![format!("WEATHER_BASE_URL={}", weather.url())].into(),
            );
        }
    }
    toml::to_string(&manifest).expect("the manifest serializes")
}
