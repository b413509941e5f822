//! SVG drawing with plotters' SVG backend: grouped throughput bars and
//! latency-percentile lines.
//!
//! Each function renders into a `String` (no file IO here) and returns the
//! SVG text. Series colours come from plotters' 99-colour palette, by
//! series index, so an engine has the same colour in every chart of one
//! call of `chart`. Pure functions, no shared state.

use anyhow::{Result, anyhow};
use plotters::prelude::*;

use super::records::PERCENTILES;

/// Colour of series `i`.
fn colour(i: usize) -> RGBAColor {
    Palette99::pick(i).to_rgba()
}

/// `12345.6` as `12.3k`, for axis labels.
fn si(v: f64) -> String {
    let a = v.abs();
    if a >= 1e9 {
        format!("{:.1}G", v / 1e9)
    } else if a >= 1e6 {
        format!("{:.1}M", v / 1e6)
    } else if a >= 1e3 {
        format!("{:.1}k", v / 1e3)
    } else if a >= 10.0 || a == 0.0 {
        format!("{v:.0}")
    } else {
        format!("{v:.2}")
    }
}

/// The label of the category whose centre is at `x`, if `x` is one.
fn category(labels: &[String], x: f64) -> String {
    let i = x.round();
    if (x - i).abs() > 1e-6 || i < 0.0 {
        return String::new();
    }
    labels.get(i as usize).cloned().unwrap_or_default()
}

/// Grouped bars: one group per category, one bar per series;
/// `value(category, series)` is ops/s (missing: no bar).
pub fn throughput(
    title: &str,
    categories: &[String],
    series: &[String],
    value: &dyn Fn(usize, usize) -> Option<f64>,
) -> Result<String> {
    let n = categories.len().max(1);
    let s = series.len().max(1);
    let ymax = (0..categories.len())
        .flat_map(|c| (0..series.len()).map(move |i| (c, i)))
        .filter_map(|(c, i)| value(c, i))
        .fold(0.0f64, f64::max);
    let ymax = if ymax > 0.0 { ymax * 1.25 } else { 1.0 };
    let width = (200 + 40 * n * s).clamp(720, 2400) as u32;
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (width, 520)).into_drawing_area();
        root.fill(&WHITE).map_err(|e| anyhow!("{e}"))?;
        let mut chart = ChartBuilder::on(&root)
            .caption(title, ("sans-serif", 22))
            .margin(12)
            .x_label_area_size(40)
            .y_label_area_size(70)
            .build_cartesian_2d(-0.5f64..(n as f64 - 0.5), 0f64..ymax)
            .map_err(|e| anyhow!("{e}"))?;
        let fmt_x = |x: &f64| category(categories, *x);
        let fmt_y = |y: &f64| si(*y);
        chart
            .configure_mesh()
            .disable_x_mesh()
            .x_labels(n)
            .x_label_formatter(&fmt_x)
            .y_label_formatter(&fmt_y)
            .y_desc("operations per second")
            .draw()
            .map_err(|e| anyhow!("{e}"))?;
        let bar = 0.8 / s as f64;
        for (si, name) in series.iter().enumerate() {
            let c = colour(si);
            let bars = (0..categories.len()).filter_map(|ci| {
                let v = value(ci, si)?;
                let x0 = ci as f64 - 0.4 + si as f64 * bar;
                Some(Rectangle::new(
                    [(x0, 0.0), (x0 + bar * 0.92, v)],
                    c.filled(),
                ))
            });
            chart
                .draw_series(bars)
                .map_err(|e| anyhow!("{e}"))?
                .label(name.as_str())
                .legend(move |(x, y)| Rectangle::new([(x, y - 5), (x + 12, y + 5)], c.filled()));
        }
        chart
            .configure_series_labels()
            .position(SeriesLabelPosition::UpperRight)
            .background_style(WHITE.mix(0.85))
            .border_style(BLACK)
            .draw()
            .map_err(|e| anyhow!("{e}"))?;
        root.present().map_err(|e| anyhow!("{e}"))?;
    }
    Ok(svg)
}

/// One latency panel: a title and, per series, its five percentiles (µs).
pub struct Panel {
    /// Panel title (the result name, e.g. `ycsb_a.read`).
    pub title: String,
    /// `(series index, latencies in PERCENTILES order)`.
    pub lines: Vec<(usize, [Option<f64>; 5])>,
}

/// Latency percentiles as lines, one per series, x = percentile, log y;
/// one panel per operation type, side by side (three to a row).
pub fn latency(title: &str, series: &[String], panels: &[Panel]) -> Result<String> {
    let cols = panels.len().clamp(1, 3);
    let rows = panels.len().div_ceil(cols).max(1);
    let mut svg = String::new();
    {
        let size = (460 * cols as u32, 40 + 380 * rows as u32);
        let root = SVGBackend::with_string(&mut svg, size).into_drawing_area();
        root.fill(&WHITE).map_err(|e| anyhow!("{e}"))?;
        let root = root
            .titled(title, ("sans-serif", 22))
            .map_err(|e| anyhow!("{e}"))?;
        let areas = root.split_evenly((rows, cols));
        for (panel, area) in panels.iter().zip(areas.iter()) {
            let values = panel.lines.iter().flat_map(|(_, l)| l.iter().flatten());
            let (lo, hi) = values.fold((f64::MAX, 0.0f64), |(lo, hi), &v| (lo.min(v), hi.max(v)));
            let (lo, hi) = if hi > 0.0 {
                (lo * 0.5, hi * 2.0)
            } else {
                (0.1, 10.0)
            };
            let mut chart = ChartBuilder::on(area)
                .caption(&panel.title, ("sans-serif", 16))
                .margin(10)
                .x_label_area_size(30)
                .y_label_area_size(60)
                .build_cartesian_2d(-0.3f64..4.3f64, (lo..hi).log_scale())
                .map_err(|e| anyhow!("{e}"))?;
            let names: Vec<String> = PERCENTILES.iter().map(|(l, _)| l.to_string()).collect();
            let fmt_x = |x: &f64| category(&names, *x);
            let fmt_y = |y: &f64| si(*y);
            chart
                .configure_mesh()
                .x_labels(5)
                .x_label_formatter(&fmt_x)
                .y_label_formatter(&fmt_y)
                .y_desc("latency (µs, log)")
                .draw()
                .map_err(|e| anyhow!("{e}"))?;
            for (si, lat) in &panel.lines {
                let c = colour(*si);
                let pts: Vec<(f64, f64)> = lat
                    .iter()
                    .enumerate()
                    .filter_map(|(i, v)| v.map(|v| (i as f64, v)))
                    .collect();
                let name = series.get(*si).cloned().unwrap_or_default();
                chart
                    .draw_series(LineSeries::new(pts.clone(), c.stroke_width(2)))
                    .map_err(|e| anyhow!("{e}"))?
                    .label(name)
                    .legend(move |(x, y)| {
                        PathElement::new(vec![(x, y), (x + 14, y)], c.stroke_width(2))
                    });
                chart
                    .draw_series(pts.into_iter().map(|p| Circle::new(p, 3, c.filled())))
                    .map_err(|e| anyhow!("{e}"))?;
            }
            chart
                .configure_series_labels()
                .position(SeriesLabelPosition::UpperLeft)
                .background_style(WHITE.mix(0.85))
                .border_style(BLACK)
                .draw()
                .map_err(|e| anyhow!("{e}"))?;
        }
        root.present().map_err(|e| anyhow!("{e}"))?;
    }
    Ok(svg)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn labels_and_numbers() {
        let l = vec!["a".to_string(), "b".to_string()];
        assert_eq!(category(&l, 1.0), "b");
        assert_eq!(category(&l, 0.5), "");
        assert_eq!(category(&l, 7.0), "");
        assert_eq!(si(12_345.0), "12.3k");
        assert_eq!(si(2.5e6), "2.5M");
        assert_eq!(si(0.5), "0.50");
    }
}
