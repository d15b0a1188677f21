//! From what a person calls a place to a time zone, with the tz database alone: an IANA
//! name ("Asia/Tokyo", any case), a city that names a zone ("Tokyo", "new york", "São
//! Paulo"), a country ("Japan", "USA", "Brazil"), or an offset ("UTC+5:30"). Cities come
//! from the zone names of jiff's bundled database; countries from the database's zone.tab
//! and iso3166.tab (tzdata 2025b, public domain, in this directory). A country whose zones
//! differ gets its capital's zone, with a note saying so.
//!
//! Shared by the example clock tool, which takes whatever names a place, and the host, which
//! holds a local model's time-zone arguments to the places a conversation names
//! ([`zones_named_in`]).

mod mentions;

use std::collections::{HashMap, HashSet};
use std::sync::OnceLock;

use jiff::Timestamp;
use jiff::tz::{Offset, TimeZone};

pub use mentions::zones_named_in;

/// tzdb's table of each country's time zones: country, coordinates, zone, comment. (The
/// older of its two tables: it names a zone after a city of the country, Europe/Oslo where
/// zone1970.tab has Europe/Berlin for Norway too.)
const ZONES: &str = include_str!("zone.tab");
/// tzdb's table of country codes and names.
const COUNTRIES: &str = include_str!("iso3166.tab");

/// The capital's zone of each country whose zones differ in UTC offset (zone.tab lists
/// them geographically, so its first zone is often a remote island).
const CAPITALS: &[(&str, &str)] = &[
    ("AU", "Australia/Sydney"),
    ("BR", "America/Sao_Paulo"),
    ("CA", "America/Toronto"),
    ("CD", "Africa/Lagos"),
    ("CL", "America/Santiago"),
    ("CN", "Asia/Shanghai"),
    ("EC", "America/Guayaquil"),
    ("ES", "Europe/Madrid"),
    ("FM", "Pacific/Guadalcanal"),
    ("GL", "America/Nuuk"),
    ("ID", "Asia/Jakarta"),
    ("KI", "Pacific/Tarawa"),
    ("KZ", "Asia/Almaty"),
    ("MN", "Asia/Ulaanbaatar"),
    ("MX", "America/Mexico_City"),
    ("NZ", "Pacific/Auckland"),
    ("PF", "Pacific/Tahiti"),
    ("PG", "Pacific/Port_Moresby"),
    ("PT", "Europe/Lisbon"),
    ("RU", "Europe/Moscow"),
    ("UA", "Europe/Kyiv"),
    ("US", "America/New_York"),
];

/// Names people use for countries besides tzdb's own.
const COUNTRY_ALIASES: &[(&str, &str)] = &[
    ("usa", "US"),
    ("us", "US"),
    ("u s", "US"),
    ("u s a", "US"),
    ("america", "US"),
    ("united states of america", "US"),
    ("uk", "GB"),
    ("u k", "GB"),
    ("united kingdom", "GB"),
    ("great britain", "GB"),
    ("england", "GB"),
    ("scotland", "GB"),
    ("wales", "GB"),
    ("northern ireland", "GB"),
    ("holland", "NL"),
    ("czechia", "CZ"),
    ("ivory coast", "CI"),
    ("uae", "AE"),
    ("emirates", "AE"),
    ("burma", "MM"),
    ("swaziland", "SZ"),
    ("vatican", "VA"),
    ("russian federation", "RU"),
    ("turkiye", "TR"),
    ("timor leste", "TL"),
    ("cabo verde", "CV"),
    ("macedonia", "MK"),
    ("drc", "CD"),
    ("democratic republic of the congo", "CD"),
    ("republic of the congo", "CG"),
];

/// Where the tool tells the time.
pub struct Place {
    /// The zone.
    pub zone: TimeZone,
    /// Its name, for the result.
    pub name: String,
    /// How the request was read, when that is worth saying.
    pub note: Option<String>,
}

impl Place {
    fn zone(name: &str) -> Option<Self> {
        let zone = TimeZone::get(name).ok()?;
        Some(Self {
            name: zone_name(&zone, name),
            zone,
            note: None,
        })
    }
}

/// The name a time zone is shown under: its IANA name, else `fallback`.
pub fn zone_name(zone: &TimeZone, fallback: &str) -> String {
    zone.iana_name().unwrap_or(fallback).to_owned()
}

/// The place `asked` names, or what to send instead.
pub fn resolve(asked: &str) -> Result<Place, String> {
    let asked = asked.trim();
    let places = Places::get();
    if let Some(place) = places.find(asked) {
        return Ok(place);
    }
    // "Paris, France", "Tokyo Japan time": each part, then without the filler words.
    for part in asked.split([',', ';', '(', ')']).map(str::trim) {
        if part != asked
            && !part.is_empty()
            && let Some(place) = places.find(part)
        {
            return Ok(place);
        }
    }
    let folded = fold(asked);
    let words: Vec<&str> = folded.split(' ').filter(|w| !FILLER.contains(w)).collect();
    let trimmed = words.join(" ");
    if !trimmed.is_empty()
        && let Some(place) = places.find(&trimmed)
    {
        return Ok(place);
    }
    Err(places.refusal(asked))
}

/// Words around a place's name that are not part of it.
const FILLER: &[&str] = &[
    "in", "the", "city", "time", "timezone", "zone", "now", "current", "local", "at",
];

/// The tz database's places, by folded name.
struct Places {
    /// City (the last part of a zone's name) -> zone.
    cities: HashMap<String, String>,
    /// Country name or code -> country code.
    countries: HashMap<String, String>,
    /// Country code -> its name and zones (with tzdb's comment), in tzdb's order.
    zones: HashMap<String, (String, Vec<(String, String)>)>,
    /// The first word of every city's and country's name, to skip the words that begin none.
    first_words: HashSet<String>,
}

impl Places {
    /// The tables, read once per process.
    fn get() -> &'static Self {
        static PLACES: OnceLock<Places> = OnceLock::new();
        PLACES.get_or_init(Self::load)
    }

    fn load() -> Self {
        let mut zones: HashMap<String, (String, Vec<(String, String)>)> = HashMap::new();
        let mut countries: HashMap<String, Option<String>> = HashMap::new();
        let mut add_country = |key: String, code: &str| {
            if key.is_empty() {
                return;
            }
            countries
                .entry(key)
                .and_modify(|seen| {
                    if seen.as_deref() != Some(code) {
                        *seen = None; // two countries: the name says neither
                    }
                })
                .or_insert_with(|| Some(code.to_owned()));
        };
        for line in COUNTRIES.lines().filter(|l| !l.starts_with('#')) {
            let Some((code, name)) = line.split_once('\t') else {
                continue;
            };
            let name = name.trim();
            zones.insert(code.to_owned(), (name.to_owned(), Vec::new()));
            add_country(fold(name), code);
            add_country(code.to_lowercase(), code);
            if let Some((base, rest)) = name.split_once('(') {
                let inner = rest.trim_end_matches(')');
                add_country(fold(base), code);
                add_country(fold(&format!("{inner} {base}")), code);
            }
        }
        let mut countries: HashMap<String, String> = countries
            .into_iter()
            .filter_map(|(key, code)| Some((key, code?)))
            .collect();
        for (alias, code) in COUNTRY_ALIASES {
            countries.insert((*alias).to_owned(), (*code).to_owned());
        }

        let mut cities: HashMap<String, String> = HashMap::new();
        for line in ZONES.lines().filter(|l| !l.starts_with('#')) {
            let fields: Vec<&str> = line.split('\t').collect();
            let (Some(codes), Some(zone)) = (fields.first(), fields.get(2)) else {
                continue;
            };
            if TimeZone::get(zone).is_err() {
                continue; // newer than the bundled database
            }
            let comment = fields.get(3).copied().unwrap_or("").to_owned();
            for code in codes.split(',') {
                if let Some((_, list)) = zones.get_mut(code) {
                    list.push(((*zone).to_owned(), comment.clone()));
                }
            }
            if let Some(city) = zone.rsplit('/').next() {
                cities
                    .entry(fold(city))
                    .or_insert_with(|| (*zone).to_owned());
            }
        }
        // Then every other zone of the database under a continent or ocean (links such as
        // Asia/Calcutta -> Asia/Kolkata, Europe/Kiev -> Europe/Kyiv).
        for name in jiff::tz::db().available() {
            let name = name.as_str();
            let area = name.split('/').next().unwrap_or("");
            if name.contains('/') && AREAS.contains(&area) {
                let city = name.rsplit('/').next().unwrap_or(name);
                cities.entry(fold(city)).or_insert_with(|| name.to_owned());
            }
        }
        let first_words = cities
            .keys()
            .chain(countries.keys())
            .filter_map(|name| name.split(' ').next())
            .map(str::to_owned)
            .collect();
        Self {
            cities,
            countries,
            zones,
            first_words,
        }
    }

    /// `text` as a zone's name, a city, a country, or an offset.
    fn find(&self, text: &str) -> Option<Place> {
        let key = fold(text);
        if key.is_empty() {
            return None;
        }
        if text.contains('/') {
            return Place::zone(text).or_else(|| Place::zone(&text.replace(' ', "_")));
        }
        if let Some(zone) = self.cities.get(&key) {
            return Place::zone(zone);
        }
        if let Some(code) = self.countries.get(&key) {
            return self.country(code);
        }
        // The database's other names: UTC, CET, EST5EDT, and old ones such as "Japan".
        Place::zone(text).or_else(|| fixed_offset(text))
    }

    /// The zone of country `code`: its only one, its main one when all tell the same time,
    /// else its capital's, with a note.
    fn country(&self, code: &str) -> Option<Place> {
        let (country, zones) = self.zones.get(code)?;
        let now = Timestamp::now();
        let offset = |zone: &str| TimeZone::get(zone).ok().map(|tz| tz.to_offset(now));
        let first = zones.first()?;
        let mut offsets: Vec<(Offset, &str)> = Vec::new();
        for (zone, _) in zones {
            if let Some(o) = offset(zone)
                && !offsets.iter().any(|(seen, _)| *seen == o)
            {
                offsets.push((o, zone));
            }
        }
        if offsets.len() <= 1 {
            let main = zones
                .iter()
                .find(|(_, comment)| comment.contains("most") || comment.contains("mainland"))
                .unwrap_or(first);
            return Place::zone(&main.0);
        }
        let chosen = CAPITALS
            .iter()
            .find(|(c, _)| *c == code)
            .map_or(first.0.as_str(), |(_, zone)| zone);
        let chosen_offset = offset(chosen);
        let others: Vec<String> = offsets
            .iter()
            .filter(|(o, _)| Some(*o) != chosen_offset)
            .map(|(o, zone)| format!("{zone} ({o})"))
            .collect();
        let whose = if CAPITALS.iter().any(|(c, _)| *c == code) {
            "the capital's"
        } else {
            "one of them"
        };
        let mut place = Place::zone(chosen)?;
        place.note = Some(format!(
            "{country} has several time zones; this is {whose}. Others: {}. For another, send \
             a city or one of those.",
            others.join(", ")
        ));
        Some(place)
    }

    /// Why `asked` names no place, and what to send instead.
    fn refusal(&self, asked: &str) -> String {
        let key = fold(asked);
        let limit = (key.chars().count() / 4).clamp(1, 3);
        let mut near: Vec<(usize, String)> = self
            .cities
            .iter()
            .map(|(city, zone)| (city, zone.clone()))
            .chain(self.countries.iter().filter_map(|(name, code)| {
                let zone = self.country(code)?.name;
                (name.len() > 3).then_some((name, zone))
            }))
            .filter_map(|(name, zone)| {
                let distance = edit_distance(&key, name);
                (distance <= limit).then_some((distance, zone))
            })
            .collect();
        near.sort();
        near.dedup_by(|a, b| a.1 == b.1);
        let suggestions: Vec<String> = near
            .iter()
            .take(3)
            .map(|(_, zone)| format!("\"{zone}\""))
            .collect();
        let hint = if suggestions.is_empty() {
            String::new()
        } else {
            format!(" Did you mean {}?", suggestions.join(" or "))
        };
        format!(
            "`{asked}` is not a time zone, city or country in the tz database.{hint} Send an \
             IANA time zone such as \"Europe/Paris\", a city that names one such as \"New \
             York\", or a country such as \"Japan\"; for a smaller place, its country or the \
             time zone of a large city near it."
        )
    }
}

/// The first part of the zone names that name places.
const AREAS: &[&str] = &[
    "Africa",
    "America",
    "Antarctica",
    "Arctic",
    "Asia",
    "Atlantic",
    "Australia",
    "Europe",
    "Indian",
    "Pacific",
];

/// "UTC+5", "GMT-03:30", "+0530": a fixed offset from UTC.
fn fixed_offset(text: &str) -> Option<Place> {
    let upper = text.trim().to_uppercase();
    let rest = upper
        .strip_prefix("UTC")
        .or_else(|| upper.strip_prefix("GMT"))
        .unwrap_or(&upper)
        .trim();
    let (sign, digits) = match rest.chars().next()? {
        '+' => (1, &rest[1..]),
        '-' | '−' => (-1, &rest[rest.chars().next()?.len_utf8()..]),
        _ => return None,
    };
    let digits = digits.trim();
    let (hours, minutes) = match digits.split_once(':') {
        Some((h, m)) => (h.parse::<i32>().ok()?, m.parse::<i32>().ok()?),
        None if digits.len() == 4 => (digits[..2].parse().ok()?, digits[2..].parse().ok()?),
        None => (digits.parse().ok()?, 0),
    };
    if hours > 14 || minutes >= 60 {
        return None;
    }
    let offset = Offset::from_seconds(sign * (hours * 3600 + minutes * 60)).ok()?;
    Some(Place {
        zone: TimeZone::fixed(offset),
        name: format!("UTC{offset}"),
        note: None,
    })
}

/// Lowercase words of letters and digits, accents dropped, "&" as "and", "saint" as "st",
/// without a leading "the".
pub fn fold(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars().flat_map(char::to_lowercase) {
        let c = match c {
            'á' | 'à' | 'â' | 'ä' | 'ã' | 'å' | 'ā' => 'a',
            'ç' | 'č' | 'ć' => 'c',
            'é' | 'è' | 'ê' | 'ë' | 'ē' | 'ě' => 'e',
            'í' | 'ì' | 'î' | 'ï' | 'ī' => 'i',
            'ñ' | 'ń' => 'n',
            'ó' | 'ò' | 'ô' | 'ö' | 'õ' | 'ø' | 'ō' => 'o',
            'ú' | 'ù' | 'û' | 'ü' | 'ū' => 'u',
            'ý' | 'ÿ' => 'y',
            'š' | 'ś' | 'ş' => 's',
            'ž' | 'ź' | 'ż' => 'z',
            'ł' => 'l',
            'ř' => 'r',
            'ğ' => 'g',
            '&' => {
                out.push_str(" and ");
                continue;
            }
            c if c.is_alphanumeric() => c,
            '\'' | '’' | '.' => continue, // Côte d'Ivoire, St. Lucia
            _ => ' ',
        };
        out.push(c);
    }
    let words: Vec<&str> = out
        .split_whitespace()
        .map(|w| if w == "saint" { "st" } else { w })
        .collect();
    let words = match words.first() {
        Some(&"the") => &words[1..],
        _ => &words[..],
    };
    words.join(" ")
}

/// Levenshtein distance, in characters.
fn edit_distance(a: &str, b: &str) -> usize {
    let a: Vec<char> = a.chars().collect();
    let b: Vec<char> = b.chars().collect();
    if a.len().abs_diff(b.len()) > 3 {
        return usize::MAX;
    }
    let mut row: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.iter().enumerate() {
        let mut diagonal = row[0];
        row[0] = i + 1;
        for (j, cb) in b.iter().enumerate() {
            let above = row[j + 1];
            row[j + 1] = (diagonal + usize::from(ca != cb))
                .min(row[j] + 1)
                .min(above + 1);
            diagonal = above;
        }
    }
    row[b.len()]
}

#[cfg(test)]
mod tests {
    use super::*;

    fn zone(asked: &str) -> String {
        match resolve(asked) {
            Ok(place) => place.name,
            Err(message) => panic!("{asked}: {message}"),
        }
    }

    #[test]
    fn zones_cities_countries_and_offsets() {
        assert_eq!(zone("Asia/Tokyo"), "Asia/Tokyo");
        assert_eq!(zone("asia/tokyo"), "Asia/Tokyo");
        assert_eq!(zone("America/New York"), "America/New_York");
        assert_eq!(zone("Tokyo"), "Asia/Tokyo");
        assert_eq!(zone("new york"), "America/New_York");
        assert_eq!(zone("New York City"), "America/New_York");
        assert_eq!(zone("São Paulo"), "America/Sao_Paulo");
        assert_eq!(zone("Paris, France"), "Europe/Paris");
        assert_eq!(
            zone("Calcutta"),
            "Asia/Calcutta",
            "a link keeps its own name"
        );
        assert_eq!(zone("Japan"), "Asia/Tokyo");
        assert_eq!(zone("germany"), "Europe/Berlin");
        assert_eq!(zone("USA"), "America/New_York");
        assert_eq!(zone("the Netherlands"), "Europe/Amsterdam");
        assert_eq!(zone("South Korea"), "Asia/Seoul");
        assert_eq!(zone("Côte d'Ivoire"), "Africa/Abidjan");
        assert_eq!(zone("UK"), "Europe/London");
        assert_eq!(zone("UTC"), "UTC");
        assert_eq!(zone("UTC+5:30"), "UTC+05:30");
        assert_eq!(zone("GMT-3"), "UTC-03");
    }

    #[test]
    fn a_country_with_several_offsets_gets_its_capitals_and_a_note() {
        let place = resolve("Brazil").unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(place.name, "America/Sao_Paulo");
        let note = place.note.unwrap_or_default();
        assert!(
            note.contains("capital's") && note.contains("America/Noronha (-02)"),
            "{note}"
        );
        assert_eq!(zone("Australia"), "Australia/Sydney");
        assert_eq!(zone("Russia"), "Europe/Moscow");
    }

    #[test]
    fn unknown_places_say_what_to_send() {
        let Err(message) = resolve("Tokio") else {
            panic!("Tokio is not a city of the database");
        };
        assert!(message.contains("Did you mean \"Asia/Tokyo\""), "{message}");
        assert!(message.contains("Send an IANA time zone"), "{message}");
        let Err(message) = resolve("Atlantis") else {
            panic!("Atlantis is nowhere");
        };
        assert!(message.contains("such as \"Europe/Paris\""), "{message}");
    }
}
