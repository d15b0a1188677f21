//! The current weather for a city, from a wttr.in-compatible service over HTTP.

use std::time::Duration;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use toolhost_sdk::http::Request;
use toolhost_sdk::{Capability, Tool, ToolError, Toolbox};

/// Where to get the weather from unless `WEATHER_BASE_URL` says otherwise.
const DEFAULT_BASE_URL: &str = "https://wttr.in";

/// The city to get the weather for.
#[derive(Deserialize, JsonSchema)]
struct CurrentWeather {
    /// The city, such as "Paris" or "New York".
    city: String,
}

/// The weather now.
#[derive(Serialize, JsonSchema)]
struct Weather {
    /// The place the service matched.
    location: String,
    /// The temperature in degrees Celsius.
    temperature_c: f64,
    /// How warm it feels, in degrees Celsius.
    feels_like_c: f64,
    /// The sky, such as "Partly cloudy".
    condition: String,
    /// The relative humidity, in percent.
    humidity_percent: f64,
    /// The wind speed in km/h.
    wind_kmh: f64,
}

/// The parts of wttr.in's `format=j1` answer this tool uses. It sends numbers as strings.
#[derive(Deserialize)]
struct Report {
    current_condition: Vec<Condition>,
    #[serde(default)]
    nearest_area: Vec<Area>,
}

#[derive(Deserialize)]
struct Condition {
    #[serde(rename = "temp_C")]
    temp_c: String,
    #[serde(rename = "FeelsLikeC")]
    feels_like_c: String,
    humidity: String,
    #[serde(rename = "windspeedKmph")]
    wind_kmh: String,
    #[serde(rename = "weatherDesc")]
    description: Vec<Text>,
}

#[derive(Deserialize)]
struct Area {
    #[serde(rename = "areaName")]
    name: Vec<Text>,
    country: Vec<Text>,
}

#[derive(Deserialize)]
struct Text {
    value: String,
}

fn current_weather(args: CurrentWeather) -> Result<Weather, ToolError> {
    let city = args.city.trim();
    if city.is_empty() {
        return Err(ToolError::invalid_arguments(
            "`city` is empty; send the name of a city, such as {\"city\": \"Paris\"}",
        ));
    }
    let base = std::env::var("WEATHER_BASE_URL").unwrap_or_else(|_| DEFAULT_BASE_URL.to_owned());
    let url = format!("{}/{}?format=j1", base.trim_end_matches('/'), encode(city));
    let response = Request::get(&url).timeout(Duration::from_secs(10)).send()?;
    if response.status == 404 {
        return Err(ToolError::failed(format!(
            "the weather service knows no city `{city}`"
        )));
    }
    let report: Report = response.error_for_status()?.json()?;
    let now = report
        .current_condition
        .first()
        .ok_or_else(|| ToolError::failed("the weather service sent no current conditions"))?;
    let number = |field: &str, text: &str| {
        text.trim()
            .parse::<f64>()
            .map_err(|_| ToolError::failed(format!("the weather service sent `{text}` as {field}")))
    };
    let location = match report.nearest_area.first() {
        Some(area) => format!(
            "{}, {}",
            area.name.first().map_or(city, |t| t.value.as_str()),
            area.country.first().map_or("", |t| t.value.as_str())
        ),
        None => city.to_owned(),
    };
    Ok(Weather {
        location,
        temperature_c: number("temperature", &now.temp_c)?,
        feels_like_c: number("feels-like temperature", &now.feels_like_c)?,
        condition: now
            .description
            .first()
            .map(|t| t.value.trim().to_owned())
            .unwrap_or_default(),
        humidity_percent: number("humidity", &now.humidity)?,
        wind_kmh: number("wind speed", &now.wind_kmh)?,
    })
}

/// Percent-encodes a path segment.
fn encode(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for byte in text.bytes() {
        if byte.is_ascii_alphanumeric() || b"-_.~".contains(&byte) {
            out.push(byte as char);
        } else {
            out.push_str(&format!("%{byte:02X}"));
        }
    }
    out
}

struct WeatherTools;

impl Toolbox for WeatherTools {
    fn tools() -> Vec<Tool> {
        vec![
            Tool::new(
                "current_weather",
                "Gets the current weather in a city: temperature (how hot or cold it is), sky \
                 (sunny, cloudy, rain, snow), humidity and wind.",
                current_weather,
            )
            .requests(Capability::Http("wttr.in".into()), "fetches the weather")
            .requests(
                Capability::Env("WEATHER_BASE_URL".into()),
                "another wttr.in-compatible server to ask instead",
            ),
        ]
    }
}

toolhost_sdk::export!(WeatherTools);
