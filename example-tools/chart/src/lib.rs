//! Chart: draws a bar chart of labelled values as a PNG image (tool contract 0.2's image
//! part), with the values as text beside it for models that do not take images, and as
//! structured content.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use toolhost_sdk::{CallContext, Content, Output, Tool, ToolError, Toolbox};

/// The image's size, in pixels.
const WIDTH: u32 = 480;
const HEIGHT: u32 = 270;
/// The margin around the bars, and the gap between two.
const MARGIN: u32 = 16;
const GAP: u32 = 6;
/// At most this many bars.
const MAX_BARS: usize = 40;

/// One bar.
#[derive(Deserialize, Serialize, JsonSchema)]
struct Bar {
    /// What the bar is, such as "March".
    label: String,
    /// Its value; 0 or more.
    value: f64,
}

/// The chart to draw.
#[derive(Deserialize, JsonSchema)]
struct BarChart {
    /// What the chart shows, such as "Sales by month".
    title: String,
    /// The bars, left to right (1 to 40).
    bars: Vec<Bar>,
}

/// What the chart shows, as data.
#[derive(Serialize)]
struct Drawn<'a> {
    title: &'a str,
    bars: &'a [Bar],
    largest: f64,
}

/// RGB colours the bars take in turn, and the background and axis.
const COLOURS: [[u8; 3]; 4] = [[31, 119, 180], [255, 127, 14], [44, 160, 44], [214, 39, 40]];
const BACKGROUND: [u8; 3] = [255, 255, 255];
const AXIS: [u8; 3] = [64, 64, 64];

fn bar_chart(args: BarChart, _: &CallContext) -> Result<Output, ToolError> {
    if args.bars.is_empty() || args.bars.len() > MAX_BARS {
        return Err(ToolError::invalid_arguments(format!(
            "send 1 to {MAX_BARS} bars, such as {{\"label\": \"March\", \"value\": 12}}; got {}",
            args.bars.len()
        )));
    }
    if let Some(bad) = args.bars.iter().find(|b| !b.value.is_finite() || b.value < 0.0) {
        return Err(ToolError::invalid_arguments(format!(
            "the value of `{}` is {}; send a number of 0 or more, such as \
             {{\"label\": {:?}, \"value\": 0}}",
            bad.label, bad.value, bad.label
        )));
    }
    let largest = args.bars.iter().map(|b| b.value).fold(0.0, f64::max);
    let pixels = draw(&args.bars, largest);
    let png = encode(&pixels)?;
    let summary: Vec<String> = args
        .bars
        .iter()
        .map(|b| format!("{}: {}", b.label, b.value))
        .collect();
    let structured = serde_json::to_value(Drawn {
        title: &args.title,
        bars: &args.bars,
        largest,
    })
    .map_err(|e| ToolError::failed(e.to_string()))?;
    Ok(Output {
        content: vec![
            Content::Text(format!(
                "A bar chart of {}: {}.",
                args.title,
                summary.join(", ")
            )),
            Content::Image {
                data: png,
                mime_type: "image/png".into(),
            },
        ],
        structured: Some(structured),
    })
}

/// The chart as RGB pixels, row by row.
fn draw(bars: &[Bar], largest: f64) -> Vec<u8> {
    let mut pixels: Vec<u8> = BACKGROUND
        .iter()
        .copied()
        .cycle()
        .take((WIDTH * HEIGHT * 3) as usize)
        .collect();
    let mut fill = |x0: u32, y0: u32, x1: u32, y1: u32, colour: [u8; 3]| {
        for y in y0..y1.min(HEIGHT) {
            for x in x0..x1.min(WIDTH) {
                let at = ((y * WIDTH + x) * 3) as usize;
                pixels[at..at + 3].copy_from_slice(&colour);
            }
        }
    };
    let floor = HEIGHT - MARGIN;
    let inner = WIDTH - 2 * MARGIN;
    let count = bars.len() as u32;
    let width = ((inner - GAP * (count - 1)) / count).max(1);
    for (i, bar) in bars.iter().enumerate() {
        let share = if largest > 0.0 { bar.value / largest } else { 0.0 };
        let height = (share * f64::from(floor - MARGIN)).round() as u32;
        let x = MARGIN + i as u32 * (width + GAP);
        fill(x, floor - height, x + width, floor, COLOURS[i % COLOURS.len()]);
    }
    fill(MARGIN / 2, floor, WIDTH - MARGIN / 2, floor + 2, AXIS);
    pixels
}

/// `pixels` (RGB, [`WIDTH`] x [`HEIGHT`]) as a PNG file.
fn encode(pixels: &[u8]) -> Result<Vec<u8>, ToolError> {
    let mut png = Vec::new();
    let mut encoder = png::Encoder::new(&mut png, WIDTH, HEIGHT);
    encoder.set_color(png::ColorType::Rgb);
    encoder.set_depth(png::BitDepth::Eight);
    let failed = |e: png::EncodingError| ToolError::failed(format!("cannot encode the PNG: {e}"));
    let mut writer = encoder.write_header().map_err(failed)?;
    writer.write_image_data(pixels).map_err(failed)?;
    writer.finish().map_err(failed)?;
    Ok(png)
}

struct Chart;

impl Toolbox for Chart {
    fn tools() -> Vec<Tool> {
        vec![
            Tool::with_output(
                "bar_chart",
                "Draws a bar chart (a PNG image) of labelled values, such as sales by month: \
                 use it to plot or chart numbers.",
                bar_chart,
            )
            .title("Bar chart")
            .read_only()
            .idempotent()
            .open_world(false),
        ]
    }
}

toolhost_sdk::export!(Chart);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_chart_is_a_png_with_its_values_as_text() {
        let args = BarChart {
            title: "Sales".into(),
            bars: vec![
                Bar {
                    label: "Jan".into(),
                    value: 3.0,
                },
                Bar {
                    label: "Feb".into(),
                    value: 6.0,
                },
            ],
        };
        let output = bar_chart(args, &CallContext::default()).unwrap_or_else(|e| panic!("{e:?}"));
        assert_eq!(output.text_parts(), "A bar chart of Sales: Jan: 3, Feb: 6.");
        let Content::Image { data, mime_type } = &output.content[1] else {
            panic!("no image");
        };
        assert_eq!(mime_type, "image/png");
        assert_eq!(&data[1..4], b"PNG");
        assert_eq!(output.structured.unwrap_or_default()["largest"], 6.0);
    }
}
