//! The loss plot of the examples (`iris`, `digits_cnn`, `gpt_char`): a PNG drawn with plotters,
//! its text set in the bundled `DejaVu` Sans.

use std::error::Error;
use std::path::Path;

use plotters::prelude::*;

/// The `DejaVu` Sans font of the plot's text, bundled so that the example needs no system font
/// (`examples/data/fonts/`, with its licence).
const PLOT_FONT: &[u8] = include_bytes!("../../data/fonts/DejaVuSans.ttf");

/// A linear `f64` axis whose grid lines and tick numbers are exactly `ticks` (plotters' own
/// `with_key_points` cannot label an `f64` axis).
struct GridAxis {
    /// The mapping to pixels: plotters' own.
    linear: plotters::coord::types::RangedCoordf64,
    ticks: Vec<f64>,
}

impl Ranged for GridAxis {
    type FormatOption = plotters::coord::ranged1d::DefaultFormatting;
    type ValueType = f64;

    fn map(&self, value: &f64, limit: (i32, i32)) -> i32 {
        self.linear.map(value, limit)
    }

    fn key_points<H: plotters::coord::ranged1d::KeyPointHint>(&self, hint: H) -> Vec<f64> {
        // Only bold lines: no lighter lines between the ticks.
        if hint.weight().allow_light_points() {
            Vec::new()
        } else {
            self.ticks.clone()
        }
    }

    fn range(&self) -> std::ops::Range<f64> {
        self.linear.range()
    }
}

/// Draws the training (blue) and test (orange) loss per epoch into a PNG at `path` under `title`,
/// on a light grid: vertical lines every 100 epochs (every 10 below 100 epochs, every 5 below 40), horizontal lines every 0.1
/// of loss, the y axis from 0. The text (title, axis labels, tick numbers at the grid lines and a
/// legend) is set in the bundled `DejaVu` Sans, registered here as `sans-serif`, so the plot looks
/// the same on a machine without any font installed.
pub fn plot_losses(path: &Path, title: &str, train: &[f64], test: &[f64]) -> Result<(), Box<dyn Error>> {
    plot_curves(path, title, "epoch", 1, [("train loss", train), ("test loss", test)])
}

/// As [`plot_losses`], with the x axis named `x_label`, point `i` of each curve at `i * x_per_point`
/// (from 1 000 on the x axis, its grid lines are 1, 2 or 5 times a power of ten apart, about 8
/// of them), and the legend naming the blue curve `curves[0].0` and the orange one `curves[1].0`.
pub fn plot_curves(
    path: &Path,
    title: &str,
    x_label: &str,
    x_per_point: usize,
    curves: [(&str, &[f64]); 2],
) -> Result<(), Box<dyn Error>> {
    let [(train_label, train), (test_label, test)] = curves;
    plotters::style::register_font("sans-serif", FontStyle::Normal, PLOT_FONT)
        .map_err(|_| "the bundled font examples/data/fonts/DejaVuSans.ttf is not a valid font")?;
    let epochs = (train.len().max(test.len()).max(2) - 1) * x_per_point.max(1);
    let top = train.iter().chain(test).copied().filter(|v| v.is_finite()).fold(0.1, f64::max) * 1.05;
    // The grid lines, which are also the ticks of the axes.
    let x_step = if epochs >= 1000 {
        nice_step(epochs as f64 / 8.0) as usize
    } else if epochs >= 100 {
        100
    } else if epochs >= 40 {
        10
    } else {
        5
    };
    let x_ticks: Vec<f64> = (0..=epochs).step_by(x_step).map(|e| e as f64).collect();
    // Steps of 0.1 up to a loss of about 1.6, then 1, 2 or 5 times a power of ten (at most ~17
    // lines, however large a diverged loss gets).
    let y_step = nice_step(top / 8.0).max(0.1);
    let y_ticks: Vec<f64> = (0..=20).map(|i| f64::from(i) * y_step).take_while(|&y| y <= top).collect();

    let root = BitMapBackend::new(path, (900, 560)).into_drawing_area();
    root.fill(&WHITE)?;
    let mut chart = ChartBuilder::on(&root)
        .caption(title, ("sans-serif", 24))
        .margin(24)
        .x_label_area_size(48)
        .y_label_area_size(64)
        .build_cartesian_2d(
            GridAxis { linear: (0.0..epochs as f64).into(), ticks: x_ticks },
            GridAxis { linear: (0.0..top).into(), ticks: y_ticks },
        )?;
    chart
        .configure_mesh()
        .bold_line_style(RGBColor(225, 225, 225))
        .axis_style(BLACK)
        .x_desc(x_label)
        .y_desc("loss")
        .axis_desc_style(("sans-serif", 18))
        .label_style(("sans-serif", 15))
        .x_label_formatter(&|x| format!("{x:.0}"))
        .y_label_formatter(&|y| format!("{y:.1}"))
        .draw()?;
    chart
        .plotting_area()
        .draw(&PathElement::new(vec![(0.0, top), (0.0, 0.0), (epochs as f64, 0.0)], BLACK.stroke_width(2)))?;
    let series = |v: &[f64]| v.iter().enumerate().map(|(i, &l)| ((i * x_per_point) as f64, l)).collect::<Vec<_>>();
    let (train_colour, test_colour) = (RGBColor(30, 90, 200), RGBColor(230, 120, 20));
    chart.draw_series(LineSeries::new(series(test), test_colour.stroke_width(2)))?;
    chart.draw_series(LineSeries::new(series(train), train_colour.stroke_width(2)))?;
    // The legend lists train before test, while the train curve is drawn last (on top): its
    // entries hang on empty series.
    for (name, colour) in [(train_label, train_colour), (test_label, test_colour)] {
        chart
            .draw_series(std::iter::empty::<PathElement<(f64, f64)>>())?
            .label(name)
            .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 24, y)], colour.stroke_width(2)));
    }
    chart
        .configure_series_labels()
        .position(SeriesLabelPosition::UpperRight)
        .label_font(("sans-serif", 16))
        .background_style(WHITE)
        .border_style(RGBColor(160, 160, 160))
        .draw()?;
    root.present()?;
    Ok(())
}

/// The largest of 1, 2 or 5 times a power of ten that is at most `raw` (`raw > 0`).
fn nice_step(raw: f64) -> f64 {
    let p = 10f64.powf(raw.log10().floor());
    if raw / p >= 5.0 {
        5.0 * p
    } else if raw / p >= 2.0 {
        2.0 * p
    } else {
        p
    }
}
