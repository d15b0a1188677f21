//! The current date and time, in any time zone.

use jiff::Timestamp;
use jiff::tz::TimeZone;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use toolhost_sdk::{Capability, Tool, ToolError, Toolbox};

/// Which time zone to tell the time in.
#[derive(Deserialize, JsonSchema)]
struct CurrentTime {
    /// An IANA time zone such as "Europe/Paris" or "America/New_York". When absent: the
    /// `TZ` environment variable if the tool was granted it, else UTC.
    #[serde(default)]
    time_zone: Option<String>,
}

/// The current date and time.
#[derive(Serialize, JsonSchema)]
struct Now {
    /// The time zone used.
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
}

fn current_time(args: CurrentTime) -> Result<Now, ToolError> {
    let name = match args.time_zone {
        Some(name) => name,
        None => std::env::var("TZ").unwrap_or_else(|_| "UTC".to_owned()),
    };
    let zone = TimeZone::get(&name).map_err(|_| {
        ToolError::invalid_arguments(format!(
            "`{name}` is not a known time zone; use an IANA name such as \"Europe/Paris\""
        ))
    })?;
    let now = Timestamp::now().to_zoned(zone);
    Ok(Now {
        time_zone: name,
        date: now.strftime("%Y-%m-%d").to_string(),
        time: now.strftime("%H:%M:%S").to_string(),
        weekday: now.strftime("%A").to_string(),
        utc_offset: now.strftime("%:z").to_string(),
        rfc3339: now.strftime("%Y-%m-%dT%H:%M:%S%:z").to_string(),
    })
}

struct Clock;

impl Toolbox for Clock {
    fn tools() -> Vec<Tool> {
        vec![
            Tool::new(
                "current_time",
                "Tells the current date, time and weekday, in a given time zone or the default one.",
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
