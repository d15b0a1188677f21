//! The places a text names, as time zones.

use jiff::tz::TimeZone;

use crate::{FILLER, Places, fixed_offset, fold, zone_name};

/// The most words a place's name takes ("Democratic Republic of the Congo").
const LONGEST_NAME: usize = 5;

/// Names of places that are also everyday words ("wake me", "a troll", "reunion"): taken
/// only when written with a capital.
const EVERYDAY_WORDS: &[&str] = &[
    "canary",
    "casey",
    "center",
    "chad",
    "china",
    "christmas",
    "davis",
    "easter",
    "georgia",
    "guinea",
    "jersey",
    "jordan",
    "knox",
    "midway",
    "niger",
    "nome",
    "oral",
    "palmer",
    "regina",
    "resolute",
    "reunion",
    "stanley",
    "troll",
    "turkey",
    "virgin",
    "wake",
];

/// Last parts of zone names that name no place on their own (Australia/North, Brazil/West).
const NOT_PLACES: &[&str] = &["north", "south", "east", "west", "central"];

/// Short words inside a place's name that stay lowercase ("Isle of Man", "Dar es Salaam").
const CONNECTORS: &[&str] = &[
    "of", "and", "the", "d", "de", "da", "do", "dos", "es", "el", "la", "del", "au",
];

/// The time zones of the places `text` names, in the order it names them, each once: IANA
/// names as written ("Asia/Tokyo"), offsets as written ("UTC+5:30"), and the zones of the
/// cities and countries it names ("Tokyo", "new york", "Brazil"; the longest name first,
/// so "New South Wales" is not "Wales"). Country codes and abbreviations count only in
/// capitals ("US", "UTC", never "us" or "in"), and names that are everyday words only with
/// a capital ("Wake Island", not "wake me"): a place the text does not name is worse than
/// none, since the host may hold a model's time-zone argument to these.
///
/// ```
/// let zones = toolhost_place_zones::zones_named_in("What time is it in Tokyo? And in new york?");
/// assert_eq!(zones, ["Asia/Tokyo", "America/New_York"]);
/// assert!(toolhost_place_zones::zones_named_in("tell us the time").is_empty());
/// ```
pub fn zones_named_in(text: &str) -> Vec<String> {
    let places = Places::get();
    let shouting = !text.chars().any(char::is_lowercase);
    let mut zones: Vec<String> = Vec::new();
    let mut add = |zone: String| {
        if !zones.contains(&zone) {
            zones.push(zone);
        }
    };
    let mut words: Vec<&str> = Vec::new();
    for token in tokens(text) {
        if let Some(zone) = written_zone(token) {
            places.named(&words, shouting, &mut add);
            words.clear();
            add(zone);
        } else {
            words.push(token);
        }
    }
    places.named(&words, shouting, &mut add);
    zones
}

/// The words of `text`, with the punctuation around them (and a possessive "'s") dropped;
/// "/", "_", "+", "-" and ":" stay inside a word, for zone names and offsets.
fn tokens(text: &str) -> impl Iterator<Item = &str> {
    text.split(|c: char| c.is_whitespace() || ",;!?()[]{}\"“”«»".contains(c))
        .map(|token| {
            let token = token.trim_matches(|c: char| ".:'’-".contains(c));
            token
                .strip_suffix("'s")
                .or_else(|| token.strip_suffix("’s"))
                .unwrap_or(token)
        })
        .filter(|token| !token.is_empty())
}

/// `token` when it is a zone's IANA name or an offset from UTC, as the tool should get it.
fn written_zone(token: &str) -> Option<String> {
    if token.contains('/') {
        let zone = TimeZone::get(token).ok()?;
        return Some(zone_name(&zone, token));
    }
    let upper = token.to_uppercase();
    let signed = ["UTC+", "UTC-", "GMT+", "GMT-", "UTC−", "GMT−"]
        .iter()
        .any(|prefix| upper.starts_with(prefix));
    (signed && fixed_offset(token).is_some()).then(|| token.to_owned())
}

impl Places {
    /// Adds the zones of the places named by runs of `words`, the longest run first.
    fn named(&self, words: &[&str], shouting: bool, add: &mut impl FnMut(String)) {
        let mut start = 0;
        while start < words.len() {
            // Abbreviations such as "UTC" are zone names of their own.
            let capitals = words[start].chars().all(|c| !c.is_lowercase());
            if !capitals && !self.first_words.contains(&fold(words[start])) {
                start += 1;
                continue;
            }
            let longest = LONGEST_NAME.min(words.len() - start);
            let found = (1..=longest)
                .rev()
                .find_map(|n| Some((n, self.zone_of(&words[start..start + n], shouting)?)));
            match found {
                Some((n, zone)) => {
                    add(zone);
                    start += n;
                }
                None => start += 1,
            }
        }
    }

    /// The zone of the place `words` name, if they name one the way a person writes it.
    fn zone_of(&self, words: &[&str], shouting: bool) -> Option<String> {
        let key = fold(&words.join(" "));
        if key.is_empty() || FILLER.contains(&key.as_str()) || NOT_PLACES.contains(&key.as_str()) {
            return None;
        }
        let capitals = words.iter().all(|w| w.chars().all(|c| !c.is_lowercase()));
        if key.len() <= 3 {
            // "US", "UK", "UAE", "UTC", "EST": only in capitals, in a text that has others.
            if shouting || !capitals || words.len() > 1 {
                return None;
            }
            if let Some(code) = self.countries.get(&key) {
                return Some(self.country(code)?.name);
            }
            let zone = TimeZone::get(words[0]).ok()?;
            return Some(zone_name(&zone, words[0]));
        }
        let capitalized = words.iter().enumerate().all(|(i, word)| {
            word.chars().next().is_some_and(char::is_uppercase)
                || (i > 0 && CONNECTORS.contains(&fold(word).as_str()))
        });
        if !capitalized && EVERYDAY_WORDS.contains(&key.as_str()) {
            return None;
        }
        if let Some(zone) = self.cities.get(&key) {
            return Some(zone.clone());
        }
        let code = self.countries.get(&key)?;
        Some(self.country(code)?.name)
    }
}

#[cfg(test)]
mod tests {
    use super::zones_named_in;

    #[track_caller]
    fn named(text: &str, zones: &[&str]) {
        assert_eq!(zones_named_in(text), zones, "in {text:?}");
    }

    #[test]
    fn cities_countries_and_zone_names_as_people_write_them() {
        named("What time is it in Tokyo?", &["Asia/Tokyo"]);
        named(
            "what's the time in new york right now",
            &["America/New_York"],
        );
        named("current date in Brazil?", &["America/Sao_Paulo"]);
        named("Time in São Paulo", &["America/Sao_Paulo"]);
        named("time in Dar es Salaam", &["Africa/Dar_es_Salaam"]);
        named("Is it day in Côte d'Ivoire?", &["Africa/Abidjan"]);
        named("Tokyo's time, please", &["Asia/Tokyo"]);
        named("time in Europe/Paris", &["Europe/Paris"]);
        named("what is the time in asia/tokyo", &["Asia/Tokyo"]);
        named("time in tokyo", &["Asia/Tokyo"]);
        named("time in UTC+5:30?", &["UTC+5:30"]);
        named("What time is it in the UK?", &["Europe/London"]);
        named("the time in UTC", &["UTC"]);
    }

    #[test]
    fn every_place_once_in_order() {
        named(
            "If it is 9 in London, what time is it in Tokyo and in london?",
            &["Europe/London", "Asia/Tokyo"],
        );
        named("Paris, France", &["Europe/Paris"]);
    }

    #[test]
    fn the_longest_name_wins() {
        named("time in New York City", &["America/New_York"]);
        named("What time is it in South Korea?", &["Asia/Seoul"]);
    }

    #[test]
    fn words_that_only_look_like_places_are_not_places() {
        for text in [
            "tell us the time",
            "what time is it in here",
            "is it time to go",
            "wake me at 7",
            "what day is christmas this year",
            "the center of town",
            "WHAT TIME IS IT IN IT",
            "what time is it",
        ] {
            named(text, &[]);
        }
        named("What time is it on Wake Island?", &["Pacific/Wake"]);
        named("What time is it in the West?", &[]);
    }
}
