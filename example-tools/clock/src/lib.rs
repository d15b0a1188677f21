//! The current date and time, in a time zone, a city or a country.
//!
//! Whatever names a place is accepted, from the tz database the tool carries
//! (`toolhost-place-zones`): an IANA name ("Asia/Tokyo", any case), a city that names a zone
//! ("Tokyo", "new york", "São Paulo"), a country ("Japan", "USA", "Brazil"), or an offset
//! ("UTC+5:30"). A country whose zones differ gets its capital's zone, and the result says
//! so. Anything else is refused with what to send instead, and the nearest names when there
//! are some.

use jiff::Timestamp;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use toolhost_sdk::{Capability, Tool, ToolError, Toolbox};

/// Which time zone to tell the time in.
#[derive(Deserialize, JsonSchema)]
struct CurrentTime {
    /// Where: an IANA time zone such as "Europe/Paris", a city such as "Tokyo", or a country
    /// such as "Japan". When absent: the `TZ` environment variable if the tool was granted
    /// it, else UTC.
    #[serde(default)]
    time_zone: Option<String>,
}

/// The current date and time.
#[derive(Serialize, JsonSchema)]
struct Now {
    /// The time zone used (its IANA name).
    time_zone: String,
    /// The date, YYYY-MM-DD.
    date: String,
    /// The time of day, HH:MM:SS.
    time: String,
    /// The day of the week.
    weekday: String,
    /// The offset from UTC, such as +01:00.
    utc_offset: String,
    /// Date, time and offset in RFC 3339 form.
    rfc3339: String,
    /// How the place asked for was read, when it was not a time zone's name, such as
    /// "Brazil has several time zones; this is the capital's".
    #[serde(skip_serializing_if = "Option::is_none")]
    note: Option<String>,
}

fn current_time(args: CurrentTime) -> Result<Now, ToolError> {
    let asked = match args.time_zone {
        Some(name) if !name.trim().is_empty() => name,
        _ => std::env::var("TZ").unwrap_or_else(|_| "UTC".to_owned()),
    };
    let place = toolhost_place_zones::resolve(&asked).map_err(ToolError::invalid_arguments)?;
    let now = Timestamp::now().to_zoned(place.zone.clone());
    Ok(Now {
        time_zone: place.name,
        date: now.strftime("%Y-%m-%d").to_string(),
        time: now.strftime("%H:%M:%S").to_string(),
        weekday: now.strftime("%A").to_string(),
        utc_offset: now.strftime("%:z").to_string(),
        rfc3339: now.strftime("%Y-%m-%dT%H:%M:%S%:z").to_string(),
        note: place.note,
    })
}

struct Clock;

impl Toolbox for Clock {
    fn tools() -> Vec<Tool> {
        vec![
            Tool::new(
                "current_time",
                "Tells the current date, time and day of the week (what time it is now) in a \
                 city, a country or a time zone.",
                current_time,
            )
            .requests(
                Capability::Env("TZ".into()),
                "the default time zone, when the model gives none",
            ),
        ]
    }
}

toolhost_sdk::export!(Clock);
